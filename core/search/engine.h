#pragma once

#include "candidateevaluator.h"
#include "evaluatorpool.h"
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
#include <map>
#include <memory>
#include <set>

namespace ks {

using SearchEvent = std::shared_ptr<const JournalEvent>; // as recorded, immutable

// The work a running search has out: what each evaluator does, the nodes whose program the code
// policy is writing, whether the world model is thinking. Not journaled: it is the present.
struct EngineActivity {
    std::vector<EvaluatorActivity> evaluators;
    std::vector<std::string> coding;
    bool planner = false;
    int lanes = 1;
    bool operator==(const EngineActivity&) const = default;
};

// What an engine works with; it owns none of it.
struct EngineSetup {
    const Task* task = nullptr;
    Session* session = nullptr;
    LlmRoleConfig plannerConfig, coderConfig;
    LlmProvider* planner = nullptr; // metered: each answer carries its cost
    LlmProvider* coder = nullptr;
    UsageLedger* ledger = nullptr;
    std::vector<EvaluatorSlot> evaluators; // at least one
    int lanes = 0; // actions at once (strategy.h's InFlight); 0: one per evaluator
    TargetInfo target;
};

// Runs one search (the paper's Algorithm 1, or evolve / greedy) as a sequence of steps, each
// decided from the state and the work in flight by planNextStep and recorded as events in the
// session's journal before it takes effect. With P lanes, up to P actions are in progress and
// their LLM calls and evaluations overlap; their results are recorded one at a time as they
// complete. Lives in a worker thread: LLM calls are asynchronous and evaluations run in the
// pool's threads. Commands from a person are queued from any thread and applied between steps.
class SearchEngine : public QObject
{
    Q_OBJECT
public:
    SearchEngine(EngineSetup setup, SearchState state, QObject* parent = nullptr);
    ~SearchEngine() override;

    const SearchState& state() const { return m_state; } // the engine's thread only
    // A step is queued: the engine has more to decide before it waits for an answer, an
    // evaluation or a command (the engine's thread only).
    [[nodiscard]] bool stepPending() const { return m_stepScheduled; }
    // The LLM calls and evaluations out now (the engine's thread only).
    [[nodiscard]] InFlight inFlight() const;

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
    // An evaluator failed and takes no more candidates; the search goes on with the others.
    void evaluatorLost(const QString& name, const QString& why);
    // The work out changed (a call or an evaluation started or ended).
    void activityChanged(const ks::EngineActivity& activity);

private:
    void scheduleStep();
    void step();
    bool record(EventBody event); // stamps seq, time and round, journals it, applies it, emits it
    void applyCommands();
    void applyCommand(const HumanCommand& c);
    void runPlanner(const Step& step);
    void runCoder(const Step& step);
    void evaluate(const Step& step);
    void recordEvaluation(const EvaluationDone& done);
    // A HARNESS_ERROR: nothing is recorded or counted; the candidate stays pending for another
    // try, or the run halts when it already had one.
    void harnessFailed(const PendingCandidate& candidate, const Evaluation& evaluation);
    void cancelCalls();
    void publishActivity();
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
    EvaluatorPool* m_pool; // a child: it moves to the engine's thread with it
    int m_lanes = 1;
    QPointer<LlmCall> m_plannerCall;
    std::map<std::string, QPointer<LlmCall>> m_coderCalls; // by node
    std::set<std::string> m_evaluating; // nodes whose candidate the pool has
    // HARNESS_ERROR results per node in this run: one is evaluated again, a second halts the run.
    std::map<std::string, int> m_harnessFailures;
    EngineActivity m_published;
    QElapsedTimer m_clock;
    double m_elapsedAtStart = 0.0;
    bool m_started = false, m_stepScheduled = false, m_halted = false, m_finishedEmitted = false;
    int m_stepsLeft = -1; // after a "step" command: steps to take before pausing again
    int m_eventsSinceCheckpoint = 0;
};

} // namespace ks

Q_DECLARE_METATYPE(ks::SearchEvent)
Q_DECLARE_METATYPE(ks::EngineActivity)
