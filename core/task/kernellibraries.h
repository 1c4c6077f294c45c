#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ks {

// Whether a compiled candidate brought a kernel library into its runner (docs/security.md,
// pattern 15): a search is for kernels the candidate writes, so one that loads cuBLAS, cuDNN,
// another CUDA math library, a CPU BLAS or LAPACK, TensorRT, FlashInfer or libtorch and lets it do
// the work is REJECTED, whatever its outputs. `loaded` are the paths of the shared objects the
// runner saw appear after the candidate's load (protocol.h, CallLine::loadedLibraries); anything
// else there (the CUDA driver's JIT, libcudart, the C and C++ runtimes, zlib...) is allowed. Returns
// the first kernel library's file name, or nullopt.
std::optional<std::string> kernelLibraryAmong(const std::vector<std::string>& loaded);

} // namespace ks
