#pragma once

// FlashInfer-Bench's formats out of a session: a Solution that FlashInfer-Bench can build and run
// (the candidate, the task's ks_task.h, and a generated torch binding, main.cpp::run, that wraps
// tensors into KsArgs), and Trace lines, one per (evaluation, workload) of the search.

#include <search/searchstate.h>
#include <task/language.h>
#include <task/task.h>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// main.cpp: `run(inputs..., outputs...)` in FlashInfer-Bench's destination-passing order (the
// definition's inputs, then its outputs), reading each var axis from the first tensor whose shape
// names it, evaluating workspace_bytes, and calling ks_run on PyTorch's current stream. Nullopt
// with `error` set when the definition cannot be bound (an axis no tensor carries, a workspace
// expression that is not plain arithmetic).
std::optional<std::string> torchBinding(const Definition& def, bool cuda, std::string& error);

struct FibSolutionInput {
    std::string name;
    std::string description;
    std::string source; // the candidate: kernel.cu, kernel.cpp, or main.py for triton and python
    bool cuda = true;
    std::string device; // target_hardware; empty: unknown
    Language language = Language::Cuda;
};

// Whether a Python candidate's run(...) takes the outputs (destination-passing) or returns them,
// read from its signature as the Python runner decides it: as many parameters as the definition
// has inputs means returning; anything else is taken as destination-passing.
bool pythonRunTakesOutputs(const Definition& def, const std::string& source);

// A Solution document; nullopt with `error` set when torchBinding fails. Triton and python
// candidates are their own entry point (main.py::run) and need no binding.
std::optional<nlohmann::json> fibSolution(const Definition& def, const FibSolutionInput& in, std::string& error);

// The solution name ksearch gives the program with content hash `program` on `taskName`.
std::string fibSolutionName(const std::string& taskName, const std::string& program);

// The Solutions' author, also a folder of a FlashInfer-Bench dataset (solutions/<author>/...):
// a plain word.
inline constexpr const char* kFibAuthor = "k-search-studio";

// Trace lines for every evaluated attempt and every workload it ran on, in attempt order.
// FlashInfer-Bench has no REJECTED: ksearch's rejections (cheats, impossible timings) are written
// as RUNTIME_ERROR with the reason in the log. reference_latency_ms is ksearch's baseline (the
// task's baseline.cu), not the PyTorch reference FlashInfer-Bench times; the log says so.
// `workloads`, when given, are the workloads as FlashInfer-Bench reads them (fibWorkloads), by
// uuid; otherwise each trace carries the workload as workloads.jsonl has it.
std::vector<nlohmann::json> fibTraces(const SearchState& state, const Task* task, const std::string& taskName,
    const std::string& timestamp, const std::map<std::string, nlohmann::json>* workloads = nullptr);

} // namespace ks
