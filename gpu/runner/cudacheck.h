#pragma once

#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

namespace ksr {

// For the harness's own CUDA calls whose failure ends the job (allocations, its stream and
// events): throws with what was being done and the runtime's name for the error.
inline void check(cudaError_t err, const char* what)
{
    if (err != cudaSuccess)
        throw std::runtime_error(
            std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

} // namespace ksr
