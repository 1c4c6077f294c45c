#include "kernellibraries.h"

#include <array>
#include <filesystem>
#include <string_view>

namespace ks {

namespace {

// Beginnings of the file names (libNAME.so[.VERSION]); a prefix also covers a family's parts
// (libcublasLt, libcudnn_ops, libtorch_cuda, libmkl_core, liblapacke).
constexpr std::array<std::string_view, 16> kKernelLibraries {"libcublas", "libnvblas", "libcudnn", "libcufft",
    "libcurand", "libcusparse", "libcusolver", "libcutensor", "libcutlass", "libnvinfer" /* TensorRT */,
    "libflashinfer", "libtorch", "libblas", "libopenblas", "liblapack", "libmkl"};

} // namespace

std::optional<std::string> kernelLibraryAmong(const std::vector<std::string>& loaded)
{
    for (const std::string& path : loaded) {
        const std::string file = std::filesystem::path(path).filename().string();
        for (const std::string_view library : kKernelLibraries)
            if (file.rfind(library, 0) == 0)
                return file;
    }
    return std::nullopt;
}

} // namespace ks
