#include "backend.h"
#include "devicespans.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef KSR_WITH_CUDA
#include "calltimer.h"
#include "cudacheck.h"
#include "devicecompare.h"

#include <cuda_runtime.h>
#endif

namespace ksr {

#ifdef KSR_WITH_CUDA
namespace {

// Host memory page-locked for one large copy. Inputs and outputs live in the parent's shared
// memory, pageable, which the driver would stage through a bounce buffer of its own at a fraction of
// the link's rate; locked, the copy engine reads and writes them directly. Where locking is refused
// (a limit, an old driver) the copy goes the pageable way. KSEARCH_PIN_TRANSFERS=0 turns it off
// (bench/prestart_overhead.sh compares the two).
class Pinned
{
public:
    Pinned(void* host, std::size_t bytes, unsigned flags, bool enabled)
    {
        constexpr std::size_t kWorthIt = std::size_t {4} << 20; // below this the locking costs more than it saves
        if (!enabled || bytes < kWorthIt)
            return;
        if (cudaHostRegister(host, bytes, flags) == cudaSuccess)
            m_host = host;
        else
            cudaGetLastError(); // not sticky: clear it and copy pageable
    }
    ~Pinned()
    {
        if (m_host)
            cudaHostUnregister(m_host);
    }
    Pinned(const Pinned&) = delete;
    Pinned& operator=(const Pinned&) = delete;

private:
    void* m_host = nullptr;
};

bool pinTransfersEnabled()
{
    const char* setting = std::getenv("KSEARCH_PIN_TRANSFERS");
    return !(setting && std::string(setting) == "0");
}

class CudaBackend final : public Backend
{
public:
    CudaBackend()
    {
        check(cudaSetDevice(0), "cudaSetDevice");
        check(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking), "cudaStreamCreate");
        int l2 = 0;
        check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), "cudaDeviceGetAttribute(L2)");
        m_l2Bytes = static_cast<std::size_t>(l2);
        if (m_spans.enable())
            m_spans.recordMemsetsBut(m_stream);
        m_timer = std::make_unique<CallTimer>(m_stream, m_l2Bytes, m_spans, [this](cudaError_t e) { noteError(e); });
        m_pinTransfers = pinTransfersEnabled();
    }
    ~CudaBackend() override
    {
        releaseDeviceMemory();
        m_timer.reset();
        if (m_differs)
            cudaFree(m_differs);
        cudaStreamDestroy(m_stream);
    }
    void* allocate(std::size_t bytes) override
    {
        void* p = nullptr;
        check(cudaMalloc(&p, bytes == 0 ? 256 : bytes), "cudaMalloc");
        return p;
    }
    void release(void* p) override { cudaFree(p); }
    // Copies are ordered on the harness's own stream and waited for: a plain cudaMemcpy runs on
    // the legacy stream, which a non-blocking stream does not wait for, and from pageable memory it
    // may return before its DMA has landed.
    void upload(void* dst, const void* src, std::size_t bytes) override
    {
        const Pinned pinned(const_cast<void*>(src), bytes, cudaHostRegisterReadOnly, m_pinTransfers);
        check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, m_stream), "cudaMemcpyAsync (upload)");
        check(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize (upload)");
    }
    void download(void* dst, const void* src, std::size_t bytes) override
    {
        const Pinned pinned(dst, bytes, cudaHostRegisterDefault, m_pinTransfers);
        check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, m_stream), "cudaMemcpyAsync (download)");
        check(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize (download)");
    }
    void copyWithin(void* dst, const void* src, std::size_t bytes) override
    {
        check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, m_stream), "cudaMemcpyAsync (poison)");
    }
    bool sameBytes(const void* a, const void* b, std::size_t bytes) override
    {
        check(cudaMemsetAsync(comparisonFlag(), 0, sizeof(int), m_stream), "cudaMemsetAsync (comparison flag)");
        check(launchCompareBytes(a, b, bytes, m_differs, m_stream), "compareBytes");
        int differs = 0;
        download(&differs, m_differs, sizeof differs);
        return differs == 0;
    }
    int run(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) override
    {
        // The poison and refills queued on the harness's stream land first: a candidate may work on
        // a stream of its own, which is not ordered after ours (timedRun's flush waits likewise).
        check(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize (before a call)");
        const int rc = fn(args, workspace, workspaceBytes, m_stream);
        noteError(cudaDeviceSynchronize());
        return rc;
    }
    void flushCaches() override
    {
        // A persisting access-policy window, or a persisting carve-out, would keep a working set
        // in L2 across the flush: undo whatever the candidate set. The flush itself is the
        // lead-in of timedRun, right before the start event.
        cudaStreamAttrValue none {};
        none.accessPolicyWindow.num_bytes = 0;
        cudaStreamSetAttribute(m_stream, cudaStreamAttributeAccessPolicyWindow, &none);
        cudaCtxResetPersistingL2Cache();
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
        // A device without persisting L2 (a MIG slice) refuses these: nothing to undo there, and
        // the refusal must not read as the candidate's device error at the next check.
        cudaGetLastError();
        check(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize (before a timed call)");
    }
    TimedCall timedRun(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) override
    {
        return m_timer->time([&] { return fn(args, workspace, workspaceBytes, m_stream); }, true);
    }
    double launchOverheadMicros() override
    {
        void* scratch = allocate(256);
        const double overhead = m_timer->calibrateLaunchOverhead(scratch);
        release(scratch);
        return overhead;
    }
    std::optional<std::size_t> freeBytes() override
    {
        std::size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) != cudaSuccess)
            return std::nullopt;
        return free;
    }
    // Held in chunks that stay from call to call: each hold gives back or takes only the
    // difference (freeing 139 GiB at once took 90 ms on the H200, allocating it 4 ms), and the
    // driver reclaims what is left when the process ends.
    std::optional<std::size_t> holdDeviceMemoryBut(std::size_t keepFree) override
    {
        m_timer->prepare(); // the flush buffer and the comparison flag: never out of what the call keeps
        comparisonFlag();
        check(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize (memory hold)");
        auto free = freeBytes();
        if (!free)
            return std::nullopt;
        while (*free < keepFree && !m_held.empty()) { // the last taken first: the smallest
            cudaFree(m_held.back().first);
            m_held.pop_back();
            free = freeBytes().value_or(keepFree);
        }
        constexpr std::size_t kPage = std::size_t {2} << 20, kChunk = std::size_t {4} << 30;
        std::size_t want = std::min(kChunk, (*free > keepFree ? *free - keepFree : 0) / kPage * kPage);
        while (want >= kPage) {
            void* p = nullptr;
            if (cudaMalloc(&p, want) != cudaSuccess) { // the driver may not give all it reports free
                cudaGetLastError(); // out of memory is not sticky
                want = want / 2 / kPage * kPage;
                continue;
            }
            m_held.emplace_back(p, want);
            free = freeBytes().value_or(keepFree);
            want = std::min(kChunk, (*free > keepFree ? *free - keepFree : 0) / kPage * kPage);
        }
        return free;
    }
    [[nodiscard]] std::size_t heldDeviceBytes() const override
    {
        std::size_t bytes = 0;
        for (const auto& chunk : m_held)
            bytes += chunk.second;
        return bytes;
    }
    void releaseDeviceMemory() override
    {
        for (const auto& chunk : m_held)
            cudaFree(chunk.first);
        m_held.clear();
    }
    DeviceInfo info() override
    {
        DeviceInfo d;
        cudaDeviceProp p {};
        if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
            d.name = p.name;
        d.l2Bytes = m_l2Bytes;
        // Read + write bandwidth of a large device-to-device copy: the memory roofline that the
        // floor check uses, measured rather than taken from a data sheet.
        const std::size_t bytes = std::size_t {512} << 20;
        void* a = allocate(bytes);
        void* b = allocate(bytes);
        d.copyBandwidthGBs = m_timer->copyBandwidthGBs(b, a, bytes);
        release(a);
        release(b);
        return d;
    }
    void beginSpans() override
    {
        m_spans.reset();
        m_spanOffset = m_timer->measureSpanOffset(comparisonFlag());
    }
    double spanOffsetMicros() override { return m_spanOffset; }
    std::vector<double> spans() override { return m_spans.enabled() ? m_spans.spansMicros() : std::vector<double> {}; }
    std::string deviceError() override
    {
        if (m_error.empty())
            noteError(cudaGetLastError());
        return m_error;
    }

private:
    int* comparisonFlag()
    {
        if (!m_differs)
            check(cudaMalloc(&m_differs, sizeof(int)), "cudaMalloc (comparison flag)");
        return m_differs;
    }
    void noteError(cudaError_t err)
    {
        if (err != cudaSuccess && m_error.empty())
            m_error = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    }

    cudaStream_t m_stream = nullptr;
    std::size_t m_l2Bytes = 0;
    int* m_differs = nullptr;
    std::vector<std::pair<void*, std::size_t>> m_held; // holdDeviceMemoryBut's chunks, in order taken
    std::string m_error;
    DeviceSpans m_spans;
    std::unique_ptr<CallTimer> m_timer; // after m_spans, which it uses
    double m_spanOffset = 0.0;
    bool m_pinTransfers = true;
};

} // namespace

std::unique_ptr<Backend> makeCudaBackend()
{
    return std::make_unique<CudaBackend>();
}

// cudaComputeMode: 0 default, 1 exclusive (thread), 2 prohibited, 3 exclusive process.
static int computeMode(int device)
{
    int mode = 0;
    return cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device) == cudaSuccess ? mode : 0;
}

std::string probeDevices()
{
    nlohmann::json out {{"cuda_runtime", true}, {"devices", nlohmann::json::array()}};
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        out["error"] = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
        return out.dump();
    }
    int runtimeVersion = 0, driverVersion = 0;
    cudaRuntimeGetVersion(&runtimeVersion);
    cudaDriverGetVersion(&driverVersion);
    out["runtime_version"] = runtimeVersion;
    out["driver_version"] = driverVersion;
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p {};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
            continue;
        out["devices"].push_back({{"index", i}, {"name", p.name}, {"major", p.major}, {"minor", p.minor},
            {"sm_count", p.multiProcessorCount}, {"l2_bytes", p.l2CacheSize},
            {"persisting_l2_max_bytes", p.persistingL2CacheMaxSize}, {"memory_bytes", p.totalGlobalMem},
            {"memory_bus_bits", p.memoryBusWidth}, {"compute_mode", computeMode(i)}});
    }
    return out.dump();
}

#else

std::unique_ptr<Backend> makeCudaBackend()
{
    return nullptr;
}

std::string probeDevices()
{
    return nlohmann::json {{"cuda_runtime", false}, {"devices", nlohmann::json::array()},
        {"error", "ksearch-runner was built without the CUDA toolkit"}}
        .dump();
}

#endif

} // namespace ksr
