#pragma once
// Durations recorded in the ledger, the journal and the window: a loopback LLM answers in well under
// a millisecond, so whole milliseconds (QElapsedTimer::elapsed) would record it as 0 s.
#include <QElapsedTimer>

#include <chrono>

namespace ks {

/// Seconds since `clock` was started, with the clock's full (nanosecond) resolution.
inline double secondsElapsed(const QElapsedTimer& clock)
{
    return static_cast<double>(clock.nsecsElapsed()) * 1e-9;
}

/// Seconds from `start` to now on the steady clock.
inline double secondsSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace ks
