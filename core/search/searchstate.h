#pragma once

#include "humancommand.h"
#include "journalevent.h"
#include "searchsettings.h"

#include <llm/usageledger.h>
#include <tree/searchtree.h>

#include <nlohmann/json.hpp>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ks {

// An action in progress: one intent being implemented until K attempts bring no improvement.
struct ActionState {
    std::string node;
    int attempts = 0;
    int stagnation = 0; // attempts in a row without an improvement
    std::optional<int> best; // the best passed attempt so far
};

// A program written and stored, not evaluated yet (an evaluator takes it as soon as one is free,
// also after a crash: it was journaled before the evaluator ran).
struct PendingCandidate {
    std::string node;
    std::string program;
    std::string exchange;
    Purpose prompt = Purpose::Action;
    Author author = Author::CodePolicy;
};

// A world-model call the search waits for.
struct PlannerTask {
    Purpose purpose = Purpose::Init; // Init, Update, TooHard or Fill
    std::string node; // the node acted on (update, too_hard)
    bool repair = false; // a second chance after a malformed or refused answer
    std::vector<std::string> errors; // what was wrong with the first answer
    std::string previousAnswer;
};

// Everything a search knows, rebuilt from its journal by apply(): the engine, resume, the window
// and the replay slider all hold a SearchState and feed it the same events, so what they show is
// what was recorded. Events are JSON objects ({"seq", "type", "elapsed_s", ...}).
class SearchState
{
public:
    SearchTree tree;
    SearchSettings settings;
    int seq = 0; // the last event applied
    int evaluations = 0; // evaluator calls spent
    double elapsedSeconds = 0.0; // running time, all sessions of the run together
    // Actions in progress, in the order they started: one at a time in a serial search, up to P
    // with P lanes (strategy.h); each node has at most one.
    std::vector<ActionState> actions;
    // Journaled programs not evaluated yet, in the order they were written; at most one per node.
    std::vector<PendingCandidate> candidates;
    std::optional<PlannerTask> planner; // the world-model call due now
    std::deque<PlannerTask> plannerQueue; // due after it (several actions ended meanwhile)
    bool initialized = false; // the world model proposed its first intents
    bool fillTried = false; // asked to refill an empty frontier since the last action started
    std::string seedProgram; // program hash of the seed, if the run has one
    bool seedPending = false;
    std::string pinned; // a human's choice for the next action
    bool paused = false;
    std::string finishedReason; // empty while the run goes on
    int answersWithoutProgram = 0;
    int exchangeCount = 0;
    // An answer journaled whose consequence (an edit, a refusal, a candidate) is not: the process
    // died in between. A resumed run uses it instead of asking again.
    std::string unconsumedExchange;
    std::map<std::string, RoleUsage> usage; // by role
    std::map<std::string, int> islandOf; // evolve: the island of each node it proposed
    std::unordered_map<std::string, std::shared_ptr<const nlohmann::json>> exchanges; // by id

    // The reducer. Events come from the engine, which validated them; an event that does not fit
    // the state (a corrupt journal) throws std::runtime_error naming its seq.
    void apply(const JournalEvent& event);
    void apply(const nlohmann::json& event); // a journal line: parsed, then applied; throws if unreadable

    bool budgetExhausted() const { return evaluations >= settings.budget; }
    const ActionState* actionOn(const std::string& node) const;
    ActionState* actionOn(const std::string& node);
    const PendingCandidate* candidateOf(const std::string& node) const;
    std::optional<int> bestAttempt() const { return tree.bestAttempt(); }
    double bestScore() const;

    // Checkpoint form: everything but the exchanges (those stay in the journal).
    nlohmann::json toJson() const;
    static std::optional<SearchState> fromJson(const nlohmann::json& j, std::string& error);

private:
    void applyEvaluation(const ev::Evaluation& e);
    void nextPlannerTask(); // the current planner task was answered: the next queued one is due
    void applyCommand(const HumanCommand& c);
};

} // namespace ks
