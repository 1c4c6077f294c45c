#pragma once

// What the parts of the Evaluator share (evaluator.cpp, evaluatorprepare.cpp,
// evaluatorjudge.cpp): a prepared workload, and how a job is run and a call's outcome read.
// Internal to ksearch_gpu.

#include "evaluator.h"
#include "prestartedrunner.h"
#include "runnerclient.h"
#include "sharedmemory.h"

#include <task/hosttensor.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ks {

struct Evaluator::WorkloadData {
    const Workload* workload = nullptr;
    std::vector<std::vector<SharedTensor>> inputSets; // [0]: correctness; [1..]: timing rotation
    // Per input set: the reference runner's outputs, in shared memory no later job writes.
    std::vector<std::vector<SharedTensor>> expected;
    std::vector<HostTensor> outputTemplate; // names, dtypes and shapes; no data
    std::int64_t workspaceBytes = 0;
    double bytes = 0, flops = 0;
    bool gpuReference = false;
    double baselineMicros = 0.0;
};

class SharedPreparation
{
public:
    std::mutex mutex; // held by the evaluator that prepares, so that the others wait for it
    bool ready = false;
    Task task; // the copy the shared workloads point into
    std::vector<std::shared_ptr<Evaluator::WorkloadData>> workloads;
    double inputSeconds = 0.0, referenceSeconds = 0.0, baselineSeconds = 0.0, copyBandwidthGBs = 0.0;
    std::string device;
};

namespace evaluatordetail {

// Runs a job when its device is free; `waited` grows by the time spent queueing for it (another
// evaluator of the same device was timing), `exitWait` by the time the runners of earlier jobs
// took to end. The runner of this job, once it has reported, is left exiting on the queue.
RunnerJobResult runOnDevice(
    const RunnerJob& job, double& waited, double& exitWait, std::unique_ptr<PrestartedRunner> runner = nullptr);

// The verdict of a runner outcome that did not complete normally, or nullopt when it did.
std::optional<std::pair<Verdict, std::string>> failureOf(const RunnerCallOutcome& o);

bool isPythonFile(const std::filesystem::path& file);

// A workload's id as logs show it: its first 8 characters.
std::string shortId(const std::string& id);

} // namespace evaluatordetail

} // namespace ks
