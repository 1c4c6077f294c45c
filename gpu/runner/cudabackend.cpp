#include "backend.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

#ifdef KSR_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace ksr {

#ifdef KSR_WITH_CUDA
namespace {

void check(cudaError_t err, const char* what)
{
    if (err != cudaSuccess)
        throw std::runtime_error(
            std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

class CudaBackend final : public Backend
{
public:
    CudaBackend()
    {
        check(cudaSetDevice(0), "cudaSetDevice");
        check(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
    ~CudaBackend() override { cudaStreamDestroy(m_stream); }
    void* allocate(std::size_t bytes) override
    {
        void* p = nullptr;
        check(cudaMalloc(&p, bytes == 0 ? 256 : bytes), "cudaMalloc");
        return p;
    }
    void release(void* p) override { cudaFree(p); }
    void upload(void* dst, const void* src, std::size_t bytes) override
    {
        check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
    }
    void download(void* dst, const void* src, std::size_t bytes) override
    {
        check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (download)");
    }
    int run(KsRunFn fn, const void* args, void* workspace, std::size_t workspaceBytes) override
    {
        const int rc = fn(args, workspace, workspaceBytes, m_stream);
        // Device-wide: work a candidate queued on any other stream is waited for too.
        const cudaError_t err = cudaDeviceSynchronize();
        if (err != cudaSuccess)
            m_error = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
        return rc;
    }
    std::string deviceError() override
    {
        if (m_error.empty()) {
            const cudaError_t err = cudaGetLastError();
            if (err != cudaSuccess)
                m_error = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
        }
        return m_error;
    }

private:
    cudaStream_t m_stream = nullptr;
    std::string m_error;
};

} // namespace

std::unique_ptr<Backend> makeCudaBackend()
{
    return std::make_unique<CudaBackend>();
}

std::string probeDevices()
{
    nlohmann::json out { { "cuda_runtime", true }, { "devices", nlohmann::json::array() } };
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        out["error"] = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
        return out.dump();
    }
    int runtimeVersion = 0, driverVersion = 0;
    cudaRuntimeGetVersion(&runtimeVersion);
    cudaDriverGetVersion(&driverVersion);
    out["runtime_version"] = runtimeVersion;
    out["driver_version"] = driverVersion;
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p {};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
            continue;
        out["devices"].push_back({ { "index", i }, { "name", p.name }, { "major", p.major }, { "minor", p.minor },
            { "sm_count", p.multiProcessorCount }, { "l2_bytes", p.l2CacheSize },
            { "persisting_l2_max_bytes", p.persistingL2CacheMaxSize }, { "memory_bytes", p.totalGlobalMem },
            { "memory_bus_bits", p.memoryBusWidth } });
    }
    return out.dump();
}

#else

std::unique_ptr<Backend> makeCudaBackend()
{
    return nullptr;
}

std::string probeDevices()
{
    return nlohmann::json {
        { "cuda_runtime", false }, { "devices", nlohmann::json::array() },
        { "error", "ksearch-runner was built without the CUDA toolkit" }
    }.dump();
}

#endif

} // namespace ksr
