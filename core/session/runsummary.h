#pragma once

#include <search/searchstate.h>
#include <util/numberformat.h> // how its figures read

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// The figures a finished (or interrupted) run is judged by, from its state alone.
struct RunSummary {
    std::string finishedReason;
    int evaluations = 0;
    int budget = 0;
    std::optional<int> best; // attempt index
    double bestScore = 0.0;
    std::map<std::string, int> verdicts; // by status name; "NO_PROGRAM" for answers without code
    std::map<std::string, RoleUsage> usage; // by role
    RoleUsage totalUsage;
    double llmSeconds = 0.0, compileSeconds = 0.0, evaluatorSeconds = 0.0, timedSeconds = 0.0;
    double elapsedSeconds = 0.0;
    int nodes = 0, openNodes = 0, closedNodes = 0, prunedNodes = 0;
    // Best J after each evaluation (index i: after evaluation i + 1).
    std::vector<double> bestSoFar;
};

RunSummary summarize(const SearchState& state);

} // namespace ks
