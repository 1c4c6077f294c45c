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

constexpr double kLargest = std::numeric_limits<double>::max();
constexpr double kRelFloor = 1e-8; // added to |expected| in the relative error

double widenBFloat16(std::uint16_t bits)
{
    return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16));
}

struct Partial {
    std::size_t matched = 0, nonFinite = 0, worstIndex = 0;
    double maxAbs = 0, maxRel = 0, worstAbs = -1, worstActual = 0, worstExpected = 0;
    double maxMiss = 0, sumSquares = 0;
};

// The element loop, instantiated per element decoder: outputs run to hundreds of MiB per
// candidate, and a dtype switch per element made comparing the largest cost of an evaluation.
template<typename Load>
void compareExactly(const std::byte* actual, const std::byte* expected, std::size_t elementSize, std::size_t begin,
    std::size_t end, const Tolerance& tolerance, Load load, Partial& into)
{
    // A local copy: the element bytes may alias anything, so updates through `into` would be
    // stored and reloaded around every element (8.6 ns per element on one core, 2026-12-04).
    Partial p = into;
    const double atol = tolerance.atol, rtol = tolerance.rtol;
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
        const double scale = absY + kRelFloor;
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

// Whether every element of [begin, end) would leave `p` as compareExactly leaves it but for the
// matched count and the sum of squares: finite, within tolerance, and neither the largest error
// nor the largest relative error grows. The same double arithmetic as compareExactly, so the
// answer is exact; branch-free over typed elements, so the compiler vectorises it (GCC needs
// AVX2 for these mixed-width comparisons: a clone for it is picked at load time where the CPU
// has it). Nearly every block of an honest output passes, and the exact loop runs only where
// something is to be recorded.
struct Screen {
    double atol, rtol, worst, maxRel;
};

template<typename Element, typename Widen>
inline bool screenQuiet(
    const Element* __restrict actual, const Element* __restrict expected, std::size_t n, Screen s, double& sumSquares)
{
    const Widen widen;
    double sum = 0.0;
    unsigned loud = 0;
#pragma omp simd reduction(+ : sum) reduction(| : loud)
    for (std::size_t i = 0; i < n; ++i) {
        const double x = widen(actual[i]);
        const double y = widen(expected[i]);
        const double absY = std::fabs(y);
        const double abs = std::fabs(x - y);
        loud |= static_cast<unsigned>(!(std::fabs(x) <= kLargest)) | !(absY <= kLargest)
            | ((abs > s.atol) & (abs > s.rtol * absY)) | (abs > s.worst) | (abs > s.maxRel * (absY + kRelFloor));
        sum += y * y;
    }
    sumSquares = sum;
    return loud == 0;
}

struct WidenFloat32 {
    double operator()(float v) const { return v; }
};
struct WidenBFloat16 {
    double operator()(std::uint16_t bits) const { return widenBFloat16(bits); }
};

#if defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define KS_SCREEN_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define KS_SCREEN_CLONES
#endif

KS_SCREEN_CLONES bool screenQuiet(const float* actual, const float* expected, std::size_t n, Screen s, double& sum)
{
    return screenQuiet<float, WidenFloat32>(actual, expected, n, s, sum);
}

KS_SCREEN_CLONES bool screenQuiet(
    const std::uint16_t* actual, const std::uint16_t* expected, std::size_t n, Screen s, double& sum)
{
    return screenQuiet<std::uint16_t, WidenBFloat16>(actual, expected, n, s, sum);
}

constexpr std::size_t kScreenBlock = 256; // elements screened at once (also the sampling block)

// compareExactly over [begin, end), each block screened first.
template<typename Element, typename Load>
void compareRange(const std::byte* actual, const std::byte* expected, std::size_t begin, std::size_t end,
    const Tolerance& tolerance, Load load, Partial& into)
{
    for (std::size_t from = begin; from < end; from += kScreenBlock) {
        const std::size_t to = std::min(end, from + kScreenBlock);
        double sumSquares = 0.0;
        // The buffers are mapped files or vectors of bytes, aligned for any element type.
        const auto* a = reinterpret_cast<const Element*>(actual) + from;
        const auto* e = reinterpret_cast<const Element*>(expected) + from;
        const Screen screen {tolerance.atol, tolerance.rtol, into.worstAbs, into.maxRel};
        if (screenQuiet(a, e, to - from, screen, sumSquares)) {
            into.matched += to - from;
            into.sumSquares += sumSquares;
        } else {
            compareExactly(actual, expected, sizeof(Element), from, to, tolerance, load, into);
        }
    }
}

void compareRange(const TensorView& actual, const TensorView& expected, std::size_t begin, std::size_t end,
    const Tolerance& tolerance, Partial& p)
{
    const std::byte* a = actual.data.data();
    const std::byte* e = expected.data.data();
    switch (actual.dtype) {
    case DType::Float32:
        return compareRange<float>(
            a, e, begin, end, tolerance,
            [](const std::byte* q) {
                float v;
                std::memcpy(&v, q, sizeof v);
                return static_cast<double>(v);
            },
            p);
    case DType::BFloat16:
        return compareRange<std::uint16_t>(
            a, e, begin, end, tolerance,
            [](const std::byte* q) {
                std::uint16_t bits;
                std::memcpy(&bits, q, sizeof bits);
                return widenBFloat16(bits);
            },
            p);
    default: {
        const DType t = actual.dtype;
        return compareExactly(
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

constexpr std::size_t kSampleBlock = kScreenBlock; // elements: contiguous runs keep the reads streaming

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
