#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ksr {

// What a timing loop saw of each call, in microseconds, one entry per sample.
struct SampleViews {
    std::vector<double> events; // the harness stream's events: blind to work on other streams
    std::vector<double> hostViews; // wall clock, launch to device-wide idle, less the launch overhead
    std::vector<double> spans; // CUPTI: first start to last end of the device work, any stream; empty when off
    double spanOffset = 0; // what events add to a span of the same work on the harness's stream
};

struct ChargedSamples {
    std::vector<double> micros; // the figure each sample counts with
    std::vector<bool> side; // whether it was raised above its events (work on another stream)
    bool byHostClock = false; // the loop was judged on the host clock (no spans)
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
// With CUPTI spans (the device's own timestamps of every kernel, copy and memset, any stream):
// a sample whose span exceeds its events by max(1 us, 5 %) is charged span + spanOffset, the
// same work's figure on the harness's stream. The host clock decides nothing then: its jitter
// (a descheduled spin-wait, another process's compile, the launch cost of a call of several
// kernels) made a third to all of a loop's samples of a 10 us call read up to 2x on the H100
// (session 35), while the spans already cover every stream.
//
// Without spans the host clock is the only witness, and it is read per loop, not per sample:
// when the median of (host view - events) exceeds max(3 us, 10 %) of the median event time, the
// work on another stream is systematic and every sample is charged the larger of its two views;
// scattered host hiccups under half the samples change nothing.
inline ChargedSamples chargeSamples(const SampleViews& v)
{
    ChargedSamples out;
    out.micros = v.events;
    out.side.assign(v.events.size(), false);
    const std::size_t n = v.events.size();
    if (!v.spans.empty()) {
        for (std::size_t k = 0; k < n && k < v.spans.size(); ++k)
            if (exceeds(v.spans[k], v.events[k], 1.0, 0.05) && v.spans[k] + v.spanOffset > out.micros[k]) {
                out.micros[k] = v.spans[k] + v.spanOffset;
                out.side[k] = true;
            }
        return out;
    }
    if (v.hostViews.size() != n || n == 0)
        return out;
    std::vector<double> excess(n);
    for (std::size_t k = 0; k < n; ++k)
        excess[k] = v.hostViews[k] - v.events[k];
    const double events = medianOf(v.events);
    out.byHostClock = true;
    if (!exceeds(events + medianOf(excess), events, 3.0, 0.1))
        return out;
    for (std::size_t k = 0; k < n; ++k)
        if (v.hostViews[k] > v.events[k]) {
            out.micros[k] = v.hostViews[k];
            out.side[k] = true;
        }
    return out;
}

} // namespace ksr
