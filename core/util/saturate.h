#pragma once

#include <cmath>
#include <concepts>
#include <limits>

namespace ks {

// `v` as the integer type T, saturated at T's bounds and NaN as 0. Converting a double outside T's
// range with static_cast is undefined behaviour, and doubles here come from files a person or a
// program wrote (task expressions, workloads, journals): 2e114 must read as a very large number,
// not as whatever the machine makes of it.
template<std::integral T> T saturatingCast(double v)
{
    if (std::isnan(v))
        return 0;
    // The bounds as doubles: T's maximum rounds up to a power of two, which is itself out of range.
    constexpr double low = static_cast<double>(std::numeric_limits<T>::min());
    constexpr double high = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= low)
        return std::numeric_limits<T>::min();
    if (v >= high)
        return std::numeric_limits<T>::max();
    return static_cast<T>(v);
}

} // namespace ks
