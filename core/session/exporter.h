#pragma once

#include "session.h"

#include <task/task.h>

#include <filesystem>
#include <string>
#include <vector>

namespace ks {

struct ExportResult {
    std::vector<std::filesystem::path> files;
    std::string error; // empty on success
    std::vector<std::string> warnings; // what was left out and why (the files written are still good)
};

// Writes what a search produced into `outDir`: the best kernel (best_kernel.cu or .cpp, with a
// header saying where it came from), report.md (summary, per-workload table, verdicts, LLM use,
// time, the path of intents that led to the best kernel, the whole tree), tree.json and tree.svg
// (the tree as it is in `state`), and FlashInfer-Bench's formats: solution.json (the best kernel
// as a Solution with its generated torch binding), and under flashinfer-bench/ the dataset's
// solutions/ (every evaluated program), workloads/, traces/ (a Trace line per evaluation and
// workload) and, where the task has a PyTorch reference.py, definitions/. `task` may be null when the task
// folder is gone: the report then names workloads by uuid only, and the FlashInfer-Bench files
// (which need the definition) are left out with a warning.
ExportResult exportSession(
    const Session& session, const SearchState& state, const Task* task, const std::filesystem::path& outDir);

// The markdown report alone.
std::string renderReport(const Session& session, const SearchState& state, const Task* task);

} // namespace ks
