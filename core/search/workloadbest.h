#pragma once

#include "searchstate.h"

#include <optional>
#include <string>
#include <vector>

namespace ks {

// Which attempt is fastest on one workload, against the best single kernel (the attempt with the
// best J). The paper's weakness: one scalar J lets a search favour some workloads, so the best
// kernel overall is often not the best on each.
struct WorkloadBest {
    std::string workload; // its uuid
    bool scored = true; // counts in J
    int attempt = -1; // the fastest correct attempt on it; -1: none passed it
    double latencyMicros = 0.0, speedup = 0.0; // that attempt's
    double overallLatencyMicros = 0.0, overallSpeedup = 0.0; // the best single kernel's, 0 if it failed
    // overallLatency / latency: how much faster the workload's own best is (1: the best kernel is it).
    double gain = 0.0;
    // The fastest attempt's upper quartile reaches the best kernel's lower quartile: the gain is
    // within the timing spread (noise), not shown to be real.
    bool withinSpread = false;
};

struct WorkloadBestTable {
    std::optional<int> overall; // the best single kernel (attempt index)
    std::vector<WorkloadBest> rows; // the best kernel's workloads, in its order
    // J a kernel would score that ran each scored workload's best attempt at its measured latency,
    // with nothing paid for choosing: an upper bound for a dispatching kernel, not a measurement.
    double dispatchBoundScore = 0.0;
};

// Only passing attempts count, and only their timed workloads; a workload is matched by uuid.
WorkloadBestTable bestPerWorkload(const SearchState& state);

} // namespace ks
