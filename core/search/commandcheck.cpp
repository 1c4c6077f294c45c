#include "commandcheck.h"

#include <algorithm>

namespace ks {

std::optional<std::string> checkCommand(const SearchState& s, const HumanCommand& c)
{
    using Kind = HumanCommand::Kind;
    const SearchNode* n = s.tree.find(c.node);
    const bool unpin = c.kind == Kind::Pin && c.node.empty();
    const bool needsNode = c.kind == Kind::SetValue || c.kind == Kind::Prune || c.kind == Kind::Restore
        || c.kind == Kind::Inject || c.kind == Kind::EditIntent || (c.kind == Kind::Pin && !unpin)
        || c.kind == Kind::Evaluate;
    if (needsNode && !n)
        return "no node '" + c.node + "'";
    const bool isRoot = n && n->id == SearchTree::kRootId;
    const auto status = [&] { return n->id + " is " + std::string(nodeStatusName(n->status)); };
    const bool finished = !s.finishedReason.empty();
    switch (c.kind) {
    case Kind::SetValue:
        if (isRoot)
            return std::string("the root has no priority");
        if (n->status != NodeStatus::Open)
            return status() + ": only open intents have a priority that matters";
        if (!(c.value >= 0.0 && c.value <= 1.0))
            return "V must be in [0, 1]";
        break;
    case Kind::Prune:
        if (isRoot)
            return std::string("the root cannot be pruned");
        if (n->status == NodeStatus::Pruned)
            return status() + " already";
        if (n->status == NodeStatus::Active)
            return status() + ": it is being implemented now; prune it when its action has ended";
        break;
    case Kind::Restore:
        if (n->status != NodeStatus::Pruned)
            return status() + ", not pruned";
        break;
    case Kind::Inject:
        if (n->status == NodeStatus::Pruned || s.tree.hasPrunedAncestor(n->id))
            return n->id + " is in a pruned branch; restore it first";
        if (c.text.find_first_not_of(" \t\n") == std::string::npos)
            return std::string("the intent is empty");
        if (!(c.value >= 0.0 && c.value <= 1.0))
            return "V must be in [0, 1]";
        break;
    case Kind::EditIntent:
        if (n->status != NodeStatus::Open)
            return status() + ": only open intents can be rewritten";
        if (c.text.find_first_not_of(" \t\n") == std::string::npos)
            return std::string("the intent is empty");
        break;
    case Kind::Pin: {
        if (unpin)
            break;
        const auto frontier = s.tree.frontier(s.settings.flat);
        if (std::none_of(frontier.begin(), frontier.end(), [&](const SearchNode* f) { return f->id == n->id; }))
            return n->status != NodeStatus::Open
                ? status() + ": only open intents can run"
                : n->id + " cannot run yet: its parent " + n->parent + " has no passing program";
        break;
    }
    case Kind::Evaluate:
        if (n->status == NodeStatus::Pruned || s.tree.hasPrunedAncestor(n->id))
            return n->id + " is in a pruned branch";
        if (c.text.find("ks_run") == std::string::npos)
            return std::string("the program does not define ks_run");
        if (s.budgetExhausted())
            return "the budget of " + std::to_string(s.settings.budget) + " evaluations is used up; raise it first";
        break;
    case Kind::SetBudget:
        if (c.number < std::max(1, s.evaluations))
            return "the budget cannot be below the " + std::to_string(s.evaluations) + " evaluations already made";
        break;
    case Kind::SetK:
        if (c.number < 1)
            return std::string("K must be at least 1");
        break;
    case Kind::Pause:
    case Kind::Resume:
    case Kind::Step:
    case Kind::Stop:
        if (finished)
            return "the run has finished (" + s.finishedReason + ")";
        break;
    }
    if (finished && (c.kind == Kind::Evaluate))
        return "the run has finished (" + s.finishedReason + ")";
    return std::nullopt;
}

} // namespace ks
