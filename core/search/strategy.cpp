#include "strategy.h"

#include <util/numberformat.h>

#include <algorithm>
#include <random>

namespace ks {

namespace {

const SearchNode* selectByValue(const SearchState& s)
{
    if (!s.pinned.empty())
        for (const SearchNode* n : s.tree.frontier(s.settings.flat))
            if (n->id == s.pinned)
                return n;
    const SearchNode* best = nullptr;
    for (const SearchNode* n : s.tree.frontier(s.settings.flat))
        if (!best || n->value() > best->value()) // ties: the earlier node (creation order)
            best = n;
    return best;
}

// evolve: the parent for the k-th proposal, by island. Deterministic in the state and the seed.
std::optional<int> evolveParent(const SearchState& s, int island, int k)
{
    std::vector<int> archive;
    for (const Attempt& a : s.tree.attempts()) {
        const auto it = s.islandOf.find(a.node);
        if (a.passed() && it != s.islandOf.end() && it->second == island)
            archive.push_back(a.index);
    }
    const auto best = s.tree.bestAttempt();
    const bool migrate =
        s.settings.migrationInterval > 0 && k > 0 && (k / s.settings.islands) % s.settings.migrationInterval == 0;
    if (archive.empty() || migrate)
        return best ? best : s.tree.root().bestAttempt;
    std::mt19937_64 rng(s.settings.randomSeed * 1000003ULL + static_cast<std::uint64_t>(k));
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (coin(rng) < 0.7) // exploit the island's best, else explore its archive
        return *std::max_element(archive.begin(), archive.end(),
            [&](int a, int b) { return s.tree.attempt(a)->score() < s.tree.attempt(b)->score(); });
    std::uniform_int_distribution<std::size_t> pick(0, archive.size() - 1);
    return archive[pick(rng)];
}

Step propose(const SearchState& s)
{
    // Proposals made while other lanes' programs are in progress count those programs, so that
    // concurrent proposals go to different islands (serially, this is the evaluation count).
    const int k = s.evaluations + static_cast<int>(s.actions.size());
    Step step;
    step.kind = Step::Kind::ProposeNode;
    std::optional<int> parent;
    if (s.settings.strategy == StrategyKind::Greedy) {
        parent = s.tree.bestAttempt();
        if (!parent)
            parent = s.tree.root().bestAttempt;
        step.intent = parent ? "Greedy: improve the best program so far (" + s.tree.attempt(*parent)->node + ", J "
                + formatScore(s.tree.attempt(*parent)->score()) + ")"
                             : std::string("Greedy: write a first correct, fast implementation");
    } else {
        step.island = k % s.settings.islands;
        parent = evolveParent(s, step.island, k);
        std::string inspired;
        for (int i : inspirations(s, parent, s.settings.inspirations))
            inspired += (inspired.empty() ? " with inspiration from " : ", ") + s.tree.attempt(i)->node;
        step.intent = "Evolve (island " + std::to_string(step.island) + "): "
            + (parent ? "mutate " + s.tree.attempt(*parent)->node + " (J "
                        + formatScore(s.tree.attempt(*parent)->score()) + ")"
                      : std::string("write a first implementation"))
            + inspired;
    }
    step.parent = parent ? s.tree.attempt(*parent)->node : std::string(SearchTree::kRootId);
    return step;
}

} // namespace

std::optional<int> startingAttempt(const SearchState& s, const std::string& node)
{
    if (s.settings.flat) {
        const auto best = s.tree.bestAttempt();
        return best ? best : s.tree.root().bestAttempt;
    }
    return s.tree.startingAttempt(node);
}

std::vector<int> inspirations(const SearchState& s, std::optional<int> parent, int count)
{
    std::vector<int> passed;
    for (const Attempt& a : s.tree.attempts())
        if (a.passed() && (!parent || (a.index != *parent && a.program != s.tree.attempt(*parent)->program)))
            passed.push_back(a.index);
    std::stable_sort(passed.begin(), passed.end(),
        [&](int a, int b) { return s.tree.attempt(a)->score() > s.tree.attempt(b)->score(); });
    std::vector<int> out;
    for (int i : passed) {
        const bool duplicate = std::any_of(
            out.begin(), out.end(), [&](int o) { return s.tree.attempt(o)->program == s.tree.attempt(i)->program; });
        if (!duplicate && static_cast<int>(out.size()) < count)
            out.push_back(i);
    }
    return out;
}

Purpose coderPromptKind(const SearchState& s, const std::string& node)
{
    switch (s.settings.strategy) {
    case StrategyKind::Evolve:
        return Purpose::Evolve;
    case StrategyKind::Greedy:
        return Purpose::Greedy;
    case StrategyKind::KSearch:
        break;
    }
    const ActionState* a = s.actionOn(node);
    if (!a || a->attempts == 0)
        return Purpose::Action;
    return a->best ? Purpose::Improve : Purpose::Debug;
}

Step planNextStep(const SearchState& s, const InFlight& f)
{
    Step step;
    const auto waiting = [&](const PendingCandidate& c) { return !f.evaluating.contains(c.node); };
    // A program a person asked to evaluate runs even while the search is paused: they are steering.
    const bool personWaits = std::any_of(s.candidates.begin(), s.candidates.end(),
        [&](const PendingCandidate& c) { return c.author == Author::Human && waiting(c); });
    if (!s.finishedReason.empty() || (s.paused && !personWaits))
        return step;
    if (f.idleEvaluators > 0)
        for (const PendingCandidate& c : s.candidates)
            if (waiting(c) && (!s.paused || c.author == Author::Human)) {
                step.kind = Step::Kind::Evaluate;
                step.node = c.node;
                return step;
            }
    if (s.paused)
        return step;
    if (s.seedPending && !s.budgetExhausted()) {
        if (!s.candidateOf(SearchTree::kRootId)) {
            step.kind = Step::Kind::SeedCandidate;
            step.node = SearchTree::kRootId;
        }
        return step; // everything else starts from the seed's result
    }
    const bool worldModel = s.settings.strategy == StrategyKind::KSearch;
    if (s.planner && worldModel && !f.planner) {
        step.kind = Step::Kind::PlannerCall;
        step.purpose = s.planner->purpose;
        step.node = s.planner->node;
        return step;
    }
    const bool targetReached = s.settings.targetScore > 0 && s.bestScore() >= s.settings.targetScore;
    if (targetReached && s.actions.empty()) {
        if (!f.any()) {
            step.kind = Step::Kind::Finish;
            step.stop = StopReason::targetReached(formatScore(s.settings.targetScore));
        }
        return step;
    }
    const int committed = s.evaluations + static_cast<int>(s.candidates.size()) + static_cast<int>(f.coding.size());
    for (const ActionState& a : s.actions) {
        if (f.coding.contains(a.node) || s.candidateOf(a.node))
            continue; // its attempt is being written or evaluated
        // evolve and greedy: one program per node, whatever it scored
        const bool done = worldModel ? a.stagnation >= s.settings.stagnation : a.attempts >= 1;
        if (done || s.budgetExhausted() || s.answersWithoutProgram >= s.settings.maxAnswersWithoutProgram
            || targetReached) {
            step.kind = Step::Kind::FinishAction;
            step.node = a.node;
            return step;
        }
        if (committed < s.settings.budget) {
            step.kind = Step::Kind::CoderCall;
            step.node = a.node;
            step.purpose = coderPromptKind(s, a.node);
            return step;
        }
    }
    const bool quiet = s.actions.empty() && !f.any(); // nothing in progress anywhere
    if (s.answersWithoutProgram >= s.settings.maxAnswersWithoutProgram) {
        if (quiet) {
            step.kind = Step::Kind::Finish;
            step.stop = StopReason::noProgram(s.answersWithoutProgram);
        }
        return step;
    }
    if (committed >= s.settings.budget) {
        if (quiet) {
            step.kind = Step::Kind::Finish;
            step.stop = StopReason::budgetUsed(s.settings.budget);
        }
        return step;
    }
    if (static_cast<int>(s.actions.size()) >= f.lanes || f.planner)
        return step; // every lane is busy, or the world model is about to change the frontier
    if (worldModel && !s.initialized) {
        step.kind = Step::Kind::PlannerCall;
        step.purpose = Purpose::Init;
        return step;
    }
    if (const SearchNode* next = selectByValue(s)) {
        step.kind = Step::Kind::StartAction;
        step.node = next->id;
        step.reason = next->id == s.pinned ? "pinned by a person"
            : worldModel                   ? "highest V on the frontier (" + formatFixed(next->value() * 100, 1) + "%)"
                                           : "proposed by " + std::string(strategyName(s.settings.strategy));
        return step;
    }
    if (!worldModel)
        return propose(s);
    if (!s.fillTried) {
        step.kind = Step::Kind::PlannerCall;
        step.purpose = Purpose::Fill;
        return step;
    }
    if (!quiet)
        return step; // the actions in progress may open new intents
    step.kind = Step::Kind::FallbackNode;
    const auto best = s.tree.bestAttempt();
    step.parent = best ? s.tree.attempt(*best)->node : std::string(SearchTree::kRootId);
    step.intent = best ? "Refine the best program so far: profile its slowest workloads and remove the main bottleneck"
                       : "Write a straightforward, correct implementation first; optimise later";
    step.priority = 0.5;
    step.reason = "the frontier is empty and the world model added nothing";
    return step;
}

} // namespace ks
