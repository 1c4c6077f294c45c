#pragma once

#include "evaluator.h"
#include "slurmallocation.h"
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
    // Local CUDA devices, one evaluator each ("0", "2", ...); empty: cudaDevice alone.
    std::vector<std::string> gpus;
    // Evaluators per local device (the CPU, or each GPU): their runs take turns on the device, their
    // compiles overlap with those runs. -1: one, or none when only workers are given.
    int localEvaluators = -1;
    std::vector<std::string> extraFlags; // for candidates' compiles
    std::string python; // the interpreter for python and triton candidates; empty: the default
    // Evaluate in `ksearch worker`s, each started by one of these shell commands, beside the local
    // evaluators of `gpus` / `localEvaluators` (none unless those are set), naming the task as the
    // workers find it (empty: the task's name).
    std::vector<std::string> workerCommands;
    std::string workerTask;
    int lanes = 0; // actions in progress at once; 0: one per evaluator
    // One SLURM allocation for the search ("PARTITION[,SALLOC OPTIONS]"; empty: none) with this many
    // worker steps, each running the ksearch at `slurmKsearch` (as the cluster's nodes see it).
    std::string slurm;
    int slurmWorkers = 1;
    std::string slurmKsearch = "ksearch";
    // false: this machine's evaluators run candidates unconfined (EvaluatorSettings::confineCandidates);
    // workers confine theirs whatever the caller says.
    bool confineCandidates = true;
    // Run this machine's failed CUDA candidates again under compute-sanitizer's tool, for the code
    // policy's debug prompt (EvaluatorSettings::sanitizeFailures); nullopt: not.
    std::optional<SanitizerTool> sanitizeFailures;
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
    // The evaluators the engine uses, and why any asked for could not be started (the search
    // runs with the others).
    const std::vector<EvaluatorSlot>& evaluators() const { return m_slots; }
    const std::vector<std::string>& unavailableEvaluators() const { return m_unavailable; }

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
    // Build the evaluators RunOptions asks for; false with `error` naming the one that failed.
    bool buildEvaluators(const RunOptions& options, const EvaluatorSettings& local, std::string& error);

    std::unique_ptr<SlurmAllocation> m_allocation; // outlives the workers that are its steps
    std::vector<std::unique_ptr<Evaluator>> m_evaluators; // evaluations here, and
    std::vector<std::unique_ptr<worker::WorkerClient>> m_workers; // in worker processes
    std::vector<EvaluatorSlot> m_slots; // all of them, as the engine sees them
    std::vector<std::string> m_unavailable;
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
