#include "definitionparser.h"

#include "expression.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

namespace ks {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 44> kReservedWords {"auto", "bool", "break", "case", "char", "class", "const",
    "continue", "default", "delete", "do", "double", "else", "enum", "extern", "false", "float", "for", "goto", "if",
    "inline", "int", "long", "namespace", "new", "operator", "private", "public", "register", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "template", "this", "true", "typedef", "union", "unsigned",
    "void", "while"};

class DefinitionReader
{
public:
    DefinitionReader(const Json& doc, std::string file, Diagnostics& diag)
        : m_doc(doc)
        , m_file(std::move(file))
        , m_diag(diag)
    {
    }

    std::optional<Definition> read()
    {
        if (!m_doc.is_object()) {
            error("", "the definition must be a JSON object");
            return std::nullopt;
        }
        m_def.name = requiredString("name");
        if (!m_def.name.empty() && !isCIdentifier(m_def.name))
            error("name", "'" + m_def.name + "' must consist of letters, digits and '_'");
        m_def.opType = requiredString("op_type");
        m_def.description = optionalString("description");
        readTags();
        readAxes();
        readTensors("inputs", m_def.inputs, false);
        readTensors("outputs", m_def.outputs, true);
        checkNameClashes();
        readConstraints();
        readTolerance();
        readPrecision();
        readWorkspace();
        readCostModel();
        readHostCheck();
        readWorkloadList("scored_workloads", m_def.scoredWorkloads);
        readWorkloadList("held_out_workloads", m_def.heldOutWorkloads);
        for (std::size_t i = 0; i < m_def.heldOutWorkloads.size(); ++i)
            if (std::find(m_def.scoredWorkloads.begin(), m_def.scoredWorkloads.end(), m_def.heldOutWorkloads[i])
                != m_def.scoredWorkloads.end())
                error("held_out_workloads[" + std::to_string(i) + "]",
                    "'" + m_def.heldOutWorkloads[i]
                        + "' is also in scored_workloads: a held-out workload is never scored");
        if (m_errors)
            return std::nullopt;
        return m_def;
    }

private:
    void error(const std::string& field, const std::string& message)
    {
        ++m_errors;
        m_diag.error(m_file, field, message);
    }

    std::string requiredString(const char* key)
    {
        if (!m_doc.contains(key)) {
            error(key, "missing (a string is required)");
            return {};
        }
        if (!m_doc[key].is_string() || m_doc[key].get<std::string>().empty()) {
            error(key, "must be a non-empty string");
            return {};
        }
        return m_doc[key].get<std::string>();
    }

    std::string optionalString(const char* key)
    {
        if (!m_doc.contains(key) || m_doc[key].is_null())
            return {};
        if (!m_doc[key].is_string()) {
            error(key, "must be a string");
            return {};
        }
        return m_doc[key].get<std::string>();
    }

    void readTags()
    {
        if (!m_doc.contains("tags"))
            return;
        const auto& tags = m_doc["tags"];
        if (!tags.is_array()) {
            error("tags", "must be an array of strings");
            return;
        }
        for (std::size_t i = 0; i < tags.size(); ++i) {
            if (!tags[i].is_string())
                error("tags[" + std::to_string(i) + "]", "must be a string");
            else
                m_def.tags.push_back(tags[i].get<std::string>());
        }
    }

    void readAxes()
    {
        if (!m_doc.contains("axes") || !m_doc["axes"].is_object() || m_doc["axes"].empty()) {
            error("axes", "missing or empty (an object of named axes is required)");
            return;
        }
        for (const auto& [name, spec] : m_doc["axes"].items()) {
            const std::string field = "axes." + name;
            if (!isCIdentifier(name)) {
                error(field, "axis name must be a C identifier");
                continue;
            }
            if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string()) {
                error(field + ".type", "missing (\"const\" or \"var\")");
                continue;
            }
            Axis axis {name, false, 0, {}};
            const auto type = spec["type"].get<std::string>();
            if (type == "const") {
                axis.isConst = true;
                if (!spec.contains("value") || !spec["value"].is_number_integer()
                    || spec["value"].get<std::int64_t>() < 1)
                    error(field + ".value", "a const axis needs a positive integer value");
                else
                    axis.value = spec["value"].get<std::int64_t>();
            } else if (type != "var") {
                error(field + ".type", "'" + type + "' is not an axis type (\"const\" or \"var\")");
                continue;
            }
            if (spec.contains("description") && spec["description"].is_string())
                axis.description = spec["description"].get<std::string>();
            m_def.axes.push_back(axis);
        }
    }

    void readTensors(const char* key, std::vector<TensorSpec>& out, bool outputs)
    {
        if (!m_doc.contains(key) || !m_doc[key].is_object() || m_doc[key].empty()) {
            error(key, "missing or empty (an object of named tensors is required)");
            return;
        }
        for (const auto& [name, spec] : m_doc[key].items()) {
            const std::string field = std::string(key) + "." + name;
            if (!isCIdentifier(name)) {
                error(field, "tensor name must be a C identifier");
                continue;
            }
            if (!spec.is_object()) {
                error(field, "must be an object with \"shape\" and \"dtype\"");
                continue;
            }
            TensorSpec tensor;
            tensor.name = name;
            bool ok = true;
            if (!spec.contains("dtype") || !spec["dtype"].is_string()) {
                error(field + ".dtype", "missing (one of " + dtypeNameList() + ")");
                ok = false;
            } else if (const auto t = parseDType(spec["dtype"].get<std::string>())) {
                tensor.dtype = *t;
            } else {
                error(field + ".dtype",
                    "unknown dtype '" + spec["dtype"].get<std::string>() + "' (one of " + dtypeNameList() + ")");
                ok = false;
            }
            if (!spec.contains("shape")) {
                error(field + ".shape", "missing (a list of axis names, or null for a scalar)");
                ok = false;
            } else if (spec["shape"].is_null()) {
                if (outputs) {
                    error(field + ".shape", "outputs must be tensors (a scalar output has no buffer to write)");
                    ok = false;
                }
            } else if (spec["shape"].is_array()) {
                std::vector<std::string> shape;
                for (std::size_t i = 0; i < spec["shape"].size(); ++i) {
                    const auto& dim = spec["shape"][i];
                    const std::string dimField = field + ".shape[" + std::to_string(i) + "]";
                    if (!dim.is_string()) {
                        error(dimField, "must be an axis name");
                        ok = false;
                    } else if (!m_def.axis(dim.get<std::string>())) {
                        error(dimField, "unknown axis '" + dim.get<std::string>() + "'");
                        ok = false;
                    } else {
                        shape.push_back(dim.get<std::string>());
                    }
                }
                tensor.shape = shape;
            } else {
                error(field + ".shape", "must be a list of axis names or null");
                ok = false;
            }
            if (spec.contains("description") && spec["description"].is_string())
                tensor.description = spec["description"].get<std::string>();
            if (ok)
                out.push_back(tensor);
        }
    }

    void checkNameClashes()
    {
        std::set<std::string> seen;
        auto claim = [&](const std::string& name, const std::string& field) {
            if (!seen.insert(name).second)
                error(field, "duplicate name '" + name + "': axes, inputs and outputs share the KsArgs namespace");
            for (const auto word : kReservedWords)
                if (word == name)
                    error(field, "'" + name + "' is a C/C++ keyword and cannot name a KsArgs field");
        };
        for (const auto& t : m_def.inputs)
            claim(t.name, "inputs." + t.name);
        for (const auto& t : m_def.outputs)
            claim(t.name, "outputs." + t.name);
        for (const auto& a : m_def.axes)
            if (!a.isConst)
                claim(a.name, "axes." + a.name);
    }

    // Names an expression may use: axes, and elements of integer input tensors.
    void checkExpressionNames(const std::string& text, const std::string& field, bool allowTensors)
    {
        auto result = evaluateExpression(
            text, [&](std::string_view name, std::optional<std::int64_t> index) -> std::optional<double> {
                const std::string n(name);
                if (!index && m_def.axis(n))
                    return 1.0;
                if (index && allowTensors)
                    if (const auto* t = m_def.input(n); t && !isFloating(t->dtype) && !t->isScalar())
                        return 1.0;
                return std::nullopt;
            });
        if (!result.value && result.error.find("division by zero") == std::string::npos)
            error(field, result.error);
    }

    void readConstraints()
    {
        if (!m_doc.contains("constraints"))
            return;
        const auto& list = m_doc["constraints"];
        if (!list.is_array()) {
            error("constraints", "must be an array of expressions");
            return;
        }
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string field = "constraints[" + std::to_string(i) + "]";
            if (!list[i].is_string()) {
                error(field, "must be a string");
                continue;
            }
            checkExpressionNames(list[i].get<std::string>(), field, true);
            m_def.constraints.push_back(list[i].get<std::string>());
        }
    }

    void readTolerance()
    {
        if (!m_doc.contains("tolerance"))
            return;
        const auto& tol = m_doc["tolerance"];
        if (!tol.is_object()) {
            error("tolerance", "must be an object with atol, rtol and required_matched_ratio");
            return;
        }
        auto number = [&](const char* key, double& target, double lo, double hi) {
            if (!tol.contains(key))
                return;
            if (!tol[key].is_number() || tol[key].get<double>() < lo || tol[key].get<double>() > hi)
                error(std::string("tolerance.") + key,
                    "must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
            else
                target = tol[key].get<double>();
        };
        number("atol", m_def.tolerance.atol, 0.0, 1e30);
        number("rtol", m_def.tolerance.rtol, 0.0, 1e30);
        number("required_matched_ratio", m_def.tolerance.requiredMatchedRatio, 0.0, 1.0);
        number("miss_rms_fraction", m_def.tolerance.missRmsFraction, 0.0, 1e30);
        if (m_def.tolerance.requiredMatchedRatio <= 0.0)
            error("tolerance.required_matched_ratio", "must be greater than 0");
    }

    void readPrecision()
    {
        if (!m_doc.contains("precision"))
            return;
        const auto& p = m_doc["precision"];
        if (!p.is_object()) {
            error("precision", "must be an object with rule (text) and tf32 (true or false)");
            return;
        }
        for (const auto& [key, value] : p.items()) {
            if (key == "rule" && value.is_string() && !value.get<std::string>().empty())
                m_def.precision.text = value.get<std::string>();
            else if (key == "tf32" && value.is_boolean())
                m_def.precision.tf32 = value.get<bool>();
            else if (key == "rule" || key == "tf32")
                error("precision." + key, key == "rule" ? "must be non-empty text" : "must be true or false");
            else
                error("precision." + key, "unknown field (rule and tf32 are known)");
        }
    }

    void readWorkspace()
    {
        if (!m_doc.contains("workspace_bytes"))
            return;
        const auto& ws = m_doc["workspace_bytes"];
        if (ws.is_number_integer() && ws.get<std::int64_t>() >= 0) {
            m_def.workspaceBytes = std::to_string(ws.get<std::int64_t>());
        } else if (ws.is_string()) {
            checkExpressionNames(ws.get<std::string>(), "workspace_bytes", true);
            m_def.workspaceBytes = ws.get<std::string>();
        } else {
            error("workspace_bytes", "must be a non-negative integer or an expression over the axes");
        }
    }

    void readHostCheck()
    {
        if (!m_doc.contains("host_check"))
            return;
        if (!m_doc["host_check"].is_string()) {
            error("host_check", "must be an expression over the axes (true for workloads reference.cpp can compute)");
            return;
        }
        checkExpressionNames(m_doc["host_check"].get<std::string>(), "host_check", true);
        m_def.hostCheck = m_doc["host_check"].get<std::string>();
    }

    // scored_workloads, held_out_workloads: non-empty lists of distinct uuids (checked against
    // workloads.jsonl by loadTask).
    void readWorkloadList(const char* key, std::vector<std::string>& ids)
    {
        if (!m_doc.contains(key))
            return;
        const auto& list = m_doc[key];
        if (!list.is_array() || list.empty()) {
            error(key, "must be a non-empty array of workload uuids");
            return;
        }
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string field = std::string(key) + "[" + std::to_string(i) + "]";
            if (!list[i].is_string() || list[i].get<std::string>().empty())
                error(field, "must be a workload uuid");
            else if (std::find(ids.begin(), ids.end(), list[i].get<std::string>()) != ids.end())
                error(field, "'" + list[i].get<std::string>() + "' is listed twice");
            else
                ids.push_back(list[i].get<std::string>());
        }
    }

    void readCostModel()
    {
        if (!m_doc.contains("cost_model"))
            return;
        const auto& cm = m_doc["cost_model"];
        if (!cm.is_object()) {
            error("cost_model", "must be an object with \"bytes\" and \"flops\" expressions");
            return;
        }
        CostModel model;
        for (const char* key : {"bytes", "flops"}) {
            const std::string field = std::string("cost_model.") + key;
            if (!cm.contains(key)) {
                error(field, "missing (an expression over the axes)");
                continue;
            }
            std::string text = cm[key].is_number() ? cm[key].dump()
                : cm[key].is_string()              ? cm[key].get<std::string>()
                                                   : "";
            if (text.empty()) {
                error(field, "must be a number or an expression over the axes");
                continue;
            }
            checkExpressionNames(text, field, true);
            (std::string_view(key) == "bytes" ? model.bytes : model.flops) = text;
        }
        m_def.costModel = model;
    }

    const Json& m_doc;
    std::string m_file;
    Diagnostics& m_diag;
    Definition m_def;
    int m_errors = 0;
};

} // namespace

bool isCIdentifier(const std::string& name)
{
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
        return false;
    for (const char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
            return false;
    return !(
        name.size() >= 2 && name[0] == '_' && (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1]))));
}

std::optional<Definition> parseDefinition(const nlohmann::ordered_json& doc, const std::string& file, Diagnostics& diag)
{
    return DefinitionReader(doc, file, diag).read();
}

} // namespace ks
