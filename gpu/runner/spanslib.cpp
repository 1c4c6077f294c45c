// libksearch_spans: DeviceSpans (CUPTI activity spans of work on every stream) behind a C ABI,
// for the Python runner, which loads it with ctypes. It sees the same device and context as
// the process's torch: CUPTI records whatever that process launches, whichever runtime did.
// The runner stays the only judge of what the spans mean (resources/python/ksearch_pyrunner.py).
// As in ksearch-runner, memsets are recorded only off the harness's stream
// (ks_spans_record_memsets_but): its lead-in (the flush and the head start) is made of them.

#include "devicespans.h"

#include <algorithm>

namespace {

ksr::DeviceSpans& spans()
{
    static ksr::DeviceSpans s;
    return s;
}

} // namespace

extern "C" {

// 1 when spans are recorded from now on; 0 when CUPTI is missing or refuses, or
// KSEARCH_CUPTI_SPANS=0 turned them off.
__attribute__((visibility("default"))) int ks_spans_enable()
{
    return spans().enabled() || spans().enable() ? 1 : 0;
}

// 1 when memsets on every stream but `stream` (a CUstream) are recorded from now on.
__attribute__((visibility("default"))) int ks_spans_record_memsets_but(void* stream)
{
    return spans().recordMemsetsBut(stream) ? 1 : 0;
}

__attribute__((visibility("default"))) void ks_spans_reset()
{
    spans().reset();
}

__attribute__((visibility("default"))) void ks_spans_open()
{
    spans().open();
}

__attribute__((visibility("default"))) void ks_spans_close()
{
    spans().close();
}

// The windows' spans in microseconds, in order, into out[0..capacity); returns how many windows
// there were (more than capacity: the rest were not written).
__attribute__((visibility("default"))) int ks_spans_collect(double* out, int capacity)
{
    const std::vector<double> v = spans().spansMicros();
    std::copy_n(v.begin(), std::min<std::size_t>(v.size(), static_cast<std::size_t>(std::max(capacity, 0))), out);
    return static_cast<int>(v.size());
}
}
