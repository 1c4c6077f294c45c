#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

namespace ksr {

// One piece of device work CUPTI recorded: a kernel, copy or memset, on its clock (ns).
struct DeviceActivity {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::uint32_t stream = 0;
};

// The device time one timed call is charged, in ns: the union of two intervals.
// - Its own work: first start to last end of the activities that began inside [open, close].
// - Work already running when the window opened, on another stream than the harness's: the
//   candidate launched it between samples (every call before the opening ended on a device-wide
//   wait, so nothing of the harness's can still run). It is charged from the opening to its end,
//   not by stretching the call's own span back to the opening, so that an activity that ends
//   before the call's own first start adds only its own remainder.
// Without the harness's stream (`harnessStream` empty) running work cannot be told from the
// harness's and is left out. Activities that ended by the opening are earlier calls'.
inline std::uint64_t chargedNanos(std::span<const DeviceActivity> activities, std::uint64_t open, std::uint64_t close,
    std::optional<std::uint32_t> harnessStream)
{
    std::uint64_t first = UINT64_MAX;
    std::uint64_t last = 0;
    std::uint64_t runningEnd = 0;
    for (const DeviceActivity& a : activities) {
        if (a.start >= open && a.start <= close) {
            first = std::min(first, a.start);
            last = std::max(last, a.end);
        } else if (harnessStream && a.stream != *harnessStream && a.start < open && a.end > open) {
            runningEnd = std::max(runningEnd, a.end);
        }
    }
    const bool own = last > first;
    if (runningEnd == 0)
        return own ? last - first : 0;
    if (!own || runningEnd >= first) // one interval from the opening
        return std::max(runningEnd, own ? last : 0) - open;
    return (runningEnd - open) + (last - first); // two, with a gap between them
}

} // namespace ksr
