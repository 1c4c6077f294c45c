#pragma once

#include "evaluator.h"
#include "workerclient.h"

#include <llm/meteredprovider.h>
#include <llm/pricetable.h>
#include <llm/usageledger.h>
#include <search/engine.h>
#include <session/session.h>

#include <QObject>
#include <QTemporaryDir>
#include <QThread>

#include <memory>
#include <optional>
#include <string>

namespace ks {

struct RunOptions {
    std::optional<PriceTable> prices; // default: the built-in table with the user's overrides
    double benchSeconds = 1.0; // the evaluator's timing loop cap per workload
    std::chrono::milliseconds runTimeout {0}; // a candidate's process; 0: derived from the workloads
    std::filesystem::path compileCache; // empty: the default
    std::string cudaDevice; // CUDA_VISIBLE_DEVICES for the runner; empty: the first GPU
    std::vector<std::string> extraFlags; // for candidates' compiles
    std::string python; // the interpreter for python and triton candidates; empty: the default
    // Evaluate in a `ksearch worker` started by this shell command instead of here (empty: here),
    // naming the task as the worker finds it (empty: the task's name).
    std::string workerCommand;
    std::string workerTask;
};

// Everything one search needs, wired together: the session folder, the task, the evaluator, the
// two LLM providers (metered, sharing one ledger with the dollar cap) and the engine. Used by
// `ksearch run` (in the calling thread) and by the window (in a worker thread).
class SearchRun
{
public:
    // A new session in `dir` (which must not hold one yet).
    static std::unique_ptr<SearchRun> create(
        const std::filesystem::path& dir, const SessionConfig& config, const RunOptions& options, std::string& error);
    // The session in `dir`, its state rebuilt from the journal.
    static std::unique_ptr<SearchRun> resume(const std::filesystem::path& dir, const RunOptions& options,
        std::string& error, JournalRecovery* recovery = nullptr);
    ~SearchRun();

    SearchEngine& engine() { return *m_engine; }
    Session& session() { return *m_session; }
    const Task& task() const { return *m_task; }
    UsageLedger& ledger() { return m_ledger; }
    // The providers as configured (not metered): the window answers a manual provider's questions.
    LlmProvider* plannerProvider() { return m_plannerRaw.get(); }
    LlmProvider* coderProvider() { return m_coderRaw.get(); }
    bool resumed() const { return m_resumed; }
    // Why the evaluator cannot run here (no GPU, no compiler), if so.
    std::optional<std::string> environmentProblem();

    // Starts the engine in the calling thread, or in a thread of its own.
    void start(bool ownThread);
    // Stops the worker thread (after the engine's current step) and waits for it.
    void shutdown();

private:
    SearchRun() = default;
    bool build(std::unique_ptr<Session> session, SearchState state, const RunOptions& options, std::string& error);

    std::unique_ptr<Session> m_session;
    std::unique_ptr<Task> m_task;
    std::unique_ptr<QTemporaryDir> m_scratch;
    std::unique_ptr<Evaluator> m_evaluator; // evaluations here, or
    std::unique_ptr<worker::WorkerClient> m_worker; // in a worker process
    std::string m_workerError; // why the worker could not be started
    PriceTable m_prices;
    UsageLedger m_ledger;
    std::unique_ptr<LlmProvider> m_plannerRaw, m_coderRaw;
    std::unique_ptr<MeteredProvider> m_planner, m_coder;
    std::unique_ptr<SearchEngine> m_engine;
    std::unique_ptr<QThread> m_thread;
    std::unique_ptr<QObject> m_threadContext; // lives in m_thread: tears down what lives there
    bool m_resumed = false;
};

} // namespace ks
