// Takes the screenshots kept in docs/screenshots: the window mid-run (a live search of the
// example task with the scripted demo LLM), the inspector with a diff, and each chart. Run it
// on a real X display (Xvfb): scripts/screenshots.sh. The images are grabbed from the screen.
#include "scaletask.h"
#include "testsupport.h"

#include <search/strategy.h>
#include <task/abiheader.h>
#include <task/task.h>

#include <QApplication>
#include <QChartView>
#include <QCheckBox>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QLineEdit>
#include <QPushButton>
#include <QScreen>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <chartspanel.h>
#include <compiler.h>
#include <cstdio>
#include <mainwindow.h>
#include <newsearchdialog.h>
#include <nodecomparedialog.h>
#include <nodeinspector.h>
#include <sessioncomparedialog.h>
#include <sessionlibrarydialog.h>
#include <settings.h>
#include <settingsdialog.h>

using namespace ks;

namespace {

void settle(int ms)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

bool grab(QWidget* w, const QString& path)
{
    const QPoint at = w->mapToGlobal(QPoint(0, 0));
    const QPixmap shot = w->screen()->grabWindow(0, at.x(), at.y(), w->width(), w->height());
    const bool ok = shot.save(path);
    std::printf("%s %s (%dx%d)\n", ok ? "wrote" : "FAILED", qPrintable(path), shot.width(), shot.height());
    return ok;
}

QDockWidget* dockOf(QWidget* w)
{
    while (w && !qobject_cast<QDockWidget*>(w))
        w = w->parentWidget();
    return qobject_cast<QDockWidget*>(w);
}

// A search with three evaluators (four lanes), mid-run: the Workers panel and the status bar.
bool workersShot(ui::MainWindow& window, const QString& out)
{
    ui::Settings::set(ui::settings::localWorkers, 3);
    ui::Settings::set(ui::settings::parallel, 4);
    SessionConfig c = test::demoSearchConfig(16, 0.05);
    c.label = "screenshot run: three evaluators, four actions at once";
    QTemporaryDir dir;
    const bool started = window.startSearch(std::filesystem::path(dir.path().toStdString()) / "workers", c);
    ui::Settings::set(ui::settings::localWorkers, 1);
    ui::Settings::set(ui::settings::parallel, 0);
    if (!started)
        return false;
    QDockWidget* dock = dockOf(window.findChild<QWidget*>(QStringLiteral("workersTable")));
    if (!dock)
        return false;
    dock->raise();
    while (window.document().state().evaluations < 5)
        settle(100);
    settle(700);
    bool ok = grab(&window, out + u"/workers-window.png");
    ok = grab(dock, out + u"/workers-panel.png") && ok;
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    finished.wait(600000);
    return ok;
}

} // namespace

// Settings, Evaluators tab: local GPUs, a remote worker by ssh address, a SLURM allocation.
bool settingsShot(QWidget& window, const QString& out)
{
    ui::Settings::set(ui::settings::gpus, QStringLiteral("0,1"));
    ui::Settings::set(ui::settings::localWorkers, 2);
    ui::Settings::set(ui::settings::workerCommands,
        QStringList {QStringLiteral("ssh://alice@gpu-box:2222/opt/ksearch/bin/ksearch"),
            QStringLiteral("ssh h100-node ksearch worker")});
    ui::Settings::set(ui::settings::slurm, QStringLiteral("gpu,--gpus-per-task=1,--time=240"));
    ui::Settings::set(ui::settings::slurmWorkers, 4);
    ui::SettingsDialog dialog(&window);
    auto* tabs = dialog.findChild<QTabWidget*>();
    if (!tabs)
        return false;
    tabs->setCurrentIndex(tabs->count() - 1);
    dialog.resize(760, dialog.sizeHint().height());
    dialog.show();
    settle(600);
    return grab(&dialog, out + u"/settings-evaluators.png");
}

// The inspector's compute-sanitizer box on the example session marked CUDA, and the report dialog
// of one run (on a machine without the tool, its reason).
bool sanitizerShot(ui::MainWindow& window, const QString& out)
{
    QTemporaryDir dir;
    const std::filesystem::path copy = std::filesystem::path(dir.path().toStdString()) / "cuda-session";
    test::copySessionAsCuda(ui::MainWindow::exampleSession(), copy);
    if (!window.openSession(QString::fromStdString(copy.string()), false))
        return false;
    window.inspector()->findChild<QTabWidget*>(QStringLiteral("inspectorTabs"))->setCurrentIndex(1);
    settle(500);
    bool ok = grab(window.inspector(), out + u"/inspector-sanitizer.png");
    window.inspector()->findChild<QPushButton*>(QStringLiteral("sanitizeButton"))->click();
    for (int i = 0; i < 600 && !window.findChild<QDialog*>(QStringLiteral("sanitizerDialog")); ++i)
        settle(100);
    auto* dialog = window.findChild<QDialog*>(QStringLiteral("sanitizerDialog"));
    if (!dialog)
        return false;
    settle(500);
    return grab(dialog, out + u"/sanitizer-report.png") && ok;
}

// The Code tab on the example: a refined node's last program with its line numbers and colours,
// then the same program against the one its action started from.
bool codeShot(ui::MainWindow& window, const QString& out)
{
    if (!window.openExample())
        return false;
    const SearchState& s = window.document().state();
    const auto node = std::find_if(s.tree.nodes().begin(), s.tree.nodes().end(), [&s](const SearchNode& n) {
        return n.attempts.size() >= 2 && startingAttempt(s, n.id)
            && !s.tree.attempt(n.attempts.back())->program.empty();
    });
    if (node == s.tree.nodes().end())
        return false;
    window.selectNode(QString::fromStdString(node->id));
    window.inspector()->showAttempt(node->attempts.back());
    window.inspector()->findChild<QTabWidget*>(QStringLiteral("inspectorTabs"))->setCurrentIndex(2);
    window.inspector()->compareWith(ui::NodeInspector::Compare::Nothing);
    settle(500);
    bool ok = grab(window.inspector(), out + u"/inspector-code.png");
    window.inspector()->compareWith(ui::NodeInspector::Compare::Start);
    settle(500);
    ok = grab(window.inspector(), out + u"/inspector-code-diff.png") && ok;
    // The Nodes filter: the table keeps the matching rows, the graph dims the rest.
    window.nodeFilter()->setText(QStringLiteral("unroll"));
    settle(500);
    ok = grab(&window, out + u"/node-filter.png") && ok;
    window.nodeFilter()->clear();
    return ok;
}

// The Attempts tab with a ptxas report: the example marked CUDA, every evaluation given the report
// nvcc really gives for the rmsnorm task's baseline.cu (compiled here; the example's own programs
// are host C++ and have none), so the picture shows real names and figures.
bool kernelsShot(ui::MainWindow& window, const QString& out)
{
    const auto loaded = loadTask(test::tasksDir() / "rmsnorm");
    if (!loaded.task || !std::filesystem::exists(nvccPath()))
        return false;
    QTemporaryDir build;
    CompileRequest req;
    req.backend = Backend::Cuda;
    req.source = test::tasksDir() / "rmsnorm" / "baseline.cu";
    req.abiHeader = generateAbiHeader(loaded.task->definition);
    req.workDir = build.path().toStdString();
    const CompileResult compiled = compileKernel(req);
    if (!compiled.ok)
        return false;
    nlohmann::json report = nlohmann::json::array();
    for (const KernelResources& k : compiled.resources)
        report.push_back({{"kernel", k.kernel}, {"registers", k.registers}, {"shared_bytes", k.sharedBytes},
            {"stack_bytes", k.stackBytes}, {"spill_bytes", k.spillStoreBytes + k.spillLoadBytes}});
    QTemporaryDir dir;
    const std::filesystem::path copy = std::filesystem::path(dir.path().toStdString()) / "cuda-session";
    test::copySessionAsCuda(ui::MainWindow::exampleSession(), copy, report.dump());
    if (!window.openSession(QString::fromStdString(copy.string()), false))
        return false;
    window.selectNode(QStringLiteral("n4"));
    window.inspector()->findChild<QTabWidget*>(QStringLiteral("inspectorTabs"))->setCurrentIndex(1);
    settle(500);
    return grab(window.inspector(), out + u"/inspector-kernels.png");
}

// A short search with confinement turned off in the settings: the status bar's red mark (and its
// notice), and the switch on Settings' Evaluation tab.
bool confinementShot(ui::MainWindow& window, const QString& out)
{
    ui::Settings::set(ui::settings::confineCandidates, false);
    SessionConfig c = test::demoSearchConfig(3, 0.05);
    c.label = "screenshot run: confinement turned off in the settings";
    QTemporaryDir dir;
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    bool ok =
        window.startSearch(std::filesystem::path(dir.path().toStdString()) / "session", c) && finished.wait(120000);
    settle(500);
    ok = ok && grab(&window, out + u"/confinement-off.png");
    ui::SettingsDialog settings(&window);
    settings.findChild<QTabWidget*>()->setCurrentIndex(2); // Evaluation
    settings.show();
    settle(500);
    ok = grab(&settings, out + u"/settings-evaluation.png") && ok;
    ui::Settings::set(ui::settings::confineCandidates, true);
    return ok;
}

// File > Session Library over two copies of the example session (one cut after its eighth
// evaluation, as if killed there), the comparison of the two, and two nodes of one compared.
bool libraryShot(ui::MainWindow& window, const QString& out)
{
    QTemporaryDir dir;
    const std::filesystem::path folder = std::filesystem::path(dir.path().toStdString()) / "sessions";
    std::filesystem::create_directories(folder);
    const std::filesystem::path full = folder / "matmul-ksearch", cut = folder / "matmul-killed-early";
    std::filesystem::copy(ui::MainWindow::exampleSession(), full, std::filesystem::copy_options::recursive);
    test::copySessionCutShort(ui::MainWindow::exampleSession(), cut, 8);
    ui::Settings::set(ui::settings::sessionsFolder, QString::fromStdString(folder.string()));
    ui::Settings::set(ui::settings::recentSessions, QStringList());
    ui::SessionLibraryDialog* library = window.showSessionLibrary();
    QSignalSpy loaded(library, &ui::SessionLibraryDialog::loaded);
    if (!loaded.wait(30000))
        return false;
    library->select({std::filesystem::canonical(full), std::filesystem::canonical(cut)});
    settle(500);
    bool ok = grab(library, out + u"/session-library.png");
    ui::SessionCompareDialog* compare = library->compareSelected();
    if (!compare)
        return false;
    settle(800);
    ok = grab(compare, out + u"/session-compare.png") && ok;
    compare->setXAxis(ui::SessionCompareDialog::XAxis::Seconds);
    settle(500);
    ok = grab(compare, out + u"/session-compare-time.png") && ok;
    compare->close();
    library->close();
    // Node > Compare With Another Node on the example: its first refinement against its best.
    if (!window.openExample())
        return false;
    ui::NodeCompareDialog* nodes = window.compareNodes(QStringLiteral("n1"), QStringLiteral("n8"));
    if (!nodes)
        return false;
    settle(800);
    ok = grab(nodes, out + u"/node-compare.png") && ok;
    nodes->close();
    // Charts > Per workload of the example.
    window.charts()->findChild<QTabWidget*>(QStringLiteral("chartTabs"))->setCurrentIndex(3);
    settle(500);
    return grab(window.charts(), out + u"/per-workload.png") && ok;
}

// The window at the two sizes issue #16 names, the example open on its best node with the
// inspector on its Attempts tab (the widest tables): nothing may be cut off at either.
bool sizesShot(ui::MainWindow& window, const QString& out)
{
    if (!window.openExample())
        return false;
    const SearchState& s = window.document().state();
    window.selectNode(QString::fromStdString(s.tree.attempt(*s.bestAttempt())->node));
    window.inspector()->findChild<QTabWidget*>(QStringLiteral("inspectorTabs"))->setCurrentIndex(1);
    bool ok = true;
    for (const QSize size : {QSize(1280, 800), QSize(2560, 1440)}) {
        window.showNormal();
        window.resize(size);
        settle(300);
        window.resetLayout(); // as a first start at that size lays it out
        settle(800);
        ok = grab(&window, out + QStringLiteral("/window-%1x%2.png").arg(size.width()).arg(size.height())) && ok;
    }
    return ok;
}

// File > Export with a Dispatching Kernel on a scale-task session whose two kernels are each
// slow on one workload: the window's status bar with both J once they are measured.
bool dispatchShot(ui::MainWindow& window, const QString& out)
{
    QTemporaryDir dir;
    const std::filesystem::path root = dir.path().toStdString();
    test::writeTwoWorkloadScaleTask(root / "scale");
    const auto session = test::writeScaleSession(
        root, "two-kernels", {test::shapedScaleKernel("a->n > 10000"), test::shapedScaleKernel("a->n <= 10000")});
    if (!window.openSession(QString::fromStdString(session.string()), false))
        return false;
    window.charts()->findChild<QTabWidget*>(QStringLiteral("chartTabs"))->setCurrentIndex(3);
    QSignalSpy done(&window, &ui::MainWindow::dispatchExported);
    if (!window.exportDispatching(QString::fromStdString((root / "out").string())))
        return false;
    if (done.isEmpty() && !done.wait(120000))
        return false;
    settle(500);
    return grab(&window, out + u"/dispatch-exported.png");
}

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    const QString out = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("screenshots");
    QDir().mkpath(out);
    qputenv("KS_FAKE_LLM_MODE", "demo");
    ui::Settings::set(ui::settings::benchSeconds, 0.1);

    ui::MainWindow window;
    window.resize(1600, 980);
    window.move(0, 0);
    window.show();
    settle(500);

    const QLatin1String mode(argc > 2 ? argv[2] : "");
    if (mode == QLatin1String("--workers-only"))
        return workersShot(window, out) ? 0 : 1;
    if (mode == QLatin1String("--settings-only"))
        return settingsShot(window, out) ? 0 : 1;
    if (mode == QLatin1String("--sanitizer-only"))
        return sanitizerShot(window, out) ? 0 : 1;
    if (mode == QLatin1String("--dispatch-only"))
        return dispatchShot(window, out) ? 0 : 1;
    if (mode == QLatin1String("--sizes-only"))
        return sizesShot(window, out) ? 0 : 1;
    if (mode == QLatin1String("--library-only"))
        return libraryShot(window, out) ? 0 : 1;
    if (mode == QLatin1String("--confinement-only"))
        return confinementShot(window, out) ? 0 : 1;
    if (mode == QLatin1String("--code-only"))
        return codeShot(window, out) && kernelsShot(window, out) ? 0 : 1;
    // The New Search dialog with one of the paper's tasks chosen: the task list and its details.
    {
        ui::NewSearchDialog dialog(&window);
        dialog.selectTask(QStringLiteral("mla_paged_decode_h16_ckv512_kpe64_ps1"));
        dialog.show();
        settle(600);
        if (!grab(&dialog, out + u"/new-search.png"))
            return 1;
    }
    if (argc > 2 && QLatin1String(argv[2]) == QLatin1String("--new-search-only"))
        return 0;

    SessionConfig c = test::demoSearchConfig(24, 0.05);
    c.label = "screenshot run: scripted demo LLM, host backend";
    QTemporaryDir dir;
    if (!window.startSearch(std::filesystem::path(dir.path().toStdString()) / "session", c))
        return 1;
    // Mid-run: once the third action is under way.
    int actions = 0;
    QObject::connect(&window.document(), &ui::SearchDocument::eventShown, &window,
        [&](const SearchEvent& e) { actions += std::holds_alternative<ev::ActionStarted>(e->body) ? 1 : 0; });
    while (actions < 3)
        settle(100);
    settle(1500);
    window.selectNode(QString::fromStdString(window.document().state().actions.front().node));
    settle(800);
    bool ok = grab(&window, out + u"/main-window.png");

    // Let it finish, then the inspector with a diff on a refinement and each chart.
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    finished.wait(600000);
    window.selectNode(QStringLiteral("n6"));
    auto* tabs = window.inspector()->findChild<QTabWidget*>(QStringLiteral("inspectorTabs"));
    tabs->setCurrentIndex(2);
    window.inspector()->compareWith(ui::NodeInspector::Compare::Start);
    settle(500);
    ok = grab(window.inspector(), out + u"/inspector-diff.png") && ok;
    auto* chartTabs = window.charts()->findChild<QTabWidget*>(QStringLiteral("chartTabs"));
    const char* names[] = {"chart-progress.png", "chart-speedup.png", "chart-coverage.png"};
    for (int i = 0; i < 3; ++i) {
        chartTabs->setCurrentIndex(i);
        settle(400);
        ok = grab(window.charts(), out + u'/' + QLatin1String(names[i])) && ok;
    }
    tabs->setCurrentIndex(1);
    settle(300);
    ok = grab(&window, out + u"/main-window-finished.png") && ok;
    // The event log, one line per journal event.
    if (QWidget* log = window.findChild<QWidget*>(QStringLiteral("eventLog"))) {
        QWidget* dock = log;
        while (dock && !qobject_cast<QDockWidget*>(dock))
            dock = dock->parentWidget();
        if (dock) {
            dock->raise();
            settle(400);
            ok = grab(dock, out + u"/event-log.png") && ok;
        }
    }
    return workersShot(window, out) && ok ? 0 : 1;
}
