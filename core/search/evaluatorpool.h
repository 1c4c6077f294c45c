#pragma once

#include "candidateevaluator.h"

#include <QObject>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ks {

// One evaluator the search may use, as the journal names it ("gpu0", "ssh://box", or empty for
// the single local evaluator of a serial search, whose journal then looks as it always did).
struct EvaluatorSlot {
    std::string name;
    CandidateEvaluator* evaluator = nullptr; // not owned
};

// The outcome of one evaluation, delivered in the pool's thread.
struct EvaluationDone {
    std::string node;
    std::string worker; // the slot's name
    Evaluation evaluation;
    // The evaluator failed, not the candidate (CandidateEvaluator::unavailable): nothing is to be
    // recorded, and the slot is retired.
    std::optional<std::string> unavailable;
};

// What one evaluator does now (the window's Workers panel, the CLI).
struct EvaluatorActivity {
    std::string name;
    std::string node; // the node whose candidate it evaluates; empty: idle
    std::optional<std::string> retired; // why it takes no more candidates
    bool operator==(const EvaluatorActivity&) const = default;
};

// Runs evaluations on several evaluators at once, each in a thread of its own (evaluate() blocks
// for seconds to minutes), and reports each result as a queued signal in the thread the pool
// lives in, so that the engine records results one at a time, in the order they complete.
// An evaluator takes one candidate at a time; one that failed is retired and takes no more.
class EvaluatorPool : public QObject
{
    Q_OBJECT
public:
    explicit EvaluatorPool(std::vector<EvaluatorSlot> evaluators, QObject* parent = nullptr);
    ~EvaluatorPool() override; // waits for the evaluations in progress (each has a time limit)

    [[nodiscard]] int idle() const; // slots free to take a candidate now
    [[nodiscard]] int usable() const; // slots not retired
    [[nodiscard]] int size() const { return static_cast<int>(m_slots.size()); }
    [[nodiscard]] std::vector<EvaluatorActivity> activity() const;

    // Gives `source` to the first idle slot; false when none is idle.
    bool start(const std::string& node, const std::filesystem::path& source);

signals:
    void evaluated(const ks::EvaluationDone& done);

private:
    struct Worker {
        std::thread thread;
        bool busy = false;
        bool retired = false;
        std::string node; // while busy
        std::string why; // once retired
    };
    void finish(int slot, EvaluationDone done);

    std::vector<EvaluatorSlot> m_slots;
    std::vector<Worker> m_workers;
};

} // namespace ks

Q_DECLARE_METATYPE(ks::EvaluationDone)
