#include "definition.h"

#include <algorithm>

namespace ks {
namespace {

template<typename T> const T* findByName(const std::vector<T>& items, const std::string& name)
{
    const auto it = std::find_if(items.begin(), items.end(), [&](const T& item) { return item.name == name; });
    return it == items.end() ? nullptr : &*it;
}

} // namespace

bool Definition::holdsOut(const std::string& uuid) const
{
    return std::find(heldOutWorkloads.begin(), heldOutWorkloads.end(), uuid) != heldOutWorkloads.end();
}

const Axis* Definition::axis(const std::string& axisName) const
{
    return findByName(axes, axisName);
}

const TensorSpec* Definition::input(const std::string& inputName) const
{
    return findByName(inputs, inputName);
}

const TensorSpec* Definition::output(const std::string& outputName) const
{
    return findByName(outputs, outputName);
}

std::vector<const Axis*> Definition::varAxes() const
{
    std::vector<const Axis*> out;
    for (const auto& a : axes)
        if (!a.isConst)
            out.push_back(&a);
    return out;
}

} // namespace ks
