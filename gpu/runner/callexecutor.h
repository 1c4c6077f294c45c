#pragma once

#include "backend.h"
#include "job.h"

namespace ksr {

// Runs one call of a job: the correctness call on the first input set, then, when the job asks
// for it, a second correctness call with other poison and the benchmark loop over the timing
// sets. Every call's return code and launch errors are checked. Returns the call's result line.
// While a CUDA call runs, the runner holds the device's memory but the call's buffers (with some
// slack) and this budget for the candidate's own allocations (Job::gpuMemoryBudgetBytes, 1 GiB by
// default); 0 where there is none: the host backend, or confinement turned off.
CallLine executeCall(const Job& job, const Call& call, Backend& backend, const Candidate& candidate);
std::uint64_t gpuMemoryBudget(const Job& job);

} // namespace ksr
