#pragma once

// `ksearch tasks import`: a FlashInfer-Bench definition (with its PyTorch reference) and its
// workloads become a task folder: definition.json in ksearch's format, reference.py, and
// workloads.jsonl with every safetensors input copied in, so the folder stands alone.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks {

struct FibImportOptions {
    std::filesystem::path definition; // a FlashInfer-Bench Definition (JSON)
    std::optional<std::filesystem::path> workloads; // its workloads (JSON lines); required
    // The dataset root that safetensors paths are relative to; unset: the nearest folder above
    // the workloads file that holds them.
    std::optional<std::filesystem::path> blobs;
    std::filesystem::path out; // the task folder to create; must not exist or be empty
};

struct FibImportResult {
    std::vector<std::string> errors; // each names the file and the field or line
    std::vector<std::string> notes; // choices made for the user to know (tolerance, workspace)
    [[nodiscard]] bool ok() const { return errors.empty(); }
};

FibImportResult importFibTask(const FibImportOptions& options);

} // namespace ks
