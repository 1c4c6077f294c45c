#include "confine.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <linux/capability.h>
#include <sched.h>
#include <sstream>
#include <string>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace ksr {
namespace {

constexpr int kEnvironmentExit = 3; // ksearch-runner's exit code for a machine that cannot run the job

// Whether this process made its private mount namespace (privateMountNamespace): confineFilesystem
// mounts nothing without one.
bool g_privateMounts = false;

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

// A mount of /proc/self/mountinfo: its id, where it is (field 5, its octal escapes such as \040
// for a space undone), its own options (field 6: rw or ro, nosuid, relatime...) and its
// filesystem type (the first field after the separator "-").
struct MountPoint {
    int id = -1;
    std::string path;
    std::vector<std::string> options;
    std::string type;

    [[nodiscard]] bool has(const char* option) const
    {
        return std::find(options.begin(), options.end(), option) != options.end();
    }
};

std::vector<MountPoint> mountPoints()
{
    std::vector<MountPoint> points;
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        MountPoint m;
        std::string parent, device, root, escaped, options, word;
        fields >> m.id >> parent >> device >> root >> escaped >> options;
        while (fields >> word && word != "-") { }
        fields >> m.type;
        for (std::size_t i = 0; i < escaped.size(); ++i) {
            auto digit = [&](std::size_t k) { return k < escaped.size() && escaped[k] >= '0' && escaped[k] <= '7'; };
            if (escaped[i] == '\\' && digit(i + 1) && digit(i + 2) && digit(i + 3)) {
                m.path += static_cast<char>(std::stoi(escaped.substr(i + 1, 3), nullptr, 8));
                i += 3;
            } else {
                m.path += escaped[i];
            }
        }
        std::istringstream list(options);
        for (std::string option; std::getline(list, option, ',');)
            m.options.push_back(option);
        if (fields && !m.path.empty())
            points.push_back(std::move(m));
    }
    return points;
}

// Whether a mount can be reached by its path: another mount may have been laid over it (or over
// a parent), and then the path leads into that one, or nowhere. Asked without a request to the
// filesystem (no NFS or FUSE server is waited for, no automount is triggered). Unknown before
// Linux 5.8, whose statx does not name the mount.
enum class Reach { Yes, No, Unknown };

Reach reach(const MountPoint& m)
{
#ifdef STATX_MNT_ID
    struct statx sx {
    };
    if (::statx(AT_FDCWD, m.path.c_str(), AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) != 0)
        return Reach::No;
    if (sx.stx_mask & STATX_MNT_ID)
        return sx.stx_mnt_id == static_cast<std::uint64_t>(m.id) ? Reach::Yes : Reach::No;
#endif
    return Reach::Unknown;
}

// Whether `path` is `dir` or inside it (both absolute, without trailing slashes).
bool within(const std::string& path, const std::string& dir)
{
    return path == dir
        || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0
            && (dir == "/" || path[dir.size()] == '/'));
}

bool isDirectory(const std::string& path)
{
    struct stat st {
    };
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Remounts `m` read-only, keeping its other flags: a bind remount sets them all, so leaving one
// out would clear nosuid, nodev or noexec where the process may (root), and is refused (EPERM)
// in a user namespace, where they are locked, as is the atime rule.
bool remountReadOnly(const MountPoint& m)
{
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
    const std::pair<const char*, unsigned long> kept[] = {{"nosuid", MS_NOSUID}, {"nodev", MS_NODEV},
        {"noexec", MS_NOEXEC}, {"noatime", MS_NOATIME}, {"nodiratime", MS_NODIRATIME}, {"relatime", MS_RELATIME},
        {"nosymfollow", 256 /* MS_NOSYMFOLLOW, Linux 5.10 */}};
    for (const auto& [option, flag] : kept)
        if (m.has(option))
            flags |= flag;
    if (!m.has("noatime") && !m.has("relatime"))
        flags |= MS_STRICTATIME;
    return ::mount(nullptr, m.path.c_str(), nullptr, flags, nullptr) == 0;
}

// Whether `path` shows what `fd` (opened with O_PATH) refers to.
bool shows(const std::string& path, int fd)
{
    struct stat there {
    }, wanted {};
    return ::stat(path.c_str(), &there) == 0 && ::fstat(fd, &wanted) == 0 && there.st_dev == wanted.st_dev
        && there.st_ino == wanted.st_ino;
}

// Mounts what `fd` refers to at `path` (a bind mount), making an empty directory or file there
// first where a tmpfs laid over a parent left none. `fd` was opened with O_PATH in this mount
// namespace (a bind from a mount of another namespace is refused) before anything covered it.
bool bindAt(int fd, const std::string& path, bool directory)
{
    struct stat st {
    };
    if (::stat(path.c_str(), &st) != 0) {
        std::error_code ec;
        const std::filesystem::path p(path);
        std::filesystem::create_directories(directory ? p : p.parent_path(), ec);
        if (ec)
            return false;
        if (!directory) {
            const int made = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
            if (made < 0)
                return false;
            ::close(made);
        }
    }
    const std::string source = "/proc/self/fd/" + std::to_string(fd);
    return ::mount(source.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0;
}

// Whether every thread of this process is in its mount namespace. One that was started before
// the namespace was made stays in the old one, and its /proc/self/task/TID/root leads there.
bool everyThreadSharesTheMountNamespace()
{
    struct stat own {
    };
    if (::stat("/proc/self/ns/mnt", &own) != 0)
        return false;
    std::error_code ec;
    std::filesystem::directory_iterator task("/proc/self/task", ec), end;
    for (; !ec && task != end; task.increment(ec)) {
        struct stat theirs {
        };
        if (::stat((task->path() / "ns" / "mnt").c_str(), &theirs) != 0) {
            if (errno == ENOENT || errno == ESRCH)
                continue; // a thread that ended since the listing has no namespace to be in
            return false;
        }
        if (theirs.st_dev != own.st_dev || theirs.st_ino != own.st_ino)
            return false;
    }
    return !ec;
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

bool privateMountNamespace()
{
    g_privateMounts = ::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
    return g_privateMounts;
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

// The job's process sees the filesystem through its private mount namespace, in which
//   - everything is read-only, every mount remounted so (nothing the candidate does reaches a
//     file outside its job, the system's, the user's, other jobs' or the compile cache);
//   - the job's folder (jobDir) stays writable: result.jsonl, and the candidate's scratch;
//   - /tmp and /dev/shm are private, empty tmpfs of at most tmpBytes each, writable;
//   - the home folders ($HOME, /root, /home) and /run (the sockets of the system's services:
//     a network namespace does not cut a Unix socket reached by its path) are hidden behind
//     empty read-only tmpfs;
//   - the job's folder and the candidate's library (read-only) are mounted again where one of
//     those tmpfs covered them;
//   - /proc is the job's PID namespace's own, read-only: the system's showed every process and,
//     through /proc/PID/root and /cwd of any process of the same user, its writable view.
// The process then works in its job's folder (its working directory could be on a mount now
// hidden, and so still writable). Nothing of this reaches the system's namespace: every mount was
// made private with the namespace (a shared / would propagate the tmpfs). Needs CAP_SYS_ADMIN in
// the runner's user namespace (root, or the one isolateNetwork made), that namespace, made before
// the process had a second thread, and the PID namespace (for /proc). False where it could not be
// had: nothing is covered when the job's folder could not be kept; after that, when a mount could
// not be made read-only (the check below), /proc not replaced, or a thread found in another mount
// namespace, the confinement is partial and reported as none. Paths are absolute and canonical.
bool confineFilesystem(const std::string& jobDir, const std::vector<std::string>& readable, std::uint64_t tmpBytes)
{
    if (!g_privateMounts) { // in the system's namespace these mounts would cover the machine's folders
        std::cerr << "ksearch-runner: the filesystem is not confined: no private mount namespace\n";
        return false;
    }
    const int job = ::open(jobDir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    std::vector<int> kept; // opened before anything covers them: the readable paths, in order
    for (const std::string& path : readable)
        kept.push_back(::open(path.c_str(), O_PATH | O_CLOEXEC)); // none: its user will say why
    std::vector<std::string> mounted; // in order: undone last first when the job's folder is lost
    auto closeAll = [&] {
        for (const int fd : kept)
            if (fd >= 0)
                ::close(fd);
        if (job >= 0)
            ::close(job);
    };
    auto fail = [&] {
        std::cerr << "ksearch-runner: the filesystem is not confined: " << std::strerror(errno) << "\n";
        for (auto m = mounted.rbegin(); m != mounted.rend(); ++m)
            ::umount2(m->c_str(), MNT_DETACH);
        closeAll();
        return false;
    };
    if (job < 0)
        return fail();
    std::vector<std::string> privateDirs; // the writable tmpfs
    const std::string tmpOptions = "size=" + std::to_string(tmpBytes) + ",mode=1777";
    for (const char* dir : {"/tmp", "/dev/shm"}) {
        if (!isDirectory(dir))
            continue;
        if (::mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, tmpOptions.c_str()) != 0)
            return fail();
        mounted.emplace_back(dir);
        privateDirs.emplace_back(dir);
    }
    std::vector<std::string> hidden = {"/root", "/home", "/run"};
    if (const char* home = std::getenv("HOME"); home && *home == '/')
        if (char* real = ::realpath(home, nullptr)) {
            hidden.emplace_back(real);
            std::free(real);
        }
    for (const std::string& dir : hidden) {
        // Not one already covered (a home under /home), nor the whole system.
        if (dir == "/" || !isDirectory(dir) || std::find(mounted.begin(), mounted.end(), dir) != mounted.end())
            continue;
        if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755") != 0)
            return fail();
        mounted.push_back(dir);
    }
    if (!bindAt(job, jobDir, true)) // always: a mount of its own stays writable below
        return fail();
    mounted.push_back(jobDir);
    for (std::size_t i = 0; i < readable.size(); ++i) { // a parent bound back shows its children
        struct stat st {
        };
        if (kept[i] < 0 || shows(readable[i], kept[i]) || ::fstat(kept[i], &st) != 0)
            continue;
        if (!bindAt(kept[i], readable[i], S_ISDIR(st.st_mode)))
            return fail();
        mounted.push_back(readable[i]);
    }
    closeAll();

    // Everything else read-only: every mount that can be reached by its path (one laid under a
    // tmpfs above, or under another mount, cannot be written through it either). Automount
    // points are left alone (a remount would mount them), and so are the writable places: the
    // job's folder and the private tmpfs just laid over whatever was at their paths.
    auto leftWritable = [&](const MountPoint& m) {
        return m.type == "autofs" || within(m.path, jobDir)
            || std::find(privateDirs.begin(), privateDirs.end(), m.path) != privateDirs.end();
    };
    for (const MountPoint& m : mountPoints())
        if (!leftWritable(m) && !m.has("ro") && reach(m) != Reach::No)
            remountReadOnly(m);
    // The check: no other mount that can be reached is writable (where the kernel cannot say
    // whether one can, it counts as reachable).
    bool confined = true;
    for (const MountPoint& m : mountPoints())
        if (!leftWritable(m) && !m.has("ro") && reach(m) != Reach::No) {
            std::cerr << "ksearch-runner: " << m.path << " stays writable\n";
            confined = false;
        }
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr) != 0) {
        std::cerr << "ksearch-runner: no /proc of the PID namespace: " << std::strerror(errno) << "\n";
        confined = false;
    }
    if (::chdir(jobDir.c_str()) != 0)
        confined = false;
    if (!everyThreadSharesTheMountNamespace()) {
        std::cerr << "ksearch-runner: a thread of the runner is in another mount namespace\n";
        confined = false;
    }
    return confined;
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
