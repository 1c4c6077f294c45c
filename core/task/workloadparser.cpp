#include "workloadparser.h"

#include "expression.h"
#include "inputgenerator.h"
#include "safetensors.h"
#include "strictjson.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace ks {
namespace {

using Json = nlohmann::ordered_json;

class WorkloadReader
{
public:
    WorkloadReader(const Definition& def, std::string location, std::filesystem::path folder, Diagnostics& diag)
        : m_def(def)
        , m_folder(std::move(folder))
        , m_location(std::move(location))
        , m_diag(diag)
    {
    }

    std::optional<Workload> read(const Json& line)
    {
        if (!line.is_object()) {
            error("", "each line must be a JSON object");
            return std::nullopt;
        }
        if (line.contains("definition") && line["definition"].is_string()
            && line["definition"].get<std::string>() != m_def.name)
            error("definition",
                "names '" + line["definition"].get<std::string>() + "' but the task is '" + m_def.name + "'");
        if (!line.contains("workload") || !line["workload"].is_object()) {
            error("workload", "missing (an object with uuid, axes and inputs)");
            return std::nullopt;
        }
        const auto& w = line["workload"];
        m_wl.raw = line;
        if (!w.contains("uuid") || !w["uuid"].is_string() || w["uuid"].get<std::string>().empty())
            error("workload.uuid", "missing (a unique string id)");
        else
            m_wl.uuid = w["uuid"].get<std::string>();
        readAxes(w);
        readInputs(w);
        if (m_errors == 0)
            checkConstraints();
        if (m_errors == 0)
            checkSizeExpressions();
        if (m_errors)
            return std::nullopt;
        return m_wl;
    }

private:
    void error(const std::string& field, const std::string& message)
    {
        ++m_errors;
        m_diag.error(m_location, field, message);
    }

    void readAxes(const Json& w)
    {
        if (!w.contains("axes") || !w["axes"].is_object()) {
            error("workload.axes", "missing (an object giving every var axis)");
            return;
        }
        const auto& axes = w["axes"];
        for (const auto& [name, value] : axes.items()) {
            const auto* axis = m_def.axis(name);
            const std::string field = "workload.axes." + name;
            if (!axis) {
                error(field, "unknown axis '" + name + "'");
                continue;
            }
            if (!value.is_number_integer() || value.get<std::int64_t>() < 0) {
                error(field, "must be a non-negative integer");
                continue;
            }
            if (axis->isConst && value.get<std::int64_t>() != axis->value)
                error(field,
                    "is " + std::to_string(value.get<std::int64_t>()) + " but the axis is const "
                        + std::to_string(axis->value));
        }
        for (const auto& axis : m_def.axes) {
            if (axis.isConst) {
                m_wl.axes[axis.name] = axis.value;
            } else if (!axes.contains(axis.name)) {
                error("workload.axes." + axis.name, "missing: the var axis needs a value");
            } else if (axes[axis.name].is_number_integer()) {
                m_wl.axes[axis.name] = axes[axis.name].get<std::int64_t>();
            }
        }
    }

    double axisExpression(const std::string& text, const std::string& field)
    {
        const auto r = evaluateExpression(
            text, [&](std::string_view name, std::optional<std::int64_t> index) -> std::optional<double> {
                const auto it = m_wl.axes.find(std::string(name));
                if (index || it == m_wl.axes.end())
                    return std::nullopt;
                return static_cast<double>(it->second);
            });
        if (!r.value) {
            error(field, r.error);
            return 0;
        }
        return *r.value;
    }

    void readInputs(const Json& w)
    {
        if (!w.contains("inputs") || !w["inputs"].is_object()) {
            error("workload.inputs", "missing (an object with a source for every input)");
            return;
        }
        const auto& inputs = w["inputs"];
        for (const auto& [name, value] : inputs.items())
            if (!m_def.input(name))
                error("workload.inputs." + name, "unknown input '" + name + "'");
        for (const auto& spec : m_def.inputs) {
            const std::string field = "workload.inputs." + spec.name;
            if (!inputs.contains(spec.name)) {
                error(field, "missing: every input needs a source");
                continue;
            }
            if (auto src = readSource(inputs[spec.name], spec, field))
                m_wl.inputs[spec.name] = *src;
        }
    }

    std::optional<InputSource> readSource(const Json& j, const TensorSpec& spec, const std::string& field)
    {
        if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
            error(field + ".type", "missing (random, scalar, constant, arange, indptr or unique_indices)");
            return std::nullopt;
        }
        const auto type = j["type"].get<std::string>();
        InputSource src;
        auto number = [&](const char* key, double& target) {
            if (!j.contains(key))
                return false;
            if (!j[key].is_number()) {
                error(field + "." + key, "must be a number");
                return false;
            }
            target = j[key].get<double>();
            return true;
        };
        if (spec.isScalar() != (type == "scalar")) {
            error(field + ".type",
                spec.isScalar() ? "input '" + spec.name + "' is a scalar: use {\"type\": \"scalar\", \"value\": ...}"
                                : "'scalar' is only for inputs whose shape is null");
            return std::nullopt;
        }
        if (type == "random") {
            src.kind = InputSource::Kind::Random;
            if (j.contains("distribution")) {
                if (!j["distribution"].is_string()
                    || (j["distribution"] != "normal" && j["distribution"] != "uniform"
                        && j["distribution"] != "cauchy")) {
                    error(field + ".distribution", "must be \"normal\", \"uniform\" or \"cauchy\"");
                    return std::nullopt;
                }
                src.distribution = j["distribution"].get<std::string>();
            }
            number("mean", src.mean);
            number("std", src.stddev);
            if (src.distribution == "cauchy") { // heavy tails, as GPU MODE's TriMul draws some inputs
                number("location", src.mean);
                number("scale", src.stddev);
                if (!isFloating(spec.dtype))
                    error(field + ".distribution", "cauchy is for floating-point inputs");
            }
            const bool lo = number("low", src.low);
            const bool hi = number("high", src.high);
            src.hasBounds = lo || hi;
            if (src.hasBounds && !(src.low < src.high))
                error(field, "low must be below high");
            if (!isFloating(spec.dtype) && !src.hasBounds)
                src.distribution = "uniform";
        } else if (type == "scalar") {
            src.kind = InputSource::Kind::Scalar;
            if (!number("value", src.value))
                error(field + ".value", "missing (a number)");
        } else if (type == "constant") {
            src.kind = InputSource::Kind::Constant;
            if (!number("value", src.value))
                error(field + ".value", "missing (a number)");
        } else if (type == "arange") {
            src.kind = InputSource::Kind::Arange;
        } else if (type == "indptr") {
            src.kind = InputSource::Kind::Indptr;
            if (!j.contains("lengths") || !j["lengths"].is_array()) {
                error(field + ".lengths", "missing (the length of every segment)");
                return std::nullopt;
            }
            for (std::size_t i = 0; i < j["lengths"].size(); ++i) {
                const auto& v = j["lengths"][i];
                if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
                    error(field + ".lengths[" + std::to_string(i) + "]", "must be a non-negative integer");
                    return std::nullopt;
                }
                src.lengths.push_back(v.get<std::int64_t>());
            }
        } else if (type == "unique_indices") {
            src.kind = InputSource::Kind::UniqueIndices;
            if (!j.contains("high") || !(j["high"].is_string() || j["high"].is_number_integer())) {
                error(field + ".high", "missing (exclusive upper bound: an integer or an expression over the axes)");
                return std::nullopt;
            }
            src.upperBound = j["high"].is_string() ? j["high"].get<std::string>() : j["high"].dump();
        } else if (type == "safetensors") {
            src.kind = InputSource::Kind::Safetensors;
            if (!readSafetensorsSource(j, spec, field, src))
                return std::nullopt;
        } else {
            error(field + ".type",
                "unknown source '" + type
                    + "' (random, scalar, constant, arange, indptr, unique_indices or safetensors)");
            return std::nullopt;
        }
        if (src.kind != InputSource::Kind::Random && src.kind != InputSource::Kind::Scalar
            && src.kind != InputSource::Kind::Constant && src.kind != InputSource::Kind::Safetensors
            && isFloating(spec.dtype))
            error(field + ".type", "'" + type + "' generates indices: the input must have an integer dtype");
        checkShapeFits(src, spec, field);
        return src;
    }

    // {"type": "safetensors", "path": ..., "tensor_key": ...}: the path is absolute or relative to
    // the folder of workloads.jsonl; the tensor must have the input's dtype and, with this
    // workload's axes, its shape. The bytes are read when inputs are made, the same every trial.
    bool readSafetensorsSource(const Json& j, const TensorSpec& spec, const std::string& field, InputSource& src)
    {
        for (const char* key : {"path", "tensor_key"})
            if (!j.contains(key) || !j[key].is_string()) {
                error(field + "." + key, "missing (a string)");
                return false;
            }
        std::filesystem::path path = j["path"].get<std::string>();
        if (path.is_relative())
            path = m_folder / path;
        src.file = path.lexically_normal().string();
        src.tensorKey = j["tensor_key"].get<std::string>();
        std::string why;
        const auto index = readSafetensorsIndex(src.file, why);
        if (!index) {
            error(field + ".path", why);
            return false;
        }
        const auto t = index->find(src.tensorKey);
        if (t == index->end()) {
            error(field + ".tensor_key", "no tensor '" + src.tensorKey + "' in " + src.file);
            return false;
        }
        std::string wanted = std::string(dtypeName(spec.dtype)) + " [";
        std::vector<std::int64_t> shape;
        for (const auto& dim : spec.shape.value_or(std::vector<std::string> {})) {
            const auto axis = m_wl.axes.find(dim);
            shape.push_back(axis == m_wl.axes.end() ? -1 : axis->second);
            wanted += (shape.size() > 1 ? ", " : "") + std::to_string(shape.back());
        }
        wanted += "]";
        std::string found = t->second.dtype + " [";
        for (std::size_t i = 0; i < t->second.shape.size(); ++i)
            found += (i ? ", " : "") + std::to_string(t->second.shape[i]);
        found += "]";
        const auto dtype = dtypeFromSafetensors(t->second.dtype);
        if (!dtype || *dtype != spec.dtype || t->second.shape != shape) {
            error(field, "tensor '" + src.tensorKey + "' of " + src.file + " is " + found + ", the input is " + wanted);
            return false;
        }
        src.fileOffset = t->second.offset;
        src.fileBytes = t->second.bytes;
        return true;
    }

    void checkShapeFits(const InputSource& src, const TensorSpec& spec, const std::string& field)
    {
        if (spec.isScalar() || m_wl.axes.size() != m_def.axes.size())
            return;
        std::int64_t count = 1;
        for (const auto& dim : *spec.shape)
            count *= m_wl.axes[dim];
        if (src.kind == InputSource::Kind::Indptr && static_cast<std::int64_t>(src.lengths.size()) + 1 != count)
            error(field + ".lengths",
                "has " + std::to_string(src.lengths.size()) + " segments but the tensor holds " + std::to_string(count)
                    + " elements (segments + 1 expected)");
        if (src.kind == InputSource::Kind::UniqueIndices) {
            const double high = axisExpression(src.upperBound, field + ".high");
            if (high < static_cast<double>(count))
                error(field + ".high",
                    "bound " + std::to_string(static_cast<std::int64_t>(high)) + " is too small for "
                        + std::to_string(count) + " distinct indices");
        }
    }

    void checkConstraints()
    {
        InputGenerator gen(m_def, m_wl, 0);
        for (std::size_t i = 0; i < m_def.constraints.size(); ++i) {
            const auto& text = m_def.constraints[i];
            std::string refused;
            const auto r = evaluateExpression(
                text, [&](std::string_view name, std::optional<std::int64_t> index) -> std::optional<double> {
                    const std::string n(name);
                    if (!index) {
                        const auto it = m_wl.axes.find(n);
                        return it == m_wl.axes.end() ? std::nullopt
                                                     : std::optional<double>(static_cast<double>(it->second));
                    }
                    return gen.indexElement(n, *index, refused);
                });
            const std::string field = "constraints[" + std::to_string(i) + "]";
            if (!r.value)
                error(field, (refused.empty() ? r.error : refused) + " (constraint '" + text + "')");
            else if (*r.value == 0.0)
                error(field, "constraint '" + text + "' does not hold for this workload");
        }
    }

    // The workspace size and the cost model must have a value for every workload: a cost model
    // that reads an index tensor past its end would otherwise turn off the floor check silently.
    void checkSizeExpressions()
    {
        const InputGenerator gen(m_def, m_wl, 0);
        auto check = [&](const std::string& text, const std::string& field) {
            std::string why;
            const auto v = gen.evaluate(text, &why);
            if (!v)
                error(field, why + " (expression '" + text + "')");
            else if (*v < 0 || !std::isfinite(*v))
                error(field, "'" + text + "' is " + std::to_string(*v) + " for this workload (must be 0 or more)");
        };
        check(m_def.workspaceBytes, "workspace_bytes");
        if (m_def.costModel) {
            check(m_def.costModel->bytes, "cost_model.bytes");
            check(m_def.costModel->flops, "cost_model.flops");
        }
    }

    const Definition& m_def;
    std::filesystem::path m_folder; // where relative safetensors paths start
    std::string m_location;
    Diagnostics& m_diag;
    Workload m_wl;
    int m_errors = 0;
};

} // namespace

std::vector<Workload> parseWorkloads(
    const std::string& text, const Definition& def, const std::string& file, Diagnostics& diag)
{
    std::vector<Workload> out;
    std::set<std::string> uuids;
    std::istringstream in(text);
    std::string lineText;
    int lineNo = 0;
    while (std::getline(in, lineText)) {
        ++lineNo;
        if (lineText.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        const std::string location = file + ":" + std::to_string(lineNo);
        std::string parseError;
        const auto doc = parseStrictJson(lineText, parseError);
        if (!doc) {
            diag.error(location, "", parseError);
            continue;
        }
        WorkloadReader reader(def, location, std::filesystem::path(file).parent_path(), diag);
        if (auto wl = reader.read(*doc)) {
            wl->line = lineNo;
            if (!uuids.insert(wl->uuid).second) {
                diag.error(location, "workload.uuid", "duplicate uuid '" + wl->uuid + "'");
                continue;
            }
            out.push_back(std::move(*wl));
        }
    }
    if (lineNo == 0 || (out.empty() && !diag.hasErrors()))
        diag.error(file, "", "no workloads: at least one line is required");
    return out;
}

} // namespace ks
