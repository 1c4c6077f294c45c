#include "evaluation.h"

namespace ks {

std::string_view verdictName(Verdict v)
{
    switch (v) {
    case Verdict::Passed:
        return "PASSED";
    case Verdict::IncorrectNumerical:
        return "INCORRECT_NUMERICAL";
    case Verdict::IncorrectShape:
        return "INCORRECT_SHAPE";
    case Verdict::RuntimeError:
        return "RUNTIME_ERROR";
    case Verdict::CompileError:
        return "COMPILE_ERROR";
    case Verdict::Timeout:
        return "TIMEOUT";
    case Verdict::Rejected:
        return "REJECTED";
    }
    return "?";
}

nlohmann::json toJson(const Evaluation& e)
{
    nlohmann::json workloads = nlohmann::json::array();
    for (const auto& w : e.workloads)
        workloads.push_back({{"id", w.id}, {"status", verdictName(w.status)}, {"message", w.message},
            {"max_abs_error", w.maxAbsError}, {"max_rel_error", w.maxRelError}, {"latency_us", w.latencyMicros},
            {"latency_p25_us", w.p25Micros}, {"latency_p75_us", w.p75Micros}, {"samples", w.samples},
            {"baseline_latency_us", w.baselineLatencyMicros}, {"speedup", w.speedup}, {"floor_us", w.floorMicros},
            {"roofline_fraction", w.rooflineFraction}});
    nlohmann::json resources = nlohmann::json::array();
    for (const auto& r : e.resources)
        resources.push_back({{"kernel", r.kernel}, {"registers", r.registers}, {"shared_bytes", r.sharedBytes},
            {"spill_bytes", r.spillBytes}});
    return {{"status", verdictName(e.status)}, {"score", e.score}, {"latency_us", e.latencyMicros},
        {"baseline_latency_us", e.baselineLatencyMicros}, {"log", e.log}, {"workloads", workloads},
        {"resources", resources}, {"device", e.device}, {"copy_bandwidth_gbs", e.copyBandwidthGBs},
        {"compile_cached", e.compileCached},
        {"seconds",
            {{"compile", e.compileSeconds}, {"reference", e.referenceSeconds}, {"baseline", e.baselineSeconds},
                {"candidate", e.candidateSeconds}, {"timed_gpu", e.timedGpuSeconds}, {"total", e.totalSeconds}}}};
}

} // namespace ks
