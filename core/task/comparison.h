#pragma once

#include "definition.h"
#include "hosttensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ks {

struct OutputComparison {
    std::string name;
    std::size_t total = 0; // elements compared
    std::size_t population = 0; // elements in the output (more than total when sampled)
    std::size_t matched = 0;
    std::size_t nonFinite = 0; // NaN or Inf in the candidate's output: always a mismatch
    double maxAbsError = 0.0; // over finite elements
    double maxRelError = 0.0;
    double maxMissError = 0.0; // largest absolute error among the finite elements that missed
    double expectedRms = 0.0; // RMS of the finite expected values compared
    std::size_t worstIndex = 0; // element with the largest absolute error
    double worstActual = 0.0, worstExpected = 0.0;
    bool shapeMismatch = false;
    bool passed = false;
};

// Every element is compared: it fails when |x-y| > atol and |x-y| > rtol*|y| (FlashInfer-Bench's
// rule), or when x is not finite; an output passes when its matched fraction reaches
// tolerance.requiredMatchedRatio and, where that is below 1, when no element that missed is NaN,
// Inf or off by more than tolerance.missRmsFraction times the expected values' RMS.
//
// Sampling compares a random subset: every n-th block of 256 elements on average, chosen by a
// hash of the seed. For outputs that were already verified whole on another call (the timing
// loop's re-checks), where a cheat is wrong on a large part of the output, not on a few elements.
struct Sampling {
    unsigned everyNth = 1; // 1: every element
    std::uint64_t seed = 0;
    std::size_t minElements = std::size_t {1} << 20; // smaller outputs are compared whole
};
OutputComparison compareOutput(
    const TensorView& actual, const TensorView& expected, const Tolerance& tolerance, const Sampling& sampling = {});
inline OutputComparison compareOutput(const HostTensor& actual, const HostTensor& expected, const Tolerance& tolerance)
{
    return compareOutput(actual.view(), expected.view(), tolerance);
}

// A line a person (or an LLM) can act on: which output, how many elements failed, the worst one.
std::string describeComparison(const OutputComparison& c);

} // namespace ks
