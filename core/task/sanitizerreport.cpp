#include "sanitizerreport.h"

#include <nlohmann/json.hpp>

#include <array>
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
