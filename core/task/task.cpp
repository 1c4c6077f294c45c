#include "task.h"

#include "definitionparser.h"
#include "strictjson.h"
#include "workloadparser.h"

#include <algorithm>

namespace ks {

namespace fs = std::filesystem;

const Workload* Task::workload(const std::string& uuidOrPrefix) const
{
    const Workload* found = nullptr;
    for (const auto& w : workloads) {
        if (w.uuid == uuidOrPrefix)
            return &w;
        if (w.uuid.rfind(uuidOrPrefix, 0) == 0) {
            if (found)
                return nullptr; // ambiguous prefix
            found = &w;
        }
    }
    return found;
}

TaskLoadResult loadTask(const fs::path& dir)
{
    TaskLoadResult result;
    Diagnostics& diag = result.diagnostics;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        diag.error(dir.string(), "", "not a task folder (a directory with definition.json is expected)");
        return result;
    }
    Task task;
    task.dir = dir;
    task.files.definition = dir / "definition.json";
    task.files.workloads = dir / "workloads.jsonl";
    const auto optionalFile = [&](const char* name) -> std::optional<fs::path> {
        const auto p = dir / name;
        return fs::is_regular_file(p, ec) ? std::optional<fs::path>(p) : std::nullopt;
    };
    task.files.referenceCpp = optionalFile("reference.cpp");
    task.files.referencePy = optionalFile("reference.py");
    task.files.referenceCu = optionalFile("reference.cu");
    task.files.baselineCu = optionalFile("baseline.cu");
    task.files.baselineCpp = optionalFile("baseline.cpp");

    const std::string defFile = task.files.definition.string();
    const auto defText = readTextFile(defFile);
    if (!defText) {
        diag.error(defFile, "", "missing or unreadable (every task needs definition.json)");
        return result;
    }
    std::string parseError;
    const auto defDoc = parseStrictJson(*defText, parseError);
    if (!defDoc) {
        diag.error(defFile, "", parseError);
        return result;
    }
    auto def = parseDefinition(*defDoc, defFile, diag);
    if (def && def->name != dir.filename().string() && dir.filename() != ".")
        diag.warning(
            defFile, "name", "'" + def->name + "' differs from the folder name '" + dir.filename().string() + "'");

    if (!task.files.referenceCpp && !task.files.referencePy)
        diag.error((dir / "reference.cpp").string(), "",
            "missing: a ground truth is required, reference.cpp (C++) or reference.py (a FlashInfer-Bench run "
            "function)");
    if (!task.files.baselineCu && !task.files.baselineCpp)
        diag.warning(dir.string(), "", "no baseline.cu or baseline.cpp: scores will be relative to the reference");

    const std::string wlFile = task.files.workloads.string();
    const auto wlText = readTextFile(wlFile);
    if (!wlText)
        diag.error(wlFile, "", "missing or unreadable (every task needs workloads.jsonl)");
    if (!def || !wlText)
        return result;
    task.workloads = parseWorkloads(*wlText, *def, wlFile, diag);
    for (const auto& [key, ids] : {std::pair {"scored_workloads", &def->scoredWorkloads},
             std::pair {"held_out_workloads", &def->heldOutWorkloads}})
        for (std::size_t i = 0; i < ids->size(); ++i) {
            const std::string& id = (*ids)[i];
            if (std::none_of(
                    task.workloads.begin(), task.workloads.end(), [&](const Workload& w) { return w.uuid == id; }))
                diag.error(defFile, std::string(key) + "[" + std::to_string(i) + "]",
                    "'" + id + "' is not the uuid of a workload in " + wlFile);
        }
    if (!def->heldOutWorkloads.empty() && def->heldOutWorkloads.size() >= task.workloads.size())
        diag.error(defFile, "held_out_workloads", "holds out every workload: the code policy would be shown none");
    task.definition = std::move(*def);
    if (!diag.hasErrors())
        result.task = std::move(task);
    return result;
}

} // namespace ks
