#include "inputgenerator.h"

#include "expression.h"
#include "safetensors.h"

#include <util/parallel.h>
#include <util/saturate.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace ks {
namespace {

std::uint64_t splitmix(std::uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 0xcbf29ce484222325ULL)
{
    for (const unsigned char c : s)
        h = (h ^ c) * 0x100000001b3ULL;
    return h;
}

// Uniform in (0, 1): never 0, so log() in Box-Muller stays finite.
double unit(std::uint64_t bits)
{
    return (static_cast<double>(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

} // namespace

InputGenerator::InputGenerator(const Definition& def, const Workload& workload, std::uint64_t seed)
    : m_def(def)
    , m_workload(workload)
    , m_seed(seed)
{
}

std::vector<std::int64_t> InputGenerator::shapeOf(const TensorSpec& spec) const
{
    std::vector<std::int64_t> shape;
    if (spec.shape)
        for (const auto& dim : *spec.shape)
            shape.push_back(m_workload.axes.at(dim));
    return shape;
}

HostTensor InputGenerator::generate(const TensorSpec& spec, std::uint32_t trial) const
{
    HostTensor t;
    t.name = spec.name;
    t.dtype = spec.dtype;
    t.scalar = spec.isScalar();
    t.shape = shapeOf(spec);
    t.data.resize(byteSize(spec));
    generateInto(spec, trial, t.data);
    return t;
}

std::string InputGenerator::poolKey(const TensorSpec& spec, std::uint32_t trial) const
{
    const auto src = m_workload.inputs.find(spec.name);
    if (src == m_workload.inputs.end() || src->second.kind != InputSource::Kind::Random || byteSize(spec) < kPoolBytes)
        return {};
    const InputSource& r = src->second;
    std::string key = spec.name + ":" + std::string(dtypeName(spec.dtype)) + ":" + r.distribution;
    for (const double v : {r.mean, r.stddev, r.low, r.high, r.hasBounds ? 1.0 : 0.0})
        key += ":" + std::to_string(v);
    for (const auto d : shapeOf(spec))
        key += "x" + std::to_string(d);
    return key + "#" + std::to_string(trial);
}

std::size_t InputGenerator::byteSize(const TensorSpec& spec) const
{
    std::size_t n = 1;
    for (const auto d : shapeOf(spec))
        n *= static_cast<std::size_t>(std::max<std::int64_t>(d, 0));
    return n * dtypeSize(spec.dtype);
}

void InputGenerator::generateInto(const TensorSpec& spec, std::uint32_t trial, std::span<std::byte> out) const
{
    const DType dtype = spec.dtype;
    const std::size_t esize = dtypeSize(dtype);
    const std::size_t n = out.size() / esize;
    std::byte* base = out.data();
    auto set = [&](std::size_t i, double v) { storeElement(dtype, base + i * esize, v); };
    const auto srcIt = m_workload.inputs.find(spec.name);
    if (srcIt == m_workload.inputs.end()) {
        std::fill(out.begin(), out.end(), std::byte {0});
        return;
    }
    const InputSource& src = srcIt->second;
    const std::string poolName = poolKey(spec, trial);
    const std::uint64_t key =
        splitmix(m_seed ^ (poolName.empty() ? fnv1a(spec.name, fnv1a(m_workload.uuid)) : fnv1a(poolName))
            ^ (std::uint64_t {trial} << 32));

    switch (src.kind) {
    case InputSource::Kind::Scalar:
    case InputSource::Kind::Constant:
        for (std::size_t i = 0; i < n; ++i)
            set(i, src.value);
        break;
    case InputSource::Kind::Safetensors: { // captured data: the same bytes every trial
        std::string error;
        const SafetensorsTensor where {{}, {}, src.fileOffset, src.fileBytes};
        if (!readSafetensorsData(src.file, where, out, error))
            throw std::runtime_error("input '" + spec.name + "': " + error);
        break;
    }
    case InputSource::Kind::Arange:
        for (std::size_t i = 0; i < n; ++i)
            set(i, static_cast<double>(i));
        break;
    case InputSource::Kind::Indptr: {
        std::int64_t acc = 0;
        for (std::size_t i = 0; i < n; ++i) {
            set(i, static_cast<double>(acc));
            if (i < src.lengths.size())
                acc += src.lengths[i];
        }
        break;
    }
    case InputSource::Kind::UniqueIndices: {
        const auto high = saturatingCast<std::int64_t>(evaluateAxisExpression(src.upperBound, m_workload).value_or(0));
        // Partial Fisher-Yates over [0, high): distinct, uniformly chosen, in random order.
        std::vector<std::int64_t> pool(static_cast<std::size_t>(std::max<std::int64_t>(high, 0)));
        std::iota(pool.begin(), pool.end(), 0);
        std::mt19937_64 rng(key);
        for (std::size_t i = 0; i < n; ++i) {
            if (i >= pool.size()) { // more indices than distinct values: the loader refuses this
                set(i, 0.0);
                continue;
            }
            std::uniform_int_distribution<std::size_t> pick(i, pool.size() - 1);
            std::swap(pool[i], pool[pick(rng)]);
            set(i, static_cast<double>(pool[i]));
        }
        break;
    }
    case InputSource::Kind::Random: {
        const bool floating = isFloating(dtype);
        double lo = src.low, hi = src.high;
        if (!floating && !src.hasBounds) {
            lo = dtype == DType::Bool ? 0 : dtype == DType::Int8 ? -128 : -1024;
            hi = dtype == DType::Bool ? 2 : dtype == DType::Int8 ? 128 : 1024;
        }
        const bool uniform = src.distribution == "uniform";
        const bool cauchy = src.distribution == "cauchy";
        // Normal draws: one Box-Muller pair per two elements (cosine for the even, sine for the
        // odd one), in float: MLA's 1 GB KV pools made the draw the cost of preparing a search.
        parallelChunks(n, [&](std::size_t begin, std::size_t end, std::size_t) {
            float radius = 0.0f, sine = 0.0f, cosine = 0.0f;
            for (std::size_t i = begin; i < end; ++i) {
                double v;
                if (uniform) {
                    v = lo + (hi - lo) * unit(splitmix(key + i));
                    if (!floating)
                        v = std::floor(v);
                } else if (cauchy) { // location + scale * tan(pi (u - 1/2)); u never reaches 0 or 1
                    v = src.mean + src.stddev * std::tan(3.141592653589793 * (unit(splitmix(key + i)) - 0.5));
                } else {
                    if (i % 2 == 0 || i == begin) {
                        const std::size_t pair = i / 2;
                        radius = std::sqrt(-2.0f * std::log(static_cast<float>(unit(splitmix(key + 2 * pair)))));
                        const float angle = 6.2831853f * static_cast<float>(unit(splitmix(key + 2 * pair + 1)));
                        sine = std::sin(angle);
                        cosine = std::cos(angle);
                    }
                    v = src.mean + src.stddev * static_cast<double>(radius * (i % 2 ? sine : cosine));
                    if (dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2)
                        v = std::clamp(v, -2.0, 2.0); // as FlashInfer-Bench draws low-bit inputs
                }
                storeElement(dtype, base + i * esize, v);
            }
        });
        break;
    }
    }
}

std::vector<HostTensor> InputGenerator::generateInputs(std::uint32_t trial) const
{
    std::vector<HostTensor> out;
    out.reserve(m_def.inputs.size());
    for (const auto& spec : m_def.inputs)
        out.push_back(generate(spec, trial));
    return out;
}

std::vector<HostTensor> InputGenerator::describeOutputs() const
{
    std::vector<HostTensor> out;
    for (const auto& spec : m_def.outputs) {
        HostTensor t;
        t.name = spec.name;
        t.dtype = spec.dtype;
        t.shape = shapeOf(spec);
        out.push_back(std::move(t));
    }
    return out;
}

std::int64_t InputGenerator::workspaceBytes() const
{
    return saturatingCast<std::int64_t>(evaluate(m_def.workspaceBytes).value_or(0));
}

std::optional<double> InputGenerator::evaluate(const std::string& text, std::string* error) const
{
    std::string refused;
    const auto r = evaluateExpression(
        text, [&](std::string_view name, std::optional<std::int64_t> index) -> std::optional<double> {
            const std::string n(name);
            if (index)
                return indexElement(n, *index, refused);
            const auto it = m_workload.axes.find(n);
            return it == m_workload.axes.end() ? std::nullopt : std::optional<double>(static_cast<double>(it->second));
        });
    if (!r.value && error)
        *error = refused.empty() ? r.error : refused;
    return r.value;
}

std::optional<double> InputGenerator::indexElement(
    const std::string& name, std::int64_t index, std::string& refused) const
{
    const auto* spec = m_def.input(name);
    const auto src = m_workload.inputs.find(name);
    if (!spec || spec->isScalar() || isFloating(spec->dtype) || src == m_workload.inputs.end())
        return std::nullopt;
    if (src->second.kind == InputSource::Kind::Random) {
        refused = "input '" + name + "' is random, so an expression cannot read its elements";
        return std::nullopt;
    }
    auto it = m_indexCache.find(name);
    if (it == m_indexCache.end())
        it = m_indexCache.emplace(name, generate(*spec)).first;
    const auto n = static_cast<std::int64_t>(it->second.elements());
    const std::int64_t i = index < 0 ? n + index : index;
    if (i < 0 || i >= n)
        return std::nullopt;
    return it->second.at(static_cast<std::size_t>(i));
}

std::optional<double> evaluateAxisExpression(const std::string& text, const Workload& workload, std::string* error)
{
    const auto r = evaluateExpression(
        text, [&](std::string_view name, std::optional<std::int64_t> index) -> std::optional<double> {
            const auto it = workload.axes.find(std::string(name));
            if (index || it == workload.axes.end())
                return std::nullopt;
            return static_cast<double>(it->second);
        });
    if (!r.value && error)
        *error = r.error;
    return r.value;
}

} // namespace ks
