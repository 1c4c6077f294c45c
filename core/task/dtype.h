#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ks {

// Element types of task tensors, named as FlashInfer-Bench names them.
enum class DType { Float32, Float16, BFloat16, Float8E4M3, Float8E5M2, Int64, Int32, Int16, Int8, Bool };

std::optional<DType> parseDType(std::string_view name);
std::string_view dtypeName(DType t);
std::size_t dtypeSize(DType t);
bool isFloating(DType t);
// The C type used in the generated ABI header (the ks_* aliases resolve per backend).
std::string_view dtypeAbiType(DType t);
// Comma-separated list of every accepted name, for error messages.
std::string dtypeNameList();

// Element conversions to and from double, the way the harness reads and writes buffers.
double loadElement(DType t, const void* p);
void storeElement(DType t, void* p, double v);

} // namespace ks
