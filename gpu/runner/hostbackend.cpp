#include "backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace ksr {
namespace {

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
    int run(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) override
    {
        return fn(args, workspace, workspaceBytes, nullptr);
    }
    std::string deviceError() override { return {}; }
};

} // namespace

std::unique_ptr<Backend> makeHostBackend()
{
    return std::make_unique<HostBackend>();
}

} // namespace ksr
