// confine.h: the network, the processes the candidate starts, the privileges and the limits of
// a runner's process (the filesystem half is confinefilesystem.cpp).

#include "confine.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <linux/capability.h>
#include <sched.h>
#include <string>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ksr {
namespace {

constexpr int kEnvironmentExit = 3; // ksearch-runner's exit code for a machine that cannot run the job

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
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : kEnvironmentExit);
}

// The data mappings the process holds now (VmData: heap, private writable mappings), in bytes.
std::uint64_t dataBytesHeld()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmData:", 0) == 0)
            return std::stoull(line.substr(7)) * 1024;
    return 0;
}

// Sets both the soft and the hard limit of `resource` to `bytes`, or keeps a lower hard limit;
// what is now in force. The candidate can raise neither (no CAP_SYS_RESOURCE once dropped).
std::uint64_t lowerLimit(int resource, std::uint64_t bytes)
{
    rlimit r {};
    if (::getrlimit(resource, &r) != 0)
        return 0;
    if (r.rlim_max != RLIM_INFINITY && r.rlim_max < bytes)
        bytes = r.rlim_max;
    r.rlim_cur = r.rlim_max = bytes;
    return ::setrlimit(resource, &r) == 0 ? bytes : 0;
}

// Whether this kernel keeps a pid_max per PID namespace (Linux 6.14 and later). Before that
// kernel.pid_max is the machine's: writing it from a job would starve the whole system.
bool pidMaxPerNamespace()
{
    utsname u {};
    int major = 0, minor = 0;
    return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &major, &minor) == 2
        && (major > 6 || (major == 6 && minor >= 14));
}

// Whether this process is in a user namespace other than the machine's (which maps every id to
// itself: "0 0 4294967295").
bool inOwnUserNamespace()
{
    std::ifstream map("/proc/self/uid_map");
    unsigned long inside = 0, outside = 0, count = 0;
    return map >> inside >> outside >> count && !(inside == 0 && outside == 0 && count == 4294967295UL);
}

} // namespace

bool isolateNetwork(bool allowUserNamespace)
{
    if (::unshare(CLONE_NEWNET) == 0)
        return true;
    const uid_t uid = ::getuid();
    const gid_t gid = ::getgid();
    if (!allowUserNamespace || ::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
        return false;
    // The same user and group inside as outside: unmapped, the process would be nobody there and
    // could create no file in a filesystem mounted inside (the tmpfs of confineFilesystem).
    auto write = [](const char* file, const std::string& text) {
        const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            [[maybe_unused]] auto n = ::write(fd, text.data(), text.size());
            ::close(fd);
        }
    };
    write("/proc/self/setgroups", "deny"); // gid_map may not be written by an unprivileged process before
    write("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1");
    write("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
    return true;
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
        std::_Exit(kEnvironmentExit);
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
        const int status = kEnvironmentExit << 8; // as exit(kEnvironmentExit)
        std::cerr << "ksearch-runner: fork in the PID namespace: " << std::strerror(errno) << "\n";
        [[maybe_unused]] auto n = ::write(report[1], &status, sizeof status);
        ::_exit(kEnvironmentExit);
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
            ::_exit(kEnvironmentExit);
    }
}

// A CUDA context made in a PID namespace of its own fails (cudaErrorOperatingSystem on the H200
// machine, 2026-12-05) while /proc is the system's: the driver looks itself up there by the pid it
// has in the namespace. So a CUDA runner gets the namespace only with a /proc of its own, mounted
// before the context is made. ownProcPossible() (the runner, in its private mount namespace,
// before the PID namespace) mounts the system's /proc again, which the kernel allows or refuses
// (a container's masked /proc) as it will the namespace's own; mountOwnProc() (the job's process,
// in the namespace) mounts that one.
bool ownProcPossible()
{
    // In a user namespace of its own (an ordinary user's runner) a /proc may be mounted only from a
    // PID namespace that namespace owns, which the runner makes next: it cannot ask here. A CUDA
    // runner makes the user namespace only after `--probe-confined` went through the whole
    // sequence on this machine (gpu/cudausernamespace.h), so the answer then is yes.
    if (inOwnUserNamespace())
        return true;
    return ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
}

bool mountOwnProc()
{
    return ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
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

// A runner's limits on its own process (host and CUDA), set before the candidate is loaded (children
// inherit them):
//   RLIMIT_FSIZE: a file the process writes may not grow beyond the job's file limit (1 GiB by
//   default); the write that would is refused and SIGXFSZ ends the process: a crash of the call;
//   RLIMIT_DATA: its data mappings (heap, anonymous private mappings, thread stacks; not the
//   shared buffers, which are shared mappings) may grow by at most the job's memory limit (half
//   the machine's memory by default) beyond what the runner holds now, so an allocation past it
//   fails (malloc returns null, new throws) instead of the machine swapping. It covers the
//   runner's own buffers of every call (on the host backend its device buffers are heap) and the
//   candidate's allocations. Not RLIMIT_AS: it also counts address space reserved but never
//   written (a sanitizer's shadow, glibc's per-thread arenas, the GPU's unified address space),
//   which must not fail. The limit is set above what is held (VmData) for the same reason: an
//   AddressSanitizer build's shadow counts as data from the start.
//   RLIMIT_NPROC is not set: it counts every process of the real user (their shell, other
//   runners, the whole machine for a shared account), not this job's, and root ignores it; the
//   PID namespace already ends all the job's processes with it.
AppliedLimits limitResources(std::uint64_t fileLimitBytes, std::uint64_t memoryLimitBytes)
{
    AppliedLimits applied;
    applied.fileBytes = lowerLimit(RLIMIT_FSIZE, fileLimitBytes ? fileLimitBytes : kDefaultFileLimitBytes);
    std::uint64_t memory = memoryLimitBytes;
    if (memory == 0) {
        const long pages = ::sysconf(_SC_PHYS_PAGES), pageBytes = ::sysconf(_SC_PAGESIZE);
        memory = pages > 0 && pageBytes > 0 ? static_cast<std::uint64_t>(pages) * pageBytes / 2 : 0;
    }
    if (memory > 0) {
        const std::uint64_t held = dataBytesHeld();
        const std::uint64_t set = lowerLimit(RLIMIT_DATA, held + memory);
        applied.memoryBytes = set > held ? set - held : 0;
    }
    return applied;
}

// The processes and threads of the job's PID namespace, at most `limit` at once (a fork or a
// thread past it fails with EAGAIN): the namespace's pid_max, which a process of the namespace
// holding CAP_SYS_ADMIN in its user namespace may lower (the job's process, before it drops its
// capabilities; /proc is still the system's, whose kernel.pid_max answers for the namespace of
// whoever writes it). Not RLIMIT_NPROC: root ignores it, and it counts every process of the user.
// Pids 1 (the init) and 2 (the job) are already taken. What was set; 0 where nothing could be.
std::uint64_t limitProcesses(std::uint64_t limit, bool inOwnPidNamespace)
{
    constexpr std::uint64_t kernelFloor = 301; // PID_MAX_MIN
    if (!inOwnPidNamespace || !pidMaxPerNamespace())
        return 0;
    limit = std::max(limit == 0 ? 1024 : limit, kernelFloor);
    const int fd = ::open("/proc/sys/kernel/pid_max", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    const std::string text = std::to_string(limit);
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return written ? limit : 0;
}

} // namespace ksr
