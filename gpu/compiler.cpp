#include "compiler.h"

#include "runnerclient.h"
#include "subprocess.h"

#include <task/confinement.h>
#include <task/strictjson.h>

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

// The folders a confined compile must still read where a hidden home folder covers them: each
// compiler's folder on PATH and its installation (the folder above the bin/ it resolves to, so a
// toolkit, conda environment or ~/.local/bin link in a home folder still works; for nvcc also the
// host compilers it runs), and every folder or file the flags name.
std::vector<std::string> compileReadablePaths(const std::vector<std::string>& argv, Backend backend)
{
    std::vector<std::string> paths;
    const auto installation = [&](const std::string& program) {
        const fs::path found = findOnPath(program);
        if (found.empty())
            return;
        std::error_code ec;
        paths.push_back(found.parent_path().string());
        if (const fs::path real = fs::canonical(found, ec); !ec)
            paths.push_back(real.parent_path().parent_path().string());
    };
    installation(argv.front());
    if (backend == Backend::Cuda) // nvcc runs gcc and g++ from PATH unless -ccbin names one
        for (const std::string& host : {hostCompiler(), std::string("gcc"), std::string("g++")})
            installation(host);
    // Options whose value is a path, given as the next word or joined (-I/x, --include-path=/x).
    static const char* const kSeparate[] = {"-I", "-isystem", "-iquote", "-idirafter", "-L", "-include", "-ccbin",
        "--compiler-bindir", "--include-path", "--library-path", "--system-include"};
    for (std::size_t i = 1; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        for (const char* option : kSeparate) {
            const std::string o = option;
            if (a == o && i + 1 < argv.size())
                paths.push_back(argv[i + 1]);
            else if (a.size() > o.size() + 1 && a.compare(0, o.size() + 1, o + "=") == 0)
                paths.push_back(a.substr(o.size() + 1));
            else if (a.size() > o.size() && a.compare(0, o.size(), o) == 0 && o.rfind("--", 0) != 0
                && (a[o.size()] == '/' || a[o.size()] == '.'))
                paths.push_back(a.substr(o.size())); // -I/path, -isystem/path, -L./lib
        }
    }
    return paths;
}

// What the confined compile reported having (confinedcompile.h), as gaps.
std::vector<std::string> reportedGaps(const fs::path& dir)
{
    std::string error;
    const auto report = parseStrictJson(readTextFile((dir / "compile-confinement.json").string()).value_or(""), error);
    if (!report || !report->is_object())
        return {"the compiler's confinement was not reported"};
    const auto had = [&](const char* key) {
        const auto it = report->find(key);
        return it != report->end() && it->is_boolean() && it->get<bool>();
    };
    return isolationGaps(had("network"), had("processes"), had("filesystem"));
}

} // namespace

CompileResult compileKernel(const CompileRequest& request)
{
    CompileResult result;
    std::error_code ec;
    fs::create_directories(request.workDir / "include", ec);
    // Canonical: a confined compiler sees the folder only where it really is (a symbolic link on
    // the way, a home folder that is one, is hidden with the homes).
    fs::path workDir = fs::canonical(request.workDir, ec);
    if (ec)
        workDir = fs::absolute(request.workDir, ec);
    {
        std::ofstream header(workDir / "include" / "ks_task.h", std::ios::trunc);
        header << request.abiHeader;
    }
    const fs::path source = workDir / request.source.filename();
    fs::copy_file(request.source, source, fs::copy_options::overwrite_existing, ec);
    if (ec) {
        result.log = request.source.string() + ": cannot read (" + ec.message() + ")";
        return result;
    }
    result.library = workDir / (request.source.stem().string() + ".so");
    const std::string compiler = request.backend == Backend::Host ? hostCompiler() : nvccPath();
    // Found before the confined compiler's view hides folders of PATH, and run by this path.
    const fs::path program = findOnPath(compiler);
    if (program.empty()) {
        result.log = "cannot run the compiler: " + compiler + " is not found (PATH, $KSEARCH_CXX, $KSEARCH_NVCC)";
        return result;
    }
    std::vector<std::string> argv;
    if (request.backend == Backend::Host) {
        argv = {program.string(), "-std=c++17", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-Wall", "-I",
            (workDir / "include").string()};
    } else {
        argv = {program.string(), "-std=c++17", "-O3", "-lineinfo",
            "-gencode=arch=compute_" + request.cudaArch + ",code=sm_" + request.cudaArch, "-Xcompiler", "-fPIC",
            "-shared", "-Xptxas", "-v", "-I", (workDir / "include").string()};
    }
    argv.insert(argv.end(), request.extraFlags.begin(), request.extraFlags.end());
    argv.insert(argv.end(), {source.string(), "-o", result.library.string()});
    for (const auto& a : argv)
        result.command += (result.command.empty() ? "" : " ") + a;

    SubprocessRequest sub;
    sub.argv = argv;
    if (!request.confine) {
        result.confinementGaps = {"confinement turned off in the settings"};
    } else {
        // Never unconfined by accident: without the runner that confines it, no compile.
        const fs::path runner = runnerPath();
        if (!fs::exists(runner, ec)) {
            result.log = "cannot run the compiler confined: " + runner.string()
                + " is missing (or turn confinement off in the settings)";
            return result;
        }
        fs::remove(workDir / "compile-confinement.json", ec); // a report must be this compile's
        sub.argv = {runner.string(), "--compile", workDir.string()};
        for (const auto& p : compileReadablePaths(argv, request.backend))
            sub.argv.insert(sub.argv.end(), {"--readable", p});
        for (const auto& p : request.hiddenPaths)
            sub.argv.insert(sub.argv.end(), {"--hidden", p.string()});
        sub.argv.emplace_back("--");
        sub.argv.insert(sub.argv.end(), argv.begin(), argv.end());
    }
    sub.workingDirectory = workDir.string();
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
    else if (run.timedOut || run.signal != 0) // a limit's signal (SIGXFSZ, SIGKILL) leaves no message of its own
        result.log += "compilation " + run.describeExit() + "\n";
    result.ok = run.succeeded() && fs::exists(result.library, ec);
    if (request.confine)
        result.confinementGaps = reportedGaps(workDir);
    return result;
}

} // namespace ks
