#pragma once

#include <task/task.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace ks {

// The task's workloads as FlashInfer-Bench reads them, for an export's dataset folder `root`.
// FlashInfer-Bench knows random, scalar and safetensors inputs; an input of a kind it does not
// know (constant, arange, indptr, unique_indices) is generated once, with kFibExportSeed, and
// written to root/blob/workloads/<op_type>/<definition>/<uuid>.safetensors under its own name,
// the input then naming that file (its path relative to root, as in a dataset). Random inputs
// stay random: FlashInfer-Bench draws them its own way and ignores this project's distribution
// fields. Returns each workload's JSON by uuid; nullopt with `error` when a blob cannot be made.
inline constexpr std::uint64_t kFibExportSeed = 1;
std::optional<std::map<std::string, nlohmann::json>> fibWorkloads(
    const Task& task, const std::filesystem::path& root, std::string& error);

} // namespace ks
