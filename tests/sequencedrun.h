#pragma once

#include <llm/llmprovider.h>
#include <search/engine.h>

#include <QMutex>
#include <QObject>
#include <QTimer>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ks::test {

// Holds every LLM answer and every evaluation result of a search until it is released, and
// releases them one at a time, each only once the engine has recorded the one before, can start
// nothing more, and every operation it has out is held here. The order of completions is then chosen by the test, not
// by timing: the oldest outstanding operation first, or the newest.
class Sequencer : public QObject
{
    Q_OBJECT
public:
    enum class Order { Oldest, Newest };
    Sequencer(Order order, QObject* parent = nullptr);

    // Starts pumping for `engine` (created afterwards, in this thread).
    void attach(SearchEngine* engine);
    // An operation started; `awaits` is the event type that records it, `program` (evaluations) its
    // program hash. Thread-safe.
    int add(std::string awaits, std::string program, std::function<void()> release);
    void setReady(int id); // thread-safe
    int released() const { return m_released; }
    void releaseAll(); // every operation still held, at once (tear-down)

private:
    struct Op {
        int id = 0;
        std::string awaits, program;
        std::function<void()> release;
        bool ready = false;
        int batch = 0; // the pump that first saw it: launch order, up to the order within a batch
        std::string key; // the order within a batch: answers as sent, then evaluations by program
    };
    void pump();

    Order m_order;
    SearchEngine* m_engine = nullptr;
    QTimer m_timer;
    QMutex m_mutex;
    std::vector<Op> m_ops; // outstanding, in launch order
    int m_nextId = 0, m_answers = 0, m_batches = 0;
    std::optional<Op> m_waitingFor; // released, not recorded yet
    int m_released = 0;
};

// The scripted LLM (fakellm.h) whose answers wait for the sequencer.
class SequencedProvider : public LlmProvider
{
public:
    SequencedProvider(Sequencer& sequencer, std::string role, std::string mode = {});
    QString name() const override { return QStringLiteral("sequenced"); }
    LlmCall* send(const LlmRequest& request) override;

private:
    Sequencer& m_sequencer;
    std::string m_role, m_mode;
};

// A real evaluator whose results wait for the sequencer (evaluate() runs in the pool's thread).
class SequencedEvaluator : public CandidateEvaluator
{
public:
    SequencedEvaluator(Sequencer& sequencer, CandidateEvaluator& inner);
    Evaluation evaluate(const std::filesystem::path& source) override;
    std::string sourceSuffix() const override { return m_inner.sourceSuffix(); }
    std::string targetDescription() const override { return m_inner.targetDescription(); }

private:
    Sequencer& m_sequencer;
    CandidateEvaluator& m_inner;
};

} // namespace ks::test
