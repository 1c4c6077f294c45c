#include "devicespans.h"

#ifdef KSR_WITH_CUPTI
#include <algorithm>
#include <cstdlib>
#include <cupti.h>
#include <mutex>
#include <vector>
#endif

namespace ksr {

#ifdef KSR_WITH_CUPTI
namespace {

struct Span {
    std::uint64_t start, end;
};

std::mutex g_mutex;
std::vector<Span> g_spans;

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords)
{
    constexpr size_t kBytes = std::size_t {1} << 20;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
    *size = *buffer ? kBytes : 0;
    *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t validSize)
{
    CUpti_Activity* record = nullptr;
    std::lock_guard lock(g_mutex);
    while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            g_spans.push_back({k->start, k->end});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
            g_spans.push_back({m->start, m->end});
            break;
        }
        default:
            break;
        }
    }
    std::free(buffer);
}

} // namespace

bool DeviceSpans::enable()
{
    if (cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted) != CUPTI_SUCCESS)
        return false;
    // Memsets are left out: the harness's own lead-in is one, and it runs inside the window.
    for (auto kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY})
        if (cuptiActivityEnable(kind) != CUPTI_SUCCESS)
            return false;
    m_enabled = true;
    return true;
}

void DeviceSpans::beginWindow()
{
    if (!m_enabled)
        return;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); // what came before stays out of the window
    {
        std::lock_guard lock(g_mutex);
        g_spans.clear();
    }
    cuptiGetTimestamp(&m_windowStart);
}

double DeviceSpans::endWindowMicros()
{
    if (!m_enabled)
        return 0.0;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard lock(g_mutex);
    std::uint64_t first = UINT64_MAX, last = 0;
    for (const Span& s : g_spans)
        if (s.start >= m_windowStart) {
            first = std::min(first, s.start);
            last = std::max(last, s.end);
        }
    g_spans.clear();
    return last > first ? static_cast<double>(last - first) / 1000.0 : 0.0;
}

#else

bool DeviceSpans::enable()
{
    return false;
}

void DeviceSpans::beginWindow() { }

double DeviceSpans::endWindowMicros()
{
    return 0.0;
}

#endif

} // namespace ksr
