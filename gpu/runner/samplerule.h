#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ksr {

// What a timing loop saw of each call, in microseconds, one entry per sample.
struct SampleViews {
    std::vector<double> events; // the harness stream's events: blind to work on other streams
    // Wall clock to device-wide idle, less the lead-in (at most as long as calibrated) and the launch overhead.
    std::vector<double> hostViews;
    std::vector<double> spans; // CUPTI: first start to last end of the device work, any stream; empty when off
    double spanOffset = 0; // what events add to a span of the same work on the harness's stream
};

struct ChargedSamples {
    std::vector<double> micros; // the figure each sample counts with
    std::vector<bool> side; // whether it was raised above its events (work on another stream)
    bool byHostClock = false; // the host clock's medians raised the loop (rule 2)
};

// The threshold above which another view says a call ran longer than its events: a fraction of
// the event time, with a floor for the fixed jitter of that view.
inline bool exceeds(double view, double events, double floorMicros, double fraction)
{
    return view > events + std::max(floorMicros, fraction * events);
}

// The element at n/2 of the sorted values: the median callexecutor.cpp's statistics() reports.
inline double medianOf(std::vector<double> v)
{
    if (v.empty())
        return 0.0;
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

// Which figure each sample is charged. The events count unless the device or the host saw the
// call run longer, which means work on a stream the events do not cover.
//
// 1. CUPTI spans (the device's own timestamps of every kernel, copy and memset on any stream),
//    per sample: a span that exceeds its events by max(1 us, 5 %) is charged span + spanOffset,
//    the same work's figure on the harness's stream.
// 2. The host clock, per loop: when the median of (host view - figure so far) exceeds max(3 us,
//    10 %) of the median figure, every sample is charged the larger of the two. It stays on with
//    spans, because the candidate runs in the runner's process and could turn CUPTI's recording
//    off; it is read on medians because per sample its jitter (a descheduled spin-wait, another
//    process's compile, a host that fell behind a call of several launches) raised a third to all
//    of a loop's samples of a 10 us call by up to 3x on the H100 (session 35, J 131 for a file
//    against itself). Hiccups on fewer than half the samples change nothing, and a median is what
//    J reads, so work hidden in fewer than half would not have paid either.
inline ChargedSamples chargeSamples(const SampleViews& v)
{
    ChargedSamples out;
    out.micros = v.events;
    out.side.assign(v.events.size(), false);
    const std::size_t n = v.events.size();
    for (std::size_t k = 0; k < n && k < v.spans.size(); ++k)
        if (exceeds(v.spans[k], v.events[k], 1.0, 0.05) && v.spans[k] + v.spanOffset > out.micros[k]) {
            out.micros[k] = v.spans[k] + v.spanOffset;
            out.side[k] = true;
        }
    if (v.hostViews.size() != n || n == 0)
        return out;
    std::vector<double> excess(n);
    for (std::size_t k = 0; k < n; ++k)
        excess[k] = v.hostViews[k] - out.micros[k];
    if (medianOf(excess) <= std::max(3.0, 0.1 * medianOf(out.micros)))
        return out;
    out.byHostClock = true;
    for (std::size_t k = 0; k < n; ++k)
        if (v.hostViews[k] > out.micros[k]) {
            out.micros[k] = v.hostViews[k];
            out.side[k] = true;
        }
    return out;
}

} // namespace ksr
