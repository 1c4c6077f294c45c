#include "devicespans.h"

#include <cstdlib>
#include <cstring>

#ifdef KSR_WITH_CUPTI
#include <algorithm>
#include <cupti.h>
#include <mutex>
#endif

namespace ksr {

#ifdef KSR_WITH_CUPTI
namespace {

struct Span {
    std::uint64_t start, end;
    std::uint32_t stream;
};

std::mutex g_mutex;
std::vector<Span> g_spans;
// The harness's stream, whose memsets (the lead-in) are not the candidate's work, and whose
// other work is waited for before each window opens.
std::uint32_t g_harnessStream = 0;
bool g_harnessStreamKnown = false;

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords)
{
    constexpr size_t kBytes = std::size_t {8} << 20; // a whole timing loop's records, no refill inside it
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
    *size = *buffer ? kBytes : 0;
    *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t validSize)
{
    CUpti_Activity* record = nullptr;
    std::lock_guard lock(g_mutex);
    while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            g_spans.push_back({k->start, k->end, k->streamId});
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
            g_spans.push_back({m->start, m->end, m->streamId});
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
            if (m->streamId != g_harnessStream)
                g_spans.push_back({m->start, m->end, m->streamId});
        }
    }
    std::free(buffer);
}

} // namespace

bool DeviceSpans::enable()
{
    const char* setting = std::getenv("KSEARCH_CUPTI_SPANS");
    if (setting && std::strcmp(setting, "0") == 0)
        return false;
    if (cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted) != CUPTI_SUCCESS)
        return false;
    // Memsets only once the harness's stream is known (recordMemsetsBut): its lead-in is one.
    for (auto kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY})
        if (cuptiActivityEnable(kind) != CUPTI_SUCCESS)
            return false;
    m_enabled = true;
    return true;
}

bool DeviceSpans::recordMemsetsBut(void* harnessStream)
{
    if (!m_enabled)
        return false;
    std::uint32_t id = 0;
    if (cuptiGetStreamIdEx(nullptr, static_cast<CUstream>(harnessStream), 0, &id) != CUPTI_SUCCESS)
        return false;
    {
        std::lock_guard lock(g_mutex);
        g_harnessStream = id;
        g_harnessStreamKnown = true;
    }
    return cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS;
}

void DeviceSpans::reset()
{
    m_opens.clear();
    m_closes.clear();
    if (!m_enabled)
        return;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); // outside the loop: records of earlier work go
    std::lock_guard lock(g_mutex);
    g_spans.clear();
}

void DeviceSpans::open()
{
    std::uint64_t t = 0;
    if (m_enabled)
        cuptiGetTimestamp(&t);
    m_opens.push_back(t);
}

void DeviceSpans::close()
{
    std::uint64_t t = 0;
    if (m_enabled)
        cuptiGetTimestamp(&t);
    m_closes.push_back(t);
}

std::vector<double> DeviceSpans::spansMicros()
{
    std::vector<double> out(m_opens.size(), 0.0);
    if (!m_enabled)
        return out;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard lock(g_mutex);
    for (std::size_t w = 0; w < m_opens.size() && w < m_closes.size(); ++w) {
        // Work that began in the window: first start to last end. Work of a candidate's thread
        // still running on another stream when the window opened (every call before it ended on
        // a device-wide wait, so nothing of the harness's can be): its time from the opening,
        // added, not a reason to stretch the call's span back to the opening.
        std::uint64_t first = UINT64_MAX, last = 0, runningEnd = 0;
        for (const Span& s : g_spans) {
            if (s.start >= m_opens[w] && s.start <= m_closes[w]) {
                first = std::min(first, s.start);
                last = std::max(last, s.end);
            } else if (g_harnessStreamKnown && s.stream != g_harnessStream && s.start < m_opens[w]
                && s.end > m_opens[w])
                runningEnd = std::max(runningEnd, s.end);
        }
        double micros = last > first ? static_cast<double>(last - first) / 1000.0 : 0.0;
        if (runningEnd > 0) // the part before the call's own first start
            micros += static_cast<double>(std::min(runningEnd, first) - m_opens[w]) / 1000.0
                + (runningEnd > last && last > first ? static_cast<double>(runningEnd - last) / 1000.0 : 0.0);
        out[w] = micros;
    }
    return out;
}

#else

bool DeviceSpans::enable()
{
    return false;
}

bool DeviceSpans::recordMemsetsBut(void*)
{
    return false;
}

void DeviceSpans::reset()
{
    m_opens.clear();
    m_closes.clear();
}

void DeviceSpans::open()
{
    m_opens.push_back(0);
}

void DeviceSpans::close()
{
    m_closes.push_back(0);
}

std::vector<double> DeviceSpans::spansMicros()
{
    return std::vector<double>(m_opens.size(), 0.0);
}

#endif

} // namespace ksr
