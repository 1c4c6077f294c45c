// confine.h's filesystem half: the private mount namespace and the candidate's narrowed view of
// the filesystem (confineFilesystem), with what it needs to read and remount mounts.

#include "confine.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sched.h>
#include <sstream>
#include <string>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace ksr {
namespace {

// Whether this process made its private mount namespace (privateMountNamespace): confineFilesystem
// mounts nothing without one.
bool g_privateMounts = false;

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

} // namespace

bool privateMountNamespace()
{
    g_privateMounts = ::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
    return g_privateMounts;
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
bool confineFilesystem(const std::string& jobDir, const std::vector<std::string>& readable, std::uint64_t tmpBytes,
    const std::vector<std::string>& alsoHidden)
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
    // Resolved before anything is covered: a $HOME under /tmp no longer resolves afterwards, and
    // the readable paths below are checked against it.
    std::vector<std::string> hidden = {"/root", "/home", "/run"};
    hidden.insert(hidden.end(), alsoHidden.begin(), alsoHidden.end());
    if (const char* home = std::getenv("HOME"); home && *home == '/')
        if (char* real = ::realpath(home, nullptr)) {
            hidden.emplace_back(real);
            std::free(real);
        }
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
        // Never one that holds a hidden folder (a home, bound back whole, also where it lay under
        // /tmp and is now only missing), the system's /tmp or /dev/shm, or the job's folder (its
        // writable mount would be covered): an import path may name the working directory.
        const auto holds = [&](const std::string& dir) { return within(dir, readable[i]); };
        const bool holdsHidden = std::any_of(hidden.begin(), hidden.end(), holds)
            || std::any_of(privateDirs.begin(), privateDirs.end(), holds);
        struct stat st {
        };
        if (kept[i] < 0 || holdsHidden || within(jobDir, readable[i]) || shows(readable[i], kept[i])
            || ::fstat(kept[i], &st) != 0)
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

} // namespace ksr
