#pragma once

#include "definition.h"
#include "diagnostics.h"
#include "workload.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks {

struct TaskFiles {
    std::filesystem::path definition;
    std::filesystem::path workloads;
    // Ground truth: reference.cpp (plain C++, run on the host), or, when the task has none,
    // reference.py (a FlashInfer-Bench `run`, run in the Python runner). At least one is required.
    std::optional<std::filesystem::path> referenceCpp;
    std::optional<std::filesystem::path> referencePy;
    std::optional<std::filesystem::path> referenceCu; // GPU reference for large workloads
    std::optional<std::filesystem::path> baselineCu; // p_ref on the CUDA backend
    std::optional<std::filesystem::path> baselineCpp; // p_ref on the host backend
};

// A validated task folder: tasks/<name>/{definition.json, workloads.jsonl, reference.cpp, ...}.
struct Task {
    std::filesystem::path dir;
    Definition definition;
    std::vector<Workload> workloads;
    TaskFiles files;

    const Workload* workload(const std::string& uuidOrPrefix) const; // unique prefix match
};

struct TaskLoadResult {
    std::optional<Task> task; // set only when there were no errors
    Diagnostics diagnostics; // errors and warnings, each naming the file and field
};

TaskLoadResult loadTask(const std::filesystem::path& dir);

} // namespace ks
