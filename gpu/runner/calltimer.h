#pragma once

#include "backend.h"
#include "devicespans.h"

#include <cstddef>
#include <cuda_runtime.h>
#include <functional>
#include <string>

namespace ksr {

// How the CUDA backend times one call on the harness's stream, and the calibrations that make
// its three views of the call comparable: the events around it, the host clock (which sees work
// on every stream) and the CUPTI spans (which see it too, per activity).
//
// Every timed call and every calibration round is the same sequence (time()): an untimed flush
// that writes the previous call's dirty lines back off the clock, a wait for the whole device,
// the host clock's start, the lead-in (memsets of twice the L2 that keep the device busy while
// the host launches and leave it full of the flush's lines), the start event, the work, the end
// event, a wait for the whole device. The calibrations therefore measure exactly what a call pays
// besides its own work.
//
// Owns the flush buffer and the events. Errors of the device are handed to the reporter given at
// construction; allocation failures throw std::runtime_error.
class CallTimer
{
public:
    CallTimer(cudaStream_t stream, std::size_t l2Bytes, DeviceSpans& spans, std::function<void(cudaError_t)> report);
    ~CallTimer();
    CallTimer(const CallTimer&) = delete;
    CallTimer& operator=(const CallTimer&) = delete;

    // Allocates the flush buffer and sizes the lead-in's head start, on first use. It runs on
    // the device, so it comes with a job (a memory hold, a calibration), never while a runner
    // started ahead waits and another runner times on the same device.
    void prepare();
    // One timed call of `work` (which enqueues on the harness's stream and returns ks_run's code),
    // inside a spans window when `window`.
    TimedCall time(const std::function<int()>& work, bool window);
    // 50 rounds around a 4-byte memset into `scratch` (256 bytes): the median of what the host
    // clock adds to the lead-in and the events. Also keeps the rounds' median lead-in, which bounds
    // what time() leaves out of the host view from then on (TimedCall::leadInCreditMicros).
    double calibrateLaunchOverhead(void* scratch);
    // Events against spans on a kernel of the harness's (a comparison of two 8 MiB halves of the
    // flush buffer, flag in `differs`), 21 rounds: the median difference, or 0 without spans.
    double measureSpanOffset(int* differs);
    // Read + write bytes a second of the fastest of repeated device-to-device copies of `bytes`,
    // copied for at least 200 ms, which also brings the clocks up before anything is timed.
    double copyBandwidthGBs(void* dst, const void* src, std::size_t bytes);

private:
    void leadIn();
    void untimedFlush();
    double elapsedMicros(cudaEvent_t from, cudaEvent_t to);
    [[nodiscard]] double leadInMargin() const;

    cudaStream_t m_stream;
    std::size_t m_l2Bytes;
    DeviceSpans& m_spans;
    std::function<void(cudaError_t)> m_report;
    cudaEvent_t m_start = nullptr, m_end = nullptr;
    cudaEvent_t m_leadStart = nullptr; // before the lead-in: its device time is left out of the host view
    void* m_flush = nullptr;
    unsigned char m_flushValue = 0;
    int m_headStartFlushes = 0; // memsets of the flush buffer before the flush (prepare)
    double m_expectedLeadIn = 0.0; // median lead-in of calibrateLaunchOverhead's rounds; 0 before
};

} // namespace ksr
