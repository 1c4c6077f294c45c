#include "backend.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace ksr {
namespace {

double microsSince(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

class HostBackend final : public Backend
{
public:
    void* allocate(std::size_t bytes) override
    {
        // 256-byte alignment, like cudaMalloc, so vectorised kernels behave the same on both backends.
        const std::size_t rounded = (bytes + 255) / 256 * 256;
        void* p = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
        if (!p)
            throw std::bad_alloc();
        return p;
    }
    void release(void* p) override { std::free(p); }
    void upload(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void download(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void copyWithin(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    bool sameBytes(const void* a, const void* b, std::size_t bytes) override { return std::memcmp(a, b, bytes) == 0; }
    bool hostMemory() const override { return true; }
    int run(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) override
    {
        return fn(args, workspace, workspaceBytes, nullptr);
    }
    void flushCaches() override
    {
        // Larger than any last-level cache of a workstation CPU.
        if (m_flush.empty())
            m_flush.resize(std::size_t {64} << 20);
        std::memset(m_flush.data(), ++m_flushValue, m_flush.size());
    }
    TimedCall timedRun(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) override
    {
        const auto t0 = std::chrono::steady_clock::now();
        TimedCall t;
        t.returnCode = fn(args, workspace, workspaceBytes, nullptr);
        t.wallMicros = t.deviceMicros = microsSince(t0);
        return t;
    }
    double launchOverheadMicros() override { return 0.0; }
    DeviceInfo info() override { return {"host CPU", 0, 0.0}; }
    std::string deviceError() override { return {}; }

private:
    std::vector<unsigned char> m_flush;
    unsigned char m_flushValue = 0;
};

} // namespace

std::unique_ptr<Backend> makeHostBackend()
{
    return std::make_unique<HostBackend>();
}

} // namespace ksr
