// What the engine itself costs per evaluation, apart from the LLM and the evaluator: it drives
// the real SearchEngine (prompts with the bounded tree rendering, answer parsing, edit
// validation, the journal, checkpoints, the state) on a session whose tree already holds N nodes,
// with an LLM that answers at once and an evaluator that returns at once, and subtracts the little
// time those two take. Also times one checkpoint (tree.json, written atomically) at each size.
// Prints a table; docs/perf.md keeps the figures.

#include <llm/llmprovider.h>
#include <search/engine.h>
#include <session/session.h>
#include <task/task.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

using namespace ks;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

double g_llmSeconds = 0.0, g_evaluatorSeconds = 0.0;

class InstantCall final : public LlmCall
{
public:
    explicit InstantCall(QString text)
    {
        QTimer::singleShot(0, this, [this, text] {
            LlmResult r;
            r.text = text;
            r.usage = {4000, 800, 0};
            emit finished(r);
        });
    }
    void cancel() override { }
};

// Answers like a well-behaved model, at once: one refinement per finished action, one program.
class InstantProvider final : public LlmProvider
{
public:
    QString name() const override { return QStringLiteral("instant"); }
    LlmCall* send(const LlmRequest& request) override
    {
        QElapsedTimer t;
        t.start();
        QString text;
        if (request.role == u"planner") {
            static const std::regex ended(R"(The action (?:that just ended: |on )(n\d+))");
            std::smatch m;
            const std::string prompt = request.messages.at(1).content.toStdString();
            const std::string parent = std::regex_search(prompt, m, ended) ? std::string(m[1]) : std::string("root");
            text = QString::fromStdString(R"({"reasoning": "refine", "insert": [{"parent": ")" + parent
                + R"(", "intent": "stage the next tile through shared memory with cp.async", "priority": 0.99, "rationale": "it passed"}]})");
        } else {
            text = QStringLiteral("```cuda\n#include \"ks_task.h\"\nextern \"C\" int ks_run(const KsArgs* a, void*, "
                                  "size_t, ks_stream_t s) { return 0; } // %1\n```")
                       .arg(++m_programs);
        }
        auto* call = new InstantCall(text);
        g_llmSeconds += static_cast<double>(t.nsecsElapsed()) / 1e9;
        return call;
    }

private:
    int m_programs = 0;
};

class InstantEvaluator final : public CandidateEvaluator
{
public:
    Evaluation evaluate(const fs::path&) override
    {
        QElapsedTimer t;
        t.start();
        Evaluation e;
        e.status = Verdict::Passed;
        e.score = 50.0 + (++m_count % 97);
        e.latencyMicros = 100.0;
        e.baselineLatencyMicros = 50.0;
        for (int w = 0; w < 10; ++w) {
            WorkloadEvaluation we;
            we.id = "workload-" + std::to_string(w);
            we.status = Verdict::Passed;
            we.latencyMicros = 100.0;
            we.baselineLatencyMicros = 50.0;
            we.speedup = 0.5;
            e.workloads.push_back(we);
        }
        g_evaluatorSeconds += static_cast<double>(t.nsecsElapsed()) / 1e9;
        return e;
    }
    std::string sourceSuffix() const override { return ".cu"; }
    std::string targetDescription() const override { return "an instant evaluator"; }

private:
    int m_count = 0;
};

// A state with `nodes` nodes: a random tree where a quarter of the nodes passed and a few are pruned.
SearchState grownState(int nodes)
{
    SearchState s;
    s.settings.budget = 1000000;
    s.settings.stagnation = 1;
    s.apply({{"type", "run_started"}, {"settings", s.settings.toJson()}});
    s.initialized = true;
    std::uint32_t rng = 12345;
    auto next = [&] { return rng = rng * 1664525u + 1013904223u; };
    for (int i = 1; i < nodes; ++i) {
        const std::string parent = i < 4 ? std::string("root") : "n" + std::to_string(1 + next() % (i - 1));
        s.apply({{"type", "tree_edit"}, {"author", "world_model"}, {"purpose", "bench"},
            {"edit",
                {{"insert",
                    {{{"parent", parent},
                        {"intent",
                            "intent " + std::to_string(i)
                                + ": fuse the eight query heads that share a KV head and "
                                  "stage pages through shared memory"},
                        {"priority", (next() % 90) / 100.0}}}}}}});
        const std::string id = "n" + std::to_string(i);
        if (next() % 4 == 0) {
            s.apply({{"type", "action_started"}, {"node", id}});
            Evaluation e;
            e.status = Verdict::Passed;
            e.score = 10.0 + next() % 50;
            s.apply({{"type", "evaluation"}, {"node", id}, {"program", "p"}, {"evaluation", toJson(e)}});
            s.apply({{"type", "action_finished"}, {"node", id}, {"best_attempt", s.tree.attempts().back().index}});
        } else if (next() % 10 == 0) {
            HumanCommand c;
            c.kind = HumanCommand::Kind::Prune;
            c.node = id;
            s.apply({{"type", "human"}, {"command", c.toJson()}});
        }
    }
    s.evaluations = 0;
    return s;
}

struct Row {
    int nodes = 0;
    int evaluations = 0;
    double engineMsPerEval = 0.0, checkpointMs = 0.0, checkpointKiB = 0.0, journalKiBPerEval = 0.0;
};

Row measure(int nodes, int evaluations)
{
    QTemporaryDir dir;
    auto loaded = loadTask(fs::path(KSEARCH_SOURCE_DIR) / "tasks" / "rmsnorm");
    SessionConfig config;
    config.taskName = "rmsnorm";
    config.taskDir = loaded.task->dir;
    std::string error;
    auto session = Session::create(dir.path().toStdString(), config, error);
    SearchState state = grownState(nodes);
    state.settings.budget = evaluations;
    Row row;
    row.nodes = state.tree.nodeCount();
    // One checkpoint, alone.
    std::vector<double> times;
    for (int i = 0; i < 11; ++i) {
        QElapsedTimer t;
        t.start();
        session->writeCheckpoint(state, error);
        times.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    }
    std::sort(times.begin(), times.end());
    row.checkpointMs = times[times.size() / 2];
    row.checkpointKiB = static_cast<double>(fs::file_size(dir.path().toStdString() + "/tree.json")) / 1024.0;

    InstantProvider planner, coder;
    InstantEvaluator evaluator;
    UsageLedger ledger;
    EngineSetup setup {&*loaded.task, session.get(), {}, {}, &planner, &coder, &ledger, {{"", &evaluator}}, 0,
        {"an NVIDIA H200 (sm_90a)", "nvcc", true}};
    SearchEngine engine(setup, state);
    QSignalSpy finished(&engine, &SearchEngine::finished);
    g_llmSeconds = g_evaluatorSeconds = 0.0;
    QElapsedTimer total;
    total.start();
    engine.start(true);
    while (finished.isEmpty())
        finished.wait(60000);
    const double seconds = static_cast<double>(total.nsecsElapsed()) / 1e9;
    row.evaluations = engine.state().evaluations;
    row.engineMsPerEval = (seconds - g_llmSeconds - g_evaluatorSeconds) * 1000.0 / row.evaluations;
    row.journalKiBPerEval =
        static_cast<double>(fs::file_size(dir.path().toStdString() + "/journal.jsonl")) / 1024.0 / row.evaluations;
    return row;
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    const int evaluations = argc > 1 ? std::atoi(argv[1]) : 100;
    std::printf("Engine overhead per evaluation (K = 1: every evaluation also has a world-model update),\n"
                "LLM and evaluator answering at once; %d evaluations per row.\n\n",
        evaluations);
    std::printf("%8s %12s %18s %15s %15s %18s\n", "nodes", "evaluations", "engine ms/eval", "checkpoint ms",
        "checkpoint KiB", "journal KiB/eval");
    for (int nodes : {100, 1000}) {
        const Row r = measure(nodes, evaluations);
        std::printf("%8d %12d %18.2f %15.2f %15.1f %18.1f\n", r.nodes, r.evaluations, r.engineMsPerEval, r.checkpointMs,
            r.checkpointKiB, r.journalKiBPerEval);
    }
    return 0;
}
