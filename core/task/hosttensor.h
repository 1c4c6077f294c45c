#pragma once

#include "dtype.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

// A dense row-major tensor somebody else owns: a HostTensor, or a runner's output in shared memory.
struct TensorView {
    std::string_view name;
    DType dtype = DType::Float32;
    std::span<const std::int64_t> shape;
    std::span<const std::byte> data;

    std::size_t elements() const;
    double at(std::size_t i) const { return loadElement(dtype, data.data() + i * dtypeSize(dtype)); }
};

// A tensor (or scalar) in host memory, laid out densely in row-major order.
struct HostTensor {
    std::string name;
    DType dtype = DType::Float32;
    std::vector<std::int64_t> shape; // empty for a scalar
    bool scalar = false;
    std::vector<std::byte> data; // scalars hold one element too

    std::size_t elements() const;
    double at(std::size_t i) const { return loadElement(dtype, data.data() + i * dtypeSize(dtype)); }
    void set(std::size_t i, double v) { storeElement(dtype, data.data() + i * dtypeSize(dtype), v); }
    TensorView view() const { return {name, dtype, shape, data}; }
};

} // namespace ks
