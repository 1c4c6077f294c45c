#include "comparison.h"

#include <util/parallel.h>

#include <cmath>
#include <sstream>
#include <vector>

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
    // Chunks are compared in parallel and merged in chunk order: the result does not depend on
    // the thread count.
    struct Partial {
        std::size_t matched = 0, nonFinite = 0, worstIndex = 0;
        double maxAbs = 0, maxRel = 0, worstAbs = -1, worstActual = 0, worstExpected = 0;
    };
    std::vector<Partial> partials(parallelChunkCount(c.total));
    const std::size_t chunk = (c.total + partials.size() - 1) / std::max<std::size_t>(1, partials.size());
    parallelChunks(c.total, [&](std::size_t begin, std::size_t end, std::size_t) {
        Partial& p = partials[begin / std::max<std::size_t>(1, chunk)];
        for (std::size_t i = begin; i < end; ++i) {
            const double x = actual.at(i);
            const double y = expected.at(i);
            if (!std::isfinite(x)) {
                // A non-finite expected value only matches the same non-finite value (e.g. lse = -inf
                // for an empty sequence); a NaN never matches.
                if (!std::isnan(x) && !std::isnan(y) && x == y)
                    ++p.matched;
                else
                    ++p.nonFinite;
                continue;
            }
            if (!std::isfinite(y))
                continue; // finite where the reference is not: a mismatch
            const double abs = std::fabs(x - y);
            const double rel = abs / (std::fabs(y) + 1e-8);
            p.maxAbs = std::max(p.maxAbs, abs);
            p.maxRel = std::max(p.maxRel, rel);
            if (!(abs > tolerance.atol && rel > tolerance.rtol))
                ++p.matched;
            if (abs > p.worstAbs) {
                p.worstAbs = abs;
                p.worstIndex = i;
                p.worstActual = x;
                p.worstExpected = y;
            }
        }
    });
    double worstAbs = -1.0;
    for (const auto& p : partials) {
        c.matched += p.matched;
        c.nonFinite += p.nonFinite;
        c.maxAbsError = std::max(c.maxAbsError, p.maxAbs);
        c.maxRelError = std::max(c.maxRelError, p.maxRel);
        if (p.worstAbs > worstAbs) {
            worstAbs = p.worstAbs;
            c.worstIndex = p.worstIndex;
            c.worstActual = p.worstActual;
            c.worstExpected = p.worstExpected;
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
