#pragma once

#include "candidateevaluator.h"
#include "humancommand.h"
#include "promptbuilder.h"
#include "searchstate.h"
#include "strategy.h"

#include <llm/llmconfig.h>
#include <llm/llmprovider.h>
#include <llm/usageledger.h>
#include <session/session.h>
#include <task/task.h>

#include <QElapsedTimer>
#include <QMutex>
#include <QObject>
#include <QPointer>

#include <deque>
#include <memory>

namespace ks {

using SearchEvent = std::shared_ptr<const JournalEvent>; // as recorded, immutable

// What an engine works with; it owns none of it.
struct EngineSetup {
    const Task* task = nullptr;
    Session* session = nullptr;
    LlmRoleConfig plannerConfig, coderConfig;
    LlmProvider* planner = nullptr; // metered: each answer carries its cost
    LlmProvider* coder = nullptr;
    UsageLedger* ledger = nullptr;
    CandidateEvaluator* evaluator = nullptr;
    TargetInfo target;
};

// Runs one search (the paper's Algorithm 1, or evolve / greedy) as a sequence of steps, each
// decided from the state by planNextStep and recorded as events in the session's journal before
// it takes effect. Lives in a worker thread: LLM calls are asynchronous, evaluations block that
// thread only. Commands from a person are queued from any thread and applied between steps.
class SearchEngine : public QObject
{
    Q_OBJECT
public:
    SearchEngine(EngineSetup setup, SearchState state, QObject* parent = nullptr);
    ~SearchEngine() override;

    const SearchState& state() const { return m_state; } // the engine's thread only

    // Thread-safe: queue a command; it is checked and applied before the next step.
    void submit(const HumanCommand& command);

public slots:
    // Starts (or, with `resumed`, continues) the run.
    void start(bool resumed);

signals:
    void eventRecorded(const ks::SearchEvent& event);
    void llmText(const QString& role, const QString& delta);
    void commandRejected(const QString& command, const QString& why);
    // The run ended (budget, target, time, dollars, stop) or paused on a failure it cannot fix
    // alone (`error` set: an unreachable endpoint, a full disk).
    void finished(const QString& reason);
    void halted(const QString& error);

private:
    void scheduleStep();
    void step();
    bool record(EventBody event); // stamps seq, time and round, journals it, applies it, emits it
    void applyCommands();
    void applyCommand(const HumanCommand& c);
    void runPlanner(const Step& step);
    void runCoder(const Step& step);
    void evaluatePending();
    void finishAction(const Step& step);
    // The consequence of an answer already journaled as `exchange`.
    void handlePlannerAnswer(const Step& step, const LlmResult& r, const std::string& exchange);
    void handleCoderAnswer(const Step& step, const LlmResult& r, const std::string& exchange);
    // Uses an answer the journal holds without its consequence (a crash in between); false: none.
    bool answerFromJournal(const Step& step, const std::string& role);
    std::string recordExchange(
        const std::string& role, const Step& step, const QList<ChatMessage>& messages, const LlmResult& r);
    // An answer that could not be used because the endpoint failed: true when the run must halt.
    bool haltOnLlmError(const LlmError& e, const std::string& role);
    void halt(const std::string& why);
    void checkpoint();

    EngineSetup m_setup;
    SearchState m_state;
    PromptBuilder m_prompts;
    QMutex m_mutex;
    std::deque<HumanCommand> m_commands;
    QPointer<LlmCall> m_call;
    QElapsedTimer m_clock;
    double m_elapsedAtStart = 0.0;
    bool m_started = false, m_stepScheduled = false, m_halted = false, m_finishedEmitted = false;
    int m_stepsLeft = -1; // after a "step" command: steps to take before pausing again
    int m_eventsSinceCheckpoint = 0;
};

} // namespace ks

Q_DECLARE_METATYPE(ks::SearchEvent)
