#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ks {

// One SLURM allocation for a whole search (`ksearch run --slurm PARTITION[,SALLOC OPTIONS]`):
// salloc reserves it once, without a shell, and each evaluation worker is a job step in it
// (`srun --jobid=J --ntasks=1 --exact ... ksearch worker`), so the search waits in the queue
// once, not once per worker, and a step that is preempted or cancelled is started again in the
// same allocation (WorkerClient restarts a lost worker once). The allocation is cancelled when
// this object goes.
class SlurmAllocation
{
public:
    struct Request {
        std::string spec; // "PARTITION" or "PARTITION,--gres=gpu:1,--time=120"
        int workers = 1; // tasks in the allocation: one per worker step
        std::chrono::seconds wait {600}; // for the allocation to be granted
    };
    // nullptr with `error` naming the partition and what salloc said.
    static std::unique_ptr<SlurmAllocation> start(const Request& request, std::string& error);
    ~SlurmAllocation(); // scancel

    [[nodiscard]] const std::string& jobId() const { return m_jobId; }
    // The shell command that starts one worker as a step of this allocation.
    [[nodiscard]] std::string workerCommand(const std::string& ksearch) const;

private:
    SlurmAllocation() = default;
    std::string m_jobId;
    std::vector<std::string> m_stepOptions; // options that also apply to each step (--gpus-per-task)
};

// "debug,--time=60" -> {"debug", {"--time=60"}}; no partition first: an empty one.
std::pair<std::string, std::vector<std::string>> parseSlurmSpec(const std::string& spec);

} // namespace ks
