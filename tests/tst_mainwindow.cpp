#include "guitestsupport.h"
#include "testmain.h"
#include "testsupport.h"

#include <search/strategy.h>
#include <util/linediff.h>

#include <QAbstractItemModelTester>
#include <QBarSeries>
#include <QBarSet>
#include <QChartView>
#include <QComboBox>
#include <QDialog>
#include <QDockWidget>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QListView>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScatterSeries>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSlider>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>

#include <algorithm>
#include <chartspanel.h>
#include <cmath>
#include <codeview.h>
#include <mainwindow.h>
#include <newsearchdialog.h>
#include <nodecomparedialog.h>
#include <nodeinspector.h>
#include <nodeitem.h>
#include <nodetablemodel.h>
#include <sanitizer.h>
#include <treegraphview.h>
#include <workloadbestview.h>

using namespace ks;

// The window on the bundled example session, read-only: graph, table, inspector, charts, log and
// the history slider all show the same search.
class TestMainWindow : public QObject
{
    Q_OBJECT
private slots:
    void showsTasks();
    void opensTheExample();
    void historySliderReplays();
    void newSearchOffersTheBackendsLanguages();
    void sanitizerIsOfferedOnCudaAttempts();
    void inspectorMarksHeldOutWorkloads();
    void inspectorShowsKernelResources();
    void filterNarrowsTableAndGraph_data();
    void filterNarrowsTableAndGraph();
    void keyboardWalksTheTree_data();
    void keyboardWalksTheTree();
    void inspectorComparesPrograms_data();
    void inspectorComparesPrograms();
    void comparesTwoNodes();
    void showsTheBestAttemptPerWorkload();
    void intentsFitTwoLines_data();
    void intentsFitTwoLines();
    void resetLayoutSharesTheWindow_data();
    void resetLayoutSharesTheWindow();
    void inspectorCellsHoldTheirText();
};

void TestMainWindow::showsTasks()
{
    ui::MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* table = window.findChild<QTableWidget*>(u"taskTable"_qs);
    QVERIFY(table);
    QAbstractItemModelTester tester(table->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    int row = -1;
    for (int r = 0; r < table->rowCount(); ++r)
        if (table->item(r, 0)->text() == u"rmsnorm")
            row = r;
    QVERIFY(row >= 0);
    QCOMPARE(table->item(row, 3)->text(), u"valid"_qs);
    QCOMPARE(table->item(row, 2)->data(Qt::DisplayRole).toInt(), 11);
    QVERIFY2(
        table->item(row, 2)->toolTip().contains(u"2 of them held out"_qs), qPrintable(table->item(row, 2)->toolTip()));
    const int rows = table->rowCount();
    window.reloadTasks(); // a reload rebuilds the same rows (the tester checks every signal)
    QCOMPARE(table->rowCount(), rows);
    QVERIFY(window.statusBar()->currentMessage().contains(u"valid"));
}

void TestMainWindow::opensTheExample()
{
    ui::MainWindow window;
    auto* table = window.findChild<QTableView*>(u"nodeTable"_qs);
    QAbstractItemModelTester tableTester(table->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto* log = window.findChild<QListView*>(u"eventLog"_qs);
    QAbstractItemModelTester logTester(log->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    window.show();
    QVERIFY(!ui::MainWindow::exampleSession().empty());
    QSignalSpy notices(&window, &ui::MainWindow::notified);
    QVERIFY(window.openExample());
    QCOMPARE(notices.count(), 0); // a session opened is not news: its best and its end are old
    // The example says how it was made, above the tree.
    const auto* sessionLabel = window.findChild<QLabel*>(u"sessionLabel"_qs);
    QVERIFY(sessionLabel->isVisible());
    QVERIFY(sessionLabel->text().contains(u"no model was called"_qs));
    const SearchState& s = window.document().state();
    QVERIFY(!s.finishedReason.empty());
    QVERIFY(s.evaluations > 10);
    QTRY_COMPARE(window.graph()->itemCount(), s.tree.nodeCount());
    QTRY_COMPARE(window.graph()->edgeCount(), s.tree.nodeCount() - 1); // every node but the root hangs from a parent
    QCOMPARE(table->model()->rowCount(), s.tree.nodeCount());
    QCOMPARE(log->model()->rowCount(), static_cast<int>(window.document().events().size()));
    // The best node is selected and inspected.
    const std::string bestNode = s.tree.attempt(*s.bestAttempt())->node;
    QCOMPARE(window.currentNode(), QString::fromStdString(bestNode));
    QCOMPARE(window.inspector()->node(), QString::fromStdString(bestNode));
    auto* attempts = window.inspector()->findChild<QTableView*>(u"attemptTable"_qs);
    QCOMPARE(attempts->model()->rowCount(), static_cast<int>(s.tree.find(bestNode)->attempts.size()));
    auto* workloads = window.inspector()->findChild<QTableView*>(u"workloadTable"_qs);
    QCOMPARE(workloads->model()->rowCount(), 5);
    // Charts: a point per evaluation, and a speedup per workload of the best kernel.
    int points = 0;
    for (QAbstractSeries* series : window.charts()->progressView()->chart()->series())
        if (auto* scatter = qobject_cast<QScatterSeries*>(series))
            points += scatter->count();
    QCOMPARE(points, s.evaluations);
    int speedups = 0;
    for (QAbstractSeries* series : window.charts()->speedupView()->chart()->series())
        if (auto* scatter = qobject_cast<QScatterSeries*>(series))
            speedups += scatter->count();
    QCOMPARE(speedups, 5);
    // Read-only: no steering.
    QVERIFY(!window.findChild<QAction*>(u"actionSetValue"_qs)->isEnabled());
    QVERIFY(!window.findChild<QAction*>(u"actionPause"_qs)->isEnabled());
    // Charts save as PNG and SVG.
    QTemporaryDir dir;
    QString error;
    for (const QString& name : {u"progress.png"_qs, u"speedup.svg"_qs}) {
        QChartView* view =
            name.startsWith(u"progress") ? window.charts()->progressView() : window.charts()->speedupView();
        QVERIFY2(ui::ChartsPanel::saveChart(view, dir.filePath(name), &error), qPrintable(error));
        QVERIFY(QFileInfo(dir.filePath(name)).size() > 1000);
    }
    QVERIFY(test::readText(dir.filePath(u"speedup.svg"_qs).toStdString()).find("<svg") != std::string::npos);
}

void TestMainWindow::historySliderReplays()
{
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openExample());
    auto* slider = window.findChild<QSlider*>(u"historySlider"_qs);
    const int total = static_cast<int>(window.document().events().size());
    QCOMPARE(slider->maximum(), total);
    QCOMPARE(slider->value(), total);
    // Back to the point right after the first action started: the tree had only the init intents.
    int firstAction = 0;
    for (int i = 0; i < total; ++i)
        if (std::holds_alternative<ev::ActionStarted>(window.document().events()[static_cast<std::size_t>(i)]->body)) {
            firstAction = i + 1;
            break;
        }
    slider->setValue(firstAction);
    QCOMPARE(window.document().shown(), firstAction);
    const SearchState& early = window.document().state();
    QCOMPARE(early.evaluations, 0);
    QCOMPARE(early.tree.nodeCount(), 4); // the root and three intents
    QTRY_COMPARE(window.graph()->itemCount(), 4);
    QTRY_COMPARE(window.graph()->edgeCount(), 3);
    QCOMPARE(window.findChild<QTableView*>(u"nodeTable"_qs)->model()->rowCount(), 4);
    // And forward again, one event at a time.
    for (int v = firstAction + 1; v <= firstAction + 5; ++v)
        slider->setValue(v);
    QCOMPARE(window.document().shown(), firstAction + 5);
    slider->setValue(total);
    QTRY_COMPARE(window.graph()->itemCount(), window.document().state().tree.nodeCount());
}

// The candidate language follows the backend: compiled CUDA, Triton and PyTorch on the GPU;
// compiled C++ and PyTorch on the host. The choice lands in the session's config.
void TestMainWindow::newSearchOffersTheBackendsLanguages()
{
    ui::NewSearchDialog dialog;
    auto* backend = dialog.findChild<QComboBox*>(u"backend"_qs);
    auto* language = dialog.findChild<QComboBox*>(u"language"_qs);
    QVERIFY(backend && language);
    const auto items = [language] {
        QStringList l;
        for (int i = 0; i < language->count(); ++i)
            l << language->itemText(i);
        return l;
    };
    backend->setCurrentText(u"cuda"_qs);
    QCOMPARE(items(), (QStringList {u"cuda"_qs, u"triton"_qs, u"python"_qs}));
    language->setCurrentText(u"python"_qs);
    backend->setCurrentText(u"host"_qs);
    QCOMPARE(items(), (QStringList {u"cpp"_qs, u"python"_qs}));
    QCOMPARE(language->currentText(), u"python"_qs); // kept where the new backend runs it
    backend->setCurrentText(u"cuda"_qs);
    language->setCurrentText(u"triton"_qs);
    backend->setCurrentText(u"host"_qs);
    QCOMPARE(language->currentText(), u"cpp"_qs); // triton does not run on the host

    QTemporaryDir dir;
    dialog.selectTask(u"rmsnorm"_qs);
    // rmsnorm's held-out workloads are marked, the others not.
    auto* workloads = dialog.findChild<QTableWidget*>(u"taskWorkloads"_qs);
    QVERIFY(workloads);
    QCOMPARE(workloads->rowCount(), 11);
    QStringList heldOut;
    for (int r = 0; r < workloads->rowCount(); ++r)
        if (workloads->item(r, 1)->text().endsWith(u"(held out)"_qs))
            heldOut << workloads->item(r, 0)->text();
    QCOMPARE(heldOut, (QStringList {u"933a3f15"_qs, u"38a26277"_qs}));
    dialog.findChild<QLineEdit*>(u"sessionFolder"_qs)->setText(dir.path() + u"/s"_qs);
    language->setCurrentText(u"python"_qs);
    dialog.findChild<QComboBox*>(u"plannerProvider"_qs)->setCurrentText(u"manual"_qs);
    dialog.findChild<QLineEdit*>(u"plannerModel"_qs)->setText(u"by hand"_qs);
    QString error;
    const auto config = dialog.config(&error);
    QVERIFY2(config, qPrintable(error));
    QCOMPARE(config->backend, std::string("host"));
    QVERIFY(config->language == Language::Python);
    QCOMPARE(config->programSuffix(), std::string(".py"));
}

// The inspector offers compute-sanitizer on an attempt with a CUDA program; the button runs a real
// evaluator's sanitize() in a thread and shows its report in a dialog (issue #15 point 7).
void TestMainWindow::sanitizerIsOfferedOnCudaAttempts()
{
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openExample());
    auto* button = window.inspector()->findChild<QPushButton*>(u"sanitizeButton"_qs);
    QVERIFY(button);
    QVERIFY(!button->isEnabled()); // the example's candidates are C++ on the host
    QVERIFY2(button->toolTip().contains(u"cpp on the host backend"_qs), qPrintable(button->toolTip()));

    // The same session as if it had searched CUDA kernels.
    QTemporaryDir dir;
    const std::filesystem::path copy = std::filesystem::path(dir.path().toStdString()) / "cuda-session";
    test::copySessionAsCuda(ui::MainWindow::exampleSession(), copy);
    QVERIFY(window.openSession(QString::fromStdString(copy.string()), false));
    QVERIFY(button->isEnabled());
    auto* tool = window.inspector()->findChild<QComboBox*>(u"sanitizerTool"_qs);
    QCOMPARE(tool->count(), 4);
    tool->setCurrentIndex(tool->findText(u"racecheck"_qs));
    button->click();
    QTRY_VERIFY_WITH_TIMEOUT(window.findChild<QDialog*>(u"sanitizerDialog"_qs), 120000);
    const QString report = window.findChild<QDialog*>(u"sanitizerDialog"_qs)
                               ->findChild<QPlainTextEdit*>(u"sanitizerReport"_qs)
                               ->toPlainText();
    QVERIFY2(report.startsWith(u"compute-sanitizer --tool racecheck"_qs), qPrintable(report));
    if (computeSanitizerPath().empty()) // CI: the evaluator says why, naming what is missing
        QVERIFY2(report.contains(u"compute-sanitizer was not found"_qs), qPrintable(report));
    QVERIFY(window.statusBar()->currentMessage().contains(u"attempt"_qs));
}

// A workload the code policy was never shown (held_out_workloads) is shown whole to a person, and
// marked: the example session, its first workload recorded as held out in every evaluation.
void TestMainWindow::inspectorMarksHeldOutWorkloads()
{
    QTemporaryDir dir;
    const std::filesystem::path copy = std::filesystem::path(dir.path().toStdString()) / "held-out";
    test::copyTree(ui::MainWindow::exampleSession(), copy);
    for (const char* file : {"journal.jsonl", "tree.json"}) {
        std::string text = test::readText(copy / file);
        const std::string plain = "\"id\":\"sq-128\",", marked = "\"held_out\":true,\"id\":\"sq-128\",";
        for (auto at = text.find(plain); at != std::string::npos; at = text.find(plain, at + marked.size()))
            text.replace(at, plain.size(), marked);
        test::writeText(copy / file, text);
    }
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openSession(QString::fromStdString(copy.string()), false));
    const SearchState& s = window.document().state();
    window.selectNode(QString::fromStdString(s.tree.attempt(*s.bestAttempt())->node));
    const QAbstractItemModel* table = window.inspector()->findChild<QTableView*>(u"workloadTable"_qs)->model();
    QVERIFY(table->rowCount() >= 2);
    const QString first = table->index(0, 0).data().toString();
    QVERIFY2(first.startsWith(u"held out: m=128"_qs), qPrintable(first));
    QVERIFY(table->index(0, 0).data(Qt::ToolTipRole).toString().contains(u"never shown to the code policy"_qs));
    QVERIFY(!table->index(0, 2).data().toString().isEmpty()); // its latency, for a person
    QVERIFY(!table->index(1, 0).data().toString().startsWith(u"held out"_qs));
}

// The Attempts tab's ptxas report: hidden for host programs (there is none), one row per kernel
// for CUDA ones, names demangled (the mangled name in the tooltip), spills marked.
void TestMainWindow::inspectorShowsKernelResources()
{
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openExample());
    window.selectNode(u"n1"_qs);
    auto* view = window.inspector()->findChild<QTableView*>(u"kernelTable"_qs);
    QVERIFY(view);
    QAbstractItemModelTester tester(view->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(view->model()->rowCount(), 0);
    QVERIFY(view->isHidden()); // on the Attempts tab, which is not the one shown

    QTemporaryDir dir;
    const std::filesystem::path copy = std::filesystem::path(dir.path().toStdString()) / "cuda-session";
    test::copySessionAsCuda(ui::MainWindow::exampleSession(), copy,
        R"([{"kernel": "_ZN42_GLOBAL__N__b4f10139_11_baseline_cu_ks_run13output_kernelILi64EEEv6KsArgsPKfPK6__halfS5_i",
             "registers": 168, "shared_bytes": 512, "stack_bytes": 0, "spill_bytes": 0},
            {"kernel": "ks_scale", "registers": 255, "shared_bytes": 0, "stack_bytes": 48, "spill_bytes": 24}])");
    QVERIFY(window.openSession(QString::fromStdString(copy.string()), false));
    window.selectNode(u"n1"_qs);
    QAbstractItemModelTester copyTester(view->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(!view->isHidden());
    const QAbstractItemModel* m = view->model();
    QCOMPARE(m->rowCount(), 2);
    QCOMPARE(m->index(0, 0).data().toString(), u"output_kernel<64>"_qs);
    QVERIFY(m->index(0, 0).data(Qt::ToolTipRole).toString().startsWith(u"_ZN42_GLOBAL"_qs));
    QCOMPARE(m->index(0, 1).data().toString(), u"168"_qs);
    QCOMPARE(m->index(0, 2).data().toString(), u"512"_qs);
    QCOMPARE(m->index(1, 0).data().toString(), u"ks_scale"_qs);
    QCOMPARE(m->index(1, 3).data().toString(), u"48"_qs);
    QCOMPARE(m->index(1, 4).data().toString(), u"24"_qs);
    QVERIFY(m->index(1, 4).data(Qt::ForegroundRole).isValid()); // spills stand out
    QVERIFY(!m->index(0, 4).data(Qt::ForegroundRole).isValid());
    // The node's header names its best attempt and that attempt's latency.
    const QString header = window.inspector()->findChild<QLabel*>(u"inspectorHeader"_qs)->text();
    QVERIFY2(header.contains(u"best J"_qs) && header.contains(u" us)"_qs), qPrintable(header));
}

void TestMainWindow::filterNarrowsTableAndGraph_data()
{
    QTest::addColumn<QString>("filter");
    QTest::addColumn<QStringList>("nodes"); // the table's rows, by id; the graph dims every other node
    // The example: root, n1..n11; n3 pruned, n10 and n11 open; n2's only attempt did not compile,
    // n6 has one attempt with wrong results; n5, n7, n10, n11 unroll the k loop.
    QTest::newRow("nothing typed") << "" << QStringList();
    QTest::newRow("a status") << "pruned" << QStringList({u"n3"_qs});
    QTest::newRow("a verdict, any case") << "Compile_Error" << QStringList({u"n2"_qs});
    QTest::newRow("another verdict") << "incorrect_numerical" << QStringList({u"n6"_qs});
    QTest::newRow("every word must match") << "unroll open" << QStringList({u"n10"_qs, u"n11"_qs});
    QTest::newRow("matches nothing") << "no-such-word" << QStringList({u"-"_qs});
}

// The Nodes dock's filter over intents, statuses and verdicts: the table keeps the matching rows,
// the graph draws the others faint, and clearing it brings everything back.
void TestMainWindow::filterNarrowsTableAndGraph()
{
    QFETCH(QString, filter);
    QFETCH(QStringList, nodes);
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openExample());
    auto* table = window.findChild<QTableView*>(u"nodeTable"_qs);
    QAbstractItemModelTester tester(table->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const int all = window.document().state().tree.nodeCount();
    window.nodeFilter()->setText(filter);
    QStringList shown;
    for (int r = 0; r < table->model()->rowCount(); ++r)
        shown << table->model()->index(r, 0).data(ui::NodeTableModel::NodeIdRole).toString();
    shown.sort();
    if (filter.isEmpty()) {
        QCOMPARE(shown.size(), all);
        QCOMPARE(window.graph()->dimmedCount(), 0);
        return;
    }
    if (nodes == QStringList({u"-"_qs}))
        nodes.clear();
    nodes.sort();
    QCOMPARE(shown, nodes);
    QCOMPARE(window.graph()->dimmedCount(), all - static_cast<int>(nodes.size()));
    window.nodeFilter()->clear();
    QCOMPARE(table->model()->rowCount(), all);
    QCOMPARE(window.graph()->dimmedCount(), 0);
}

void TestMainWindow::keyboardWalksTheTree_data()
{
    QTest::addColumn<QString>("from");
    QTest::addColumn<int>("key");
    QTest::addColumn<QString>("to");
    // The example's tree: root -> n1, n2, n3; n1 -> n4, n5; n4 -> n6 -> n7 -> n8 -> n10.
    QTest::newRow("up to the parent") << "n4" << int(Qt::Key_Up) << "n1";
    QTest::newRow("the root has none") << "root" << int(Qt::Key_Up) << "root";
    QTest::newRow("down to the first child") << "n1" << int(Qt::Key_Down) << "n4";
    QTest::newRow("a leaf has none") << "n10" << int(Qt::Key_Down) << "n10";
    QTest::newRow("right to the next sibling") << "n4" << int(Qt::Key_Right) << "n5";
    QTest::newRow("left to the one before") << "n2" << int(Qt::Key_Left) << "n1";
    QTest::newRow("the last sibling stays") << "n3" << int(Qt::Key_Right) << "n3";
    // Opening a session selects the node of its best kernel (n8 in the example).
    QTest::newRow("from the node the session opens on") << "" << int(Qt::Key_Down) << "n10";
}

// Arrows on the graph move the selection through the tree, and the inspector follows; Enter
// brings the inspector forward on the selected node.
void TestMainWindow::keyboardWalksTheTree()
{
    QFETCH(QString, from);
    QFETCH(int, key);
    QFETCH(QString, to);
    ui::MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openExample());
    if (!from.isEmpty())
        window.selectNode(from);
    window.graph()->setFocus();
    QTest::keyClick(window.graph(), static_cast<Qt::Key>(key));
    QCOMPARE(window.graph()->selectedNode(), to);
    QCOMPARE(window.inspector()->node(), to);
    auto* dock = window.findChild<QDockWidget*>(u"inspectorDock"_qs);
    dock->hide();
    QTest::keyClick(window.graph(), Qt::Key_Return);
    QVERIFY(dock->isVisible());
    QCOMPARE(window.inspector()->node(), to);
}

Q_DECLARE_METATYPE(ks::ui::NodeInspector::Compare)

void TestMainWindow::inspectorComparesPrograms_data()
{
    QTest::addColumn<ui::NodeInspector::Compare>("compare");
    QTest::newRow("nothing") << ui::NodeInspector::Compare::Nothing;
    QTest::newRow("the program the action started from") << ui::NodeInspector::Compare::Start;
    QTest::newRow("the node's first attempt") << ui::NodeInspector::Compare::FirstAttempt;
    QTest::newRow("an attempt of another node") << ui::NodeInspector::Compare::Attempt;
}

// The Code tab on the example: a refined node with several programs, its last attempt shown and
// compared with each kind of other program; the diff shown is the line diff of the two sources.
void TestMainWindow::inspectorComparesPrograms()
{
    QFETCH(ui::NodeInspector::Compare, compare);
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openExample());
    const SearchState& s = window.document().state();
    const auto programs = [&s](const SearchNode& n) {
        return std::count_if(
            n.attempts.begin(), n.attempts.end(), [&s](int i) { return !s.tree.attempt(i)->program.empty(); });
    };
    const auto node = std::find_if(s.tree.nodes().begin(), s.tree.nodes().end(),
        [&](const SearchNode& n) { return programs(n) >= 2 && startingAttempt(s, n.id); });
    QVERIFY2(node != s.tree.nodes().end(), "the example has no refined node with two programs");
    const Attempt& shown = *s.tree.attempt(node->attempts.back());
    QVERIFY(!shown.program.empty());
    const auto other = std::find_if(s.tree.attempts().begin(), s.tree.attempts().end(),
        [&](const Attempt& a) { return a.node != node->id && !a.program.empty(); });
    QVERIFY(other != s.tree.attempts().end());

    ui::NodeInspector* inspector = window.inspector();
    window.selectNode(QString::fromStdString(node->id));
    inspector->showAttempt(shown.index);
    auto* choices = inspector->findChild<QComboBox*>(u"compareWith"_qs);
    const auto withPrograms = std::count_if(
        s.tree.attempts().begin(), s.tree.attempts().end(), [](const Attempt& a) { return !a.program.empty(); });
    QCOMPARE(choices->count(), 3 + static_cast<int>(withPrograms) - 1); // every other attempt with a program

    inspector->compareWith(compare, other->index);
    auto* code = inspector->findChild<ui::CodeView*>(u"codeView"_qs);
    const QString summary = inspector->findChild<QLabel*>(u"compareSummary"_qs)->text();
    const std::string source = window.document().programSource(shown.program);
    if (compare == ui::NodeInspector::Compare::Nothing) {
        QVERIFY(!code->isDiff());
        QString text = QString::fromStdString(source);
        if (text.endsWith(u'\n')) // the last newline ends the last line
            text.chop(1);
        QCOMPARE(code->toPlainText(), text);
        QCOMPARE(code->document()->blockCount(), static_cast<int>(text.count(u'\n')) + 1);
        QVERIFY2(summary.contains(u"lines of cpp"_qs), qPrintable(summary));
        return;
    }
    const int base = compare == ui::NodeInspector::Compare::Start ? *startingAttempt(s, node->id)
        : compare == ui::NodeInspector::Compare::FirstAttempt     ? *std::find_if(
                  node->attempts.begin(), node->attempts.end(), [&s](int i) { return !s.tree.attempt(i)->program.empty(); })
                                                              : other->index;
    const auto expected = diffLines(window.document().programSource(s.tree.attempt(base)->program), source);
    QVERIFY(code->isDiff());
    QCOMPARE(code->addedLines(),
        static_cast<int>(
            std::count_if(expected.begin(), expected.end(), [](const DiffLine& l) { return l.op == '+'; })));
    QCOMPARE(code->removedLines(),
        static_cast<int>(
            std::count_if(expected.begin(), expected.end(), [](const DiffLine& l) { return l.op == '-'; })));
    QCOMPARE(code->document()->blockCount(), static_cast<int>(expected.size()));
    QVERIFY2(summary.startsWith(QStringLiteral("Against the program of %1 (attempt %2")
                                    .arg(QString::fromStdString(s.tree.attempt(base)->node))
                                    .arg(base)),
        qPrintable(summary));
    // The choice holds while another attempt of the node is looked at.
    const QString chosen = choices->currentText();
    inspector->showAttempt(node->attempts.front());
    QCOMPARE(choices->currentText(), chosen);
}

// Node > Compare With Another Node on the example: each node stands for its best passing attempt
// (the last evaluated one when none passed), the chart has a bar per workload for each, the table
// names the faster on each workload with the ratio, and the code tab is the diff of the two.
void TestMainWindow::comparesTwoNodes()
{
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openExample());
    const SearchState& s = window.document().state();
    const auto bestOf = [&](const char* node) {
        int best = -1;
        for (const Attempt& a : s.tree.attempts())
            if (a.node == node && a.passed() && (best < 0 || a.score() > s.tree.attempt(best)->score()))
                best = a.index;
        return best;
    };
    const int first = ui::NodeCompareDialog::representativeAttempt(s, "n1");
    const int second = ui::NodeCompareDialog::representativeAttempt(s, "n8");
    QCOMPARE(first, bestOf("n1"));
    QCOMPARE(second, bestOf("n8"));
    QCOMPARE(ui::NodeCompareDialog::representativeAttempt(s, "root"), -1); // never evaluated
    const int failedOnly = ui::NodeCompareDialog::representativeAttempt(s, "n2");
    QVERIFY(failedOnly >= 0 && !s.tree.attempt(failedOnly)->passed()); // its last evaluated attempt

    window.selectNode(u"n1"_qs);
    auto* action = window.findChild<QAction*>(u"actionCompareNodes"_qs);
    QVERIFY(action->isEnabled());
    QString offered;
    test::answerNextDialog([&](QDialog* d) {
        auto* box = qobject_cast<QInputDialog*>(d);
        offered = box->comboBoxItems().join(u'|');
        auto* combo = box->findChild<QComboBox*>();
        for (int i = 0; combo && i < combo->count(); ++i)
            if (combo->itemText(i).startsWith(u"n8:"))
                combo->setCurrentIndex(i);
        d->accept();
    });
    action->trigger();
    QVERIFY2(!offered.contains(u"n1:") && !offered.contains(u"root:"), qPrintable(offered));
    auto* dialog = window.findChild<ui::NodeCompareDialog*>(u"nodeCompare"_qs);
    QVERIFY(dialog);

    const Attempt& a = *s.tree.attempt(first);
    const Attempt& b = *s.tree.attempt(second);
    auto* chart = dialog->findChild<QChartView*>(u"nodeCompareChart"_qs);
    auto* bars = qobject_cast<QBarSeries*>(chart->chart()->series().value(0));
    QVERIFY(bars);
    QCOMPARE(bars->count(), 2);
    const int workloads = static_cast<int>(a.evaluation.workloads.size());
    QCOMPARE(bars->barSets()[0]->count(), workloads);
    QCOMPARE(bars->barSets()[1]->count(), workloads);
    auto* table = dialog->findChild<QTableWidget*>(u"nodeCompareTable"_qs);
    QCOMPARE(table->rowCount(), workloads);
    for (int row = 0; row < workloads; ++row) {
        const double sa = a.evaluation.workloads[static_cast<std::size_t>(row)].speedup;
        const double sb = b.evaluation.workloads[static_cast<std::size_t>(row)].speedup;
        QCOMPARE(bars->barSets()[0]->at(row), sa);
        QCOMPARE(bars->barSets()[1]->at(row), sb);
        const QString faster = table->item(row, 3)->text();
        const QString expected =
            sa > sb ? u"A, %1x B"_qs.arg(sa / sb, 0, 'f', 2) : u"B, %1x A"_qs.arg(sb / sa, 0, 'f', 2);
        QCOMPARE(faster, expected);
    }
    auto* code = dialog->findChild<ui::CodeView*>(u"nodeCompareCode"_qs);
    QVERIFY(code->isDiff());
    const auto diff = diffLines(window.document().programSource(a.program), window.document().programSource(b.program));
    QCOMPARE(code->addedLines(),
        static_cast<int>(std::count_if(diff.begin(), diff.end(), [](const DiffLine& l) { return l.op == '+'; })));
    QVERIFY(code->addedLines() > 0);
}

// Charts > Per workload on the example: each workload's fastest passing attempt (found here by
// brute force over the journal's attempts), the best kernel's speedup there, the gain, and the
// J bound of a kernel choosing each workload's fastest; activating a row shows that attempt.
void TestMainWindow::showsTheBestAttemptPerWorkload()
{
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openExample());
    const SearchState& s = window.document().state();
    const Attempt& overall = *s.tree.attempt(*s.bestAttempt());
    auto* table = window.charts()->workloadBestView()->findChild<QTableWidget*>(u"workloadBestTable"_qs);
    QVERIFY(table);
    QCOMPARE(table->rowCount(), static_cast<int>(overall.evaluation.workloads.size()));
    double logBaseline = 0, logBest = 0;
    int elsewhere = 0, beyond = 0;
    for (int row = 0; row < table->rowCount(); ++row) {
        const WorkloadEvaluation& o = overall.evaluation.workloads[static_cast<std::size_t>(row)];
        const Attempt* fastest = nullptr;
        double latency = 0, p75 = 0;
        for (const Attempt& a : s.tree.attempts())
            for (const WorkloadEvaluation& w : a.evaluation.workloads)
                if (a.passed() && w.id == o.id && w.status == Verdict::Passed
                    && (!fastest || w.latencyMicros < latency)) {
                    fastest = &a;
                    latency = w.latencyMicros;
                    p75 = w.p75Micros;
                }
        QVERIFY(fastest);
        QCOMPARE(table->item(row, ui::WorkloadBestView::BestAttempt)->data(Qt::UserRole).toInt(), fastest->index);
        QCOMPARE(table->item(row, ui::WorkloadBestView::Latency)->text(), QString::number(latency, 'f', 2));
        // A gain whose quartiles overlap the best kernel's is marked as noise.
        const bool noise = fastest->index != overall.index && p75 >= o.p25Micros;
        QCOMPARE(table->item(row, ui::WorkloadBestView::Gain)->text(),
            QString::number(o.latencyMicros / latency, 'f', 2) + (noise ? u" (noise)"_qs : QString()));
        beyond += fastest->index != overall.index && !noise ? 1 : 0;
        QVERIFY(o.latencyMicros / latency >= 1.0);
        logBaseline += std::log(o.baselineLatencyMicros);
        logBest += std::log(latency);
        elsewhere += fastest->index != overall.index ? 1 : 0;
    }
    QVERIFY2(elsewhere > 0, "the example's best kernel is fastest everywhere: nothing to show");
    const double bound = 100.0 * std::exp((logBaseline - logBest) / table->rowCount());
    QVERIFY(bound >= overall.score());
    const QString summary = window.charts()->workloadBestView()->findChild<QLabel*>(u"workloadBestSummary"_qs)->text();
    QVERIFY2(summary.contains(u"at most J "_qs + QString::number(bound, 'f', 1)), qPrintable(summary));
    const QString counted = u"%1 of %2 workloads run fastest in another attempt (%3 beyond"_qs.arg(elsewhere)
                                .arg(table->rowCount())
                                .arg(beyond);
    QVERIFY2(summary.contains(counted), qPrintable(summary));

    const int row = [&] {
        for (int r = 0; r < table->rowCount(); ++r)
            if (table->item(r, ui::WorkloadBestView::BestAttempt)->data(Qt::UserRole).toInt() != overall.index)
                return r;
        return 0;
    }();
    const int chosen = table->item(row, ui::WorkloadBestView::BestAttempt)->data(Qt::UserRole).toInt();
    emit table->cellActivated(row, 0);
    QCOMPARE(window.currentNode(), QString::fromStdString(s.tree.attempt(chosen)->node));
}

void TestMainWindow::intentsFitTwoLines_data()
{
    QTest::addColumn<QString>("intent");
    QTest::newRow("short") << u"Tile the loops"_qs;
    QTest::newRow("two lines") << u"Reorder the loops to i-k-j so that the innermost loop streams"_qs;
    QTest::newRow("long") << u"Declare the row pointers __restrict__ so the compiler vectorises the inner loop "
                             "without runtime alias checks, then unroll it by four and hoist the loads"_qs;
    QTest::newRow("one long word") << QString(200, u'x');
}

// A node's intent is drawn in two lines at most, each within the box; the first line ends on a
// whole word, and nothing of the text is lost but an elided tail.
void TestMainWindow::intentsFitTwoLines()
{
    QFETCH(QString, intent);
    QFont font;
    font.setPointSizeF(8.5);
    const QFontMetrics fm(font);
    const int width = static_cast<int>(ui::NodeItem::kWidth - 16);
    const QString drawn = ui::NodeItem::twoLines(intent, fm, width);
    const QStringList lines = drawn.split(u'\n');
    QVERIFY(lines.size() <= 2);
    for (const QString& line : lines)
        QVERIFY2(fm.horizontalAdvance(line) <= width, qPrintable(line));
    if (fm.horizontalAdvance(intent) <= width)
        QCOMPARE(drawn, intent);
    if (lines.size() == 2) {
        QVERIFY(intent.startsWith(lines[0] + u' '));
        const QString rest = intent.mid(lines[0].size() + 1);
        QVERIFY(lines[1] == rest || lines[1].endsWith(QChar(0x2026)));
    }
}

void TestMainWindow::resetLayoutSharesTheWindow_data()
{
    QTest::addColumn<QSize>("size");
    QTest::newRow("1280 x 800") << QSize(1280, 800);
    QTest::newRow("2560 x 1440") << QSize(2560, 1440);
}

// View > Reset Layout gives the inspector a third of the width (its tables show every column
// of a workload there), the graph most of the rest, and the charts and nodes the lower part.
void TestMainWindow::resetLayoutSharesTheWindow()
{
    QFETCH(QSize, size);
    ui::MainWindow window;
    window.resize(size);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openExample());
    window.findChild<QAction*>(u"actionResetLayout"_qs)->trigger();
    QApplication::processEvents();
    auto* inspector = window.findChild<QDockWidget*>(u"inspectorDock"_qs);
    QVERIFY(inspector->width() >= std::max(400, size.width() * 30 / 100));
    QVERIFY(inspector->width() <= size.width() * 40 / 100);
    QVERIFY(window.graph()->width() > inspector->width());
    auto* charts = window.findChild<QDockWidget*>(u"chartsDock"_qs);
    QVERIFY(charts->height() >= size.height() * 30 / 100);
    // Every column of the workload table is on screen, none scrolled out of view.
    window.selectNode(
        QString::fromStdString(window.document().state().tree.attempt(*window.document().state().bestAttempt())->node));
    window.inspector()->findChild<QTabWidget*>(u"inspectorTabs"_qs)->setCurrentIndex(1); // Attempts
    auto* table = window.inspector()->findChild<QTableView*>(u"workloadTable"_qs);
    QApplication::processEvents();
    QVERIFY(table->isVisible());
    const int columns = table->model()->columnCount();
    int total = 0;
    for (int c = 0; c < columns; ++c)
        total += table->columnWidth(c);
    QVERIFY2(total <= table->viewport()->width() + 1,
        qPrintable(u"%1 of columns in %2 px"_qs.arg(total).arg(table->viewport()->width())));
    // The attempts above it neither: the verdict column gives way.
    auto* attempts = window.inspector()->findChild<QTableView*>(u"attemptTable"_qs);
    QVERIFY2(attempts->horizontalScrollBar()->maximum() == 0,
        qPrintable(u"attempts scroll sideways in %1 px"_qs.arg(attempts->viewport()->width())));
    // The Nodes table too: its narrow columns and some of the intent, without scrolling sideways.
    auto* nodes = window.findChild<QTableView*>(u"nodeTable"_qs);
    QVERIFY(nodes->isVisible());
    QString widths;
    for (int c = 0; c < nodes->model()->columnCount(); ++c)
        widths += QString::number(nodes->columnWidth(c)) + u' ';
    QVERIFY2(nodes->horizontalScrollBar()->maximum() == 0,
        qPrintable(widths + u"in "_qs + QString::number(nodes->viewport()->width())));
    QVERIFY(nodes->isColumnHidden(ui::NodeTableModel::Depth)); // shown from the header's menu
    window.findChild<QAction*>(u"nodeColumn%1"_qs.arg(ui::NodeTableModel::Depth))->trigger();
    QVERIFY(!nodes->isColumnHidden(ui::NodeTableModel::Depth));
    window.findChild<QAction*>(u"nodeColumn%1"_qs.arg(ui::NodeTableModel::Depth))->trigger();
    QVERIFY2(nodes->columnWidth(ui::NodeTableModel::Intent) >= 150,
        qPrintable(u"intent column %1 px"_qs.arg(nodes->columnWidth(ui::NodeTableModel::Intent))));
}

// No figure in the inspector is cut: every cell but the stretching column's holds its whole text.
// The node is shown before the window is first laid out, as when a session opens on its best
// node: the V history once showed "..." for its V and author there (the header measured its
// columns before the rows came).
void TestMainWindow::inspectorCellsHoldTheirText()
{
    ui::MainWindow window;
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.openExample());
    const SearchState& s = window.document().state();
    window.selectNode(QString::fromStdString(s.tree.attempt(*s.bestAttempt())->node));
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    // The V history first, on the tab shown from the start: showing a tab again lays its tables
    // out again, which would hide the fault.
    for (const auto& [name, stretch] :
        {std::pair {u"valueHistory"_qs, 3}, {u"workloadTable"_qs, 0}, {u"attemptTable"_qs, 2}}) {
        auto* view = window.inspector()->findChild<QTableView*>(name);
        if (name != u"valueHistory")
            window.inspector()->findChild<QTabWidget*>(u"inspectorTabs"_qs)->setCurrentIndex(1);
        QApplication::processEvents();
        const QFontMetrics fm(view->font());
        for (int row = 0; row < view->model()->rowCount(); ++row)
            for (int c = 0; c < view->model()->columnCount(); ++c) {
                const QString text = view->model()->index(row, c).data().toString();
                if (c != stretch && !text.isEmpty())
                    QVERIFY2(view->columnWidth(c) >= fm.horizontalAdvance(text),
                        qPrintable(
                            u"%1 column %2: \"%3\" in %4 px"_qs.arg(name).arg(c).arg(text).arg(view->columnWidth(c))));
            }
    }
}

KS_TEST_MAIN_GUI(TestMainWindow)
#include "tst_mainwindow.moc"
