// libksearch_confine: confine.h behind a C ABI, for the Python runner, which loads it with ctypes
// (resources/python/ksearch_pyrunner.py), so that a Python candidate is confined by the same code
// as a compiled one. Each function returns what the step got; the runner reports it and ksearch
// judges the gaps (core/task/confinement.h). The order of confine.h holds here too: the private
// mount namespace and the PID namespace before torch starts a thread.

#include "confine.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#define KS_CONFINE_API extern "C" __attribute__((visibility("default")))

// 1: this process is in a network namespace of its own (allowUserNamespace: through a user
// namespace mapping the same user where it is not root; the host backend).
KS_CONFINE_API int ks_confine_isolate_network(int allowUserNamespace)
{
    return ksr::isolateNetwork(allowUserNamespace != 0) ? 1 : 0;
}

// 1: this process has a mount namespace of its own, every mount private.
KS_CONFINE_API int ks_confine_private_mounts()
{
    return ksr::privateMountNamespace() ? 1 : 0;
}

// 1: a /proc may be mounted here (a CUDA context in the PID namespace needs its own).
KS_CONFINE_API int ks_confine_own_proc_possible()
{
    return ksr::ownProcPossible() ? 1 : 0;
}

// 1 in the job's process, in a PID namespace of its own: the two processes above it never return
// (they end as the job ends). 0 where the namespace cannot be had (no fork was made). Python must
// be told of the fork in the job's process (PyOS_AfterFork_Child), and be called holding its
// lock (ctypes.PyDLL), so that the job's process returns to an interpreter in a known state.
KS_CONFINE_API int ks_confine_contain_processes()
{
    return ksr::containChildProcesses() ? 1 : 0;
}

KS_CONFINE_API int ks_confine_mount_own_proc()
{
    return ksr::mountOwnProc() ? 1 : 0;
}

KS_CONFINE_API std::uint64_t ks_confine_limit_processes(std::uint64_t limit, int inOwnPidNamespace)
{
    return ksr::limitProcesses(limit, inOwnPidNamespace != 0);
}

// 1: the filesystem is confined to the job's folder (see confine.h). `readable`: the paths kept
// readable, one per line (the candidate's file first); `hidden`: folders hidden as the home
// folders are, one per line. tmpBytes 0: the default.
KS_CONFINE_API int ks_confine_filesystem_hiding(
    const char* jobDir, const char* readable, const char* hidden, std::uint64_t tmpBytes)
{
    if (!jobDir || !readable || !hidden)
        return 0;
    const auto lines = [](const char* text) {
        std::vector<std::string> paths;
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);)
            if (!line.empty())
                paths.push_back(line);
        return paths;
    };
    return ksr::confineFilesystem(
               jobDir, lines(readable), tmpBytes ? tmpBytes : ksr::kDefaultFileLimitBytes, lines(hidden))
        ? 1
        : 0;
}

// The same, hiding nothing beyond the home folders.
KS_CONFINE_API int ks_confine_filesystem(const char* jobDir, const char* readable, std::uint64_t tmpBytes)
{
    return ks_confine_filesystem_hiding(jobDir, readable, "", tmpBytes);
}

// The limits in force afterwards, written to *fileBytes and *memoryBytes (0: none).
KS_CONFINE_API void ks_confine_limit_resources(
    std::uint64_t fileLimitBytes, std::uint64_t memoryLimitBytes, std::uint64_t* fileBytes, std::uint64_t* memoryBytes)
{
    const ksr::AppliedLimits applied = ksr::limitResources(fileLimitBytes, memoryLimitBytes);
    if (fileBytes)
        *fileBytes = applied.fileBytes;
    if (memoryBytes)
        *memoryBytes = applied.memoryBytes;
}

KS_CONFINE_API void ks_confine_drop_privileges()
{
    ksr::dropPrivileges();
}
