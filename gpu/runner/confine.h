#pragma once

// How a runner keeps the candidate it loads from the rest of the machine (docs/security.md,
// "Confinement"). Shared by ksearch-runner and, through libksearch_confine (confinelib.cpp), by
// the Python runner, so that both confine the same way. Each step says what it needs and reports
// what it got; a runner that gets less goes on and reports the gap, it does not fail the job.
//
// The order matters, and is the same in both runners:
//   isolateNetwork, privateMountNamespace (while the process has one thread), ownProcPossible
//   (CUDA), containChildProcesses, mountOwnProc (CUDA, before the device context), the device
//   context, limitProcesses, confineFilesystem, limitResources, dropPrivileges, the candidate.

#include <cstdint>
#include <string>
#include <vector>

namespace ksr {

// A new network namespace (only a loopback that is down): nothing the candidate does leaves it.
// CAP_SYS_ADMIN (root), or, where allowUserNamespace, an unprivileged user namespace that maps
// the same user (the host backend; a GPU runner keeps the user's identity for the device files).
bool isolateNetwork(bool allowUserNamespace);

// A mount namespace of the process's own, every mount private (nothing made in it reaches the
// system's). Must be made while the process has a single thread: a thread that exists when it is
// made stays in the system's namespace, and through /proc/self/task/TID/root the candidate could
// reach that writable view (confineFilesystem checks that none did).
bool privateMountNamespace();

// Whether the kernel lets this process mount a /proc (asked by mounting the system's again, in
// the private mount namespace): a CUDA context in a PID namespace of its own needs its own /proc.
// In a user namespace of its own it cannot be asked before the PID namespace exists: yes there,
// which an ordinary user's CUDA runner relies on only after `--probe-confined` showed it.
bool ownProcPossible();

// Everything the candidate starts lives in a PID namespace whose init runs no candidate code and
// dies with the runner (three processes; see confine.cpp). Returns true in the job's process, the
// only one that returns; false, without a fork, where the namespace cannot be had. Must be called
// while the process has a single thread.
bool containChildProcesses();

// Mounts the PID namespace's own /proc (the job's process, in the namespace).
bool mountOwnProc();

// The processes and threads of the job's PID namespace, at most `limit` (0: 1024) at once, where
// the kernel keeps a pid_max per namespace (Linux 6.14+). What was set; 0 where nothing could be.
std::uint64_t limitProcesses(std::uint64_t limit, bool inOwnPidNamespace);

// The candidate's view of the filesystem: read-only but its job's folder and a private /tmp and
// /dev/shm of tmpBytes each, the home folders and /run hidden, /proc the namespace's own, working
// directory the job's folder. Needs the private mount namespace (refused without it) and the PID
// namespace; true only when all of it holds and every thread of the process sees it. The
// `readable` paths (the candidate's file; for Python, the interpreter's prefixes and import path,
// which a virtual environment or ~/.local may keep under a home folder) stay readable where a
// hidden folder covered them; `alsoHidden` folders are hidden as the homes are (a compile's task
// folder, whose held-out workloads the source must not include). Paths absolute and canonical.
bool confineFilesystem(const std::string& jobDir, const std::vector<std::string>& readable, std::uint64_t tmpBytes,
    const std::vector<std::string>& alsoHidden = {});

// A runner's file size limit when the job names none; also the size of the private /tmp.
inline constexpr std::uint64_t kDefaultFileLimitBytes = std::uint64_t {1} << 30;

struct AppliedLimits {
    std::uint64_t fileBytes = 0; // RLIMIT_FSIZE in force; 0: none
    std::uint64_t memoryBytes = 0; // how far the data mappings may still grow; 0: no limit
};

// RLIMIT_FSIZE (fileLimitBytes, 0: kDefaultFileLimitBytes) and RLIMIT_DATA (memoryLimitBytes
// beyond what the process holds now, 0: half the machine's memory); see confine.cpp.
AppliedLimits limitResources(std::uint64_t fileLimitBytes, std::uint64_t memoryLimitBytes);

// No capabilities, and none to regain by exec. Before the candidate is loaded.
void dropPrivileges();

} // namespace ksr
