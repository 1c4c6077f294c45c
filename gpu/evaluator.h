#pragma once

#include "compilecache.h"
#include "compiler.h"
#include "pythonruntime.h"
#include "runnerclient.h"

#include <search/candidateevaluator.h>
#include <task/evaluation.h>
#include <task/hosttensor.h>
#include <task/language.h>
#include <task/sanitizerreport.h>
#include <task/task.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// One preparation of a task (inputs, reference outputs, the baseline's timing) shared by the
// evaluators of one device: the first to evaluate prepares, the others adopt it instead of
// repeating it (and wait for it meanwhile). makeSharedPreparation() gives a new, empty one.
class SharedPreparation;
std::shared_ptr<SharedPreparation> makeSharedPreparation();

struct EvaluatorSettings {
    Backend backend = Backend::Host;
    std::string cudaArch = "90a";
    std::uint64_t seed = 0; // the per-search secret for inputs; 0: drawn at random
    std::filesystem::path workDir; // scratch: runner jobs and input files
    std::filesystem::path cacheDir; // compile cache; empty: defaultCompileCacheDir()
    std::vector<std::string> workloadIds; // empty: every workload of the task
    RunnerBenchSettings bench {true, 10, 1000, 0.005, 1.0, 0.025};
    int timingSets = 2; // input sets the timing loop rotates through
    std::size_t maxTimingBytes = std::size_t {1} << 30; // inputs of all timing sets of one workload
    std::chrono::milliseconds compileTimeout {std::chrono::minutes(3)};
    std::chrono::milliseconds runTimeout {0}; // candidate's runner; 0: derived from the workloads
    double floorSlack = 0.8; // reject latencies below this fraction of the roofline floor
    std::size_t gpuReferenceBytes = std::size_t {16} << 20; // larger workloads use reference.cu on the GPU
    std::vector<std::string> extraFlags; // compiler flags for candidates
    std::string cudaVisibleDevices; // the GPU the runner uses (CUDA_VISIBLE_DEVICES); empty: the first
    bool writeInputFiles = false; // runner jobs also get their inputs as files (for replaying a kept job)
    std::optional<Language> language; // of candidates; nullopt: the backend's compiled language
    std::string python = defaultPythonInterpreter(); // runs python and triton candidates
    // Evaluators of the same task, backend and device only; null: this evaluator prepares alone.
    std::shared_ptr<SharedPreparation> preparation;
    // Start each candidate's runner ahead (while the candidate compiles, after the previous one
    // ran), once the task is prepared: its exec, imports and device context leave the candidate's
    // clock. It holds a device context while it waits; never on a GPU in an exclusive compute
    // mode. false: each runner starts when its candidate is ready.
    bool prestartRunners = true;
    // Limits of a host runner's process, set before it loads the candidate (docs/evaluation.md,
    // "What the candidate may touch"): the largest file it may write, and how much memory (data
    // mappings) it may add. 0: the runner's defaults, 1 GiB and half of its machine's memory.
    std::uint64_t runnerFileLimitBytes = 0;
    std::uint64_t runnerMemoryLimitBytes = 0;
    // The processes and threads a host runner's candidate may have at once (the PID namespace's
    // pid_max, Linux 6.14 or later); 0: the runner's default, 1024.
    std::uint64_t runnerProcessLimit = 0;
    // What a CUDA candidate may allocate on the device itself beyond the buffers and workspace it
    // is given (the runner holds the rest while it runs); 0: the runner's default, 1 GiB.
    std::uint64_t gpuMemoryBudgetBytes = 0;
    // false: candidates run without namespaces or limits, to debug one (docs/security.md); every
    // evaluation records that it was off, and ksearch says so.
    bool confineCandidates = true;
    // A CUDA candidate that crashed (RUNTIME_ERROR) or computed wrong results
    // (INCORRECT_NUMERICAL) is run once more under this compute-sanitizer tool, and its report
    // kept with the evaluation (Evaluation::sanitizer), so that the code policy's debug prompt
    // shows what the tool found. nullopt: not. Costs a run under the tool (10-100x slower
    // kernels) per such failure, none for candidates that pass.
    std::optional<SanitizerTool> sanitizeFailures;
};

// Compiles, verifies and benchmarks candidates of one task. The expected outputs and the
// baseline's latencies are computed once, on first use, and reused for every later candidate
// (same secret seed, same inputs). Blocking: use it from a worker thread. Runner jobs that
// execute kernels take a per-device lock, so evaluators on several threads share one GPU queue.
class Evaluator : public CandidateEvaluator
{
public:
    Evaluator(Task task, EvaluatorSettings settings);
    ~Evaluator() override;

    Evaluation evaluate(const std::filesystem::path& source) override;
    [[nodiscard]] std::string sourceSuffix() const override { return languageSuffix(m_language); }
    [[nodiscard]] Language language() const { return m_language; }
    // How many candidates ran in a runner started ahead of them (EvaluatorSettings::prestartRunners):
    // every one but the first, unless a runner died or the settings keep them from starting ahead.
    [[nodiscard]] int runsStartedAhead() const { return m_runsStartedAhead; }
    // The device's name once environmentProblem() or an evaluation has seen it.
    [[nodiscard]] std::string targetDescription() const override;
    [[nodiscard]] std::string compilerDescription() const;

    // Why the environment cannot evaluate on this backend (no CUDA device, no compiler), if so.
    std::optional<std::string> environmentProblem();
    // One call of a CUDA candidate, on the first input set of the first (selected) workload, under
    // compute-sanitizer's `tool` (issue #15 point 7): compiled and prepared as for evaluate(), not
    // timed, never scored. The report says why when the tool could not run or finish.
    SanitizerReport sanitize(const std::filesystem::path& source, SanitizerTool tool);
    [[nodiscard]] const Task& task() const { return m_task; }
    [[nodiscard]] const EvaluatorSettings& settings() const { return m_settings; }

private:
    friend class SharedPreparation;
    struct WorkloadData;
    bool prepare(Evaluation& e, const CompileCache::Result* reference, const CompileCache::Result* gpuReference,
        const CompileCache::Result* baseline);
    [[nodiscard]] RunnerJob makeJob(
        const std::filesystem::path& library, const std::string& name, bool bench, bool python = false) const;
    CompileCache::Result checkPython(const CompileRequest& request);
    // What is timed as the baseline: the backend's baseline, else its compiled reference, else
    // reference.py; nullopt when the task has none of them.
    [[nodiscard]] std::optional<std::filesystem::path> baselineSource() const;
    // Whether candidates, the reference or the baseline run in the Python runner.
    [[nodiscard]] bool needsPython() const;
    // Writes the Python runner and asks the interpreter what it has, once; the problem if any.
    std::optional<std::string> preparePython();
    std::optional<std::string> m_pythonProblem; // the last checkPython()'s environment failure
    void judge(Evaluation& e, const RunnerJobResult& run) const;
    // evaluate()'s run when sanitize() called it: the call under the tool, into m_sanitized.
    void runSanitized(const std::filesystem::path& library);
    // sanitizeFailures: the report of a failed CUDA candidate, into `e` (nothing when the tool is
    // missing: said once in the log).
    void sanitizeFailure(const std::filesystem::path& source, Evaluation& e);
    std::optional<SanitizerTool> m_sanitizeWith;
    std::filesystem::path m_sanitizerProgram;
    std::optional<SanitizerReport> m_sanitized;
    bool m_sanitizerMissingSaid = false;
    int m_runsStartedAhead = 0;
    bool m_sanitizeConfined = false; // sanitizeFailure's run: confined but for the network
    std::string m_sanitizeWorkload; // the workload to sanitize; empty: the first shown one
    // The runner the next candidate will use, started now unless it runs or is disabled.
    void startNextRunner();
    bool adoptPreparation(); // the shared preparation's state, once someone made it
    void publishPreparation();

    Task m_task;
    EvaluatorSettings m_settings;
    Language m_language;
    PythonRuntime m_python; // for python and triton candidates; its script is written on first use
    std::string m_pythonVersions; // "torch 2.11.0, triton 3.6.0" once probed
    CompileCache m_cache;
    std::vector<std::shared_ptr<WorkloadData>> m_workloads; // shared with SharedPreparation's adopters
    // The baseline's and candidates' outputs: mapped once per search, rewritten by each runner.
    std::shared_ptr<SharedBufferPool> m_outputBuffers = std::make_shared<SharedBufferPool>();
    bool m_prepared = false;
    std::string m_prepareError;
    double m_inputSeconds = 0.0, m_referenceSeconds = 0.0, m_baselineSeconds = 0.0;
    double m_copyBandwidthGBs = 0.0;
    std::string m_device;
    int m_jobCounter = 0;
    std::unique_ptr<PrestartedRunner> m_nextRunner;
    bool m_exclusiveDevice = false; // the probe found the GPU in an exclusive compute mode
};

// Geometric mean of positive values (0 when any is not positive).
double geometricMean(const std::vector<double>& values);

} // namespace ks
