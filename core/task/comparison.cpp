#include "comparison.h"

#include <cmath>
#include <sstream>

namespace ks {

OutputComparison compareOutput(const HostTensor& actual, const HostTensor& expected, const Tolerance& tolerance)
{
    OutputComparison c;
    c.name = expected.name;
    c.total = expected.elements();
    if (actual.shape != expected.shape || actual.dtype != expected.dtype
        || actual.data.size() != expected.data.size()) {
        c.shapeMismatch = true;
        return c;
    }
    double worstAbs = -1.0;
    for (std::size_t i = 0; i < c.total; ++i) {
        const double x = actual.at(i);
        const double y = expected.at(i);
        if (!std::isfinite(x)) {
            // A non-finite expected value only matches the same non-finite value (e.g. lse = -inf
            // for an empty sequence); a NaN never matches.
            const bool same = !std::isnan(x) && !std::isnan(y) && x == y;
            if (same)
                ++c.matched;
            else
                ++c.nonFinite;
            continue;
        }
        if (!std::isfinite(y))
            continue; // finite where the reference is not: a mismatch
        const double abs = std::fabs(x - y);
        const double rel = abs / (std::fabs(y) + 1e-8);
        c.maxAbsError = std::max(c.maxAbsError, abs);
        c.maxRelError = std::max(c.maxRelError, rel);
        if (!(abs > tolerance.atol && rel > tolerance.rtol))
            ++c.matched;
        if (abs > worstAbs) {
            worstAbs = abs;
            c.worstIndex = i;
            c.worstActual = x;
            c.worstExpected = y;
        }
    }
    const double ratio = c.total ? static_cast<double>(c.matched) / static_cast<double>(c.total) : 1.0;
    c.passed =
        ratio >= tolerance.requiredMatchedRatio && (tolerance.requiredMatchedRatio < 1.0 || c.matched == c.total);
    return c;
}

std::string describeComparison(const OutputComparison& c)
{
    std::ostringstream s;
    s << c.name << ": ";
    if (c.shapeMismatch) {
        s << "shape or dtype differs from the definition";
        return s.str();
    }
    s << (c.passed ? "ok" : "MISMATCH") << ", " << (c.total - c.matched) << " of " << c.total
      << " elements outside tolerance";
    if (c.nonFinite)
        s << " (" << c.nonFinite << " NaN/Inf)";
    s << ", max abs error " << c.maxAbsError << ", max rel error " << c.maxRelError;
    if (c.total && !c.passed)
        s << "; worst at element " << c.worstIndex << ": got " << c.worstActual << ", expected " << c.worstExpected;
    return s.str();
}

} // namespace ks
