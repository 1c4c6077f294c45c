#pragma once

#include "backend.h"
#include "job.h"

namespace ksr {

// Runs one call of a job: the correctness call on the first input set, then, when the job asks
// for it, a second correctness call with other poison and the benchmark loop over the timing
// sets. Every call's return code and launch errors are checked. Returns the call's result line.
CallLine executeCall(const Job& job, const Call& call, Backend& backend, const Candidate& candidate);

} // namespace ksr
