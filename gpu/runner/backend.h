#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace ksr {

using KsRunFn = int (*)(const void* args, void* workspace, std::size_t workspaceBytes, void* stream);

// Memory and launch primitives of one backend. The host backend uses plain memory; the CUDA
// backend device memory on one stream.
class Backend
{
public:
    virtual ~Backend() = default;
    virtual void* allocate(std::size_t bytes) = 0; // never null for bytes > 0; throws on failure
    virtual void release(void* p) = 0;
    virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
    virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
    // Runs the entry point and waits for all work it queued; returns its return code.
    virtual int run(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) = 0;
    // A sticky device error after the call, or empty when the device is healthy.
    virtual std::string deviceError() = 0;
};

std::unique_ptr<Backend> makeHostBackend();
std::unique_ptr<Backend> makeCudaBackend(); // nullptr when built without CUDA

// JSON text describing the devices this runner can see (for `ksearch-runner --probe`).
std::string probeDevices();

} // namespace ksr
