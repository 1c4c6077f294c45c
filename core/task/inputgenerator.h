#pragma once

#include "definition.h"
#include "hosttensor.h"
#include "workload.h"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ks {

// Builds the inputs of one workload from a seed. Every element is a pure function of
// (seed, workload uuid, input name, trial, index), so two processes given the same seed produce
// identical inputs, and a new trial number gives fresh values for every random input.
class InputGenerator
{
public:
    InputGenerator(const Definition& def, const Workload& workload, std::uint64_t seed);

    const Definition& definition() const { return m_def; }
    std::vector<std::int64_t> shapeOf(const TensorSpec& spec) const;
    HostTensor generate(const TensorSpec& spec, std::uint32_t trial = 0) const;
    // The same elements written into `out` (byteSize(spec) bytes), for example straight into
    // shared memory: a 1 GB KV pool is then generated once, in place, by every core.
    void generateInto(const TensorSpec& spec, std::uint32_t trial, std::span<std::byte> out) const;
    std::size_t byteSize(const TensorSpec& spec) const;

    // Random inputs of kPoolBytes and more (paged-KV pools) do not depend on the workload: every
    // workload of a search with the same shape, dtype and distribution gets the same values for
    // a trial, so they can be made and held once (poolKey says which ones are the same).
    static constexpr std::size_t kPoolBytes = std::size_t {64} << 20;
    // Non-empty for such an input: equal keys mean equal contents under the same seed.
    std::string poolKey(const TensorSpec& spec, std::uint32_t trial) const;
    std::vector<HostTensor> generateInputs(std::uint32_t trial = 0) const;
    // The outputs' names, dtypes and shapes for this workload, without data: the runner makes
    // (and poisons) its own buffers.
    std::vector<HostTensor> describeOutputs() const;
    std::int64_t workspaceBytes() const;

    // An element of a generated integer index tensor (for constraints such as kv_indptr[-1]).
    // Random inputs are refused: a constraint cannot depend on a random draw.
    std::optional<double> indexElement(const std::string& name, std::int64_t index, std::string& refused) const;

    // An expression over the workload's axes and the elements of its generated index tensors:
    // cost models and workspace sizes may depend on per-request lengths (kv_indptr[b + 1] - ...).
    std::optional<double> evaluate(const std::string& text, std::string* error = nullptr) const;

private:
    const Definition& m_def;
    const Workload& m_workload;
    std::uint64_t m_seed;
    mutable std::map<std::string, HostTensor> m_indexCache; // generated on first use
};

// The byte-count, FLOP-count and workspace expressions evaluated for a workload.
std::optional<double> evaluateAxisExpression(
    const std::string& text, const Workload& workload, std::string* error = nullptr);

} // namespace ks
