#include "hosttensor.h"

namespace ks {

std::size_t HostTensor::elements() const
{
    return view().elements();
}

std::size_t TensorView::elements() const
{
    std::size_t n = 1;
    for (const auto d : shape)
        n *= static_cast<std::size_t>(d);
    return n;
}

} // namespace ks
