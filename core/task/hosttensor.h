#pragma once

#include "dtype.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ks {

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
};

} // namespace ks
