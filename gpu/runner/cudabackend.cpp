#include "backend.h"
#include "devicespans.h"
#include "samplerule.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef KSR_WITH_CUDA
#include "devicecompare.h"

#include <cuda_runtime.h>
#endif

namespace ksr {

#ifdef KSR_WITH_CUDA
namespace {

void check(cudaError_t err, const char* what)
{
    if (err != cudaSuccess)
        throw std::runtime_error(
            std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

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
        check(cudaEventCreate(&m_start), "cudaEventCreate");
        check(cudaEventCreate(&m_end), "cudaEventCreate");
        check(cudaEventCreate(&m_leadStart), "cudaEventCreate");
        int l2 = 0;
        check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), "cudaDeviceGetAttribute(L2)");
        m_l2Bytes = static_cast<std::size_t>(l2);
        if (m_spans.enable())
            m_spans.recordMemsetsBut(m_stream);
        m_pinTransfers = pinTransfersEnabled();
    }
    ~CudaBackend() override
    {
        releaseDeviceMemory();
        if (m_flush)
            cudaFree(m_flush);
        if (m_differs)
            cudaFree(m_differs);
        cudaEventDestroy(m_start);
        cudaEventDestroy(m_end);
        cudaEventDestroy(m_leadStart);
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
        if (!m_differs)
            check(cudaMalloc(&m_differs, sizeof(int)), "cudaMalloc (comparison flag)");
        check(cudaMemsetAsync(m_differs, 0, sizeof(int), m_stream), "cudaMemsetAsync (comparison flag)");
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
        check(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize (before a timed call)");
    }
    TimedCall timedRun(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) override
    {
        return timeOnce([&] { return fn(args, workspace, workspaceBytes, m_stream); }, true);
    }
    double launchOverheadMicros() override
    {
        // The same sequence as timedRun around a 4-byte memset: what the host clock adds to the
        // lead-in and the event time of an honest call.
        void* scratch = allocate(256);
        std::vector<double> gaps, leadIns;
        for (int i = 0; i < 50; ++i) {
            const TimedCall t = timeOnce(
                [&] {
                    cudaMemsetAsync(scratch, i, 4, m_stream);
                    return 0;
                },
                false);
            leadIns.push_back(t.leadInMicros);
            gaps.push_back(t.wallMicros - t.leadInMicros - t.deviceMicros);
        }
        release(scratch);
        // Each round's lead-in, like a timed call's, starts on an L2 the untimed flush left wholly
        // dirty: an honest call's lead-in takes as long.
        m_expectedLeadIn = medianOf(leadIns);
        return medianOf(gaps);
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
        if (!m_flush) // the flush buffer and the comparison flag: never out of what the call keeps
            allocateFlush();
        if (!m_differs)
            check(cudaMalloc(&m_differs, sizeof(int)), "cudaMalloc (comparison flag)");
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
        double best = 1e30;
        // Runs for at least 200 ms: this also brings the clocks up before anything is timed.
        const auto warm = std::chrono::steady_clock::now();
        for (int i = 0; i < 5 || std::chrono::steady_clock::now() - warm < std::chrono::milliseconds(200); ++i) {
            cudaEventRecord(m_start, m_stream);
            cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, m_stream);
            cudaEventRecord(m_end, m_stream);
            cudaEventSynchronize(m_end);
            float ms = 0.0f;
            cudaEventElapsedTime(&ms, m_start, m_end);
            if (i > 0)
                best = std::min(best, static_cast<double>(ms));
        }
        release(a);
        release(b);
        d.copyBandwidthGBs = 2.0 * static_cast<double>(bytes) / (best * 1e-3) / 1e9;
        return d;
    }
    void beginSpans() override
    {
        m_spans.reset();
        m_spanOffset = m_spans.enabled() ? measureSpanOffset() : 0.0;
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
    // Events against spans on one kernel of the harness's (a read of 16 MiB), timed 21 times
    // exactly as timedRun times a call: the median difference. Without it a candidate that moved
    // its work to a stream of its own was timed by the span alone and read 4-9 % faster than the
    // same kernel on the given stream (issue #15 point 5, measured on the H200 on 2026-12-03).
    double measureSpanOffset()
    {
        constexpr std::size_t kBytes = std::size_t {8} << 20;
        if (!m_flush) // holds both halves read below
            allocateFlush();
        if (!m_differs)
            check(cudaMalloc(&m_differs, sizeof(int)), "cudaMalloc (comparison flag)");
        m_spans.reset();
        std::vector<double> events;
        for (int i = 0; i < 21; ++i) {
            const TimedCall t = timeOnce(
                [&] {
                    launchCompareBytes(
                        m_flush, static_cast<const char*>(m_flush) + kBytes, kBytes, m_differs, m_stream);
                    return 0;
                },
                true);
            events.push_back(t.deviceMicros);
        }
        const std::vector<double> spans = m_spans.spansMicros();
        m_spans.reset();
        std::vector<double> gaps;
        for (std::size_t k = 0; k < spans.size() && k < events.size(); ++k)
            if (spans[k] > 0)
                gaps.push_back(events[k] - spans[k]);
        return gaps.empty() ? 0.0 : std::max(0.0, medianOf(gaps));
    }

    // Memsets of twice the L2 size with a new value each time, the last one the flush: every line
    // of a candidate's working set is evicted. The ones before it are a head start that keeps the
    // device busy for at least kLeadInMicros while the host records the start event and the
    // candidate enqueues its launches, so that a call of several kernels (the MoE's four to
    // seven) runs them back to back rather than behind a host that fell behind. With the flush
    // alone (about 30 us) the MoE baseline's 10-25 us calls read up to 1.38x apart between runner
    // processes on the H200, with no side work in any sample (session 36).
    void leadIn()
    {
        if (!m_flush)
            allocateFlush();
        for (int i = 0; i <= m_headStartFlushes; ++i)
            cudaMemsetAsync(m_flush, ++m_flushValue, 2 * m_l2Bytes, m_stream);
    }

    // One timed call of `work` (which enqueues on m_stream and returns ks_run's code), in a
    // spans window when `window`: timedRun's and launchOverheadMicros' rounds are the same sequence.
    template<typename Work> TimedCall timeOnce(Work work, bool window)
    {
        TimedCall t;
        if (!m_flush)
            allocateFlush(); // never between the lead-in's event and its memsets
        untimedFlush();
        // Nothing earlier may still run anywhere on the device when the clock starts (the
        // persisting-L2 reset): it would delay the lead-in and be charged to the call by the host
        // clock. The harness's stream is idle now, so whatever else still runs is a candidate's,
        // launched by a thread of its own between samples: the spans' window opens before the
        // wait and counts it.
        if (window)
            m_spans.open(); // a timestamp, no flush: nothing slow may sit inside the timed call
        noteError(cudaDeviceSynchronize());
        const auto t0 = std::chrono::steady_clock::now();
        // The L2 flush, queued right before the start event: it keeps the device busy while the
        // host records the event and launches (otherwise the start event fires on an idle GPU and
        // the host's launch latency is timed as kernel), and the call starts on an L2 full of the
        // flush's dirty lines, as after triton's do_bench clear. Its own device time is measured
        // and left out of the host view, up to what the calibration's lead-ins took
        // (leadInCreditMicros).
        cudaEventRecord(m_leadStart, m_stream);
        leadIn();
        cudaEventRecord(m_start, m_stream);
        t.returnCode = work();
        cudaEventRecord(m_end, m_stream);
        noteError(cudaDeviceSynchronize());
        t.wallMicros = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        if (window)
            m_spans.close();
        t.deviceMicros = elapsedMicros(m_start, m_end);
        t.leadInMicros = elapsedMicros(m_leadStart, m_start);
        t.leadInCreditMicros =
            m_expectedLeadIn > 0 ? std::min(t.leadInMicros, m_expectedLeadIn + leadInMargin()) : t.leadInMicros;
        return t;
    }

    // Before the timed lead-in: the call's dirty lines (outputs, workspace) are written back here,
    // off the clock, so that every lead-in starts from the same state, an L2 full of the flush's
    // own dirty lines, and takes as long as launchOverheadMicros measured it. Waited for.
    void untimedFlush()
    {
        cudaMemsetAsync(m_flush, ++m_flushValue, 2 * m_l2Bytes, m_stream);
        noteError(cudaStreamSynchronize(m_stream));
    }

    // Times the flush to size the head start. Runs on the first lead-in, which comes with a job
    // (a memory hold, the launch overhead or the span offset), never inside a timed call, so a
    // runner started ahead does not disturb another runner's timing while it waits. Without
    // spans there is no head start: the host clock is then the only witness of work on other
    // streams, and it is blind to whatever runs under the lead-in without stretching it past the
    // calibrated lead-in's margin (leadInMargin), so that stays as short as the flush. At most
    // kMaxHeadStart memsets, so that queueing them never costs the host as much as they last (a
    // small L2 makes a short flush).
    void allocateFlush()
    {
        constexpr double kLeadInMicros = 100.0;
        constexpr int kMaxHeadStart = 8;
        check(cudaMalloc(&m_flush, 2 * m_l2Bytes), "cudaMalloc (L2 flush buffer)");
        cudaMemsetAsync(m_flush, ++m_flushValue, 2 * m_l2Bytes, m_stream); // loads the driver's memset
        constexpr int kRounds = 4;
        cudaEventRecord(m_start, m_stream);
        for (int i = 0; i < kRounds; ++i)
            cudaMemsetAsync(m_flush, ++m_flushValue, 2 * m_l2Bytes, m_stream);
        cudaEventRecord(m_end, m_stream);
        check(cudaEventSynchronize(m_end), "cudaEventSynchronize (flush timing)");
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, m_start, m_end);
        const double perFlush = static_cast<double>(ms) * 1000.0 / kRounds;
        if (m_spans.enabled() && perFlush > 0)
            m_headStartFlushes =
                std::clamp(static_cast<int>(std::ceil(kLeadInMicros / perFlush)) - 1, 0, kMaxHeadStart);
    }

    // Both events have completed (a device-wide synchronisation came after them); a failure is a
    // device error, recorded for the call like any other.
    double elapsedMicros(cudaEvent_t from, cudaEvent_t to)
    {
        float ms = 0.0f;
        const cudaError_t err = cudaEventElapsedTime(&ms, from, to);
        noteError(err);
        return err == cudaSuccess ? static_cast<double>(ms) * 1000.0 : 0.0;
    }

    // How much longer than in the calibration an honest lead-in may read: its jitter between
    // samples (about 1 us of 108 on an H100, session 37).
    [[nodiscard]] double leadInMargin() const { return std::max(2.0, 0.05 * m_expectedLeadIn); }

    void noteError(cudaError_t err)
    {
        if (err != cudaSuccess && m_error.empty())
            m_error = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    }

    cudaStream_t m_stream = nullptr;
    cudaEvent_t m_start = nullptr, m_end = nullptr;
    cudaEvent_t m_leadStart = nullptr; // before the lead-in: its device time is left out of the host view
    double m_expectedLeadIn = 0.0; // median lead-in of launchOverheadMicros' rounds; 0 before the first
    std::size_t m_l2Bytes = 0;
    void* m_flush = nullptr;
    int* m_differs = nullptr;
    std::vector<std::pair<void*, std::size_t>> m_held; // holdDeviceMemoryBut's chunks, in order taken
    unsigned char m_flushValue = 0;
    int m_headStartFlushes = 0; // memsets of the flush buffer before the flush (allocateFlush)
    std::string m_error;
    DeviceSpans m_spans;
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
