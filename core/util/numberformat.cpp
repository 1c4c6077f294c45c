#include "numberformat.h"

#include <cstdio>

namespace ks {

std::string formatFixed(double v, int digits)
{
    char b[48];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    return b;
}

std::string formatScore(double j)
{
    return formatFixed(j, 1);
}

std::string formatPriority(double v)
{
    return formatFixed(v, 2);
}

std::string formatMicros(double us)
{
    return formatFixed(us, 2);
}

std::string formatSpeedup(double x)
{
    return formatFixed(x, 2) + "x";
}

std::string formatPercent(double fraction, int digits)
{
    return formatFixed(100.0 * fraction, digits) + " %";
}

std::string formatTokens(long long n)
{
    if (n < 1000)
        return std::to_string(n);
    if (n < 1000000)
        return formatFixed(static_cast<double>(n) / 1e3, 1) + "k";
    return formatFixed(static_cast<double>(n) / 1e6, 2) + "M";
}

std::string formatDollars(double d)
{
    return "$" + formatFixed(d, d < 1.0 ? 4 : 2);
}

} // namespace ks
