// ksearch-runner: runs one job of untrusted kernel calls in a process of its own.
// It only executes, times and records raw outputs; the parent process (ksearch) owns the
// expected outputs and decides every verdict. No Qt here, so it runs on a bare GPU server.

#include "backend.h"
#include "callexecutor.h"
#include "handoff.h"
#include "job.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <iostream>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

// Closes every descriptor but `keep` (-1: none) in a process that holds no candidate code.
void closeAllBut(int keep)
{
#ifdef SYS_close_range
    const auto below = static_cast<unsigned>(keep), above = static_cast<unsigned>(keep) + 1;
    if ((keep <= 0 || ::syscall(SYS_close_range, 0U, below - 1, 0U) == 0)
        && ::syscall(SYS_close_range, keep < 0 ? 0U : above, ~0U, 0U) == 0)
        return;
#endif
    for (int fd = 0; fd < 65536; ++fd)
        if (fd != keep)
            ::close(fd);
}

// Ends this process as the wait status `status` says: the same exit code, or the same signal.
[[noreturn]] void endAs(int status)
{
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        ::signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
        ::raise(sig);
        ::_exit(128 + sig);
    }
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : kExitEnvironment);
}

// Everything the candidate starts lives in a PID namespace whose init is a process of the
// runner's that runs no candidate code. When a namespace's init ends, the kernel kills every
// process in it, whichever session or group it moved to (setsid, a daemon's double fork), and
// nothing in the namespace can kill its init. Three processes, because the process that calls
// unshare(CLONE_NEWPID) may no longer create threads (an OpenMP candidate does):
//   the runner ksearch started (its group's leader) unshares and forks the init; it only waits
//   and ends as the job ends (same exit code or signal, which the init passes it on a pipe);
//   the init (process 1 of the namespace, in the runner's group, dies with the runner) forks the
//   job's process, reaps whatever is orphaned in the namespace, and reports the job's end;
//   the job's process, which returns from here and does everything else.
// Killing the runner's group (ksearch's timeout and end of a job) therefore ends the namespace,
// and so does the job's own end. Needs CAP_SYS_ADMIN in the runner's user namespace: root, or the
// user namespace the host backend made for the network. False where it cannot be had: the
// runner goes on alone, and only the group kill ends what the candidate forks.
bool containChildProcesses()
{
    int report[2] = {-1, -1};
    if (::pipe(report) != 0)
        return false;
    if (::unshare(CLONE_NEWPID) != 0) {
        ::close(report[0]);
        ::close(report[1]);
        return false;
    }
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); // neither of the two above the job can be traced by its processes
    const pid_t init = ::fork();
    if (init < 0) { // this process can no longer create threads: no job here
        std::cerr << "ksearch-runner: fork after unshare(CLONE_NEWPID): " << std::strerror(errno) << "\n";
        std::_Exit(kExitEnvironment);
    }
    if (init > 0) { // the runner ksearch started: waits, then ends as the job did
        closeAllBut(report[0]);
        int jobStatus = 0, initStatus = 0;
        const bool reported = ::read(report[0], &jobStatus, sizeof jobStatus) == sizeof jobStatus;
        while (::waitpid(init, &initStatus, 0) < 0 && errno == EINTR) { }
        endAs(reported ? jobStatus : initStatus);
    }
    // The init. It dies with the runner; before this prctl only a kill of the whole group could
    // have ended the runner, and that reaches the init too.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    ::close(report[0]);
    const pid_t job = ::fork();
    if (job < 0) {
        const int status = kExitEnvironment << 8; // as exit(kExitEnvironment)
        std::cerr << "ksearch-runner: fork in the PID namespace: " << std::strerror(errno) << "\n";
        [[maybe_unused]] auto n = ::write(report[1], &status, sizeof status);
        ::_exit(kExitEnvironment);
    }
    if (job == 0) {
        ::close(report[1]);
        ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); // as a runner without the namespace
        return true;
    }
    ::prctl(PR_SET_NAME, "ksearch-init", 0, 0, 0);
    closeAllBut(report[1]); // the runner's output pipes close when the job's process closes them
    for (;;) {
        int status = 0;
        const pid_t ended = ::waitpid(-1, &status, 0);
        if (ended == job) {
            [[maybe_unused]] auto n = ::write(report[1], &status, sizeof status);
            ::_exit(0); // and the kernel kills what is left in the namespace
        }
        if (ended < 0 && errno != EINTR)
            ::_exit(kExitEnvironment);
    }
}

// Before the kernel is loaded: no capabilities (a runner started by root would otherwise read the
// parent's descriptors, expected outputs included, through /proc with CAP_SYS_PTRACE) and none
// to be regained by exec. Nothing to drop for an ordinary user.
void dropPrivileges()
{
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    __user_cap_header_struct header {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[2] = {};
    ::syscall(SYS_capset, &header, none);
}

double monotonicSeconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A backend ready for a job: the network cut off first, then the device context created.
struct ReadyBackend {
    std::unique_ptr<ksr::Backend> backend;
    bool networkIsolated = false;
    bool processesContained = false;
    double startupSeconds = 0.0; // from exec to here
    double readyMonotonic = 0.0;
    int failure = kExitOk; // the exit code when there is no backend
};

// underTool: the runner runs under a tool (compute-sanitizer) that talks to its injection in this
// process over TCP on loopback, which a network namespace of its own would cut.
ReadyBackend prepareBackend(const std::string& name, bool underTool = false)
{
    ReadyBackend ready;
    ready.networkIsolated = !underTool && isolateNetwork(name == "host");
    // The host backend only: a CUDA runner in a PID namespace has not been tried on a GPU yet.
    ready.processesContained = name == "host" && !underTool && containChildProcesses();
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

int executeJob(const ksr::Job& job, ReadyBackend& ready)
{
    const std::string& dir = job.dir;
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

    dropPrivileges(); // after the device context and CUPTI are up: neither needs them again
    std::fputs((std::string(ksr::kLoadingMarker) + "\n").c_str(), stdout);
    std::fflush(stdout);
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

int runJob(const std::string& dir)
{
    const ksr::Job job = ksr::readJob(dir);
    ReadyBackend ready = prepareBackend(job.backend);
    return ready.backend ? executeJob(job, ready) : ready.failure;
}

// Started ahead of its job: everything up to a ready backend now, then the job from the socket.
int runHandedOverJob(const std::string& backendName, int socket, bool underTool)
{
    ::fcntl(socket, F_SETFD, FD_CLOEXEC); // nothing this process may start inherits it
    ReadyBackend ready = prepareBackend(backendName, underTool);
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
    const bool underTool = argc == 6 && std::strcmp(argv[5], "--under-tool") == 0;
    const bool handedOver =
        (argc == 5 || underTool) && std::strcmp(argv[1], "--warm") == 0 && std::strcmp(argv[3], "--handoff") == 0;
    if (!handedOver && (argc != 3 || std::strcmp(argv[1], "--job") != 0)) {
        std::cerr << "usage: ksearch-runner --job DIR | --warm BACKEND --handoff FD [--under-tool] | --probe | "
                     "--version\n";
        return kExitUsage;
    }
    try {
        if (handedOver)
            return runHandedOverJob(argv[2], std::atoi(argv[4]), underTool);
        return runJob(argv[2]);
    } catch (const std::exception& e) {
        std::cerr << "ksearch-runner: " << e.what() << "\n";
        return kExitUsage;
    }
}
