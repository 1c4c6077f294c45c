#include "fibimport.h"

#include "dtype.h"
#include "strictjson.h"
#include "task.h"

#include <fstream>
#include <set>

namespace ks {

namespace fs = std::filesystem;

namespace {

using Json = nlohmann::ordered_json;

// The fields of a FlashInfer-Bench Definition that the task format carries over.
const std::set<std::string> kKnownFields {
    "name", "op_type", "axes", "inputs", "outputs", "reference", "tags", "description", "constraints"};

// A string member, or empty. (value() with a default, and find(), trip GCC's null-dereference
// analysis when optimising.)
std::string stringMember(const Json& j, const char* key)
{
    if (!j.is_object() || !j.contains(key))
        return {};
    const Json& v = j.at(key);
    return v.is_string() ? v.get<std::string>() : std::string();
}

bool writeText(const fs::path& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    return static_cast<bool>(out.flush());
}

// FlashInfer-Bench's tolerance (its evaluators' defaults): 1e-2 on both, every element; the
// low-bit evaluator it applies to FP8 block-scale MoE asks for 95 % of the elements.
Json tolerance(const std::string& name)
{
    const bool lowBit = name.find("moe_fp8_block_scale") != std::string::npos;
    return Json {{"atol", 0.01}, {"rtol", 0.01}, {"required_matched_ratio", lowBit ? 0.95 : 1.0}};
}

class Importer
{
public:
    Importer(const FibImportOptions& o, FibImportResult& r)
        : m_opt(o)
        , m_result(r)
    {
    }

    void run()
    {
        const std::string defFile = m_opt.definition.string();
        const auto text = readTextFile(defFile);
        if (!text)
            return error(defFile, "cannot read the definition");
        std::string why;
        const auto doc = parseStrictJson(*text, why);
        if (!doc || !doc->is_object())
            return error(defFile, why.empty() ? "not a JSON object" : why);
        for (const auto& [key, value] : doc->items())
            if (!kKnownFields.contains(key))
                error(defFile + ": " + key,
                    "not supported by ksearch's task format (a FlashInfer-Bench Definition has "
                    "name, op_type, axes, inputs, outputs, reference, tags, description, "
                    "constraints)");
        if (!doc->contains("name") || !(*doc)["name"].is_string())
            error(defFile + ": name", "missing");
        if (!doc->contains("reference") || !(*doc)["reference"].is_string()
            || (*doc)["reference"].get<std::string>().find("def run") == std::string::npos)
            error(defFile + ": reference",
                "missing, or without a run function: the PyTorch reference is the task's "
                "ground truth");
        for (const char* list : {"inputs", "outputs"})
            if (doc->contains(list) && (*doc)[list].is_object())
                for (const auto& [name, spec] : (*doc)[list].items()) {
                    const std::string dtype = stringMember(spec, "dtype");
                    if (!parseDType(dtype))
                        error(defFile + ": " + list + "." + name + ".dtype",
                            "'" + dtype + "' is not supported (one of " + dtypeNameList() + ")");
                }
        if (!m_opt.workloads)
            error(defFile, "no workloads: a task needs them, give --workloads FILE.jsonl");
        if (!m_result.ok())
            return;
        m_name = (*doc)["name"].get<std::string>();
        std::error_code ec;
        if (fs::exists(m_opt.out, ec) && !fs::is_empty(m_opt.out, ec))
            return error(m_opt.out.string(), "exists and is not empty: choose another --out");
        fs::create_directories(m_opt.out, ec);
        if (ec)
            return error(m_opt.out.string(), "cannot create: " + ec.message());

        Json def;
        for (const auto& [key, value] : doc->items())
            if (key != "reference")
                def[key] = value;
        def["tolerance"] = tolerance(m_name);
        note("tolerance: atol 1e-2, rtol 1e-2, "
            + std::string(def["tolerance"]["required_matched_ratio"] == 1.0
                    ? "every element (FlashInfer-Bench's default)"
                    : "95 % of the elements (FlashInfer-Bench's "
                      "low-bit MoE rule)"));
        note("workspace_bytes: 0 and no cost model (edit definition.json to offer scratch memory and to let "
             "ksearch compute roofline floors)");
        std::string reference = (*doc)["reference"].get<std::string>();
        if (reference.empty() || reference.back() != '\n')
            reference += '\n';
        if (!writeText(m_opt.out / "definition.json", def.dump(2) + "\n")
            || !writeText(m_opt.out / "reference.py", reference))
            return error(m_opt.out.string(), "cannot write the task's files");
        importWorkloads();
        if (!m_result.ok())
            return;
        const TaskLoadResult loaded = loadTask(m_opt.out);
        for (const auto& issue : loaded.diagnostics.errors())
            m_result.errors.push_back(issue.format());
    }

private:
    void error(const std::string& where, const std::string& what) { m_result.errors.push_back(where + ": " + what); }
    void note(const std::string& what) { m_result.notes.push_back(what); }

    // The dataset root for a safetensors path: --blobs, or the nearest folder above the workloads
    // file under which the path exists.
    std::optional<fs::path> findBlob(const fs::path& relative)
    {
        std::error_code ec;
        if (m_opt.blobs)
            return fs::exists(*m_opt.blobs / relative, ec) ? std::optional(*m_opt.blobs / relative) : std::nullopt;
        for (fs::path dir = fs::absolute(*m_opt.workloads).parent_path();; dir = dir.parent_path()) {
            if (fs::exists(dir / relative, ec))
                return dir / relative;
            if (dir == dir.parent_path())
                return std::nullopt;
        }
    }

    void importWorkloads()
    {
        const std::string file = m_opt.workloads->string();
        std::ifstream in(*m_opt.workloads);
        if (!in)
            return error(file, "cannot read the workloads");
        std::string line;
        std::string lines;
        int number = 0;
        while (std::getline(in, line)) {
            ++number;
            if (line.find_first_not_of(" \t\r") == std::string::npos)
                continue;
            const std::string where = file + ":" + std::to_string(number);
            std::string why;
            auto doc = parseStrictJson(line, why);
            if (!doc || !doc->is_object() || !doc->contains("workload") || !(*doc)["workload"].is_object()) {
                error(where, doc ? "not a workload line (an object with \"workload\")" : why);
                continue;
            }
            if (doc->contains("definition") && (*doc)["definition"] != m_name) {
                error(where + ": definition", "'" + (*doc)["definition"].dump() + "' is not " + m_name);
                continue;
            }
            Json workload = (*doc)["workload"];
            if (workload.contains("inputs") && workload["inputs"].is_object())
                for (auto& [name, input] : workload["inputs"].items())
                    if (stringMember(input, "type") == "safetensors")
                        copyBlob(input, where + ": workload.inputs." + name + ".path");
            lines += Json {{"definition", m_name}, {"workload", workload}}.dump() + "\n";
        }
        if (lines.empty())
            error(file, "no workloads in the file");
        else if (!writeText(m_opt.out / "workloads.jsonl", lines))
            error((m_opt.out / "workloads.jsonl").string(), "cannot write");
    }

    // Copies a safetensors file into the task folder at the same relative path, once.
    void copyBlob(Json& input, const std::string& where)
    {
        if (!input.contains("path") || !input["path"].is_string())
            return error(where, "missing");
        const fs::path relative = fs::path(input["path"].get<std::string>()).lexically_normal();
        if (relative.is_absolute() || relative.string().rfind("..", 0) == 0)
            return error(where, "'" + relative.string() + "' must be relative to the dataset root");
        const auto source = findBlob(relative);
        if (!source)
            return error(where,
                "'" + relative.string() + "' not found "
                    + (m_opt.blobs ? "under " + m_opt.blobs->string() : "above the workloads file")
                    + ": give the dataset root with --blobs DIR");
        std::error_code ec;
        const fs::path target = m_opt.out / relative;
        if (!fs::exists(target, ec)) {
            fs::create_directories(target.parent_path(), ec);
            fs::copy_file(*source, target, ec);
            if (ec)
                return error(where, "cannot copy " + source->string() + ": " + ec.message());
        }
        input["path"] = relative.generic_string();
    }

    const FibImportOptions& m_opt;
    FibImportResult& m_result;
    std::string m_name;
};

} // namespace

FibImportResult importFibTask(const FibImportOptions& options)
{
    FibImportResult result;
    Importer(options, result).run();
    return result;
}

} // namespace ks
