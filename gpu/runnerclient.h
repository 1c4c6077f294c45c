#pragma once

#include "compiler.h"
#include "subprocess.h"

#include <task/abiheader.h>
#include <task/hosttensor.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace ks {

// One ks_run call for the runner: inputs by value, outputs sized (their contents are ignored:
// the runner poisons them), the var-axis values and the workspace size.
struct RunnerCall {
    std::string id;
    std::vector<HostTensor> inputs; // the correctness set
    std::vector<std::vector<HostTensor>> timingInputs; // benchmark only: sets the timing loop rotates through
    std::vector<HostTensor> outputs;
    std::map<std::string, std::int64_t> axes;
    std::int64_t workspaceBytes = 0;
    std::uint64_t poisonSeed = 0;
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
    std::filesystem::path jobDir; // created; holds job.json, the buffers and result.jsonl
    // When set, input files live here, are written once per (call id, set, input) and reused by
    // later jobs: a search evaluates many candidates on the same inputs.
    std::filesystem::path sharedInputDir;
    // When set, output files live here under stable names, rewritten in place by every job.
    std::filesystem::path sharedOutputDir;
    std::chrono::milliseconds timeout {std::chrono::seconds(60)};
    RunnerBenchSettings bench;
    bool measureDevice = false; // the runner measures copy bandwidth first (about 0.2 s)
    std::string cudaVisibleDevices; // when set, the runner sees only this GPU (CUDA_VISIBLE_DEVICES)
};

struct BenchMeasurement {
    bool present = false;
    std::vector<double> samplesMicros;
    double medianMicros = 0, meanMicros = 0, stdevMicros = 0, p25Micros = 0, p75Micros = 0, minMicros = 0;
    int sideWorkSamples = 0; // samples where the device stayed busy after the stream's events
    int warmupCalls = 0;
    double launchOverheadMicros = 0;
    double loopSeconds = 0;
    std::string stop; // noise | time | max_samples
    bool inputsUnchanged = true;
};

struct RunnerCallOutcome {
    enum class Status { Ok, KernelError, DeviceError, HarnessError, Crashed, TimedOut, NotRun };
    Status status = Status::NotRun;
    std::string message;
    int returnCode = 0;
    bool inputsUnchanged = true;
    double wallMicros = 0.0; // the correctness call alone
    double totalSeconds = 0.0; // everything the runner did for this call
    std::vector<HostTensor> outputs; // filled for Ok calls
    BenchMeasurement bench;
    std::vector<std::vector<HostTensor>> timingOutputs; // outputs of the last timed call on each timing set
    // Then each set's buffers refilled with the next set's inputs (the first call's, with one set).
    std::vector<std::vector<HostTensor>> swappedOutputs;
};

struct RunnerEnvironment {
    bool networkIsolated = false;
    std::string device;
    std::size_t l2Bytes = 0;
    double copyBandwidthGBs = 0; // measured read + write bandwidth of a device copy
};

struct RunnerJobResult {
    SubprocessResult process;
    // Where the time went, in seconds: writing the job (and new input files), the runner process
    // from start to exit, its start-up up to a ready backend, and reading its results back.
    double writeSeconds = 0.0, processSeconds = 0.0, startupSeconds = 0.0, readSeconds = 0.0;
    std::string loadError; // the library could not be loaded or lacks ks_run
    RunnerEnvironment environment;
    std::vector<RunnerCallOutcome> calls; // one per RunnerCall, in order
};

std::string runnerStatusName(RunnerCallOutcome::Status s);

// The ksearch-runner executable: $KSEARCH_RUNNER, else the one next to this executable.
std::filesystem::path runnerPath();

// Writes the job, runs a fresh ksearch-runner on it with a scrubbed environment and a hard time
// limit, and reads back what each call produced. A crash or a hang becomes the outcome of the
// call that was running; calls after it are NotRun.
RunnerJobResult runRunnerJob(const RunnerJob& job);

} // namespace ks
