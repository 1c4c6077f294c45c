// `ksearch export --dispatch`: one kernel that runs each workload shape's fastest attempt, made
// from the session's programs, measured as a candidate of its own next to the best single kernel
// (both in one evaluator, one after the other), and written only when it passes.

#include "exportdispatch.h"

#include <session/dispatchkernel.h>

#include <QDir>
#include <QTemporaryDir>

#include <evaluator.h>
#include <fstream>

namespace ks::cli {

namespace fs = std::filesystem;

namespace {

QString num(double v, int digits = 1)
{
    return QString::number(v, 'f', digits);
}

} // namespace

int exportDispatch(const Session& session, const SearchState& state, const Task& task, const fs::path& outDir,
    const DispatchOptions& options, QTextStream& out, QTextStream& err)
{
    const SessionConfig& config = session.config();
    std::string error;
    const auto plan = planDispatch(state, task, config.candidateLanguage(), error);
    if (!plan) {
        err << "ksearch export --dispatch: " << QString::fromStdString(error) << "\n";
        return 1;
    }
    const std::string suffix = config.programSuffix();
    const std::string text =
        dispatchSource(*plan, [&](const std::string& hash) { return session.programSource(hash); });
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
    settings.bench.maxSeconds = options.benchSeconds;
    if (!options.python.empty())
        settings.python = options.python;
    Evaluator evaluator(task, settings);
    if (const auto problem = evaluator.environmentProblem()) {
        err << "ksearch export --dispatch: the " << QString::fromStdString(config.backend)
            << " backend is not available to measure the dispatching kernel: " << QString::fromStdString(*problem)
            << "\n";
        return 3;
    }
    const Evaluation best = evaluator.evaluate(single);
    const Evaluation dispatched = evaluator.evaluate(dispatcher);
    const Attempt& bestAttempt = *state.tree.attempt(plan->variants.front().attempt);
    out << "best single kernel: " << QString::fromStdString(bestAttempt.node) << " attempt " << bestAttempt.index
        << ", J " << num(best.score) << " now (" << num(bestAttempt.score()) << " in the session)\n";
    out << "dispatching kernel: " << plan->variants.size() << " variants, " << plan->cases.size() << " shapes routed, "
        << QString::fromLatin1(verdictName(dispatched.status).data()) << ", J " << num(dispatched.score) << "\n";
    if (dispatched.status != Verdict::Passed) {
        err << "ksearch export --dispatch: the dispatching kernel did not pass, so it was not written:\n"
            << QString::fromStdString(dispatched.log);
        return 1;
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
           << "dispatching kernel J " << num(dispatched.score).toStdString() << ", best single kernel J "
           << num(best.score).toStdString() << ".\n";
    out << QString::fromStdString(kept.string()) << "\n"
        << QString::fromStdString((outDir / "dispatch.json").string()) << "\n";
    return 0;
}

} // namespace ks::cli
