#pragma once

#include <cstdint>
#include <vector>

namespace ksr {

// When the device really worked during each timed call, on any stream: CUPTI activity records of
// kernels, copies and memsets that started inside the call's window. Events on the harness's stream miss
// work a candidate puts on a stream of its own; the span of the activities does not.
//
// Windows are only stamped while the timing loop runs; CUPTI's buffers are flushed once, after the
// loop (flushing per call put about 200 us of host work inside every timed call on the H200,
// 2026-12-02). On by default; KSEARCH_CUPTI_SPANS=0 turns it off (then only the host-clock check
// catches side-stream work).
class DeviceSpans
{
public:
    // Turns activity tracing on when asked for; false when off, or when CUPTI is missing or refuses.
    bool enable();
    bool enabled() const { return m_enabled; }
    // Records memsets as well, except those on the given stream (the harness's: its lead-in is
    // made of memsets and runs inside each window). Until then memsets are not recorded at all,
    // and a candidate's memset on a stream of its own would escape the spans. False when CUPTI
    // cannot name the stream or record memsets.
    bool recordMemsetsBut(void* harnessStream);
    void reset(); // before a timing loop: forget earlier windows and records
    void open(); // before the device-wide wait that precedes the call, with the harness's stream idle
    void close(); // once the device is idle again
    // One figure per window since reset(), in order, in microseconds: what chargedNanos
    // (spanwindow.h) charges its call (0 when there was no work, or tracing is off).
    std::vector<double> spansMicros();

private:
    bool m_enabled = false;
    std::vector<std::uint64_t> m_opens, m_closes;
};

} // namespace ksr
