#include "devicespans.h"

#include <cstdlib>
#include <cstring>

#ifdef KSR_WITH_CUPTI
#include "spanwindow.h"

#include <cupti.h>
#include <mutex>
#include <optional>
#endif

namespace ksr {

#ifdef KSR_WITH_CUPTI
namespace {

std::mutex g_mutex;
std::vector<DeviceActivity> g_spans;
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
    const std::optional<std::uint32_t> harness = g_harnessStreamKnown ? std::optional(g_harnessStream) : std::nullopt;
    for (std::size_t w = 0; w < m_opens.size() && w < m_closes.size(); ++w)
        out[w] = static_cast<double>(chargedNanos(g_spans, m_opens[w], m_closes[w], harness)) / 1000.0;
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
