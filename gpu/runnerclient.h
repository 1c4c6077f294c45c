#pragma once

#include "compiler.h"
#include "prestartedrunner.h"
#include "pythonruntime.h"
#include "runner/protocol.h"
#include "sharedmemory.h"
#include "subprocess.h"

#include <task/abiheader.h>
#include <task/hosttensor.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// One ks_run call for the runner: inputs in sealed shared memory (shared by every job that
// uses them), outputs by name, dtype and shape (their data, if any, is ignored: the runner
// poisons its own buffers), the var-axis values and the workspace size.
struct RunnerCall {
    std::string id;
    std::vector<SharedTensor> inputs; // the correctness set
    std::vector<std::vector<SharedTensor>> timingInputs; // benchmark only: sets the timing loop rotates through
    std::vector<HostTensor> outputs;
    std::map<std::string, std::int64_t> axes;
    std::int64_t workspaceBytes = 0;
    std::uint64_t poisonSeed = 0;
    // A second correctness call on the same inputs with other poison in the outputs and workspace
    // (RunnerCallOutcome::repeatOutputs); candidates get one, references and baselines need none.
    bool repeat = false;
};

struct RunnerBenchSettings {
    bool enabled = false;
    int minSamples = 10;
    int maxSamples = 1000;
    double maxNoise = 0.005; // relative standard error of the mean at which sampling stops
    double maxSeconds = 1.0; // timed-loop wall time per workload
    double warmupSeconds = 0.025;
};

struct RunnerJob {
    Backend backend = Backend::Host;
    std::filesystem::path library;
    AbiLayout layout;
    std::vector<RunnerCall> calls;
    std::filesystem::path jobDir; // created; holds job.json and result.jsonl
    // Where the runner writes outputs, by (call id, set, name). Set it to keep the buffers mapped
    // from one job to the next (a search); empty: buffers of this job alone.
    std::shared_ptr<SharedBufferPool> outputBuffers;
    // Also write each input to a file in jobDir, named in job.json next to its descriptor, so
    // other tools can replay the job (bench/independent_timer.py); the runner ignores them.
    bool writeInputFiles = false;
    std::chrono::milliseconds timeout {std::chrono::seconds(60)};
    RunnerBenchSettings bench;
    bool measureDevice = false; // the runner measures copy bandwidth first (about 0.2 s)
    bool allowTf32 = false; // the task's precision rule (Definition::precision)
    std::string cudaVisibleDevices; // when set, the runner sees only this GPU (CUDA_VISIBLE_DEVICES)
    // Python candidates: the runtime whose runner replaces ksearch-runner (same job, same result
    // lines); the library is then the candidate's .py file. nullopt for compiled libraries.
    std::optional<PythonRuntime> python;
    std::vector<std::string> wrapper; // RunnerKind::wrapper: a tool the runner runs under
    bool wrapperConfined = false; // RunnerKind::wrapperConfined
    // A host runner's limits on its own process (protocol.h, Job::fileLimitBytes and
    // memoryLimitBytes); 0: the runner's defaults.
    std::uint64_t fileLimitBytes = 0;
    std::uint64_t memoryLimitBytes = 0;
    std::uint64_t processLimit = 0; // Job::processLimit: 0, the runner's default
    std::uint64_t gpuMemoryBudgetBytes = 0; // Job::gpuMemoryBudgetBytes: 0, the runner's default
    std::vector<std::filesystem::path> hiddenPaths; // Job::hiddenPaths
    bool confine = true; // false: a person turned confinement off (Job::confine)
};

// What the runner reported on a call's timing loop (protocol.h's BenchReport), when it ran.
struct BenchMeasurement : ksr::BenchReport {
    bool present = false;
};

struct RunnerCallOutcome {
    enum class Status { Ok, KernelError, DeviceError, HarnessError, Crashed, TimedOut, NotRun };
    Status status = Status::NotRun;
    std::string message;
    int returnCode = 0;
    bool inputsUnchanged = true;
    double wallMicros = 0.0; // the correctness call alone
    double totalSeconds = 0.0; // everything the runner did for this call
    std::map<std::string, double> untimedSeconds; // protocol.h's CallLine::untimedSeconds
    std::vector<std::string> loadedLibraries; // protocol.h's CallLine::loadedLibraries
    // Filled for Ok calls; in the job's output buffers, so valid until the next job on that pool.
    std::vector<SharedTensor> outputs;
    // Of the second correctness call, when asked for and its results were not the first call's bit
    // for bit (the runner compares on the device); empty otherwise.
    std::vector<SharedTensor> repeatOutputs;
    BenchMeasurement bench;
    std::vector<std::vector<SharedTensor>> timingOutputs; // outputs of the last timed call on each timing set
    // Then each set's buffers refilled with the next set's inputs (the first call's, with one set).
    std::vector<std::vector<SharedTensor>> swappedOutputs;
};

struct RunnerEnvironment {
    bool networkIsolated = false;
    std::string device;
    std::size_t l2Bytes = 0;
    double copyBandwidthGBs = 0; // measured read + write bandwidth of a device copy
    // How the candidate was confined (protocol.h's EnvironmentLine).
    bool processesContained = false;
    bool filesystemConfined = false;
    std::uint64_t fileLimitBytes = 0, memoryLimitBytes = 0, processLimit = 0;
    bool confinementOff = false;
    std::uint64_t gpuMemoryBudgetBytes = 0; // 0: none (or a runner without a GPU)
};

struct RunnerJobResult {
    SubprocessResult process; // no exit status while `exiting` holds the runner
    // Where the time went, in seconds: writing the job (and new input files), the runner process
    // from the handoff to its last result (or its end), what of its start-up the job waited for
    // (none when the runner was ready before), and reading its results back.
    double writeSeconds = 0.0, processSeconds = 0.0, startupSeconds = 0.0, readSeconds = 0.0;
    // Why the harness failed before the library was loaded (the buffers could not be handed over,
    // the runner could not start, or it ended before its environment line: no GPU, no interpreter),
    // if it did. Trustworthy because no code of the candidate's had run; a failure the runner
    // reports later comes from a process the candidate shares, so it stays the candidate's.
    std::string harnessFailure;
    // A runner that wrote every result and is still exiting (its context going down). Whoever holds
    // it lets it finish() before the device's next job; dropping it kills and reaps it.
    std::unique_ptr<PrestartedRunner> exiting;
    std::string loadError; // the library could not be loaded or lacks ks_run
    bool startedAhead = false; // the job went to the runner started ahead for it
    RunnerEnvironment environment;
    std::vector<RunnerCallOutcome> calls; // one per RunnerCall, in order
};

std::string runnerStatusName(RunnerCallOutcome::Status s);

// The ksearch-runner executable: $KSEARCH_RUNNER, else the one next to this executable.
std::filesystem::path runnerPath();

// A library of ksearch-runner's that the Python runner loads (ctypes): $`variable`, else `file`
// next to ksearch-runner (a build), else in ../lib/ksearch from it (an installation); empty when
// none is there. libksearch_spans.so (KSEARCH_SPANS_LIBRARY; none in a build without CUPTI: the
// Python runner then has only the host-clock check) and libksearch_confine.so
// (KSEARCH_CONFINE_LIBRARY; without it a Python candidate is confined to no network only).
std::filesystem::path runnerLibraryPath(const char* variable, const char* file);

// The runner process a job needs.
RunnerKind runnerKind(const RunnerJob& job);

// Writes the job, hands it to a fresh runner (`runner` when it was started ahead for a job of
// this kind, else one started now) with a scrubbed environment and a hard time limit from the
// handoff, and reads back what each call produced. A crash or a hang becomes the outcome of the
// call that was running; calls after it are NotRun. A runner that finished its job is not waited
// for: it comes back in `exiting`.
RunnerJobResult runRunnerJob(const RunnerJob& job, std::unique_ptr<PrestartedRunner> runner = nullptr);

} // namespace ks
