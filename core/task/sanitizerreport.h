#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

// The CUDA toolkit's compute-sanitizer tools a candidate can be run under (issue #15 point 7):
// out-of-bounds and misaligned accesses, shared-memory races, reads of uninitialised global
// memory, and misuse of synchronisation primitives.
enum class SanitizerTool { Memcheck, Racecheck, Initcheck, Synccheck };

std::string_view sanitizerToolName(SanitizerTool tool); // "memcheck", ... (the tool's own --tool name)
std::optional<SanitizerTool> parseSanitizerTool(std::string_view name);
std::string sanitizerToolList(); // "memcheck, racecheck, initcheck or synccheck", for messages

// What one call of a candidate under a tool showed. A report is complete when the tool printed
// its closing summary; without it (the tool is missing, the run failed before the kernel, or
// the tool was cut off) `problem` says why and the findings may be partial.
struct SanitizerReport {
    SanitizerTool tool = SanitizerTool::Memcheck;
    std::string workload; // the workload whose first input set the call ran on
    bool complete = false;
    int errors = 0; // the tool's own count, from its closing summary
    // Each problem the tool reported, in its words and order, without the host backtraces; at
    // most the first kMaxFindings.
    std::vector<std::string> findings;
    std::string problem;
    std::string verdict; // the call's own outcome in the runner's terms (ok, crashed, timed out...)

    static constexpr std::size_t kMaxFindings = 20;
};

nlohmann::json toJson(const SanitizerReport& report);
// What toJson wrote; nullopt for anything else (a field of the wrong type, an unknown tool).
std::optional<SanitizerReport> sanitizerReportFromJson(const nlohmann::json& j);
// A few lines for a person or the code policy: the tool, the count and each finding.
std::string formatSanitizerReport(const SanitizerReport& report);

} // namespace ks
