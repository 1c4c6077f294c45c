#pragma once

#include "searchstate.h"
#include "stopreason.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ks {

// What the engine does next. Decided from the state and the work in flight alone, so a resumed
// run takes exactly the step it would have taken, and a parallel run takes the same steps whenever
// its LLM answers and evaluations complete in the same order.
struct Step {
    enum class Kind {
        Idle, // paused, finished, or waiting for work in flight
        Finish, // stop the run (stop)
        SeedCandidate, // put the seed program up for evaluation
        Evaluate, // give the candidate of `node` to an idle evaluator
        PlannerCall, // ask the world model (purpose, node)
        StartAction, // begin implementing `node`
        CoderCall, // ask the code policy for the next attempt (purpose: Action, Debug, Improve, Evolve, Greedy)
        FinishAction, // close the action on `node`
        ProposeNode, // evolve / greedy: insert the next node to implement (parent, intent, island)
        FallbackNode, // the frontier is empty and the world model could not fill it: a generic intent
    };
    Kind kind = Kind::Idle;
    std::string node;
    Purpose purpose = Purpose::Init; // PlannerCall, CoderCall
    std::optional<StopReason> stop; // Finish
    std::string reason; // StartAction (why this node), ProposeNode, FallbackNode
    // ProposeNode / FallbackNode
    std::string parent;
    std::string intent;
    double priority = 0.5;
    int island = -1;
};

// Work the engine has started and not yet recorded. Each lane is one action (an intent being
// implemented); LLM calls and evaluations of different lanes overlap. The defaults describe a
// serial search with nothing in flight: one lane, one evaluator.
struct InFlight {
    // Actions that may be in progress at once (P). More lanes than evaluators keep the code policy
    // writing while every evaluator is busy.
    int lanes = 1;
    int idleEvaluators = 1; // evaluators free to take a candidate now
    bool planner = false; // a world-model call is out: no new action starts until its edit lands
    std::set<std::string> coding; // nodes whose code-policy call is out
    std::set<std::string> evaluating; // nodes whose candidate an evaluator has
    [[nodiscard]] bool any() const { return planner || !coding.empty() || !evaluating.empty(); }
};

// Never starts work twice, and never more than the budget: a candidate is committed from the
// moment its code-policy call goes out (evaluations + pending candidates + calls out <= B).
// A run finishes only when nothing is in flight, so every evaluation spent is recorded.
Step planNextStep(const SearchState& state, const InFlight& inFlight = {});

// The program an action on `node` starts from (the parent's best; with a flat frontier, the best
// of the whole search); nullopt: from the task alone.
std::optional<int> startingAttempt(const SearchState& state, const std::string& node);

// evolve: programs shown beside the parent as inspirations (the best others, at most `count`).
std::vector<int> inspirations(const SearchState& state, std::optional<int> parent, int count);

// The coder prompt of the next attempt of the action on `node`.
Purpose coderPromptKind(const SearchState& state, const std::string& node);

} // namespace ks
