#include "evaluation.h"

#include <util/saturate.h>

#include <cmath>
#include <cstdlib>
#include <cxxabi.h>
#include <memory>

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
    case Verdict::HarnessError:
        return "HARNESS_ERROR";
    }
    return "?";
}

nlohmann::json toJson(const Evaluation& e)
{
    nlohmann::json workloads = nlohmann::json::array();
    for (const auto& w : e.workloads) {
        workloads.push_back({{"id", w.id}, {"status", verdictName(w.status)}, {"message", w.message},
            {"max_abs_error", w.maxAbsError}, {"max_rel_error", w.maxRelError}, {"matched_ratio", w.matchedRatio},
            {"latency_us", w.latencyMicros}, {"latency_p25_us", w.p25Micros}, {"latency_p75_us", w.p75Micros},
            {"samples", w.samples}, {"baseline_latency_us", w.baselineLatencyMicros}, {"speedup", w.speedup},
            {"floor_us", w.floorMicros}, {"roofline_fraction", w.rooflineFraction},
            {"side_work_samples", w.sideWorkSamples}, {"device_span_us", w.deviceSpanMicros}});
        if (!w.scored) // written only when false, so journals from before the field read back unchanged
            workloads.back()["scored"] = false;
        if (!w.bitwiseRepeatable) // likewise
            workloads.back()["bitwise_repeatable"] = false;
        if (w.heldOut) // written only when true
            workloads.back()["held_out"] = true;
    }
    nlohmann::json resources = nlohmann::json::array();
    for (const auto& r : e.resources)
        resources.push_back({{"kernel", r.kernel}, {"registers", r.registers}, {"shared_bytes", r.sharedBytes},
            {"spill_bytes", r.spillBytes}, {"stack_bytes", r.stackBytes}});
    nlohmann::json j {{"status", verdictName(e.status)}, {"score", e.score}, {"latency_us", e.latencyMicros},
        {"baseline_latency_us", e.baselineLatencyMicros}, {"log", e.log}, {"workloads", workloads},
        {"resources", resources}, {"device", e.device}, {"copy_bandwidth_gbs", e.copyBandwidthGBs},
        {"compile_cached", e.compileCached},
        {"seconds",
            {{"compile", e.compileSeconds}, {"inputs", e.inputSeconds}, {"reference", e.referenceSeconds},
                {"baseline", e.baselineSeconds}, {"candidate", e.candidateSeconds}, {"timed_gpu", e.timedGpuSeconds},
                {"total", e.totalSeconds}}},
        {"phases_s", e.phases}};
    if (e.confinement) // written only when known, so older journals read back unchanged
        j["confinement"] = toJson(*e.confinement);
    if (e.sanitizer)
        j["sanitizer"] = toJson(*e.sanitizer);
    return j;
}

std::optional<Verdict> parseVerdict(std::string_view name)
{
    for (Verdict v : {Verdict::Passed, Verdict::IncorrectNumerical, Verdict::IncorrectShape, Verdict::RuntimeError,
             Verdict::CompileError, Verdict::Timeout, Verdict::Rejected, Verdict::HarnessError})
        if (verdictName(v) == name)
            return v;
    return std::nullopt;
}

namespace {

// Numbers that JSON cannot hold (NaN, infinity) were written as null.
double number(const nlohmann::json& o, const char* key)
{
    const auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<double>() : (it != o.end() && it->is_null() ? NAN : 0.0);
}

std::string text(const nlohmann::json& o, const char* key)
{
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace

Evaluation evaluationFromJson(const nlohmann::json& j)
{
    Evaluation e;
    e.status = parseVerdict(text(j, "status")).value_or(Verdict::RuntimeError);
    e.score = number(j, "score");
    e.latencyMicros = number(j, "latency_us");
    e.baselineLatencyMicros = number(j, "baseline_latency_us");
    e.log = text(j, "log");
    e.device = text(j, "device");
    e.copyBandwidthGBs = number(j, "copy_bandwidth_gbs");
    e.compileCached = j.value("compile_cached", false);
    for (const auto& w : j.value("workloads", nlohmann::json::array())) {
        WorkloadEvaluation we;
        we.id = text(w, "id");
        we.status = parseVerdict(text(w, "status")).value_or(Verdict::RuntimeError);
        we.message = text(w, "message");
        we.maxAbsError = number(w, "max_abs_error");
        we.maxRelError = number(w, "max_rel_error");
        we.matchedRatio = w.contains("matched_ratio") ? number(w, "matched_ratio") : 1.0; // older journals lack it
        we.latencyMicros = number(w, "latency_us");
        we.p25Micros = number(w, "latency_p25_us");
        we.p75Micros = number(w, "latency_p75_us");
        we.samples = saturatingCast<int>(number(w, "samples"));
        we.sideWorkSamples = saturatingCast<int>(number(w, "side_work_samples"));
        we.deviceSpanMicros = number(w, "device_span_us");
        we.baselineLatencyMicros = number(w, "baseline_latency_us");
        we.speedup = number(w, "speedup");
        we.floorMicros = number(w, "floor_us");
        we.rooflineFraction = number(w, "roofline_fraction");
        we.scored = w.value("scored", true);
        we.bitwiseRepeatable = w.value("bitwise_repeatable", true);
        we.heldOut = w.value("held_out", false) == true;
        e.workloads.push_back(std::move(we));
    }
    for (const auto& r : j.value("resources", nlohmann::json::array()))
        e.resources.push_back({text(r, "kernel"), saturatingCast<int>(number(r, "registers")),
            saturatingCast<long>(number(r, "shared_bytes")), saturatingCast<long>(number(r, "spill_bytes")),
            saturatingCast<long>(number(r, "stack_bytes"))});
    const nlohmann::json seconds = j.value("seconds", nlohmann::json::object());
    e.compileSeconds = number(seconds, "compile");
    e.inputSeconds = number(seconds, "inputs");
    e.referenceSeconds = number(seconds, "reference");
    e.baselineSeconds = number(seconds, "baseline");
    e.candidateSeconds = number(seconds, "candidate");
    e.timedGpuSeconds = number(seconds, "timed_gpu");
    e.totalSeconds = number(seconds, "total");
    const nlohmann::json phases = j.value("phases_s", nlohmann::json::object()); // .items() of a temporary dangles
    for (const auto& [phase, s] : phases.items())
        if (s.is_number())
            e.phases[phase] = s.get<double>();
    if (const auto it = j.find("confinement"); it != j.end())
        e.confinement = confinementFromJson(*it);
    if (const auto it = j.find("sanitizer"); it != j.end())
        e.sanitizer = sanitizerReportFromJson(*it);
    return e;
}

std::string kernelDisplayName(const std::string& mangled)
{
    int status = 0;
    const std::unique_ptr<char, void (*)(void*)> demangled(
        abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
    if (status != 0 || !demangled)
        return mangled;
    std::string name = demangled.get();
    // The parameter list: from the '(' that matches the closing ')' at the end.
    if (!name.empty() && name.back() == ')') {
        int depth = 0;
        for (std::size_t i = name.size(); i-- > 0;) {
            depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
            if (depth == 0) {
                name.resize(i);
                break;
            }
        }
    }
    for (const std::string anonymous = "(anonymous namespace)::";;) {
        const std::size_t at = name.find(anonymous);
        if (at == std::string::npos)
            break;
        name.erase(at, anonymous.size());
    }
    // A function template's return type: whatever precedes the last space outside <...>.
    int angle = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
        angle += name[i] == '>' ? 1 : name[i] == '<' ? -1 : 0;
        if (angle == 0 && name[i] == ' ')
            return name.substr(i + 1);
    }
    return name;
}

} // namespace ks
