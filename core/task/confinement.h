#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// How a candidate's process was confined while it ran, as its runner reported it
// (docs/security.md, "Confinement"). Kept with each evaluation, so a session shows afterwards
// which of its verdicts came from a process that could reach the network or the user's files.
struct Confinement {
    bool off = false; // a person turned confinement off in the settings (to debug a candidate)
    bool network = false; // a network namespace of its own: no connection leaves it
    bool processes = false; // what it forks lives in a PID namespace that ends with the runner
    bool filesystem = false; // read-only system, homes hidden, a private /tmp, its folder writable
    // Limits set before it was loaded; 0: none.
    std::uint64_t fileLimitBytes = 0;
    std::uint64_t memoryLimitBytes = 0;
    std::uint64_t processLimit = 0;
    // A GPU runner's budget for the candidate's own device allocations (0: none); nullopt for a
    // runner without a GPU (the host backend), where there is nothing to budget.
    std::optional<std::uint64_t> gpuMemoryBudgetBytes;
    // Whether the compiler that built it had all of the above but the limits' figures (its own
    // namespaces and filesystem: gpu/runner/confinedcompile.h); nullopt where nothing was compiled
    // (Python candidates) or the record predates compilers' confinement.
    std::optional<bool> compilerConfined;

    bool operator==(const Confinement&) const = default;
};

// What the candidate's process lacked, one short phrase each ("no network namespace", ...), in a
// fixed order; a single "confinement turned off in the settings" when a person turned it off;
// empty when it had everything.
std::vector<std::string> confinementGaps(const Confinement& c);
// The gaps among the namespaces and the filesystem alone, in the same words and order: what a
// confined compiler reports (gpu/runner/confinedcompile.h) has no limits to name.
std::vector<std::string> isolationGaps(bool network, bool processes, bool filesystem);

nlohmann::json toJson(const Confinement& c);
// nullopt when `j` is not an object (evaluations written before confinement was recorded).
std::optional<Confinement> confinementFromJson(const nlohmann::json& j);

} // namespace ks
