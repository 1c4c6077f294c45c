#pragma once

#include "searchstate.h"

#include <optional>
#include <string>
#include <vector>

namespace ks {

// What the engine does next. Decided from the state alone, so a resumed run takes exactly the
// step it would have taken.
struct Step {
    enum class Kind {
        Idle, // paused, or finished
        Finish, // stop the run (reason)
        SeedCandidate, // put the seed program up for evaluation
        Evaluate, // evaluate the pending candidate
        PlannerCall, // ask the world model (purpose, node)
        StartAction, // begin implementing `node`
        CoderCall, // ask the code policy for the next attempt (purpose = action | debug | improve | evolve | greedy)
        FinishAction, // close the action on `node`
        ProposeNode, // evolve / greedy: insert the next node to implement (parent, intent, island)
        FallbackNode, // the frontier is empty and the world model could not fill it: a generic intent
    };
    Kind kind = Kind::Idle;
    std::string node;
    std::string purpose;
    std::string reason;
    // ProposeNode / FallbackNode
    std::string parent;
    std::string intent;
    double priority = 0.5;
    int island = -1;
};

Step planNextStep(const SearchState& state);

// The program an action on `node` starts from (the parent's best; with a flat frontier, the best
// of the whole search); nullopt: from the task alone.
std::optional<int> startingAttempt(const SearchState& state, const std::string& node);

// evolve: programs shown beside the parent as inspirations (the best others, at most `count`).
std::vector<int> inspirations(const SearchState& state, std::optional<int> parent, int count);

// The coder prompt of the next attempt of the action in progress.
std::string coderPromptKind(const SearchState& state);

} // namespace ks
