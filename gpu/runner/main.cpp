// ksearch-runner: runs one job of untrusted kernel calls in a process of its own.
// It only executes, times and records raw outputs; the parent process (ksearch) owns the
// expected outputs and decides every verdict. No Qt here, so it runs on a bare GPU server.

#include "backend.h"
#include "callexecutor.h"
#include "confine.h"
#include "confinedcompile.h"
#include "handoff.h"
#include "job.h"
#include "loadedlibraries.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace {

const auto g_processStart = std::chrono::steady_clock::now();

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitEnvironment = 3;
constexpr int kExitJobFailed = 4;

double monotonicSeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A backend ready for a job: the network cut off first, then the device context created.
struct ReadyBackend {
    std::unique_ptr<ksr::Backend> backend;
    bool confine = true; // false: a person turned confinement off (Job::confine)
    bool networkIsolated = false;
    bool privateMounts = false; // a mount namespace of its own, made before any thread
    bool processesContained = false;
    double startupSeconds = 0.0; // from exec to here
    double readyMonotonic = 0.0;
    int failure = kExitOk; // the exit code when there is no backend
};

// underTool: the runner runs under a tool (compute-sanitizer) that talks to its injection in this
// process over TCP on loopback, which a network namespace of its own would cut; toolConfined: the
// rest of the confinement is kept all the same (a run no person asked for: a failed candidate
// sanitized for the code policy), else none is made (a person's own sanitizer run of an attempt).
// confine: false when a person turned confinement off: neither namespace is made.
// userNamespace: a CUDA runner of an ordinary user may make a user namespace (mapping only itself)
// for the others; ksearch says so only where it asked once that a context works inside one
// (`--probe-confined`, gpu/cudausernamespace.h). A host runner always may.
ReadyBackend prepareBackend(const std::string& name, bool confine, bool underTool = false, bool toolConfined = false,
    bool userNamespace = false)
{
    ReadyBackend ready;
    ready.confine = confine;
    ready.networkIsolated = confine && !underTool && ksr::isolateNetwork(name == "host" || userNamespace);
    // Before the device context: the job's process, forked here, makes it (a context does not
    // survive a fork), and the context's threads must be in the mount namespace that
    // confineFilesystem later narrows. A CUDA runner makes them as root or in the user namespace
    // above, and needs a /proc of its own (ownProcPossible).
    const bool cuda = name == "cuda";
    const bool confinable = confine && (name == "host" || cuda) && (!underTool || toolConfined);
    ready.privateMounts = confinable && ksr::privateMountNamespace();
    ready.processesContained =
        confinable && (!cuda || (ready.privateMounts && ksr::ownProcPossible())) && ksr::containChildProcesses();
    if (ready.processesContained && cuda && !ksr::mountOwnProc()) {
        std::cerr << "ksearch-runner: no /proc of the PID namespace for the CUDA context: " << std::strerror(errno)
                  << "\n";
        ready.failure = kExitEnvironment;
        return ready;
    }
    if (name == "host") {
        ready.backend = ksr::makeHostBackend();
    } else if (name == "cuda") {
        try {
            ready.backend = ksr::makeCudaBackend();
        } catch (const std::exception& e) {
            std::cerr << "ksearch-runner: CUDA unavailable: " << e.what() << "\n";
            ready.failure = kExitEnvironment;
            return ready;
        }
        if (!ready.backend) {
            std::cerr << "ksearch-runner: CUDA unavailable: built without the CUDA toolkit\n";
            ready.failure = kExitEnvironment;
            return ready;
        }
    } else {
        std::cerr << "ksearch-runner: unknown backend '" << name << "'\n";
        ready.failure = kExitUsage;
        return ready;
    }
    // From exec to a ready backend (CUDA context included): part of every candidate's overhead
    // unless the runner was started ahead of its job.
    ready.startupSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_processStart).count();
    ready.readyMonotonic = monotonicSeconds();
    return ready;
}

// `path` absolute and canonical where it exists; as it is otherwise.
std::string canonicalPath(const std::string& path)
{
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real)
        return path;
    std::string canonical = real;
    std::free(real);
    return canonical;
}

int executeJob(const ksr::Job& job, ReadyBackend& ready)
{
    // Absolute: the confined process works in its job's folder, and mounts are made on both.
    const std::string dir = canonicalPath(job.dir);
    const std::string library = canonicalPath(job.library);
    const bool confine = (job.backend == "host" || job.backend == "cuda") && ready.confine && job.confine;
    // Before the mount namespace replaces /proc (read-only, the namespace's own).
    const std::uint64_t processLimit = confine ? ksr::limitProcesses(job.processLimit, ready.processesContained) : 0;
    // In the PID namespace (its /proc), after the device context is up (it opened the device
    // files and the driver's sockets under /run). Before any file is opened for writing: a mount
    // is not made read-only while a file on it is open for writing (EBUSY).
    std::vector<std::string> hidden;
    for (const auto& p : job.hiddenPaths)
        hidden.push_back(canonicalPath(p));
    const bool confined = confine && ready.privateMounts && ready.processesContained
        && ksr::confineFilesystem(
            dir, {library}, job.fileLimitBytes ? job.fileLimitBytes : ksr::kDefaultFileLimitBytes, hidden);
    const ksr::AppliedLimits limits =
        confine ? ksr::limitResources(job.fileLimitBytes, job.memoryLimitBytes) : ksr::AppliedLimits {};
    ksr::Backend* backend = ready.backend.get();
    std::FILE* results = std::fopen((dir + "/result.jsonl").c_str(), "w");
    if (!results) {
        std::cerr << "ksearch-runner: cannot write " << dir << "/result.jsonl\n";
        return kExitEnvironment;
    }
    auto emit = [&](const nlohmann::json& line) {
        std::fputs((line.dump() + "\n").c_str(), results);
        std::fflush(results); // each line survives a crash in the next call
    };
    ksr::EnvironmentLine env;
    env.networkIsolated = ready.networkIsolated;
    env.processesContained = ready.processesContained;
    env.filesystemConfined = confined;
    env.fileLimitBytes = limits.fileBytes;
    env.memoryLimitBytes = limits.memoryBytes;
    env.processLimit = processLimit;
    env.confinementOff = !ready.confine || !job.confine;
    env.gpuMemoryBudgetBytes = env.confinementOff ? 0 : ksr::gpuMemoryBudget(job);
    env.startupSeconds = ready.startupSeconds;
    env.readyMonotonicSeconds = ready.readyMonotonic;
    if (job.bench.enabled && job.measureDevice) {
        const ksr::DeviceInfo info = backend->info();
        env.device = info.name;
        env.l2Bytes = info.l2Bytes;
        env.copyBandwidthGBs = info.copyBandwidthGBs;
    }
    emit(toJson(env));
    const auto jobLine = [](const char* status, const std::string& message) {
        ksr::CallLine line;
        line.status = status;
        line.message = message;
        return toJson(line);
    };

    ksr::dropPrivileges(); // after the device context and CUPTI are up: neither needs them again
    std::fputs((std::string(ksr::kLoadingMarker) + "\n").c_str(), stdout);
    std::fflush(stdout);
    // By the path it was kept at: a relative one would now start from the job's folder.
    const std::string loadedPath = confined ? library : job.library;
    const std::set<std::string> objectsBefore = ksr::loadedObjects();
    void* lib = dlopen(loadedPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        emit(jobLine(ksr::status::kLoadError, std::string("dlopen: ") + dlerror()));
        std::fclose(results);
        return kExitJobFailed;
    }
    auto fn = reinterpret_cast<ksr::KsRunFn>(dlsym(lib, job.symbol.c_str()));
    if (!fn) {
        emit(jobLine(ksr::status::kLoadError, "the library does not export " + job.symbol));
        std::fclose(results);
        return kExitJobFailed;
    }
    const ksr::Candidate candidate {fn, reinterpret_cast<ksr::KsLaunchErrorFn>(dlsym(lib, "ks_launch_error"))};
    int exitCode = kExitOk;
    for (const auto& call : job.calls) {
        emit(ksr::startedLine(call.id));
        ksr::CallLine line;
        try {
            line = ksr::executeCall(job, call, *backend, candidate);
        } catch (const std::exception& e) {
            line.id = call.id;
            line.status = ksr::status::kHarnessError;
            line.message = e.what();
            if (const std::string err = backend->deviceError(); !err.empty()) {
                line.status = ksr::status::kDeviceError;
                line.message = err + " (" + e.what() + ")";
            }
        }
        // The loader's names: the candidate's is the path it was opened by, made absolute.
        line.loadedLibraries = ksr::loadedSince(objectsBefore, canonicalPath(loadedPath));
        emit(toJson(line));
        if (line.status == ksr::status::kDeviceError) {
            exitCode = kExitJobFailed; // a sticky device error poisons the context: stop here
            break;
        }
    }
    emit(jobLine(ksr::status::kFinished, ""));
    std::fclose(results);
    // Every result is on disk: leave without tearing the CUDA context, the candidate's library
    // and the buffers down one by one. The kernel and the driver reclaim them when the process
    // ends, and nothing a candidate left behind (atexit handlers, static destructors) runs. The
    // output closes first: ksearch judges then, while the driver takes the context down.
    std::cout.flush();
    std::cerr.flush();
    ::close(STDOUT_FILENO);
    ::close(STDERR_FILENO);
    std::_Exit(exitCode);
}

int runJob(const std::string& dir, bool userNamespace)
{
    const ksr::Job job = ksr::readJob(dir);
    ReadyBackend ready = prepareBackend(job.backend, job.confine, false, false, userNamespace);
    return ready.backend ? executeJob(job, ready) : ready.failure;
}

// Started ahead of its job: everything up to a ready backend now, then the job from the socket.
int runHandedOverJob(
    const std::string& backendName, int socket, bool underTool, bool toolConfined, bool confine, bool userNamespace)
{
    ::fcntl(socket, F_SETFD, FD_CLOEXEC); // nothing this process may start inherits it
    ReadyBackend ready = prepareBackend(backendName, confine, underTool, toolConfined, userNamespace);
    if (!ready.backend)
        return ready.failure;
    const auto received = ksr::receiveJob(socket);
    if (!received)
        return kExitOk; // ksearch closed the socket: no job for this runner
    ::close(socket);
    ksr::Job job = ksr::readJob(received->dir);
    ksr::renumberDescriptors(job, received->descriptors);
    if (job.backend != backendName) {
        std::cerr << "ksearch-runner: the job is for the " << job.backend << " backend, this runner was started for "
                  << backendName << "\n";
        return kExitUsage;
    }
    return executeJob(job, ready);
}

// `--probe-confined DIR`: whether this user's CUDA runner gets a working device inside the
// namespaces it can make (the user namespace included) with its filesystem narrowed to DIR. A
// runner that made them and then found no device would fail every job, so ksearch asks once,
// here, before it starts CUDA runners with --user-namespace. Prints one JSON line on success;
// otherwise exits non-zero with the reason on stderr (as a job's runner would).
int probeConfinedCuda(const std::string& dir)
{
    ReadyBackend ready = prepareBackend("cuda", true, false, false, true);
    if (!ready.backend)
        return ready.failure;
    const bool narrowed = ready.privateMounts && ready.processesContained
        && ksr::confineFilesystem(canonicalPath(dir), {}, std::uint64_t {1} << 20);
    nlohmann::json out {{"network_isolated", ready.networkIsolated}, {"processes_contained", ready.processesContained},
        {"filesystem_confined", narrowed}};
    try { // the context is made lazily by some drivers: use it
        const std::vector<unsigned char> pattern(std::size_t {1} << 20, 0x5a);
        std::vector<unsigned char> back(pattern.size());
        void* p = ready.backend->allocate(pattern.size());
        ready.backend->upload(p, pattern.data(), pattern.size());
        ready.backend->download(back.data(), p, back.size());
        ready.backend->release(p);
        if (back != pattern)
            throw std::runtime_error("a copy to the device and back changed the bytes");
    } catch (const std::exception& e) {
        std::cerr << "ksearch-runner: the device does not work in the namespaces: " << e.what() << "\n";
        return kExitEnvironment;
    }
    std::cout << out.dump() << "\n";
    return kExitOk;
}

} // namespace

int main(int argc, char** argv)
{
    const rlimit noCore {0, 0};
    setrlimit(RLIMIT_CORE, &noCore); // a crashing candidate must not litter core files
    if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) {
        std::cout << ksr::probeDevices() << "\n";
        return kExitOk;
    }
    if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
        std::cout << "ksearch-runner " << KSEARCH_VERSION << "\n";
        return kExitOk;
    }
    if (argc >= 2 && std::strcmp(argv[1], "--compile") == 0)
        return ksr::runConfinedCompile(argc, argv);
    if (argc == 3 && std::strcmp(argv[1], "--probe-confined") == 0)
        return probeConfinedCuda(argv[2]);
    const bool warm = argc >= 5 && std::strcmp(argv[1], "--warm") == 0 && std::strcmp(argv[3], "--handoff") == 0;
    const bool job = argc >= 3 && std::strcmp(argv[1], "--job") == 0;
    bool underTool = false, toolConfined = false, confine = true, userNamespace = false, known = warm || job;
    for (int i = warm ? 5 : 3; i < argc; ++i) {
        const auto is = [&](const char* option) { return std::strcmp(argv[i], option) == 0; };
        toolConfined = toolConfined || is("--confined-under-tool");
        underTool = underTool || is("--confined-under-tool") || is("--under-tool");
        confine = confine && !is("--unconfined");
        userNamespace = userNamespace || is("--user-namespace");
        // A job's confinement and tool are in its job.json; only the namespace question is not.
        known = known
            && (is("--user-namespace")
                || (warm && (is("--confined-under-tool") || is("--under-tool") || is("--unconfined"))));
    }
    if (!known) {
        std::cerr << "usage: ksearch-runner --job DIR [--user-namespace] | --warm BACKEND --handoff FD [--under-tool | "
                     "--confined-under-tool] [--unconfined] [--user-namespace] | --compile DIR [--readable PATH | "
                     "--hidden PATH]... -- PROGRAM ARGS... | --probe | --probe-confined DIR | --version\n";
        return kExitUsage;
    }
    try {
        if (warm)
            return runHandedOverJob(argv[2], std::atoi(argv[4]), underTool, toolConfined, confine, userNamespace);
        return runJob(argv[2], userNamespace);
    } catch (const std::exception& e) {
        std::cerr << "ksearch-runner: " << e.what() << "\n";
        return kExitUsage;
    }
}
