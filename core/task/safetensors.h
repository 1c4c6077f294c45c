#pragma once

#include "dtype.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ks {

// The safetensors format, read directly (FlashInfer-Bench keeps captured index tensors in it):
// an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and
// byte range, then the raw little-endian data.
struct SafetensorsTensor {
    std::string dtype; // as the file names it: F32, BF16, I32, ...
    std::vector<std::int64_t> shape;
    std::uint64_t offset = 0; // from the start of the file
    std::uint64_t bytes = 0;
};

// Every tensor of a file, by key; nullopt with `error` saying what is wrong with the file (a
// header past its end, a byte range outside the data, a size that does not match the shape).
std::optional<std::map<std::string, SafetensorsTensor>> readSafetensorsIndex(
    const std::filesystem::path& file, std::string& error);

// One tensor's bytes into `out`, which must be exactly its size.
bool readSafetensorsData(
    const std::filesystem::path& file, const SafetensorsTensor& tensor, std::span<std::byte> out, std::string& error);

// The dtype a safetensors name stands for (F32 -> float32, F8_E4M3 -> float8_e4m3fn, ...).
std::optional<DType> dtypeFromSafetensors(const std::string& name);
// The other way (float32 -> F32); nullopt for a dtype safetensors has no name for.
std::optional<std::string> safetensorsDtypeName(DType dtype);

struct HostTensor;
// Writes the tensors into one file, keyed by their names, in the order given; false with `error`
// naming the file or the tensor whose dtype the format has no name for.
bool writeSafetensors(const std::filesystem::path& file, const std::vector<HostTensor>& tensors, std::string& error);

} // namespace ks
