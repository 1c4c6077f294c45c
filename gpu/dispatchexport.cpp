// `ksearch export --dispatch` and File > Export Dispatching Kernel: one kernel that runs each
// workload shape's fastest attempt, made from the session's programs, measured as a candidate of
// its own next to the best single kernel (both in one evaluator, one after the other), and
// written only when it passes.

#include "dispatchexport.h"

#include "evaluator.h"

#include <session/dispatchkernel.h>
#include <session/runsummary.h>
#include <util/numberformat.h>

#include <QDir>
#include <QTemporaryDir>

#include <fstream>

namespace ks {

namespace fs = std::filesystem;

DispatchExportResult exportDispatchingKernel(const Session& session, const SearchState& state, const Task& task,
    const fs::path& outDir, double benchSeconds, const std::string& python, bool confine)
{
    DispatchExportResult r;
    const SessionConfig& config = session.config();
    const auto plan = planDispatch(state, task, config.candidateLanguage(), r.error);
    if (!plan)
        return r;
    r.variants = static_cast<int>(plan->variants.size());
    r.routedShapes = plan->routedShapes();
    const std::string suffix = config.programSuffix();
    const auto programSource = [&](const std::string& hash) { return session.programSource(hash); };
    const std::string text = isPythonLanguage(config.candidateLanguage())
        ? pythonDispatchSource(*plan, task.definition, programSource)
        : dispatchSource(*plan, programSource);
    QTemporaryDir scratch(QDir::tempPath() + QStringLiteral("/ksearch-dispatch-XXXXXX"));
    const fs::path work = scratch.path().toStdString();
    const fs::path dispatcher = work / ("dispatch" + suffix);
    const fs::path single = work / ("best" + suffix);
    std::ofstream(dispatcher) << text;
    std::ofstream(single) << session.programSource(plan->variants.front().program);

    EvaluatorSettings settings;
    settings.backend = config.backend == "host" ? Backend::Host : Backend::Cuda;
    settings.language = config.candidateLanguage();
    settings.workDir = work / "jobs";
    settings.bench.maxSeconds = benchSeconds;
    settings.confineCandidates = confine;
    if (!python.empty())
        settings.python = python;
    Evaluator evaluator(task, settings);
    if (const auto problem = evaluator.environmentProblem()) {
        r.outcome = DispatchExportResult::Outcome::NoBackend;
        r.error = "the " + config.backend + " backend is not available to measure the dispatching kernel: " + *problem;
        return r;
    }
    const Evaluation best = evaluator.evaluate(single);
    const Evaluation dispatched = evaluator.evaluate(dispatcher);
    const Attempt& bestAttempt = *state.tree.attempt(plan->variants.front().attempt);
    r.bestAttempt = bestAttempt.index;
    r.bestNode = bestAttempt.node;
    r.singleScore = best.score;
    r.sessionScore = bestAttempt.score();
    r.verdict = std::string(verdictName(dispatched.status));
    r.dispatchedScore = dispatched.score;
    if (dispatched.status != Verdict::Passed) {
        r.error = "the dispatching kernel did not pass, so it was not written";
        r.log = dispatched.log;
        return r;
    }
    std::error_code ec;
    fs::create_directories(outDir, ec);
    const fs::path kept = outDir / ("dispatch" + suffix);
    std::ofstream(kept) << text;
    nlohmann::json record {{"best_single",
                               {{"attempt", bestAttempt.index}, {"node", bestAttempt.node}, {"score_now", best.score},
                                   {"score_in_session", bestAttempt.score()}}},
        {"dispatch", toJson(dispatched)}, {"variants", nlohmann::json::array()}, {"cases", nlohmann::json::array()}};
    for (const DispatchPlan::Variant& v : plan->variants)
        record["variants"].push_back({{"attempt", v.attempt}, {"program", v.program}});
    for (const DispatchPlan::Case& c : plan->cases) {
        nlohmann::json axes = nlohmann::json::object();
        for (const auto& [name, value] : c.axes)
            axes[name] = value;
        record["cases"].push_back({{"workload", c.workload}, {"axes", axes}, {"variant", c.variant}});
    }
    std::ofstream(outDir / "dispatch.json") << record.dump(2) << "\n";
    std::ofstream report(outDir / "report.md", std::ios::app);
    report << "\n## Dispatching kernel\n\n`dispatch" << suffix << "` runs, for " << plan->cases.size()
           << " workload shapes, the attempt fastest on it, and the best single kernel (" << bestAttempt.node
           << ", attempt " << bestAttempt.index << ") on every other shape. Measured now, one after the other: "
           << "dispatching kernel J " << formatScore(dispatched.score) << ", best single kernel J "
           << formatScore(best.score) << ".\n";
    r.files = {kept, outDir / "dispatch.json", outDir / "report.md"};
    r.outcome = DispatchExportResult::Outcome::Written;
    return r;
}

} // namespace ks
