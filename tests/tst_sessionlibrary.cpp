#include "enginefixture.h"
#include "guitestsupport.h"
#include "scaletask.h"
#include "testmain.h"
#include "testsupport.h"

#include <search/searchstate.h>
#include <session/session.h>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QChart>
#include <QChartView>
#include <QInputDialog>
#include <QLineSeries>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <mainwindow.h>
#include <sessioncomparedialog.h>
#include <sessionlibrarydialog.h>
#include <sessionlibrarymodel.h>
#include <settings.h>

using namespace ks;
namespace fs = std::filesystem;

// File > Session Library over real session folders (copies of the example session, one cut
// short, one broken) and the comparison of sessions it opens.
class TestSessionLibrary : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void overviewReplaysTheJournal();
    void fastPCountsStrictlyFaster_data();
    void fastPCountsStrictlyFaster();
    void listsTheSessions();
    void deletesOnlyAfterAsking();
    void comparesSessions();
    void windowOpensASessionFromIt();
    void windowContinuesASessionFromIt();
    void sessionsOfTwoTasks();
    void windowExportsADispatchingKernel();

private:
    // The dialog, filled with the library's sessions.
    std::unique_ptr<ui::SessionLibraryDialog> loadedLibrary();
    static int rowOf(const ui::SessionLibraryModel& model, const fs::path& dir);

    QTemporaryDir m_tmp;
    fs::path m_folder, m_full, m_short, m_broken;
};

void TestSessionLibrary::initTestCase()
{
    m_folder = fs::path(m_tmp.path().toStdString()) / "sessions";
    m_full = m_folder / "example-full";
    m_short = m_folder / "example-short";
    m_broken = m_folder / "example-broken";
    const fs::path example = ui::MainWindow::exampleSession();
    QVERIFY(!example.empty());
    fs::create_directories(m_folder);
    for (const fs::path& dir : {m_full, m_broken})
        fs::copy(example, dir, fs::copy_options::recursive);
    test::copySessionCutShort(example, m_short, 3);
    test::writeText(m_broken / "session.json", "{ not json");
    fs::create_directories(m_folder / "notes"); // not a session: never listed
    m_full = fs::canonical(m_full);
    m_short = fs::canonical(m_short);
    m_broken = fs::canonical(m_broken);
    ui::Settings::set(ui::settings::sessionsFolder, QString::fromStdString(m_folder.string()));
    ui::Settings::set(ui::settings::recentSessions, QStringList {QString::fromStdString(m_short.string())});
}

// The figures come from the journal, as a replay of it gives them.
void TestSessionLibrary::overviewReplaysTheJournal()
{
    std::string error;
    auto session = Session::open(m_full, error);
    QVERIFY2(session, error.c_str());
    const auto state = session->loadState(error);
    QVERIFY2(state, error.c_str());
    const SessionOverview full = readSessionOverview(m_full);
    QVERIFY2(full.error.empty(), full.error.c_str());
    QCOMPARE(full.taskName, session->config().taskName);
    QCOMPARE(full.evaluations, state->evaluations);
    QCOMPARE(full.bestScore, state->bestScore());
    QCOMPARE(full.curve.size(), static_cast<std::size_t>(state->evaluations));
    for (std::size_t i = 1; i < full.curve.size(); ++i) {
        QVERIFY(full.curve[i].bestScore >= full.curve[i - 1].bestScore);
        QVERIFY(full.curve[i].seconds >= full.curve[i - 1].seconds);
        QCOMPARE(full.curve[i].evaluation, static_cast<int>(i) + 1);
    }
    QCOMPARE(full.curve.back().bestScore, full.bestScore);
    const Attempt& best = *state->tree.attempt(*state->bestAttempt());
    QCOMPARE(full.bestNode, best.node);
    QCOMPARE(full.bestSpeedups.size(), best.evaluation.workloads.size());
    QCOMPARE(full.bestSpeedups.front(), best.evaluation.workloads.front().speedup);

    const SessionOverview cut = readSessionOverview(m_short);
    QVERIFY2(cut.error.empty(), cut.error.c_str());
    QCOMPARE(cut.evaluations, 3);
    QVERIFY(cut.finishedReason.empty()); // killed: no end in its journal
    QVERIFY(!readSessionOverview(m_broken).error.empty());
}

void TestSessionLibrary::fastPCountsStrictlyFaster_data()
{
    QTest::addColumn<double>("p");
    QTest::addColumn<double>("expected");
    // speedups {0 (failed), 0.5, 1, 2, 3}
    QTest::newRow("p 0: every correct workload") << 0.0 << 0.8;
    QTest::newRow("p 1: faster than the baseline") << 1.0 << 0.4;
    QTest::newRow("p 1.5") << 1.5 << 0.4;
    QTest::newRow("p 2: strictly more than 2x") << 2.0 << 0.2;
    QTest::newRow("p 3") << 3.0 << 0.0;
}

void TestSessionLibrary::fastPCountsStrictlyFaster()
{
    QFETCH(double, p);
    QFETCH(double, expected);
    QCOMPARE(fastP({0.0, 0.5, 1.0, 2.0, 3.0}, p), expected);
    QCOMPARE(fastP({}, p), 0.0);
}

std::unique_ptr<ui::SessionLibraryDialog> TestSessionLibrary::loadedLibrary()
{
    auto d = std::make_unique<ui::SessionLibraryDialog>();
    QSignalSpy loaded(d.get(), &ui::SessionLibraryDialog::loaded);
    d->load(ui::SessionLibraryDialog::librarySessions());
    if (!loaded.wait(30000))
        return nullptr;
    return d;
}

int TestSessionLibrary::rowOf(const ui::SessionLibraryModel& model, const fs::path& dir)
{
    for (int row = 0; row < model.rowCount(); ++row)
        if (model.at(row).dir == dir)
            return row;
    return -1;
}

// The recent session first, then the folder's sessions; a folder without a session is left out,
// a broken one listed as unreadable with the reason in its tooltip.
void TestSessionLibrary::listsTheSessions()
{
    const auto dirs = ui::SessionLibraryDialog::librarySessions();
    QCOMPARE(dirs.size(), std::size_t {3});
    QCOMPARE(dirs.front(), m_short);
    auto d = loadedLibrary();
    QVERIFY(d);
    ui::SessionLibraryModel& model = *d->model();
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 3);
    const int full = rowOf(model, m_full), cut = rowOf(model, m_short), broken = rowOf(model, m_broken);
    QVERIFY(full >= 0 && cut >= 0 && broken >= 0);
    QCOMPARE(model.index(full, ui::SessionLibraryModel::Task).data().toString(), u"matmul_host_demo"_qs);
    QCOMPARE(model.index(cut, ui::SessionLibraryModel::Evaluations).data(ui::SessionLibraryModel::SortRole).toInt(), 3);
    QCOMPARE(model.index(cut, ui::SessionLibraryModel::State).data().toString(), u"interrupted (or running)"_qs);
    QVERIFY(model.index(full, ui::SessionLibraryModel::State).data().toString().startsWith(u"finished: "));
    QCOMPARE(model.index(broken, ui::SessionLibraryModel::State).data().toString(), u"unreadable"_qs);
    QVERIFY(model.index(broken, 0).data(Qt::ToolTipRole).toString().contains(u"session.json"));
    QCOMPARE(model.index(full, ui::SessionLibraryModel::BestJ).data().toString(),
        QString::number(model.at(full).bestScore, 'f', 1));

    auto* open = d->findChild<QPushButton*>(u"libraryOpen"_qs);
    auto* compare = d->findChild<QPushButton*>(u"libraryCompare"_qs);
    auto* remove = d->findChild<QPushButton*>(u"libraryDelete"_qs);
    d->select({m_full});
    QVERIFY(open->isEnabled() && remove->isEnabled() && !compare->isEnabled());
    d->select({m_broken});
    QVERIFY(!open->isEnabled() && remove->isEnabled()); // nothing to open, but it can go
    d->select({m_full, m_short});
    QVERIFY(compare->isEnabled() && !open->isEnabled());
}

// Deleting asks first, naming the folder; No keeps it. The session the window runs and a folder
// that is no longer a session are refused. Yes removes the folder, its row and its recent entry.
void TestSessionLibrary::deletesOnlyAfterAsking()
{
    auto d = loadedLibrary();
    QVERIFY(d);
    QString asked;
    d->select({m_short});
    test::answerNextDialog([&](QDialog* box) {
        asked = qobject_cast<QMessageBox*>(box)->text();
        qobject_cast<QMessageBox*>(box)->button(QMessageBox::No)->click();
    });
    QVERIFY(!d->deleteSelected());
    QVERIFY2(asked.contains(QString::fromStdString(m_short.string())), qPrintable(asked));
    QVERIFY(fs::exists(m_short / "journal.jsonl"));

    d->setBusySession(m_short);
    test::answerNextDialog([&](QDialog* box) {
        asked = qobject_cast<QMessageBox*>(box)->text();
        box->accept();
    });
    QVERIFY(!d->deleteSelected());
    QVERIFY2(asked.contains(u"running"), qPrintable(asked));
    QVERIFY(fs::exists(m_short / "journal.jsonl"));
    d->setBusySession({});

    const fs::path copy = m_folder / "example-copy";
    fs::copy(m_short, copy, fs::copy_options::recursive);
    d->load(ui::SessionLibraryDialog::librarySessions());
    QSignalSpy loaded(d.get(), &ui::SessionLibraryDialog::loaded);
    QVERIFY(loaded.wait(30000));
    const fs::path canonicalCopy = fs::canonical(copy);
    ui::Settings::addRecentSession(QString::fromStdString(canonicalCopy.string()));
    d->select({canonicalCopy});
    test::answerNextDialog([](QDialog* box) { qobject_cast<QMessageBox*>(box)->button(QMessageBox::Yes)->click(); });
    QVERIFY(d->deleteSelected());
    QVERIFY(!fs::exists(canonicalCopy));
    QCOMPARE(rowOf(*d->model(), canonicalCopy), -1);
    QVERIFY(!ui::Settings::get(ui::settings::recentSessions).contains(QString::fromStdString(canonicalCopy.string())));
    QVERIFY(fs::exists(m_full / "journal.jsonl")); // only that one
}

// Two sessions on one chart: best J so far against evaluations, then against time, and fast_p
// of each best kernel, every point the function's value.
void TestSessionLibrary::comparesSessions()
{
    auto d = loadedLibrary();
    QVERIFY(d);
    d->select({m_full, m_short});
    ui::SessionCompareDialog* compare = d->compareSelected();
    QVERIFY(compare);
    const SessionOverview& full = d->model()->at(rowOf(*d->model(), m_full));
    const SessionOverview& cut = d->model()->at(rowOf(*d->model(), m_short));
    auto lines = [&](const char* view) {
        QList<QLineSeries*> found;
        for (QAbstractSeries* s : compare->findChild<QChartView*>(QLatin1String(view))->chart()->series())
            found << qobject_cast<QLineSeries*>(s);
        return found;
    };
    auto seriesOf = [&](const char* view, const SessionOverview& s) -> QLineSeries* {
        for (QLineSeries* l : lines(view))
            if (l->name() == ui::sessionLegendName(s))
                return l;
        return nullptr;
    };
    QCOMPARE(lines("compareProgress").size(), 2);
    QLineSeries* fullLine = seriesOf("compareProgress", full);
    QVERIFY(fullLine && seriesOf("compareProgress", cut));
    QCOMPARE(fullLine->points().back(), QPointF(full.evaluations, full.bestScore));
    compare->setXAxis(ui::SessionCompareDialog::XAxis::Seconds);
    fullLine = seriesOf("compareProgress", full);
    QCOMPARE(fullLine->points().back(), QPointF(full.curve.back().seconds, full.bestScore));
    QCOMPARE(seriesOf("compareProgress", cut)->points().back().x(), cut.curve.back().seconds);

    QCOMPARE(lines("compareFastP").size(), 2);
    for (const SessionOverview* s : {&full, &cut}) {
        QLineSeries* fp = seriesOf("compareFastP", *s);
        QVERIFY(fp);
        QVERIFY(fp->count() > 2);
        for (const QPointF& point : fp->points())
            QCOMPARE(point.y(), fastP(s->bestSpeedups, point.x()));
        QCOMPARE(fp->points().front().y(), fastP(s->bestSpeedups, 0.0));
    }
    QVERIFY(compare->fastPLimit() >= *std::max_element(full.bestSpeedups.begin(), full.bestSpeedups.end()));
}

// File > Session Library in the window: Open shows the chosen session read-only and closes the
// library.
void TestSessionLibrary::windowOpensASessionFromIt()
{
    ui::MainWindow window;
    window.show();
    ui::SessionLibraryDialog* d = window.showSessionLibrary();
    QVERIFY(d);
    QSignalSpy loaded(d, &ui::SessionLibraryDialog::loaded);
    QVERIFY(loaded.wait(30000));
    const QPointer<ui::SessionLibraryDialog> alive(d);
    d->select({m_full});
    d->findChild<QPushButton*>(u"libraryOpen"_qs)->click();
    QCOMPARE(window.document().sessionDir(), m_full);
    QVERIFY(!window.controller().isRunning());
    QTRY_VERIFY(alive.isNull()); // closed, and deleted on close
}

// Continue from the library: the example (its budget used up) is opened and Run > Continue This
// Session asks how far to go; the run goes on, with the scripted LLM, to the new budget.
void TestSessionLibrary::windowContinuesASessionFromIt()
{
    const fs::path dir = m_folder / "example-continued";
    fs::copy(ui::MainWindow::exampleSession(), dir, fs::copy_options::recursive);
    auto config = nlohmann::json::parse(test::readText(dir / "session.json"));
    for (const char* role : {"planner", "coder"}) // the example names the LLM relative to the source tree
        config["llm"][role]["command"] = test::fakeLlmCommand().toStdString();
    test::writeText(dir / "session.json", config.dump());
    qputenv("KS_FAKE_LLM_MODE", "demo");
    ui::Settings::set(ui::settings::benchSeconds, 0.05);

    ui::MainWindow window;
    window.show();
    ui::SessionLibraryDialog* d = window.showSessionLibrary();
    QSignalSpy loaded(d, &ui::SessionLibraryDialog::loaded);
    QVERIFY(loaded.wait(30000));
    d->select({fs::canonical(dir)});
    QString asked;
    test::answerNextDialog([&](QDialog* box) {
        auto* input = qobject_cast<QInputDialog*>(box);
        asked = input->labelText();
        input->setIntValue(26);
        box->accept();
    });
    QSignalSpy finished(&window.controller(), &ui::RunController::finished);
    d->findChild<QPushButton*>(u"libraryContinue"_qs)->click();
    QVERIFY2(asked.contains(u"budget of 24"), qPrintable(asked));
    QVERIFY(window.controller().isRunning());
    QVERIFY(finished.wait(180000));
    QCOMPARE(window.document().sessionDir(), fs::canonical(dir));
    QCOMPARE(window.document().state().evaluations, 26);
}

// A library holding runs of two tasks (the example's matmul and a scale-task run made here by
// the engine): each row names its own task and figures, and the comparison takes both (the
// comparison does not ask for one task; its legend names each session).
void TestSessionLibrary::sessionsOfTwoTasks()
{
    const fs::path root = fs::path(m_tmp.path().toStdString()) / "fixture";
    test::EngineFixture fixture(root);
    const fs::path scale = m_folder / "scale-run";
    const auto o = fixture.run(scale, test::EngineFixture::settings(3, 1));
    QVERIFY2(o.ok(), qPrintable(o.halted));
    auto d = loadedLibrary();
    QVERIFY(d);
    QAbstractItemModelTester tester(d->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const int scaleRow = rowOf(*d->model(), fs::canonical(scale));
    const int matmulRow = rowOf(*d->model(), m_full);
    QVERIFY(scaleRow >= 0 && matmulRow >= 0);
    const SessionOverview& s = d->model()->at(scaleRow);
    QCOMPARE(s.taskName, fixture.config(test::EngineFixture::settings(3, 1)).taskName);
    QCOMPARE(s.evaluations, o.state.evaluations);
    QCOMPARE(s.bestScore, o.state.bestScore());
    QVERIFY(s.taskName != d->model()->at(matmulRow).taskName);
    d->select({fs::canonical(scale), m_full});
    ui::SessionCompareDialog* compare = d->compareSelected();
    QVERIFY(compare);
    const auto series = compare->findChild<QChartView*>(u"compareProgress"_qs)->chart()->series();
    QCOMPARE(series.size(), 2);
    QStringList names;
    for (QAbstractSeries* line : series)
        names << line->name();
    QVERIFY2(names.contains(ui::sessionLegendName(s)), qPrintable(names.join(u", ")));
}

// File > Export with a Dispatching Kernel on a session whose two kernels are each slow on one
// workload: the export is written, the dispatching kernel is measured in the background (the
// window stays responsive: the signal arrives through its event loop) and written with both J.
void TestSessionLibrary::windowExportsADispatchingKernel()
{
    const fs::path root = fs::path(m_tmp.path().toStdString()) / "dispatch";
    test::writeTwoWorkloadScaleTask(root / "scale");
    const fs::path dir = test::writeScaleSession(
        root, "two-kernels", {test::shapedScaleKernel("a->n > 10000"), test::shapedScaleKernel("a->n <= 10000")});
    ui::Settings::set(ui::settings::benchSeconds, 0.05);
    ui::MainWindow window;
    window.show();
    QVERIFY(window.openSession(QString::fromStdString(dir.string()), false));
    QVERIFY(window.findChild<QAction*>(u"actionExportDispatch"_qs)->isEnabled());
    QSignalSpy done(&window, &ui::MainWindow::dispatchExported);
    const fs::path out = root / "out";
    QVERIFY(window.exportDispatching(QString::fromStdString(out.string())));
    QVERIFY(fs::exists(out / "best_kernel.cpp")); // the export itself, before the measurement
    QVERIFY(done.wait(120000));
    QVERIFY2(done.first().at(0).toString().isEmpty(), qPrintable(done.first().at(0).toString()));
    QVERIFY2(done.first().at(1).toString().contains(u"2 variants, 1 shapes routed, PASSED"),
        qPrintable(done.first().at(1).toString()));
    QVERIFY(fs::exists(out / "dispatch.cpp"));
    QVERIFY(fs::exists(out / "dispatch.json"));
}

KS_TEST_MAIN_GUI(TestSessionLibrary)
#include "tst_sessionlibrary.moc"
