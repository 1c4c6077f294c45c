#include "guitestsupport.h"
#include "testmain.h"
#include "testsupport.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QChartView>
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScatterSeries>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBrowser>

#include <chartspanel.h>
#include <codeview.h>
#include <mainwindow.h>
#include <nodeinspector.h>
#include <settings.h>
#include <treegraphview.h>
#include <workersmodel.h>

using namespace ks;
namespace fs = std::filesystem;

// Searches run from the window (host backend, the scripted demo LLM behind the command
// provider), watched and steered through the window's own widgets and actions.
class TestGuiSearch : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void aShortSearchFillsEveryView();
    void steeringAndUndo();
    void workersPanelFollowsAParallelSearch();
    void continuesASpentSearch();
    void continuesAStoppedSearch();
    void unconfinedCandidatesAreShown_data();
    void unconfinedCandidatesAreShown();

private:
    SessionConfig config(int budget) const;
    void trigger(ui::MainWindow& w, const char* action);
    QTemporaryDir m_dir;
};

void TestGuiSearch::initTestCase()
{
    qRegisterMetaType<ks::LlmResult>();
    qputenv("KS_FAKE_LLM_MODE", "demo");
    ui::Settings::set(ui::settings::benchSeconds, 0.05);
}

SessionConfig TestGuiSearch::config(int budget) const
{
    // Noise on a shared two-core machine can exceed 5% between two runs of one program, which would make
    // the number of attempts per node (and so the tree) depend on timing; the demo's real gains are 2-10x.
    SessionConfig c = test::demoSearchConfig(budget, 0.5);
    c.created = "2026-12-02T00:00:00Z";
    c.version = "test";
    return c;
}

void TestGuiSearch::trigger(ui::MainWindow& w, const char* action)
{
    QAction* a = w.findChild<QAction*>(QLatin1String(action));
    QVERIFY2(a, action);
    QVERIFY2(a->isEnabled(), action);
    a->trigger();
}

void TestGuiSearch::aShortSearchFillsEveryView()
{
    ui::MainWindow window;
    window.show();
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    QSignalSpy notices(&window, &ui::MainWindow::notified);
    QVERIFY(window.startSearch(fs::path(m_dir.path().toStdString()) / "short", config(5)));
    QVERIFY(finished.wait(180000));
    const SearchState& s = window.document().state();
    QCOMPARE(s.evaluations, 5);
    // A notice for each new best kernel of the live run (the first passed attempt is one) and one
    // for its end, which names the best.
    QVERIFY(notices.count() >= 2);
    QCOMPARE(notices.first().at(0).toString(), u"New best kernel"_qs);
    QCOMPARE(notices.last().at(0).toString(), u"The search finished"_qs);
    const Attempt& best = *s.tree.attempt(*s.tree.bestAttempt());
    QVERIFY2(notices.last().at(1).toString().contains(QString::fromStdString(best.node)),
        qPrintable(notices.last().at(1).toString()));
    QVERIFY2(notices.at(notices.count() - 2)
                 .at(1)
                 .toString()
                 .startsWith(
                     u"J "_qs + QString::number(best.score(), 'f', 1) + u" on "_qs + QString::fromStdString(best.node)),
        qPrintable(notices.at(notices.count() - 2).at(1).toString()));
    QTRY_COMPARE(window.graph()->itemCount(), s.tree.nodeCount());
    QCOMPARE(window.findChild<QTableView*>(u"nodeTable"_qs)->model()->rowCount(), s.tree.nodeCount());
    QCOMPARE(window.findChild<QListView*>(u"eventLog"_qs)->model()->rowCount(),
        static_cast<int>(window.document().events().size()));
    int points = 0;
    for (QAbstractSeries* series : window.charts()->progressView()->chart()->series())
        if (auto* scatter = qobject_cast<QScatterSeries*>(series))
            points += scatter->count();
    QCOMPARE(points, 5);
    // The inspector on the first intent: its attempts, and the first one's program against nothing.
    window.selectNode(u"n1"_qs);
    auto* attempts = window.inspector()->findChild<QTableView*>(u"attemptTable"_qs);
    QCOMPARE(attempts->model()->rowCount(), static_cast<int>(s.tree.find("n1")->attempts.size()));
    auto* code = window.inspector()->findChild<ui::CodeView*>(u"codeView"_qs);
    QVERIFY(code->toPlainText().contains(u"ks_run"));
    QVERIFY(!code->isDiff());
    // A node refined from n1 diffs against n1's program: the pragma it adds is an added line.
    window.selectNode(u"n4"_qs);
    window.inspector()->compareWith(ui::NodeInspector::Compare::Start);
    const QString summary = window.inspector()->findChild<QLabel*>(u"compareSummary"_qs)->text();
    QVERIFY2(summary.startsWith(u"Against the program of n1"), qPrintable(summary));
    QVERIFY(code->isDiff());
    const QStringList lines = code->toPlainText().split(u'\n');
    const auto pragma = std::find_if(lines.begin(), lines.end(), [](const QString& l) {
        return l.startsWith(u"#pragma omp parallel for");
    }) - lines.begin();
    QVERIFY2(pragma < lines.size(), qPrintable(code->toPlainText()));
    QVERIFY2(code->gutterText(static_cast<int>(pragma)).endsWith(u'+'),
        qPrintable(code->gutterText(static_cast<int>(pragma))));
    QVERIFY(code->addedLines() >= 1);
}

void TestGuiSearch::steeringAndUndo()
{
    ui::MainWindow window;
    window.show();
    bool paused = false;
    connect(&window.document(), &ui::SearchDocument::eventShown, &window, [&](const SearchEvent& e) {
        if (!paused && std::holds_alternative<ev::TreeEdit>(e->body)) { // right after the world model's first edit
            paused = true;
            trigger(window, "actionPause");
        }
    });
    QVERIFY(window.startSearch(fs::path(m_dir.path().toStdString()) / "steered", config(8)));
    QTRY_VERIFY_WITH_TIMEOUT(window.document().state().paused, 60000);
    const auto& state = window.document().state();
    const auto node = [&](const char* id) { return state.tree.find(id); };

    // Set V through the dialog, undo, redo.
    window.selectNode(u"n3"_qs);
    const double before = node("n3")->value();
    test::answerNextDialog([](QDialog* d) {
        d->findChild<QDoubleSpinBox*>(u"steeringValue"_qs)->setValue(0.95);
        d->findChild<QLineEdit*>(u"steeringReason"_qs)->setText(u"tiles first"_qs);
        d->accept();
    });
    trigger(window, "actionSetValue");
    QTRY_COMPARE_WITH_TIMEOUT(node("n3")->value(), 0.95, 20000);
    QCOMPARE(node("n3")->values.back().author, Author::Human);
    QCOMPARE(node("n3")->values.back().reason, std::string("tiles first"));
    trigger(window, "actionUndo");
    QTRY_COMPARE_WITH_TIMEOUT(node("n3")->value(), before, 20000);
    trigger(window, "actionRedo");
    QTRY_COMPARE_WITH_TIMEOUT(node("n3")->value(), 0.95, 20000);

    // Prune and undo (a restore).
    window.selectNode(u"n2"_qs);
    test::answerNextDialog([](QDialog* d) { d->accept(); });
    trigger(window, "actionPrune");
    QTRY_COMPARE_WITH_TIMEOUT(node("n2")->status, NodeStatus::Pruned, 20000);
    trigger(window, "actionUndo");
    QTRY_COMPARE_WITH_TIMEOUT(node("n2")->status, NodeStatus::Open, 20000);

    // Inject a child of the root, edit an intent, pin.
    window.selectNode(u"root"_qs);
    test::answerNextDialog([](QDialog* d) {
        d->findChild<QPlainTextEdit*>(u"steeringText"_qs)->setPlainText(u"a person's idea: transpose B once"_qs);
        d->findChild<QDoubleSpinBox*>(u"steeringValue"_qs)->setValue(0.2);
        d->accept();
    });
    trigger(window, "actionInject");
    QTRY_VERIFY_WITH_TIMEOUT(node("n4") && node("n4")->createdBy == Author::Human, 20000);
    trigger(window, "actionUndo"); // undoing an injection prunes the node it made
    QTRY_COMPARE_WITH_TIMEOUT(node("n4")->status, NodeStatus::Pruned, 20000);
    window.selectNode(u"n2"_qs);
    test::answerNextDialog([](QDialog* d) {
        d->findChild<QPlainTextEdit*>(u"steeringText"_qs)
            ->setPlainText(u"Register blocking, smaller: 2 rows at a time"_qs);
        d->accept();
    });
    trigger(window, "actionEditIntent");
    QTRY_VERIFY_WITH_TIMEOUT(node("n2")->intent.rfind("Register blocking, smaller", 0) == 0, 20000);
    window.selectNode(u"n2"_qs);
    trigger(window, "actionPin");
    QTRY_COMPARE_WITH_TIMEOUT(state.pinned, std::string("n2"), 20000);

    // Budget and K from the tool bar, undone and redone.
    window.findChild<QSpinBox*>(u"budgetSpin"_qs)->setValue(9);
    window.findChild<QSpinBox*>(u"kSpin"_qs)->setValue(1);
    trigger(window, "actionApplyLimits");
    QTRY_VERIFY_WITH_TIMEOUT(state.settings.budget == 9 && state.settings.stagnation == 1, 20000);
    trigger(window, "actionUndo"); // K back to 2
    QTRY_COMPARE_WITH_TIMEOUT(state.settings.stagnation, 2, 20000);

    // A hand-written program under n1's parent, evaluated while paused.
    window.selectNode(u"root"_qs);
    test::answerNextDialog([](QDialog* d) {
        d->findChild<QPlainTextEdit*>(u"steeringText"_qs)
            ->setPlainText(QString::fromStdString(test::readText(
                test::sourceDir() / "resources" / "examples" / "matmul-demo" / "matmul_host_demo" / "baseline.cpp")));
        d->findChild<QLineEdit*>(u"steeringReason"_qs)->setText(u"the baseline, as a check"_qs);
        d->accept();
    });
    trigger(window, "actionEvaluate");
    const auto byPerson = [&] {
        for (const Attempt& a : state.tree.attempts())
            if (a.author == Author::Human && a.evaluated)
                return &a;
        return static_cast<const Attempt*>(nullptr);
    };
    QTRY_VERIFY_WITH_TIMEOUT(byPerson(), 60000); // evaluated although the search is paused
    QCOMPARE(byPerson()->evaluation.status, Verdict::Passed);
    QVERIFY(state.paused);

    // Resume: the pinned intent runs first; then stop.
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    trigger(window, "actionResume");
    QTRY_VERIFY_WITH_TIMEOUT(!state.actions.empty() || state.evaluations > 1, 60000);
    QVERIFY(finished.wait(180000));
    std::string firstAction; // the first one after the resume
    bool resumed = false;
    for (const auto& e : window.document().events()) {
        const auto* human = std::get_if<ev::Human>(&e->body);
        if (human && human->command["kind"] == "resume")
            resumed = true;
        else if (const auto* begun = std::get_if<ev::ActionStarted>(&e->body); resumed && begun) {
            firstAction = begun->node;
            break;
        }
    }
    QCOMPARE(firstAction, std::string("n2"));
    int human = 0;
    for (const auto& e : window.document().events())
        human += std::holds_alternative<ev::Human>(e->body) ? 1 : 0;
    QVERIFY(human >= 12); // every action and every undo, recorded as the person's
}

// Two evaluators from the Settings: the Workers panel names both while the search runs, counts
// each one's evaluations from the journal, and the status bar says what each does.
void TestGuiSearch::workersPanelFollowsAParallelSearch()
{
    ui::Settings::set(ui::settings::localWorkers, 2);
    QStringList seen; // what the status bar said about the evaluators (outlives the window, which reports its close)
    ui::MainWindow window;
    window.show();
    auto* table = window.findChild<QTableView*>(u"workersTable"_qs);
    QVERIFY(table);
    QAbstractItemModelTester tester(table->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    connect(&window.controller(), &ui::RunController::activityChanged, &window,
        [&] { seen << window.findChild<QLabel*>(u"statusWorkers"_qs)->text(); });
    QVERIFY(window.startSearch(fs::path(m_dir.path().toStdString()) / "workers", config(6)));
    QTRY_COMPARE_WITH_TIMEOUT(table->model()->rowCount(), 2, 60000);
    QCOMPARE(table->model()->index(0, ui::WorkersModel::Name).data().toString(), u"local0"_qs);
    QCOMPARE(table->model()->index(1, ui::WorkersModel::Name).data().toString(), u"local1"_qs);
    QVERIFY(finished.wait(180000));
    ui::Settings::set(ui::settings::localWorkers, 1);
    QCOMPARE(window.document().state().evaluations, 6);
    int evaluations = 0;
    for (int row = 0; row < table->model()->rowCount(); ++row)
        evaluations += table->model()->index(row, ui::WorkersModel::Evaluations).data().toInt();
    QCOMPARE(evaluations, 6);
    QVERIFY2(std::any_of(seen.begin(), seen.end(), [](const QString& t) { return t.contains(u"local0: n"); }),
        qPrintable(seen.join(u" / ")));
    const QString queue = window.findChild<QLabel*>(u"workersQueue"_qs)->text();
    QVERIFY2(queue.contains(u"of 2 evaluators busy"), qPrintable(queue));
}

// Run > Continue This Session on a search whose budget is spent: it goes on to the budget the
// person gives, in the same session (its journal replays to the same state).
void TestGuiSearch::continuesASpentSearch()
{
    ui::MainWindow window;
    window.show();
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    QVERIFY(window.startSearch(fs::path(m_dir.path().toStdString()) / "continued", config(4)));
    QVERIFY(finished.wait(180000));
    QCOMPARE(window.document().state().evaluations, 4);
    QVERIFY(window.findChild<QAction*>(u"actionContinue"_qs)->isEnabled());
    QVERIFY(window.continueSession(7));
    QVERIFY(window.controller().isRunning());
    QVERIFY(finished.wait(180000));
    QCOMPARE(window.document().state().settings.budget, 7);
    QCOMPARE(window.document().state().evaluations, 7);
    QVERIFY2(window.document().state().finishedReason.find("budget of 7") != std::string::npos,
        window.document().state().finishedReason.c_str());
    QVERIFY(window.openSession(QString::fromStdString(window.document().sessionDir().string()), false));
    QCOMPARE(window.document().state().evaluations, 7);
}

// Run > Continue This Session on a search a person stopped while the world model's call was out
// (held by the scripted LLM until the stop): the resumed run asks again and goes on to its budget.
void TestGuiSearch::continuesAStoppedSearch()
{
    const QString hold = m_dir.filePath(u"hold-llm"_qs);
    QVERIFY(QFile(hold).open(QIODevice::WriteOnly));
    qputenv("KS_FAKE_LLM_HOLD", hold.toUtf8());
    ui::MainWindow window;
    window.show();
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    bool asking = false;
    connect(&window.controller(), &ui::RunController::activityChanged, &window,
        [&](const EngineActivity& a) { asking = a.planner; });
    QVERIFY(window.startSearch(fs::path(m_dir.path().toStdString()) / "stopped", config(4)));
    QTRY_VERIFY_WITH_TIMEOUT(asking, 60000);
    test::answerNextDialog([](QDialog* d) { qobject_cast<QMessageBox*>(d)->button(QMessageBox::Yes)->click(); });
    trigger(window, "actionStop");
    QVERIFY(finished.wait(60000));
    QVERIFY2(window.document().state().finishedReason.rfind("stopped by a person", 0) == 0,
        window.document().state().finishedReason.c_str());
    QCOMPARE(window.document().state().evaluations, 0);

    QVERIFY(QFile::remove(hold));
    QVERIFY(window.continueSession(std::nullopt));
    QVERIFY(window.controller().isRunning());
    QVERIFY(finished.wait(180000));
    qunsetenv("KS_FAKE_LLM_HOLD");
    QCOMPARE(window.document().state().evaluations, 4);
}

void TestGuiSearch::unconfinedCandidatesAreShown_data()
{
    QTest::addColumn<bool>("confine");
    QTest::newRow("confined (as the machine allows)") << true;
    QTest::newRow("confinement turned off in the settings") << false;
}

// The window says once, as a notice, when a live search's candidates run with less than full
// confinement, and keeps a status-bar mark with what they lacked, from the evaluations' records
// (so a session opened later shows it too). With confinement on, the mark shows exactly when the
// runner reported a gap (none where the machine allows every mechanism).
void TestGuiSearch::unconfinedCandidatesAreShown()
{
    QFETCH(bool, confine);
    ui::Settings::set(ui::settings::confineCandidates, confine);
    const auto restore = qScopeGuard([] { ui::Settings::set(ui::settings::confineCandidates, true); });
    ui::MainWindow window;
    window.show();
    QStringList notices;
    connect(&window, &ui::MainWindow::notified, &window,
        [&](const QString& title, const QString& text) { notices << title + u": " + text; });
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    const fs::path dir = fs::path(m_dir.path().toStdString()) / (confine ? "confined" : "unconfined");
    QVERIFY(window.startSearch(dir, config(2)));
    QVERIFY(finished.wait(180000));
    bool anyGap = false;
    for (const Attempt& a : window.document().state().tree.attempts()) {
        QVERIFY2(a.evaluation.confinement, a.node.c_str()); // every evaluation that ran keeps its record
        QCOMPARE(a.evaluation.confinement->off, !confine);
        anyGap = anyGap || !confinementGaps(*a.evaluation.confinement).empty();
    }
    if (!confine)
        QVERIFY(anyGap); // the setting itself is the gap
    auto* mark = window.findChild<QLabel*>(u"statusConfinement"_qs);
    QVERIFY(mark);
    QCOMPARE(mark->isVisibleTo(&window), anyGap);
    const auto unconfinedNotices = notices.filter(u"not fully confined"_qs);
    QCOMPARE(unconfinedNotices.size(), anyGap ? 1 : 0);
    if (!confine) {
        QCOMPARE(mark->text(), u"confinement off"_qs);
        QVERIFY2(mark->toolTip().contains(u"confinement turned off in the settings"), qPrintable(mark->toolTip()));
        QVERIFY2(unconfinedNotices.front().contains(u"turned off in the settings"), qPrintable(notices.join(u'\n')));
    }
    // Read back from the session folder: the record, not the live run, makes the mark.
    QVERIFY(window.openSession(QString::fromStdString(dir.string()), false));
    QCOMPARE(mark->isVisibleTo(&window), anyGap);
}

KS_TEST_MAIN_GUI(TestGuiSearch)
#include "tst_guisearch.moc"
