#pragma once

#include "backend.h"
#include "job.h"

namespace ksr {

// Runs one call of a job: the correctness call on the first input set, then, when the job asks
// for it, the benchmark loop over the timing sets. Returns the call's result line.
CallLine executeCall(const Job& job, const Call& call, Backend& backend, KsRunFn fn);

} // namespace ksr
