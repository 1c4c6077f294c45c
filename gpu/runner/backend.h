#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ksr {

using KsRunFn = int (*)(const void* args, void* workspace, std::size_t workspaceBytes, void* stream);
// ks_launch_error, which the ABI prelude (resources/abi/ks_prelude.h) puts in every CUDA
// candidate: the last error of the candidate's own CUDA runtime, taken (so cleared), as text, or
// null. nvcc links each library with a static runtime of its own, so a launch the driver refused
// (a grid, block or shared-memory size beyond the device's or the kernel's limits) is recorded
// there alone: nothing sticky, no error in this process, only outputs left unwritten.
using KsLaunchErrorFn = const char* (*)();

// What the runner calls: the entry point, and the launch-error probe when the library has one.
struct Candidate {
    KsRunFn run = nullptr;
    KsLaunchErrorFn launchError = nullptr;
};

struct TimedCall {
    int returnCode = 0;
    double deviceMicros = 0.0; // events around the call on the given stream (host: = wall)
    double wallMicros = 0.0; // host clock from just before the lead-in to device idle
    double leadInMicros = 0.0; // device time of the lead-in (CUDA: the flush and its head start; host: 0)
    // What the host view leaves out of the wall time for the lead-in: its device time, but at most
    // what launchOverheadMicros' rounds took for it plus a margin. A lead-in stretched past that
    // had something of the candidate's beside it (a side stream's work, however it was prioritised),
    // which the host clock must still see when the spans do not.
    double leadInCreditMicros = 0.0;
};

struct DeviceInfo {
    std::string name;
    std::size_t l2Bytes = 0;
    double copyBandwidthGBs = 0.0; // measured device-to-device copy, read + write bytes per second
};

// Memory, cache and launch primitives of one backend. The host backend uses plain memory; the
// CUDA backend device memory on one non-blocking stream.
class Backend
{
public:
    virtual ~Backend() = default;
    virtual void* allocate(std::size_t bytes) = 0; // never null for bytes > 0; throws on failure
    virtual void release(void* p) = 0;
    virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
    virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
    virtual void copyWithin(void* dst, const void* src, std::size_t bytes) = 0; // device to device
    // Whether two device ranges hold the same bytes (compared where they live).
    virtual bool sameBytes(const void* a, const void* b, std::size_t bytes) = 0;
    // Whether "device" memory is plain host memory (then host memory is usable wherever device
    // memory is asked for, and keeping device copies of host data is a waste).
    virtual bool hostMemory() const { return false; }
    // Runs the entry point and waits until the whole device is idle, so work the candidate put
    // on any other stream is included; returns its return code.
    virtual int run(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) = 0;
    // Before each timed call: undoes what could keep data cached across a flush (persisting L2
    // lines, access-policy windows). timedRun then evicts the caches (CUDA: 2x the L2 written
    // right before the start event; host: 64 MiB written here) and times one call.
    virtual void flushCaches() = 0;
    virtual TimedCall timedRun(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) = 0;
    // Median host-clock overhead of an empty device operation timed like a call: what wall time
    // adds to the lead-in and the events of an honest kernel (the first launch's latency and the
    // wake-up from the device-wide wait). Also what bounds timedRun's leadInCreditMicros from then on.
    virtual double launchOverheadMicros() = 0;
    virtual DeviceInfo info() = 0;
    // Device memory free right now, where the backend's memory is a separate, limited pool
    // (CUDA); nullopt on the host, whose allocations are checked as they are made.
    virtual std::optional<std::size_t> freeBytes() { return std::nullopt; }
    // Holds device memory so that about `keepFree` bytes (at least, and at most 2 MiB more) stay
    // free: the call's buffers and what the candidate allocates itself come out of them, and an
    // allocation past them fails as on a full device (the GPU-memory budget, Job). Held until the
    // next hold, which gives back or takes the difference, or releaseDeviceMemory(). The harness's
    // own buffers are allocated first. What is free now; nullopt where nothing is held (the host,
    // whose memory the runner's RLIMIT_DATA bounds).
    virtual std::optional<std::size_t> holdDeviceMemoryBut(std::size_t keepFree)
    {
        (void)keepFree;
        return std::nullopt;
    }
    [[nodiscard]] virtual std::size_t heldDeviceBytes() const { return 0; } // what a fit check may count as free
    virtual void releaseDeviceMemory() { }
    // A sticky device error after the last call, or empty when the device is healthy.
    virtual std::string deviceError() = 0;
    // Device work on any stream per timed call (CUPTI): beginSpans() before a timing loop, then
    // spans() after it gives one figure per timedRun since, in microseconds; empty when the
    // backend cannot tell.
    virtual void beginSpans() { }
    virtual std::vector<double> spans() { return {}; }
    // What the events on the given stream add to the device span of the same work (the start
    // event's wait behind the lead-in, the end event), measured by beginSpans() on a kernel of
    // the harness's timed as a call. A span that replaces a sample gets it added, so work on
    // another stream is timed as the same work on the given stream would be.
    virtual double spanOffsetMicros() { return 0.0; }
};

std::unique_ptr<Backend> makeHostBackend();
std::unique_ptr<Backend> makeCudaBackend(); // nullptr when built without CUDA

// JSON text describing the devices this runner can see (for `ksearch-runner --probe`).
std::string probeDevices();

} // namespace ksr
