#include "exporter.h"

#include "fibexport.h"
#include "fibworkloads.h"
#include "runsummary.h"

#include <search/taskbrief.h>
#include <task/abiheader.h>
#include <task/strictjson.h>
#include <tree/treejson.h>
#include <tree/treerender.h>
#include <tree/treesvg.h>
#include <util/numberformat.h>

#include <ctime>
#include <set>

namespace ks {

namespace fs = std::filesystem;

namespace {

std::string utcTimestamp()
{
    const std::time_t now = std::time(nullptr);
    std::tm utc {};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

std::string cell(std::string s)
{
    for (char& c : s)
        if (c == '|' || c == '\n')
            c = c == '|' ? '/' : ' ';
    return s;
}

std::string workloadName(const Task* task, const std::string& id)
{
    return task ? workloadLabel(*task, id) : id.substr(0, 8);
}

} // namespace

std::string renderReport(const Session& session, const SearchState& s, const Task* task)
{
    const SessionConfig& c = session.config();
    const RunSummary r = summarize(s);
    std::string md = "# K-Search report: " + c.taskName + "\n\n";
    md += "- Session: `" + session.dir().string() + "`" + (c.label.empty() ? "" : " (" + c.label + ")") + "\n";
    md += "- Search: " + s.settings.describe() + ", backend " + c.backend + "\n";
    md += "- Planner: " + c.planner.describe().toStdString() + "; coder: " + c.coder.describe().toStdString() + "\n";
    md += "- Started " + c.created + " with ksearch " + c.version + "\n";
    md += "- State: " + (r.finishedReason.empty() ? std::string("not finished") : "finished, " + r.finishedReason)
        + "; " + std::to_string(r.evaluations) + " of " + std::to_string(r.budget) + " evaluations\n\n";

    md += "## Best kernel\n\n";
    if (!r.best) {
        md += "No candidate passed.\n\n";
    } else {
        const Attempt& a = *s.tree.attempt(*r.best);
        const Evaluation& e = a.evaluation;
        md += "J = **" + formatScore(r.bestScore) + "** (node " + a.node + ", attempt " + std::to_string(a.index)
            + ", round " + std::to_string(a.round) + "): latency " + formatMicros(e.latencyMicros)
            + " us (geometric mean) against the baseline's " + formatMicros(e.baselineLatencyMicros) + " us"
            + (e.device.empty() ? "" : ", on " + e.device) + ".\n\n";
        md += "| workload | status | latency (us) | p25-p75 (us) | baseline (us) | speedup | roofline |\n";
        md += "|---|---|---:|---:|---:|---:|---:|\n";
        for (const auto& w : e.workloads)
            md += "| " + cell(workloadName(task, w.id)) + " | " + std::string(verdictName(w.status)) + " | "
                + formatMicros(w.latencyMicros) + " | " + formatMicros(w.p25Micros) + "-" + formatMicros(w.p75Micros)
                + " | " + formatMicros(w.baselineLatencyMicros) + " | " + formatSpeedup(w.speedup) + " | "
                + (w.rooflineFraction > 0 ? formatPercent(w.rooflineFraction) : "-") + " |\n";
        md += "\nHow the search got there (the path of intents from the root):\n\n";
        for (const SearchNode* n : s.tree.pathFromRoot(a.node)) {
            if (n->id == SearchTree::kRootId)
                continue;
            md += "1. **" + n->id + "** " + cell(n->intent);
            if (n->bestAttempt)
                md += " (best J " + formatScore(s.tree.attempt(*n->bestAttempt)->score()) + ")";
            md += "  \n   V: ";
            for (std::size_t i = 0; i < n->values.size(); ++i)
                md += (i ? " -> " : "") + formatPriority(n->values[i].value) + " ("
                    + std::string(authorName(n->values[i].author)) + ", round " + std::to_string(n->values[i].round)
                    + ")";
            md += "\n";
        }
        md += "\n";
    }

    md += "## Best J over the evaluations\n\n| round | J (best so far) | node |\n|---:|---:|---|\n";
    double best = 0.0;
    for (const Attempt& a : s.tree.attempts())
        if (a.passed() && a.score() > best) {
            best = a.score();
            md += "| " + std::to_string(a.round) + " | " + formatScore(best) + " | " + a.node + " |\n";
        }
    md += "\n## Evaluations by verdict\n\n| verdict | count |\n|---|---:|\n";
    for (const auto& [name, count] : r.verdicts)
        md += "| " + name + " | " + std::to_string(count) + " |\n";

    md += "\n## LLM use\n\n| role | calls | failed | prompt tokens | completion tokens | reasoning tokens | dollars | "
          "seconds |\n|---|---:|---:|---:|---:|---:|---:|---:|\n";
    auto row = [&](const std::string& role, const RoleUsage& u) {
        md += "| " + role + " | " + std::to_string(u.calls) + " | " + std::to_string(u.failedCalls) + " | "
            + std::to_string(u.tokens.promptTokens) + " | " + std::to_string(u.tokens.completionTokens) + " | "
            + std::to_string(u.tokens.reasoningTokens) + " | " + formatDollars(u.dollars)
            + (u.unpricedCalls ? " (+" + std::to_string(u.unpricedCalls) + " unpriced)" : "") + " | "
            + formatFixed(u.latencySeconds, 1) + " |\n";
    };
    for (const auto& [role, u] : r.usage)
        row(role, u);
    row("**total**", r.totalUsage);
    md += "\n## Time\n\n| LLM | compile | evaluation (timed loops) | run |\n|---:|---:|---:|---:|\n| "
        + formatFixed(r.llmSeconds, 1) + " s | " + formatFixed(r.compileSeconds, 1) + " s | "
        + formatFixed(r.evaluatorSeconds, 1) + " s (" + formatFixed(r.timedSeconds, 1) + " s) | "
        + formatFixed(r.elapsedSeconds, 1) + " s |\n";

    md += "\n## The tree\n\n" + std::to_string(r.nodes) + " nodes: " + std::to_string(r.openNodes) + " open, "
        + std::to_string(r.closedNodes) + " closed or active, " + std::to_string(r.prunedNodes)
        + " pruned. The picture is `tree.svg`; every node with its V history is in `tree.json`.\n\n```\n";
    TreeRenderOptions ro;
    ro.budget = 40000;
    ro.intentChars = 140;
    md += renderTreeForPrompt(s.tree, ro) + "```\n";
    return md;
}

// The dataset's definitions/<op_type>/<name>.json: FlashInfer-Bench loads a solution only beside
// its definition, whose `reference` is PyTorch source.  The task's definition.json is that
// definition without the reference (the task format keeps it in reference.py), so a task with a
// reference.py (every imported one) gets it back; one with only reference.cpp cannot.
namespace {
template<typename Write>
void writeFibDefinition(
    const Task& task, const fs::path& outDir, const Write& write, std::vector<std::string>& warnings)
{
    const std::string opType = task.definition.opType.empty() ? std::string("unknown") : task.definition.opType;
    if (!task.files.referencePy) {
        warnings.emplace_back("flashinfer-bench/definitions/ not written: a FlashInfer-Bench definition carries its "
                              "reference as PyTorch code, and the task has reference.cpp only (add reference.py)");
        return;
    }
    const auto text = readTextFile(task.files.definition.string());
    const auto reference = readTextFile(task.files.referencePy->string());
    nlohmann::ordered_json definition =
        text ? nlohmann::ordered_json::parse(*text, nullptr, false) : nlohmann::ordered_json();
    if (!reference || !definition.is_object()) {
        warnings.emplace_back("flashinfer-bench/definitions/ not written: "
            + (reference ? task.files.definition : *task.files.referencePy).string() + ": cannot be read");
        return;
    }
    definition["reference"] = *reference;
    std::error_code ec;
    fs::create_directories(outDir / "flashinfer-bench" / "definitions" / opType, ec);
    write("flashinfer-bench/definitions/" + opType + "/" + task.definition.name + ".json", definition.dump(2) + "\n");
}
} // namespace

ExportResult exportSession(const Session& session, const SearchState& s, const Task* task, const fs::path& outDir)
{
    ExportResult result;
    std::error_code ec;
    fs::create_directories(outDir, ec);
    if (ec) {
        result.error = outDir.string() + ": cannot create: " + ec.message();
        return result;
    }
    const SessionConfig& c = session.config();
    const auto write = [&](const std::string& name, const std::string& content) {
        if (!result.error.empty())
            return;
        if (writeFileAtomically(outDir / name, content, result.error))
            result.files.push_back(outDir / name);
    };
    const auto best = s.bestAttempt();
    if (best) {
        const Attempt& a = *s.tree.attempt(*best);
        const std::string source = session.programSource(a.program);
        const std::string header = "// Best kernel of a K-Search run on " + c.taskName
            + ": J = " + formatScore(a.score()) + " (latency " + formatMicros(a.evaluation.latencyMicros)
            + " us, baseline " + formatMicros(a.evaluation.baselineLatencyMicros) + " us"
            + (a.evaluation.device.empty() ? "" : ", " + a.evaluation.device) + ").\n// Node " + a.node + ", attempt "
            + std::to_string(a.index) + ", program " + a.program + ", session " + session.dir().string()
            + ".\n// Intent: " + cell(s.tree.find(a.node)->intent) + "\n";
        write("best_kernel" + c.programSuffix(), header + source);
        if (task) {
            FibSolutionInput in {fibSolutionName(c.taskName, a.program),
                "Found by K-Search (" + s.settings.describe() + "), J = " + formatScore(a.score()) + ", node " + a.node
                    + ".",
                source, c.backend != "host", a.evaluation.device, c.candidateLanguage()};
            std::string why;
            if (const auto solution = fibSolution(task->definition, in, why))
                write("solution.json", solution->dump(2) + "\n");
            else
                result.warnings.emplace_back("solution.json not written: " + why);
        } else {
            result.warnings.emplace_back("solution.json not written: the task folder is needed for ks_task.h");
        }
    }
    if (task) {
        // FlashInfer-Bench: every evaluated program as a Solution, and a Trace line per workload
        // of each evaluation, naming its solution, where a FlashInfer-Bench dataset keeps them
        // (solutions/<author>/<op_type>/<definition>/<name>.json and
        // traces/<author>/<op_type>/<definition>.jsonl), so the folder merges into one.
        const Definition& def = task->definition;
        const std::string group =
            std::string(kFibAuthor) + "/" + (def.opType.empty() ? std::string("unknown") : def.opType);
        const std::string solutions = "flashinfer-bench/solutions/" + group + "/" + def.name;
        fs::create_directories(outDir / solutions, ec);
        fs::create_directories(outDir / ("flashinfer-bench/traces/" + group), ec);
        std::set<std::string> programs;
        for (const Attempt& at : s.tree.attempts()) {
            if (!at.evaluated || !programs.insert(at.program).second)
                continue;
            const FibSolutionInput in {fibSolutionName(c.taskName, at.program),
                "A K-Search candidate (node " + at.node + ", " + std::string(verdictName(at.evaluation.status)) + ").",
                session.programSource(at.program), c.backend != "host", at.evaluation.device, c.candidateLanguage()};
            std::string why;
            const auto solution = fibSolution(def, in, why);
            if (!solution)
                break; // the same reason as for solution.json, already reported
            write(solutions + "/" + in.name + ".json", solution->dump(1) + "\n");
        }
        // The workloads as FlashInfer-Bench reads them (inputs it has no kind for become blobs),
        // also as the dataset's workloads/<op_type>/<definition>.jsonl.
        std::string why;
        const auto workloads = fibWorkloads(*task, outDir / "flashinfer-bench", why);
        if (workloads) {
            std::string lines;
            for (const Workload& w : task->workloads)
                lines += nlohmann::json {{"definition", def.name}, {"solution", nullptr},
                             {"workload", workloads->at(w.uuid)}, {"evaluation", nullptr}}
                             .dump()
                    + "\n";
            const std::string opType = def.opType.empty() ? std::string("unknown") : def.opType;
            fs::create_directories(outDir / "flashinfer-bench" / "workloads" / opType, ec);
            write("flashinfer-bench/workloads/" + opType + "/" + def.name + ".jsonl", lines);
        } else {
            result.warnings.emplace_back("the workloads were not written for FlashInfer-Bench: " + why);
        }
        writeFibDefinition(*task, outDir, write, result.warnings);
        std::string traces;
        for (const auto& line : fibTraces(s, task, c.taskName, utcTimestamp(), workloads ? &*workloads : nullptr))
            traces += line.dump() + "\n";
        write("flashinfer-bench/traces/" + group + "/" + def.name + ".jsonl", traces);
        if (c.backend == "host" && c.candidateLanguage() == Language::Cpp)
            result.warnings.emplace_back("the FlashInfer-Bench solutions are C++ for the CPU (a host-backend search): "
                                         "FlashInfer-Bench runs solutions on CUDA devices only");
        else if (c.backend == "host")
            result.warnings.emplace_back("the FlashInfer-Bench solutions were measured on the CPU (a host-backend "
                                         "search); FlashInfer-Bench runs them on a CUDA device, where they were not "
                                         "evaluated");
    }
    write("report.md", renderReport(session, s, task));
    write("tree.json",
        nlohmann::json {{"task", c.taskName}, {"settings", s.settings.toJson()}, {"evaluations", s.evaluations},
            {"tree", toJson(s.tree)}}
                .dump(1)
            + "\n");
    TreeSvgOptions so;
    so.title = "K-Search tree: " + c.taskName + " (" + s.settings.describe() + ", " + std::to_string(s.evaluations)
        + " evaluations, best J " + formatScore(s.bestScore()) + ")";
    so.activeNode = s.actions.empty() ? std::string() : s.actions.front().node; // the others show as active
    write("tree.svg", renderTreeSvg(s.tree, so));
    return result;
}

} // namespace ks
