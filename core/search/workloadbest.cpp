#include "workloadbest.h"

#include <cmath>

namespace ks {

WorkloadBestTable bestPerWorkload(const SearchState& state)
{
    WorkloadBestTable table;
    table.overall = state.bestAttempt();
    if (!table.overall)
        return table;
    const Attempt& overall = *state.tree.attempt(*table.overall);
    double logBaseline = 0.0;
    double logBest = 0.0;
    int scored = 0;
    for (const WorkloadEvaluation& o : overall.evaluation.workloads) {
        WorkloadBest row;
        row.workload = o.id;
        row.scored = o.scored;
        if (o.status == Verdict::Passed && o.latencyMicros > 0) {
            row.overallLatencyMicros = o.latencyMicros;
            row.overallSpeedup = o.speedup;
        }
        double fastestP75 = 0.0;
        const double baseline = o.baselineLatencyMicros; // timed once per search: the same for every attempt
        for (const Attempt& a : state.tree.attempts()) {
            if (!a.passed())
                continue;
            for (const WorkloadEvaluation& w : a.evaluation.workloads)
                if (w.id == o.id && w.status == Verdict::Passed && w.latencyMicros > 0
                    && (row.attempt < 0 || w.latencyMicros < row.latencyMicros)) {
                    row.attempt = a.index;
                    row.latencyMicros = w.latencyMicros;
                    row.speedup = w.speedup;
                    fastestP75 = w.p75Micros;
                }
        }
        if (row.attempt >= 0 && row.overallLatencyMicros > 0) {
            row.gain = row.overallLatencyMicros / row.latencyMicros;
            row.withinSpread = fastestP75 > 0 && o.p25Micros > 0 && fastestP75 >= o.p25Micros;
        }
        if (row.scored && row.attempt >= 0 && baseline > 0) {
            logBaseline += std::log(baseline);
            logBest += std::log(row.latencyMicros);
            ++scored;
        }
        table.rows.push_back(row);
    }
    if (scored > 0)
        table.dispatchBoundScore = 100.0 * std::exp((logBaseline - logBest) / scored);
    return table;
}

} // namespace ks
