#pragma once

#include <cstdint>

namespace ksr {

// When the device really worked during a timed call, on any stream: CUPTI activity records of
// kernels and copies that started inside a window. Events on the harness's stream miss
// work a candidate puts on a stream of its own; the span of the activities does not.
class DeviceSpans
{
public:
    // Turns activity tracing on; false when CUPTI is missing or refuses (the host-clock check remains).
    bool enable();
    bool enabled() const { return m_enabled; }
    void beginWindow(); // right before the candidate is called
    // After the device is idle: first start to last end of the activities that began in the
    // window, in microseconds; 0 when none did or tracing is off.
    double endWindowMicros();

private:
    bool m_enabled = false;
    std::uint64_t m_windowStart = 0;
};

} // namespace ksr
