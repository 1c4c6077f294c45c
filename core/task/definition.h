#pragma once

#include "dtype.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks {

struct Axis {
    std::string name;
    bool isConst = false;
    std::int64_t value = 0; // const axes only
    std::string description;
};

struct TensorSpec {
    std::string name;
    std::optional<std::vector<std::string>> shape; // nullopt: a scalar passed by value
    DType dtype = DType::Float32;
    std::string description;

    bool isScalar() const { return !shape.has_value(); }
};

struct Tolerance {
    double atol = 1e-2;
    double rtol = 1e-2;
    double requiredMatchedRatio = 1.0;
    // With a matched ratio below 1, the elements that miss are still bounded: none may be off by
    // more than this fraction of the expected output's RMS, and none may be NaN or Inf. Without
    // it, a kernel could skip a twentieth of the work and pass a 95 % ratio.
    double missRmsFraction = 0.5;
};

// The task's rule for arithmetic precision, stated in the coder's prompt and applied alike to the
// baseline, the reference and every candidate where the runner can set it (the Python runner's
// TF32 switches; a compiled kernel chooses its own instructions and is held to the rule by the
// tolerance). The issue that asked for it: a true-fp32 baseline against a TF32 candidate is a
// speed-up for free.
struct PrecisionRule {
    std::string text; // e.g. "fp32 inputs and output; bf16 internals are allowed"; empty: none stated
    bool tf32 = false; // TF32 for fp32 matrix products (PyTorch's own default for matmul: off)
};

// Bytes moved and floating-point operations of one call, as expressions over the axes:
// the roofline floor that no honest latency can beat.
struct CostModel {
    std::string bytes;
    std::string flops;
};

// A FlashInfer-Bench Definition plus the fields K-Search needs to verify and score candidates.
struct Definition {
    std::string name;
    std::string opType;
    std::string description;
    std::vector<std::string> tags;
    std::vector<Axis> axes; // in file order
    std::vector<TensorSpec> inputs;
    std::vector<TensorSpec> outputs;
    std::vector<std::string> constraints;
    Tolerance tolerance;
    PrecisionRule precision;
    std::string workspaceBytes = "0"; // expression over the axes
    std::optional<CostModel> costModel;
    // Which workloads reference.cpp computes in reasonable time (an expression over the axes,
    // true or false); empty: those under 1e11 cost-model FLOPs. A cost model is a floor, and
    // for some tasks (MoE: routing decides the work) far below what the host reference does.
    std::string hostCheck;
    // The workloads J's geometric mean covers (uuids); empty: all of them. The others are still
    // verified, as GPU MODE ranks TriMul by its seven benchmark shapes and only tests the rest.
    std::vector<std::string> scoredWorkloads;
    // Workloads the code policy is never shown (uuids): verified and timed as the others, left out
    // of J and of every prompt, so that a program fitted to the shapes it was shown fails on these
    // (docs/security.md, pattern 13). Empty: none.
    std::vector<std::string> heldOutWorkloads;

    const Axis* axis(const std::string& axisName) const;
    // Whether the workload `uuid` is one of heldOutWorkloads.
    bool holdsOut(const std::string& uuid) const;
    const TensorSpec* input(const std::string& inputName) const;
    const TensorSpec* output(const std::string& outputName) const;
    std::vector<const Axis*> varAxes() const;
};

} // namespace ks
