// Which confinement step a CUDA process survives, step by step, and what holding the device's
// memory costs (docs/evaluation.md, "The CUDA runner confined"). Not part of the product: a probe
// for a new machine or driver. Build here, run as root on the GPU machine:
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o build/cuda_namespace_probe bench/cuda_namespace_probe.cu
//   build/cuda_namespace_probe all|nopid|pidonly|user
// all: network and PID namespaces, the context, then the mounts; nopid: no PID namespace;
// pidonly: no mounts; user (run as an ordinary user): a user namespace mapping only the caller
// with the network one, then a mount namespace, the PID namespace with its own /proc before the
// context (ksearch-runner's order since session 17), the mounts kept nodev/nosuid as the
// namespace requires, and a kernel launched at the end. On the H200 machine (2026-12-05) the
// context failed in a new PID namespace (cudaErrorOperatingSystem, the system's /proc) and came
// up without one. On the H100 machine (2026-12-05, kernel 6.18) `user` passed every step as root
// and as nobody (setpriv --reuid=65534 --regid=65534 --clear-groups; /dev/nvidia* are 0666).
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <fstream>
#include <sched.h>
#include <string>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
__global__ void probe_kernel(int* out)
{
    out[threadIdx.x] = (int)threadIdx.x * 3;
}
static void writeFile(const char* file, const std::string& text)
{
    const int fd = open(file, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        [[maybe_unused]] auto n = write(fd, text.data(), text.size());
        close(fd);
    }
}
static void step(const char* what, bool ok)
{
    std::printf("%-40s %s (%s)\n", what, ok ? "ok" : "FAILED", ok ? "" : std::strerror(errno));
    std::fflush(stdout);
}
static bool cuda(const char* what, cudaError_t e)
{
    std::printf("%-40s %s\n", what, e == cudaSuccess ? "ok" : cudaGetErrorString(e));
    std::fflush(stdout);
    return e == cudaSuccess;
}
static long vmdata()
{
    std::ifstream s("/proc/self/status");
    std::string l;
    while (std::getline(s, l))
        if (l.rfind("VmData:", 0) == 0)
            return std::stol(l.substr(7));
    return -1;
}
int main(int argc, char** argv)
{
    const std::string mode = argc > 1 ? argv[1] : "all";
    const bool user = mode == "user";
    std::printf("uid %d euid %d gid %d\n", (int)getuid(), (int)geteuid(), (int)getgid());
    if (user) {
        const uid_t uid = getuid();
        const gid_t gid = getgid();
        step("unshare(CLONE_NEWUSER | CLONE_NEWNET)", unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0);
        writeFile("/proc/self/setgroups", "deny");
        writeFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1");
        writeFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
        step("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS) == 0);
        step("make / private", mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0);
    } else {
        step("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET) == 0);
    }
    if (mode != "nopid") {
        step("unshare(CLONE_NEWPID)", unshare(CLONE_NEWPID) == 0);
        pid_t init = fork();
        if (init > 0) {
            int st;
            waitpid(init, &st, 0);
            std::printf("init ended %d\n", st);
            return 0;
        }
        pid_t job = fork();
        if (job > 0) {
            int st;
            waitpid(job, &st, 0);
            std::printf("job ended status %d (signal %d)\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                WIFSIGNALED(st) ? WTERMSIG(st) : 0);
            std::fflush(stdout);
            _exit(0);
        }
        std::printf("job pid in namespace: %d\n", getpid());
        if (user)
            step("proc of the namespace (before the context)",
                mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0);
    }
    void* p = nullptr;
    if (!cuda("context (cudaFree 0)", cudaFree(nullptr)))
        return 1;
    cuda("cudaMalloc 512 MiB before", cudaMalloc(&p, 512u << 20));
    cudaFree(p);
    std::printf("VmData %ld kB\n", vmdata());
    if (user) {
        step("tmpfs on /tmp", mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g") == 0);
        step("tmpfs on /run", mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") == 0);
        step("remount / read-only", mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0);
        step("remount /dev read-only (nosuid)",
            mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, nullptr) == 0);
        step("remount /dev read-only (nosuid, noexec)",
            mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, nullptr) == 0);
        const int fd = open("/probe-write-test", O_WRONLY | O_CREAT, 0644);
        step("a write to / is refused", fd < 0);
        if (fd >= 0)
            close(fd);
        cuda("cudaMalloc 512 MiB after mounts", cudaMalloc(&p, 512u << 20));
        int* out = static_cast<int*>(p);
        probe_kernel<<<1, 64>>>(out);
        cuda("kernel launch", cudaGetLastError());
        cuda("kernel finished", cudaDeviceSynchronize());
        int host[64] = {};
        cuda("copy back", cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
        step("kernel's result right", host[63] == 189);
        cudaFree(p);
    }
    if (mode == "all" || mode == "nopid") {
        step("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS) == 0);
        step("make / private", mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0);
        step("tmpfs on /tmp", mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g") == 0);
        step("tmpfs on /dev/shm", mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g") == 0);
        step("tmpfs on /run", mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") == 0);
        step("remount / read-only", mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0);
        step("remount /dev read-only",
            mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, nullptr) == 0);
        if (mode == "all")
            step("proc of the namespace",
                mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr) == 0);
        cuda("cudaMalloc 512 MiB after mounts", cudaMalloc(&p, 512u << 20));
        cudaFree(p);
    }
    rlimit r {};
    getrlimit(RLIMIT_DATA, &r);
    const unsigned long long held = (unsigned long long)vmdata() * 1024;
    r.rlim_cur = r.rlim_max = held + (64ull << 30);
    step("RLIMIT_DATA held + 64 GiB", setrlimit(RLIMIT_DATA, &r) == 0);
    cuda("cudaMalloc 512 MiB after RLIMIT_DATA", cudaMalloc(&p, 512u << 20));
    cudaFree(p);
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    void* hold = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    cuda("hold all but 3 GiB", cudaMalloc(&hold, (fr - (3ull << 30)) / (2u << 20) * (2u << 20)));
    std::printf("hold took %.1f ms (free was %.1f GiB)\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), fr / 1073741824.0);
    cuda("cudaMalloc 1 GiB within", cudaMalloc(&p, 1ull << 30));
    cudaFree(p);
    cuda("cudaMalloc 4 GiB past", cudaMalloc(&p, 4ull << 30));
    cudaGetLastError();
    t0 = std::chrono::steady_clock::now();
    cudaFree(hold);
    std::printf("release took %.1f ms\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    std::printf("done\n");
    return 0;
}
