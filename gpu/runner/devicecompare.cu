// Device-side byte comparison for the runner's unchanged-inputs checks: inputs run to gigabytes
// per call, and downloading them to compare on the host cost more than the rest of a call.

#include "devicecompare.h"

#include <cstdint>

namespace ksr {
namespace {

// Sets *differs when any byte of a and b differs. 16 bytes per thread while both pointers are
// aligned (cudaMalloc gives 256), bytes for the tail.
__global__ void compareBytes(const unsigned char* a, const unsigned char* b, std::size_t bytes, int* differs)
{
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::size_t vectors = bytes / 16;
    const auto* va = reinterpret_cast<const uint4*>(a);
    const auto* vb = reinterpret_cast<const uint4*>(b);
    bool diff = false;
    for (std::size_t i = first; i < vectors; i += stride) {
        const uint4 x = va[i], y = vb[i];
        diff |= x.x != y.x || x.y != y.y || x.z != y.z || x.w != y.w;
    }
    for (std::size_t i = vectors * 16 + first; i < bytes; i += stride)
        diff |= a[i] != b[i];
    if (diff)
        *differs = 1;
}

} // namespace

cudaError_t launchCompareBytes(const void* a, const void* b, std::size_t bytes, int* differs, cudaStream_t stream)
{
    const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    if (!aligned(a) || !aligned(b))
        return cudaErrorMisalignedAddress;
    if (bytes == 0)
        return cudaSuccess;
    const unsigned blocks = static_cast<unsigned>(bytes / 16 / 256 + 1 < 4096 ? bytes / 16 / 256 + 1 : 4096);
    compareBytes<<<blocks, 256, 0, stream>>>(
        static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), bytes, differs);
    return cudaGetLastError();
}

} // namespace ksr
