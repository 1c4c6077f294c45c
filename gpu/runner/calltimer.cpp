#include "calltimer.h"

#include "cudacheck.h"
#include "devicecompare.h"
#include "samplerule.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

namespace ksr {

CallTimer::CallTimer(
    cudaStream_t stream, std::size_t l2Bytes, DeviceSpans& spans, std::function<void(cudaError_t)> report)
    : m_stream(stream)
    , m_l2Bytes(l2Bytes)
    , m_spans(spans)
    , m_report(std::move(report))
{
    check(cudaEventCreate(&m_start), "cudaEventCreate");
    check(cudaEventCreate(&m_end), "cudaEventCreate");
    check(cudaEventCreate(&m_leadStart), "cudaEventCreate");
}

CallTimer::~CallTimer()
{
    if (m_flush)
        cudaFree(m_flush);
    cudaEventDestroy(m_start);
    cudaEventDestroy(m_end);
    cudaEventDestroy(m_leadStart);
}

// Times the flush to size the head start. Without spans there is no head start: the host clock is
// then the only witness of work on other streams, and it is blind to whatever runs under the
// lead-in without stretching it past the calibrated lead-in's margin (leadInMargin), so that stays
// as short as the flush. At most kMaxHeadStart memsets, so that queueing them never costs the host
// as much as they last (a small L2 makes a short flush).
void CallTimer::prepare()
{
    if (m_flush)
        return;
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
        m_headStartFlushes = std::clamp(static_cast<int>(std::ceil(kLeadInMicros / perFlush)) - 1, 0, kMaxHeadStart);
}

TimedCall CallTimer::time(const std::function<int()>& work, bool window)
{
    TimedCall t;
    prepare(); // never between the lead-in's event and its memsets
    untimedFlush();
    // Nothing earlier may still run anywhere on the device when the clock starts (the
    // persisting-L2 reset): it would delay the lead-in and be charged to the call by the host
    // clock. The harness's stream is idle now, so whatever else still runs is a candidate's,
    // launched by a thread of its own between samples: the spans' window opens before the wait
    // and counts it.
    if (window)
        m_spans.open(); // a timestamp, no flush: nothing slow may sit inside the timed call
    m_report(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    // The lead-in, queued right before the start event: it keeps the device busy while the host
    // records the event and launches (otherwise the start event fires on an idle GPU and the
    // host's launch latency is timed as kernel), and the call starts on an L2 full of the flush's
    // dirty lines, as after triton's do_bench clear. Its own device time is measured and left out
    // of the host view, up to what the calibration's lead-ins took.
    cudaEventRecord(m_leadStart, m_stream);
    leadIn();
    cudaEventRecord(m_start, m_stream);
    t.returnCode = work();
    cudaEventRecord(m_end, m_stream);
    m_report(cudaDeviceSynchronize());
    t.wallMicros = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (window)
        m_spans.close();
    t.deviceMicros = elapsedMicros(m_start, m_end);
    t.leadInMicros = elapsedMicros(m_leadStart, m_start);
    t.leadInCreditMicros =
        m_expectedLeadIn > 0 ? std::min(t.leadInMicros, m_expectedLeadIn + leadInMargin()) : t.leadInMicros;
    return t;
}

double CallTimer::calibrateLaunchOverhead(void* scratch)
{
    std::vector<double> gaps;
    std::vector<double> leadIns;
    for (int i = 0; i < 50; ++i) {
        const TimedCall t = time(
            [&] {
                cudaMemsetAsync(scratch, i, 4, m_stream);
                return 0;
            },
            false);
        leadIns.push_back(t.leadInMicros);
        gaps.push_back(t.wallMicros - t.leadInMicros - t.deviceMicros);
    }
    // Each round's lead-in, like a timed call's, starts on an L2 the untimed flush left wholly
    // dirty: an honest call's lead-in takes as long.
    m_expectedLeadIn = medianOf(leadIns);
    return medianOf(gaps);
}

// Without it a candidate that moved its work to a stream of its own was timed by the span alone
// and read 4-9 % faster than the same kernel on the given stream (issue #15 point 5, measured on
// the H200 on 2026-12-03).
double CallTimer::measureSpanOffset(int* differs)
{
    if (!m_spans.enabled())
        return 0.0;
    constexpr std::size_t kBytes = std::size_t {8} << 20;
    prepare(); // the flush buffer holds both halves
    m_spans.reset();
    std::vector<double> events;
    for (int i = 0; i < 21; ++i) {
        const TimedCall t = time(
            [&] {
                launchCompareBytes(m_flush, static_cast<const char*>(m_flush) + kBytes, kBytes, differs, m_stream);
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

double CallTimer::copyBandwidthGBs(void* dst, const void* src, std::size_t bytes)
{
    double best = 1e30;
    const auto warm = std::chrono::steady_clock::now();
    for (int i = 0; i < 5 || std::chrono::steady_clock::now() - warm < std::chrono::milliseconds(200); ++i) {
        cudaEventRecord(m_start, m_stream);
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, m_stream);
        cudaEventRecord(m_end, m_stream);
        cudaEventSynchronize(m_end);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, m_start, m_end);
        if (i > 0) // the first pays for loading the copy
            best = std::min(best, static_cast<double>(ms));
    }
    return 2.0 * static_cast<double>(bytes) / (best * 1e-3) / 1e9;
}

// Memsets of twice the L2 size with a new value each time, the last one the flush: every line of
// a candidate's working set is evicted. The ones before it are a head start that keeps the device
// busy for at least 100 us while the host records the start event and the candidate enqueues its
// launches, so that a call of several kernels (the MoE's four to seven) runs them back to back
// rather than behind a host that fell behind. With the flush alone (about 30 us) the MoE
// baseline's 10-25 us calls read up to 1.38x apart between runner processes on the H200, with no
// side work in any sample (session 36).
void CallTimer::leadIn()
{
    for (int i = 0; i <= m_headStartFlushes; ++i)
        cudaMemsetAsync(m_flush, ++m_flushValue, 2 * m_l2Bytes, m_stream);
}

// Before the timed lead-in: the call's dirty lines (outputs, workspace) are written back here, off
// the clock, so that every lead-in starts from the same state, an L2 full of the flush's own dirty
// lines, and takes as long as calibrateLaunchOverhead measured it. Waited for.
void CallTimer::untimedFlush()
{
    cudaMemsetAsync(m_flush, ++m_flushValue, 2 * m_l2Bytes, m_stream);
    m_report(cudaStreamSynchronize(m_stream));
}

// Both events have completed (a device-wide synchronisation came after them); a failure is a
// device error, reported like any other.
double CallTimer::elapsedMicros(cudaEvent_t from, cudaEvent_t to)
{
    float ms = 0.0f;
    const cudaError_t err = cudaEventElapsedTime(&ms, from, to);
    m_report(err);
    return err == cudaSuccess ? static_cast<double>(ms) * 1000.0 : 0.0;
}

// How much longer than in the calibration an honest lead-in may read: its jitter between samples
// (about 1 us of 108 on an H100, session 37).
double CallTimer::leadInMargin() const
{
    return std::max(2.0, 0.05 * m_expectedLeadIn);
}

} // namespace ksr
