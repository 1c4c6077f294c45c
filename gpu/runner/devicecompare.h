#pragma once

#include <cstddef>
#include <cuda_runtime.h>

namespace ksr {

// Queues a comparison of two 16-byte aligned device ranges on the stream; sets *differs (device
// memory) to 1 when they differ, leaves it alone when they are equal.
cudaError_t launchCompareBytes(const void* a, const void* b, std::size_t bytes, int* differs, cudaStream_t stream);

} // namespace ksr
