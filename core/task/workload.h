#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ks {

// How the harness fills one input: FlashInfer-Bench's `random` and `scalar`, plus generators for
// index tensors whose values must be consistent (paged-KV indptr / indices).
struct InputSource {
    enum class Kind { Random, Scalar, Constant, Arange, Indptr, UniqueIndices, Safetensors };
    Kind kind = Kind::Random;
    double value = 0.0; // scalar / constant
    std::string distribution = "normal"; // random: normal | uniform | cauchy
    double low = -1.0, high = 1.0; // random uniform bounds (integers: [low, high))
    double mean = 0.0, stddev = 1.0; // random normal; cauchy: location and scale
    bool hasBounds = false; // random: low/high were given
    std::vector<std::int64_t> lengths; // indptr: segment lengths
    std::string upperBound; // unique_indices: exclusive bound, an expression over the axes
    // safetensors: the file (resolved at load), the tensor's key, and where its bytes lie
    std::string file;
    std::string tensorKey;
    std::uint64_t fileOffset = 0, fileBytes = 0;
};

struct Workload {
    std::string uuid;
    int line = 0; // 1-based line in workloads.jsonl
    std::map<std::string, std::int64_t> axes; // every axis, const ones filled from the definition
    std::map<std::string, InputSource> inputs;
    nlohmann::ordered_json raw; // the line as written, for export
};

} // namespace ks
