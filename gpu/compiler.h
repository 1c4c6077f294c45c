#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks {

enum class Backend { Host, Cuda };
std::string backendName(Backend b);
std::optional<Backend> parseBackend(const std::string& name);

// Registers, shared memory, stack and spills that ptxas reported for one kernel.
struct KernelResources {
    std::string kernel;
    int registers = 0;
    long sharedBytes = 0;
    long stackBytes = 0;
    long spillStoreBytes = 0;
    long spillLoadBytes = 0;
};

struct CompileRequest {
    Backend backend = Backend::Host;
    std::filesystem::path source; // the candidate (or reference / baseline) file
    std::string abiHeader; // contents of ks_task.h
    std::filesystem::path workDir; // gets include/ks_task.h, the copied source and the library
    std::string cudaArch = "90a"; // -gencode=arch=compute_<arch>,code=sm_<arch>
    std::vector<std::string> extraFlags;
    std::chrono::milliseconds timeout {std::chrono::minutes(3)};
    // The compiler runs confined as a candidate does (ksearch-runner --compile): the source is as
    // untrusted as the program. False only where a person turned confinement off.
    bool confine = true;
    // Hidden from the confined compiler as the home folders are: the task's folder, whose
    // workloads.jsonl (the held-out shapes among them) a source could otherwise #include.
    std::vector<std::filesystem::path> hiddenPaths;
};

struct CompileResult {
    bool ok = false;
    bool timedOut = false;
    std::filesystem::path library;
    std::string command;
    std::string log; // compiler output, trimmed for humans and LLMs
    double seconds = 0.0;
    std::vector<KernelResources> resources; // CUDA only
    // What the compiler ran without ("no network namespace", ...; confine.h's parts, or
    // "confinement turned off in the settings"); empty when it had everything.
    std::vector<std::string> confinementGaps;
};

// Compiles one source into a shared object exporting ks_run. The source is copied next to an
// include folder that holds only ks_task.h, so a candidate cannot include task or harness files;
// the compiler runs confined (request.confine), so neither can it include or embed the user's.
CompileResult compileKernel(const CompileRequest& request);

std::string hostCompiler(); // $KSEARCH_CXX, else c++
std::string nvccPath(); // $KSEARCH_NVCC, else the toolkit found at build time, else nvcc on PATH

// Parses `-Xptxas -v` output into one entry per kernel.
std::vector<KernelResources> parsePtxasInfo(const std::string& log);

// Keeps the lines that matter (errors, warnings with their context) within a size budget.
std::string trimCompilerLog(const std::string& log, std::size_t maxChars = 4000);

} // namespace ks
