#include "comparison.h"

#include <util/parallel.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

namespace ks {
namespace {

struct Partial {
    std::size_t matched = 0, nonFinite = 0, worstIndex = 0;
    double maxAbs = 0, maxRel = 0, worstAbs = -1, worstActual = 0, worstExpected = 0;
    double maxMiss = 0, sumSquares = 0;
};

// The element loop, instantiated per element decoder: outputs run to hundreds of MiB per
// candidate, and a dtype switch per element made comparing the largest cost of an evaluation.
template<typename Load>
void compareRange(const std::byte* actual, const std::byte* expected, std::size_t elementSize, std::size_t begin,
    std::size_t end, const Tolerance& tolerance, Load load, Partial& into)
{
    // A local copy: the element bytes may alias anything, so updates through `into` would be
    // stored and reloaded around every element (8.6 ns per element on one core, 2026-12-04).
    Partial p = into;
    const double atol = tolerance.atol, rtol = tolerance.rtol;
    constexpr double kLargest = std::numeric_limits<double>::max();
    for (std::size_t i = begin; i < end; ++i) {
        const double x = load(actual + i * elementSize);
        const double y = load(expected + i * elementSize);
        const double absY = std::fabs(y);
        // One test for the rare case (false for NaN and infinities): the common path stays short.
        if (!(std::fabs(x) <= kLargest && absY <= kLargest)) {
            // A non-finite expected value only matches the same non-finite value (e.g. lse = -inf
            // for an empty sequence); a NaN never matches; finite where the reference is not is a
            // mismatch that is not counted as NaN/Inf.
            if (!std::isfinite(x)) {
                if (!std::isnan(x) && !std::isnan(y) && x == y)
                    ++p.matched;
                else
                    ++p.nonFinite;
            }
            continue;
        }
        const double abs = std::fabs(x - y);
        // |x-y| > atol and |x-y| > rtol*|y|: a mismatch.
        const bool miss = abs > atol && abs > rtol * absY;
        p.matched += miss ? 0 : 1;
        p.maxMiss = miss && abs > p.maxMiss ? abs : p.maxMiss;
        p.sumSquares += y * y;
        const double scale = absY + 1e-8;
        if (abs > p.maxRel * scale) // the division only when the relative maximum grows
            p.maxRel = abs / scale;
        if (abs > p.worstAbs) {
            p.worstAbs = abs;
            p.maxAbs = abs;
            p.worstIndex = i;
            p.worstActual = x;
            p.worstExpected = y;
        }
    }
    into = p;
}

void compareRange(const TensorView& actual, const TensorView& expected, std::size_t begin, std::size_t end,
    const Tolerance& tolerance, Partial& p)
{
    const std::byte* a = actual.data.data();
    const std::byte* e = expected.data.data();
    switch (actual.dtype) {
    case DType::Float32:
        return compareRange(
            a, e, 4, begin, end, tolerance,
            [](const std::byte* q) {
                float v;
                std::memcpy(&v, q, sizeof v);
                return static_cast<double>(v);
            },
            p);
    case DType::BFloat16:
        return compareRange(
            a, e, 2, begin, end, tolerance,
            [](const std::byte* q) {
                std::uint16_t bits;
                std::memcpy(&bits, q, sizeof bits);
                return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16));
            },
            p);
    default: {
        const DType t = actual.dtype;
        return compareRange(
            a, e, dtypeSize(t), begin, end, tolerance, [t](const std::byte* q) { return loadElement(t, q); }, p);
    }
    }
}

// Whether block b of a sampled comparison is compared: a hash of the secret seed, so the blocks
// are spread evenly, differ between evaluations, and cannot be known in advance.
bool blockChosen(std::uint64_t seed, std::size_t block, unsigned everyNth)
{
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (block + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (z ^ (z >> 31)) % everyNth == 0;
}

constexpr std::size_t kSampleBlock = 256; // elements: contiguous runs keep the reads streaming

} // namespace

OutputComparison compareOutput(
    const TensorView& actual, const TensorView& expected, const Tolerance& tolerance, const Sampling& sampling)
{
    OutputComparison c;
    c.name = expected.name;
    c.total = expected.elements();
    c.population = c.total;
    if (!std::ranges::equal(actual.shape, expected.shape) || actual.dtype != expected.dtype
        || actual.data.size() != expected.data.size() || expected.data.size() != c.total * dtypeSize(expected.dtype)) {
        c.shapeMismatch = true;
        return c;
    }
    // Chunks are compared in parallel and merged in chunk order: the result does not depend on
    // the thread count.
    const bool sampled = sampling.everyNth > 1 && c.total > sampling.minElements;
    std::vector<Partial> partials(parallelChunkCount(c.total));
    std::vector<std::size_t> compared(partials.size(), 0);
    const std::size_t chunk = (c.total + partials.size() - 1) / std::max<std::size_t>(1, partials.size());
    parallelChunks(c.total, [&](std::size_t begin, std::size_t end, std::size_t) {
        const std::size_t slot = begin / std::max<std::size_t>(1, chunk);
        if (!sampled) {
            compareRange(actual, expected, begin, end, tolerance, partials[slot]);
            compared[slot] = end - begin;
            return;
        }
        for (std::size_t block = begin / kSampleBlock; block * kSampleBlock < end; ++block) {
            const std::size_t from = std::max(begin, block * kSampleBlock);
            const std::size_t to = std::min(end, (block + 1) * kSampleBlock);
            if (blockChosen(sampling.seed, block, sampling.everyNth)) {
                compareRange(actual, expected, from, to, tolerance, partials[slot]);
                compared[slot] += to - from;
            }
        }
    });
    c.total = 0;
    for (const std::size_t n : compared)
        c.total += n;
    double worstAbs = -1.0, sumSquares = 0.0;
    for (const auto& p : partials) {
        c.matched += p.matched;
        c.nonFinite += p.nonFinite;
        c.maxMissError = std::max(c.maxMissError, p.maxMiss);
        sumSquares += p.sumSquares;
        c.maxAbsError = std::max(c.maxAbsError, p.maxAbs);
        c.maxRelError = std::max(c.maxRelError, p.maxRel);
        if (p.worstAbs > worstAbs) {
            worstAbs = p.worstAbs;
            c.worstIndex = p.worstIndex;
            c.worstActual = p.worstActual;
            c.worstExpected = p.worstExpected;
        }
    }
    const std::size_t finite = c.total - c.nonFinite;
    c.expectedRms = finite ? std::sqrt(sumSquares / static_cast<double>(finite)) : 0.0;
    const double ratio = c.total ? static_cast<double>(c.matched) / static_cast<double>(c.total) : 1.0;
    const bool missesBounded = c.nonFinite == 0 && c.maxMissError <= tolerance.missRmsFraction * c.expectedRms;
    c.passed = ratio >= tolerance.requiredMatchedRatio
        && (tolerance.requiredMatchedRatio < 1.0 ? missesBounded : c.matched == c.total);
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
      << (c.total < c.population ? " sampled" : "") << " elements outside tolerance";
    if (c.nonFinite)
        s << " (" << c.nonFinite << " NaN/Inf)";
    s << ", max abs error " << c.maxAbsError << ", max rel error " << c.maxRelError;
    if (c.total > c.matched)
        s << ", matched ratio " << static_cast<double>(c.matched) / static_cast<double>(c.total) << ", largest miss "
          << c.maxMissError << " (expected RMS " << c.expectedRms << ")";
    if (c.total && !c.passed)
        s << "; worst at element " << c.worstIndex << ": got " << c.worstActual << ", expected " << c.worstExpected;
    return s.str();
}

} // namespace ks
