// How long the window's thread is busy per event of a live search with a 1,000-node tree: the
// document, the table, the graph (incremental layout), the inspector, the charts and the log all
// follow every event. A synthetic search of 1,000 nodes (and 300 evaluations of 10 workloads) is
// loaded, then 300 more events arrive one by one as from a running engine; each is timed from its
// arrival until the event loop is idle again (layout and repaint included). Prints a table; the
// goal is that no GUI-thread task takes over 16 ms.

#include <QAbstractScrollArea>
#include <QApplication>
#include <QElapsedTimer>

#include <algorithm>
#include <cstdio>
#include <mainwindow.h>
#include <map>
#include <stdexcept>
#include <treegraphview.h>

using namespace ks;
using json = nlohmann::json;

namespace {

json evaluation(const std::string& node, int k)
{
    Evaluation e;
    e.status = k % 5 == 0 ? Verdict::IncorrectNumerical : Verdict::Passed;
    e.score = e.status == Verdict::Passed ? 50.0 + (k * 37) % 400 : 0.0;
    e.latencyMicros = 100;
    e.baselineLatencyMicros = 120;
    for (int w = 0; w < 10; ++w) {
        WorkloadEvaluation we;
        we.id = "workload-" + std::to_string(w);
        we.status = e.status;
        we.latencyMicros = 90 + w;
        we.baselineLatencyMicros = 120;
        we.speedup = 120.0 / (90 + w);
        e.workloads.push_back(we);
    }
    return {{"type", "evaluation"}, {"node", node}, {"program", "p" + std::to_string(k)}, {"prompt", "improve"},
        {"author", "code_policy"}, {"evaluation", toJson(e)}};
}

// A search of `nodes` nodes: edits of three inserts each under random earlier nodes, and an
// action with one evaluation on every third node.
std::vector<json> syntheticSearch(int nodes)
{
    std::vector<json> events {{{"type", "run_started"}, {"settings", SearchSettings().toJson()}}};
    std::uint32_t rng = 7;
    auto next = [&] { return rng = rng * 1664525u + 1013904223u; };
    int made = 0, evals = 0;
    while (made < nodes - 1) {
        json inserts = json::array();
        const int existing = made; // parents among the nodes made by earlier edits
        for (int i = 0; i < 3 && made < nodes - 1; ++i, ++made)
            inserts.push_back(
                {{"parent", existing == 0 ? std::string("root") : "n" + std::to_string(1 + next() % existing)},
                    {"intent", "intent " + std::to_string(made + 1) + ": stage the next tile through shared memory"},
                    {"priority", (next() % 100) / 100.0}});
        events.push_back(
            {{"type", "tree_edit"}, {"author", "world_model"}, {"purpose", "update"}, {"edit", {{"insert", inserts}}}});
        const std::string node = "n" + std::to_string(made);
        events.push_back({{"type", "action_started"}, {"node", node}});
        events.push_back(evaluation(node, ++evals));
        events.push_back(
            {{"type", "action_finished"}, {"node", node}, {"best_attempt", evals - 1}, {"next_planner", ""}});
    }
    for (std::size_t i = 0; i < events.size(); ++i)
        events[i]["seq"] = static_cast<int>(i + 1);
    return events;
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    ui::MainWindow window;
    window.resize(1600, 980);
    window.show();
    if (const QByteArray hide = qgetenv("KS_BENCH_HIDE"); !hide.isEmpty()) // which view costs what
        for (const QByteArray& name : hide.split(','))
            if (QWidget* w = window.findChild<QWidget*>(QString::fromLatin1(name)))
                w->hide();
    QApplication::processEvents();
    const std::vector<json> all = syntheticSearch(1000);
    const std::size_t live = 300;
    const auto typed = [](const json& line) {
        std::string error;
        auto e = journalEventFromJson(line, error);
        if (!e)
            throw std::runtime_error("synthetic event: " + error);
        return std::make_shared<const JournalEvent>(std::move(*e));
    };
    std::vector<SearchEvent> initial;
    for (std::size_t i = 0; i + live < all.size(); ++i)
        initial.push_back(typed(all[i]));
    SessionConfig config;
    config.taskName = "synthetic";
    window.document().setSession(config, "/nonexistent", true);
    QElapsedTimer t;
    t.start();
    window.document().load(initial);
    for (int i = 0; i < 3; ++i)
        QApplication::processEvents();
    const double loadMs = static_cast<double>(t.nsecsElapsed()) / 1e6;
    window.selectNode(QStringLiteral("n10"));
    if (const double zoom = qEnvironmentVariable("KS_BENCH_ZOOM").toDouble(); zoom > 0) { // close up instead of fitted
        window.graph()->zoomBy(zoom / window.graph()->transform().m11());
        QApplication::processEvents();
    }
    if (qEnvironmentVariableIsSet("KS_BENCH_PARTS")) { // where one frame goes
        for (const char* name : {"treeGraph", "nodeTable", "eventLog", "chartsPanel", "nodeInspector"}) {
            QWidget* w = window.findChild<QWidget*>(QLatin1String(name));
            QWidget* target =
                qobject_cast<QAbstractScrollArea*>(w) ? qobject_cast<QAbstractScrollArea*>(w)->viewport() : w;
            QElapsedTimer p;
            p.start();
            for (int k = 0; k < 10; ++k)
                target->repaint();
            std::printf("repaint %s: %.2f ms\n", name, static_cast<double>(p.nsecsElapsed()) / 1e7);
        }
    }

    std::vector<double> perEvent;
    std::map<std::string, double> worstByType;
    for (std::size_t i = all.size() - live; i < all.size(); ++i) {
        t.restart();
        window.document().append(typed(all[i]));
        const double sync = static_cast<double>(t.nsecsElapsed()) / 1e6;
        QApplication::processEvents(); // the deferred layout and the repaint
        QApplication::processEvents();
        perEvent.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
        double& worstSync = worstByType["(signals of) " + all[i]["type"].get<std::string>()];
        worstSync = std::max(worstSync, sync);
        double& worst = worstByType[all[i]["type"].get<std::string>()];
        worst = std::max(worst, perEvent.back());
    }
    std::vector<double> sorted = perEvent;
    std::sort(sorted.begin(), sorted.end());
    const auto pct = [&](double p) {
        return sorted[static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1))];
    };
    double mean = 0;
    for (double v : perEvent)
        mean += v;
    mean /= static_cast<double>(perEvent.size());
    std::printf("GUI thread per live event, tree of %d nodes at the end, %zu events timed (layouts run: %d), "
                "graph scale %.2f\n\n",
        window.document().state().tree.nodeCount(), perEvent.size(), window.graph()->layoutCount(),
        window.graph()->transform().m11());
    std::printf(
        "%12s %12s %12s %12s %12s %16s\n", "mean ms", "median ms", "p99 ms", "max ms", "over 16 ms", "initial load ms");
    std::printf("%12.2f %12.2f %12.2f %12.2f %12ld %16.1f\n", mean, pct(0.5), pct(0.99), sorted.back(),
        static_cast<long>(std::count_if(perEvent.begin(), perEvent.end(), [](double v) { return v > 16.0; })), loadMs);
    std::printf("\nworst by event type:");
    for (const auto& [type, ms] : worstByType)
        std::printf("  %s %.2f ms", type.c_str(), ms);
    std::printf("\n");
    return 0;
}
