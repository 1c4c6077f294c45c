#include "slurmallocation.h"

#include "subprocess.h"

#include <util/lastlines.h>

#include <spdlog/spdlog.h>

#include <regex>
#include <sstream>

namespace ks {

namespace {

// Single quotes for /bin/sh.
std::string shellQuote(const std::string& s)
{
    std::string out = "'";
    for (char c : s)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

} // namespace

std::pair<std::string, std::vector<std::string>> parseSlurmSpec(const std::string& spec)
{
    std::vector<std::string> parts;
    std::istringstream in(spec);
    for (std::string part; std::getline(in, part, ',');)
        if (!part.empty())
            parts.push_back(part);
    if (parts.empty() || parts.front().rfind('-', 0) == 0)
        return {{}, parts};
    return {parts.front(), {parts.begin() + 1, parts.end()}};
}

std::unique_ptr<SlurmAllocation> SlurmAllocation::start(const Request& request, std::string& error)
{
    auto [partition, options] = parseSlurmSpec(request.spec);
    if (partition.empty()) {
        error = "--slurm: '" + request.spec + "' names no partition (PARTITION[,SALLOC OPTIONS])";
        return nullptr;
    }
    SubprocessRequest salloc;
    salloc.argv = {"salloc", "--partition=" + partition, "--nodes=1", "--ntasks=" + std::to_string(request.workers),
        "--no-shell", "--job-name=ksearch", "--immediate=" + std::to_string(request.wait.count())};
    salloc.argv.insert(salloc.argv.end(), options.begin(), options.end());
    salloc.environment = scrubbedEnvironment();
    salloc.timeout = request.wait + std::chrono::seconds(30);
    const SubprocessResult r = runSubprocess(salloc);
    std::smatch m;
    const std::string said = r.err + r.out;
    if (!r.succeeded() || !std::regex_search(said, m, std::regex(R"(Granted job allocation (\d+))"))) {
        error = "SLURM partition " + partition + ": salloc could not allocate " + std::to_string(request.workers)
            + " task(s) (" + (r.started ? r.describeExit() : r.error) + ")"
            + (said.empty() ? std::string() : ":\n" + lastLines(said, 4));
        return nullptr;
    }
    std::unique_ptr<SlurmAllocation> a(new SlurmAllocation);
    a->m_jobId = m[1].str();
    for (const std::string& o : options) // per-task resources must be asked for by each step too
        if (o.rfind("--gpus-per-task", 0) == 0 || o.rfind("--cpus-per-task", 0) == 0 || o.rfind("--mem-per", 0) == 0)
            a->m_stepOptions.push_back(o);
    spdlog::info("SLURM job {} on partition {}: {} worker step(s)", a->m_jobId, partition, request.workers);
    return a;
}

SlurmAllocation::~SlurmAllocation()
{
    SubprocessRequest cancel;
    cancel.argv = {"scancel", m_jobId};
    cancel.environment = scrubbedEnvironment();
    cancel.timeout = std::chrono::seconds(30);
    if (const auto r = runSubprocess(cancel); !r.succeeded())
        spdlog::warn("scancel {}: {}", m_jobId, r.describeExit());
}

std::string SlurmAllocation::workerCommand(const std::string& ksearch) const
{
    std::string command = "srun --jobid=" + m_jobId + " --nodes=1 --ntasks=1 --exact";
    for (const std::string& o : m_stepOptions)
        command += " " + shellQuote(o);
    return command + " " + shellQuote(ksearch) + " worker";
}

} // namespace ks
