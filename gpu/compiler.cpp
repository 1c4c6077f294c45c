#include "compiler.h"

#include "subprocess.h"

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
    return result;
}

} // namespace ks
