#pragma once

// A small stand-in for PyTorch's C++ extension API (torch/extension.h), only what the binding
// ksearch generates for FlashInfer-Bench uses, over host memory. tst_fibexport compiles and runs
// the generated main.cpp against it with a task's host kernel; the build machine has no PyTorch.
// FlashInfer-Bench builds the same file against the real header.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace torch {

struct Device {
    int index() const { return 0; }
};

enum ScalarType { kUInt8 };

struct TensorOptions {
    TensorOptions dtype(ScalarType) const { return *this; }
    TensorOptions device(Device) const { return *this; }
};

class Tensor
{
public:
    Tensor() = default;
    Tensor(void* data, std::vector<std::int64_t> shape)
        : m_data(data)
        , m_shape(std::move(shape))
    {
    }
    void* data_ptr() const { return m_data; }
    std::int64_t size(int dim) const { return m_shape.at(static_cast<std::size_t>(dim)); }
    Device device() const { return {}; }
    std::shared_ptr<std::vector<unsigned char>> owned; // set by empty()

private:
    void* m_data = nullptr;
    std::vector<std::int64_t> m_shape;
};

inline Tensor empty(std::vector<std::int64_t> shape, TensorOptions)
{
    auto bytes = std::make_shared<std::vector<unsigned char>>(static_cast<std::size_t>(shape.at(0)));
    Tensor t(bytes->data(), std::move(shape));
    t.owned = bytes;
    return t;
}

} // namespace torch

#define TORCH_CHECK(condition, ...)                                                                                    \
    do {                                                                                                               \
        if (!(condition))                                                                                              \
            throw std::runtime_error("TORCH_CHECK failed: " #condition);                                               \
    } while (0)

struct StubModule {
    template<class F> void def(const char*, F) { }
};
#define TORCH_EXTENSION_NAME ks_binding
#define PYBIND11_MODULE(name, m) [[maybe_unused]] static void name##_init(StubModule& m)
