// ksearch-runner: runs one job of untrusted kernel calls in a process of its own.
// It only executes, times and records raw outputs; the parent process (ksearch) owns the
// expected outputs and decides every verdict. No Qt here, so it runs on a bare GPU server.

#include "backend.h"
#include "callexecutor.h"
#include "job.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <iostream>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

const auto g_processStart = std::chrono::steady_clock::now();

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitEnvironment = 3;
constexpr int kExitJobFailed = 4;

// A new network namespace has only a down loopback: the candidate can reach nothing. It needs
// CAP_SYS_ADMIN (root); elsewhere an unprivileged user namespace is tried for the host backend.
// The CUDA backend keeps the user's identity, which device-file permissions may depend on.
bool isolateNetwork(bool allowUserNamespace)
{
    if (::unshare(CLONE_NEWNET) == 0)
        return true;
    return allowUserNamespace && ::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0;
}

int runJob(const std::string& dir)
{
    const ksr::Job job = ksr::readJob(dir);
    const bool networkIsolated = isolateNetwork(job.backend == "host");
    std::unique_ptr<ksr::Backend> backend;
    if (job.backend == "host") {
        backend = ksr::makeHostBackend();
    } else if (job.backend == "cuda") {
        try {
            backend = ksr::makeCudaBackend();
        } catch (const std::exception& e) {
            std::cerr << "ksearch-runner: CUDA unavailable: " << e.what() << "\n";
            return kExitEnvironment;
        }
        if (!backend) {
            std::cerr << "ksearch-runner: CUDA unavailable: built without the CUDA toolkit\n";
            return kExitEnvironment;
        }
    } else {
        std::cerr << "ksearch-runner: unknown backend '" << job.backend << "'\n";
        return kExitUsage;
    }

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
    env.networkIsolated = networkIsolated;
    // From exec to a ready backend (CUDA context included): part of every candidate's overhead.
    env.startupSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_processStart).count();
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

    void* lib = dlopen(job.library.c_str(), RTLD_NOW | RTLD_LOCAL);
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
    int exitCode = kExitOk;
    for (const auto& call : job.calls) {
        emit(ksr::startedLine(call.id));
        ksr::CallLine line;
        try {
            line = ksr::executeCall(job, call, *backend, fn);
        } catch (const std::exception& e) {
            line.id = call.id;
            line.status = ksr::status::kHarnessError;
            line.message = e.what();
            if (const std::string err = backend->deviceError(); !err.empty()) {
                line.status = ksr::status::kDeviceError;
                line.message = err + " (" + e.what() + ")";
            }
        }
        emit(toJson(line));
        if (line.status == ksr::status::kDeviceError) {
            exitCode = kExitJobFailed; // a sticky device error poisons the context: stop here
            break;
        }
    }
    std::fclose(results);
    // Every result is on disk: leave without tearing the CUDA context, the candidate's library
    // and the buffers down one by one. The kernel and the driver reclaim them when the process
    // ends, and nothing a candidate left behind (atexit handlers, static destructors) runs.
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(exitCode);
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
    if (argc != 3 || std::strcmp(argv[1], "--job") != 0) {
        std::cerr << "usage: ksearch-runner --job DIR | --probe | --version\n";
        return kExitUsage;
    }
    try {
        return runJob(argv[2]);
    } catch (const std::exception& e) {
        std::cerr << "ksearch-runner: " << e.what() << "\n";
        return kExitUsage;
    }
}
