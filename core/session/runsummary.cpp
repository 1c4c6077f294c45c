#include "runsummary.h"

namespace ks {

RunSummary summarize(const SearchState& s)
{
    RunSummary r;
    r.finishedReason = s.finishedReason;
    r.evaluations = s.evaluations;
    r.budget = s.settings.budget;
    r.best = s.bestAttempt();
    r.bestScore = s.bestScore();
    r.usage = s.usage;
    for (const auto& [role, u] : s.usage) {
        r.totalUsage.add(u);
        r.llmSeconds += u.latencySeconds;
    }
    double best = 0.0;
    for (const Attempt& a : s.tree.attempts()) {
        if (!a.evaluated) {
            ++r.verdicts["NO_PROGRAM"];
            continue;
        }
        ++r.verdicts[std::string(verdictName(a.evaluation.status))];
        r.compileSeconds += a.evaluation.compileSeconds;
        r.evaluatorSeconds += a.evaluation.totalSeconds - a.evaluation.compileSeconds;
        r.timedSeconds += a.evaluation.timedGpuSeconds;
        best = std::max(best, a.score());
        r.bestSoFar.push_back(best);
    }
    r.elapsedSeconds = s.elapsedSeconds;
    for (const auto& n : s.tree.nodes()) {
        ++r.nodes;
        if (n.status == NodeStatus::Open)
            ++r.openNodes;
        else if (n.status == NodeStatus::Pruned)
            ++r.prunedNodes;
        else
            ++r.closedNodes;
    }
    return r;
}

} // namespace ks
