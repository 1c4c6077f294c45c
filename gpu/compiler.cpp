#include "compiler.h"

#include "runnerclient.h"
#include "subprocess.h"

#include <task/strictjson.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace ks {

namespace fs = std::filesystem;

std::string backendName(Backend b)
{
    return b == Backend::Cuda ? "cuda" : "host";
}

std::optional<Backend> parseBackend(const std::string& name)
{
    if (name == "cuda")
        return Backend::Cuda;
    if (name == "host")
        return Backend::Host;
    return std::nullopt;
}

std::string hostCompiler()
{
    const char* env = std::getenv("KSEARCH_CXX");
    return env && *env ? env : "c++";
}

std::string nvccPath()
{
    if (const char* env = std::getenv("KSEARCH_NVCC"); env && *env)
        return env;
#ifdef KSEARCH_NVCC_PATH
    if (fs::exists(KSEARCH_NVCC_PATH))
        return KSEARCH_NVCC_PATH;
#endif
    if (fs::exists("/usr/local/cuda/bin/nvcc"))
        return "/usr/local/cuda/bin/nvcc";
    return "nvcc";
}

std::vector<KernelResources> parsePtxasInfo(const std::string& log)
{
    std::vector<KernelResources> out;
    static const std::regex function(R"(Compiling entry function '([^']+)')");
    static const std::regex stack(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
    static const std::regex regs(R"(Used (\d+) registers)");
    static const std::regex smem(R"((\d+) bytes smem)");
    std::istringstream in(log);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, function)) {
            out.push_back({m[1].str()});
        } else if (!out.empty() && std::regex_search(line, m, stack)) {
            out.back().stackBytes = std::stol(m[1].str());
            out.back().spillStoreBytes = std::stol(m[2].str());
            out.back().spillLoadBytes = std::stol(m[3].str());
        } else if (!out.empty() && std::regex_search(line, m, regs)) {
            out.back().registers = std::stoi(m[1].str());
            if (std::regex_search(line, m, smem))
                out.back().sharedBytes = std::stol(m[1].str());
        }
    }
    return out;
}

std::string trimCompilerLog(const std::string& log, std::size_t maxChars)
{
    std::istringstream in(log);
    std::string line, kept;
    std::vector<std::string> lines;
    while (std::getline(in, line))
        if (line.find("ptxas info") == std::string::npos && line.find("bytes stack frame") == std::string::npos
            && line.find("Compile time =") == std::string::npos)
            lines.push_back(line);
    // Errors first: an LLM fixing a build needs them more than the notes after them.
    for (const auto& l : lines)
        if (l.find("error") != std::string::npos && kept.size() + l.size() < maxChars)
            kept += l + "\n";
    for (const auto& l : lines)
        if (l.find("error") == std::string::npos && kept.size() + l.size() < maxChars)
            kept += l + "\n";
    if (kept.size() < log.size() && kept.size() >= maxChars - 200)
        kept += "[compiler output trimmed]\n";
    return kept;
}

namespace {

// `program` as exec would find it: a path as it is, a bare name on PATH; empty when nowhere.
fs::path findProgram(const std::string& program)
{
    if (program.find('/') != std::string::npos)
        return program;
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    std::error_code ec;
    for (std::string dir; std::getline(dirs, dir, ':');)
        if (!dir.empty() && fs::exists(fs::path(dir) / program, ec))
            return fs::path(dir) / program;
    return {};
}

// The folders a confined compile must still read where a hidden home folder covers them: each
// compiler's installation (the folder above its bin/, through symbolic links: a toolkit or a
// conda environment may live under a home folder) and every folder the flags name.
std::vector<std::string> compileReadablePaths(const std::vector<std::string>& argv, Backend backend)
{
    std::vector<std::string> paths;
    std::error_code ec;
    const auto installation = [&](const std::string& program) {
        const fs::path found = findProgram(program);
        if (found.empty())
            return;
        const fs::path real = fs::canonical(found, ec);
        if (!ec)
            paths.push_back(real.parent_path().parent_path().string());
    };
    installation(argv.front());
    if (backend == Backend::Cuda)
        installation(hostCompiler()); // nvcc runs the host compiler for the host code
    for (std::size_t i = 1; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        for (const char* option : {"-I", "-isystem", "-L", "-include"}) {
            const std::string o = option;
            if (a == o && i + 1 < argv.size())
                paths.push_back(argv[i + 1]);
            else if (a.size() > o.size() && a.compare(0, o.size(), o) == 0 && o.size() == 2)
                paths.push_back(a.substr(o.size())); // -I/path, -L/path
        }
    }
    return paths;
}

// The argv that runs `argv` under ksearch-runner --compile in `dir`; empty when there is no
// ksearch-runner to do it (then `gap` says so).
std::vector<std::string> confinedCommand(
    const std::vector<std::string>& argv, const fs::path& dir, Backend backend, std::string& gap)
{
    std::error_code ec;
    const fs::path runner = runnerPath();
    if (!fs::exists(runner, ec)) {
        gap = "no " + runner.string() + " to confine the compiler";
        return {};
    }
    std::vector<std::string> wrapped {runner.string(), "--compile", dir.string()};
    for (const auto& p : compileReadablePaths(argv, backend))
        wrapped.insert(wrapped.end(), {"--readable", p});
    wrapped.emplace_back("--");
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
}

// What the confined compile reported having (confinedcompile.h), as gaps.
std::vector<std::string> reportedGaps(const fs::path& dir)
{
    std::string error;
    const auto report = parseStrictJson(readTextFile((dir / "compile-confinement.json").string()).value_or(""), error);
    if (!report || !report->is_object())
        return {"the compiler's confinement was not reported"};
    std::vector<std::string> gaps;
    const std::pair<const char*, const char*> parts[] = {{"network", "no network namespace"},
        {"processes", "forked processes may outlive the run"}, {"filesystem", "the filesystem is writable"}};
    for (const auto& [key, gap] : parts)
        if (!report->value(key, false))
            gaps.emplace_back(gap);
    return gaps;
}

} // namespace

CompileResult compileKernel(const CompileRequest& request)
{
    CompileResult result;
    std::error_code ec;
    fs::create_directories(request.workDir / "include", ec);
    {
        std::ofstream header(request.workDir / "include" / "ks_task.h", std::ios::trunc);
        header << request.abiHeader;
    }
    const fs::path source = request.workDir / request.source.filename();
    fs::copy_file(request.source, source, fs::copy_options::overwrite_existing, ec);
    if (ec) {
        result.log = request.source.string() + ": cannot read (" + ec.message() + ")";
        return result;
    }
    result.library = request.workDir / (request.source.stem().string() + ".so");
    std::vector<std::string> argv;
    if (request.backend == Backend::Host) {
        argv = {hostCompiler(), "-std=c++17", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-Wall", "-I",
            (request.workDir / "include").string()};
    } else {
        argv = {nvccPath(), "-std=c++17", "-O3", "-lineinfo",
            "-gencode=arch=compute_" + request.cudaArch + ",code=sm_" + request.cudaArch, "-Xcompiler", "-fPIC",
            "-shared", "-Xptxas", "-v", "-I", (request.workDir / "include").string()};
    }
    argv.insert(argv.end(), request.extraFlags.begin(), request.extraFlags.end());
    argv.insert(argv.end(), {source.string(), "-o", result.library.string()});
    for (const auto& a : argv)
        result.command += (result.command.empty() ? "" : " ") + a;

    SubprocessRequest sub;
    sub.argv = argv;
    bool confined = false; // run under ksearch-runner --compile, which reports what it had
    if (!request.confine) {
        result.confinementGaps = {"confinement turned off in the settings"};
    } else {
        std::string gap;
        fs::remove(request.workDir / "compile-confinement.json", ec); // a report must be this compile's
        auto wrapped = confinedCommand(argv, fs::canonical(request.workDir, ec), request.backend, gap);
        confined = !wrapped.empty();
        if (confined)
            sub.argv = std::move(wrapped);
        else
            result.confinementGaps = {gap};
    }
    sub.workingDirectory = request.workDir.string();
    sub.environment = scrubbedEnvironment();
    sub.timeout = request.timeout;
    const SubprocessResult run = runSubprocess(sub);
    result.seconds = run.seconds;
    result.timedOut = run.timedOut;
    const std::string full = run.out + run.err;
    if (request.backend == Backend::Cuda)
        result.resources = parsePtxasInfo(full);
    result.log = trimCompilerLog(full);
    if (!run.started)
        result.log = "cannot run the compiler: " + run.error;
    else if (run.timedOut)
        result.log += "compilation " + run.describeExit() + "\n";
    result.ok = run.succeeded() && fs::exists(result.library, ec);
    if (confined)
        result.confinementGaps = reportedGaps(request.workDir);
    return result;
}

} // namespace ks
