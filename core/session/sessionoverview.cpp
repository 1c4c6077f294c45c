#include "sessionoverview.h"

#include "runsummary.h"
#include "session.h"

#include <algorithm>

namespace ks {

SessionOverview readSessionOverview(const std::filesystem::path& dir)
{
    SessionOverview o;
    o.dir = dir;
    std::string error;
    const auto session = Session::open(dir, error);
    if (!session) {
        o.error = error;
        return o;
    }
    const SessionConfig& c = session->config();
    o.taskName = c.taskName;
    o.strategy = std::string(strategyName(c.settings.strategy));
    if (c.settings.frozenValues)
        o.strategy += ", frozen V";
    if (c.settings.flat)
        o.strategy += ", flat";
    o.backend = c.backend;
    o.language = std::string(languageName(c.candidateLanguage()));
    o.label = c.label;
    o.created = c.created;
    const auto events = session->readJournal(error);
    if (!events) {
        o.error = error;
        return o;
    }
    SearchState state;
    double best = 0.0;
    try {
        for (const auto& e : *events) {
            state.apply(e);
            if (e.value("type", std::string()) != "evaluation")
                continue;
            best = std::max(best, state.bestScore());
            o.curve.push_back({static_cast<int>(o.curve.size()) + 1, e.value("elapsed_s", 0.0), best});
        }
    } catch (const std::exception& ex) {
        o.error = (dir / "journal.jsonl").string() + ": the journal does not replay: " + ex.what();
        o.curve.clear();
        return o;
    }
    const RunSummary r = summarize(state);
    o.evaluations = r.evaluations;
    o.budget = r.budget;
    o.bestScore = r.bestScore;
    o.dollars = r.totalUsage.dollars;
    o.unpricedCalls = r.totalUsage.unpricedCalls;
    o.finishedReason = r.finishedReason;
    o.elapsedSeconds = r.elapsedSeconds;
    if (r.best) {
        const Attempt& a = *state.tree.attempt(*r.best);
        o.bestNode = a.node;
        for (const WorkloadEvaluation& w : a.evaluation.workloads)
            if (w.scored)
                o.bestSpeedups.push_back(w.status == Verdict::Passed ? w.speedup : 0.0);
    }
    return o;
}

double fastP(const std::vector<double>& speedups, double p)
{
    if (speedups.empty())
        return 0.0;
    const auto faster = std::count_if(speedups.begin(), speedups.end(), [p](double s) { return s > p; });
    return static_cast<double>(faster) / static_cast<double>(speedups.size());
}

bool isSessionFolder(const std::filesystem::path& dir)
{
    std::error_code ec;
    return std::filesystem::is_regular_file(dir / "session.json", ec)
        && std::filesystem::is_regular_file(dir / "journal.jsonl", ec);
}

} // namespace ks
