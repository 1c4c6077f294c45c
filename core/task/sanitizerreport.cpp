#include "sanitizerreport.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace ks {
namespace {

constexpr std::array<std::pair<SanitizerTool, std::string_view>, 4> kTools {{
    {SanitizerTool::Memcheck, "memcheck"},
    {SanitizerTool::Racecheck, "racecheck"},
    {SanitizerTool::Initcheck, "initcheck"},
    {SanitizerTool::Synccheck, "synccheck"},
}};

} // namespace

std::string_view sanitizerToolName(SanitizerTool tool)
{
    for (const auto& [t, name] : kTools)
        if (t == tool)
            return name;
    return "?";
}

std::optional<SanitizerTool> parseSanitizerTool(std::string_view name)
{
    for (const auto& [t, n] : kTools)
        if (n == name)
            return t;
    return std::nullopt;
}

std::string sanitizerToolList()
{
    return "memcheck, racecheck, initcheck or synccheck";
}

nlohmann::json toJson(const SanitizerReport& report)
{
    nlohmann::json j {{"tool", sanitizerToolName(report.tool)}, {"workload", report.workload},
        {"complete", report.complete}, {"errors", report.errors}, {"findings", report.findings},
        {"verdict", report.verdict}};
    if (!report.problem.empty())
        j["problem"] = report.problem;
    return j;
}

std::optional<SanitizerReport> sanitizerReportFromJson(const nlohmann::json& j)
{
    if (!j.is_object())
        return std::nullopt;
    const auto text = [&](const char* key) {
        const auto it = j.find(key);
        return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const auto tool = parseSanitizerTool(text("tool"));
    if (!tool)
        return std::nullopt;
    SanitizerReport r;
    r.tool = *tool;
    r.workload = text("workload");
    r.complete = j.value("complete", false) == true;
    if (const auto it = j.find("errors"); it != j.end() && it->is_number_integer())
        r.errors = static_cast<int>(std::clamp<std::int64_t>(it->get<std::int64_t>(), 0, 1 << 30));
    if (const auto it = j.find("findings"); it != j.end() && it->is_array())
        for (const auto& f : *it)
            if (f.is_string() && r.findings.size() < SanitizerReport::kMaxFindings)
                r.findings.push_back(f.get<std::string>());
    r.problem = text("problem");
    r.verdict = text("verdict");
    return r;
}

std::string formatSanitizerReport(const SanitizerReport& report)
{
    std::string text = "compute-sanitizer --tool " + std::string(sanitizerToolName(report.tool))
        + (report.workload.empty() ? std::string() : " on workload " + report.workload) + ": ";
    if (!report.complete)
        text += "no complete report\n"
            + (report.problem.empty() ? std::string("the tool stopped before its summary") : report.problem);
    else
        text += std::to_string(report.errors) + (report.errors == 1 ? " error" : " errors");
    if (!report.verdict.empty())
        text += "\nthe call: " + report.verdict;
    text += "\n";
    for (std::size_t i = 0; i < report.findings.size(); ++i)
        text += "[" + std::to_string(i + 1) + "] " + report.findings[i] + "\n";
    return text;
}

} // namespace ks
