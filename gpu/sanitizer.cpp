#include "sanitizer.h"

#include "compiler.h"
#include "subprocess.h"

#include <cstdlib>
#include <regex>
#include <sstream>

namespace ks {

namespace fs = std::filesystem;

fs::path computeSanitizerPath()
{
    if (const char* env = std::getenv("KSEARCH_COMPUTE_SANITIZER"); env && *env)
        return env;
    std::vector<fs::path> candidates;
    if (const fs::path nvcc = nvccPath(); nvcc.has_parent_path())
        candidates.push_back(nvcc.parent_path() / "compute-sanitizer");
    candidates.emplace_back("/usr/local/cuda/bin/compute-sanitizer");
    candidates.emplace_back("/usr/local/cuda/compute-sanitizer/compute-sanitizer");
    if (fs::path onPath = findOnPath("compute-sanitizer"); !onPath.empty())
        candidates.push_back(std::move(onPath));
    std::error_code ec;
    for (const auto& c : candidates)
        if (fs::is_regular_file(c, ec))
            return c;
    return {};
}

std::vector<std::string> sanitizerCommand(const fs::path& program, SanitizerTool tool)
{
    std::vector<std::string> words {program.string(), "--tool", std::string(sanitizerToolName(tool)),
        "--show-backtrace", "device", "--print-limit", std::to_string(SanitizerReport::kMaxFindings),
        "--error-exitcode", std::to_string(kSanitizerErrorExit)};
    if (tool == SanitizerTool::Memcheck) {
        // Buffers the runner allocates one after another may lie back to back: without a gap, a
        // write a few elements past one output lands in the next buffer and is no error.
        words.insert(words.end(), {"--padding", std::to_string(kSanitizerPaddingBytes)});
    }
    return words;
}

SanitizerReport readSanitizerOutput(SanitizerTool tool, const SubprocessResult& process)
{
    static const std::regex summary(R"(^ERROR SUMMARY: (\d{1,9}) errors?)");
    // racecheck closes with a tally of its own instead (seen on the H200, CUDA 13.0).
    static const std::regex raceSummary(R"(^RACECHECK SUMMARY: .*\((\d{1,9}) errors?,)");
    SanitizerReport report;
    report.tool = tool;
    std::string current;
    const auto close = [&] {
        if (!current.empty() && report.findings.size() < SanitizerReport::kMaxFindings)
            report.findings.push_back(current);
        current.clear();
    };
    bool summaryLast = false;
    int summaryErrors = 0;
    std::stringstream lines(process.out + "\n" + process.err);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("=========", 0) != 0)
            continue; // the runner's or the candidate's own output
        std::string body = line.substr(9);
        if (!body.empty() && body.front() == ' ')
            body.erase(0, 1);
        std::smatch m;
        if (std::regex_search(body, m, summary) || std::regex_search(body, m, raceSummary)) {
            close();
            summaryErrors = std::stoi(m[1].str());
            summaryLast = true;
        } else if (body.find_first_not_of(' ') == std::string::npos || body.rfind("COMPUTE-SANITIZER", 0) == 0
            || body.rfind("LEAK SUMMARY", 0) == 0) {
            close(); // a blank line, the tool's banner or memcheck's leak tally: not findings
        } else if (body.front() == ' ') { // a finding's detail: where, which thread, which address
            if (!current.empty() && current.size() < 2000)
                current += "\n  " + body.substr(body.find_first_not_of(' '));
            summaryLast = false;
        } else {
            close();
            current = body;
            summaryLast = false;
        }
    }
    close();
    const bool endedByItself = process.started && !process.timedOut && process.signal == 0;
    if (!process.started) {
        report.problem = "compute-sanitizer could not be started: " + process.error;
    } else if (!endedByItself) {
        report.problem = "compute-sanitizer " + process.describeExit() + " before its summary";
    } else if (!summaryLast) {
        report.problem = "compute-sanitizer ended (" + process.describeExit() + ") without its closing summary";
    } else if (summaryErrors == 0 && process.exitCode == kSanitizerErrorExit) {
        report.problem = "compute-sanitizer's exit code says it found errors, the summary printed last says none";
    } else {
        report.complete = true;
        report.errors = summaryErrors;
    }
    return report;
}

} // namespace ks
