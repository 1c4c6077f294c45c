#include "scaletask.h"
#include "testmain.h"
#include "testsupport.h"

#include <session/dispatchkernel.h>
#include <session/session.h>
#include <task/abiheader.h>

#include <QProcess>
#include <QTemporaryDir>

#include <fstream>

using namespace ks;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using test::shapedScaleKernel;

// `ksearch export --dispatch` on the host backend: a session whose two attempts are each fastest
// on one workload; the dispatching kernel routes each workload to its own fastest and is
// measured, as a candidate of its own, next to the best single kernel before it is written.
class TestDispatch : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void planRoutesEachShapeToItsFastest();
    void unseenShapesRunTheNearestKnownOne_data();
    void unseenShapesRunTheNearestKnownOne();
    void pythonDispatcherRunsTheNearestKnownOne_data();
    void pythonDispatcherRunsTheNearestKnownOne();
    void exportMeasuresTheDispatcher_data();
    void exportMeasuresTheDispatcher();
    void exportMeasuresAPythonDispatcher();
    void nothingToDispatchWritesNothing();

private:
    QTemporaryDir m_tmp;
    fs::path m_root;
};

void TestDispatch::initTestCase()
{
    m_root = fs::path(m_tmp.path().toStdString());
    test::writeTwoWorkloadScaleTask(m_root / "scale");
}

void TestDispatch::planRoutesEachShapeToItsFastest()
{
    const fs::path dir = test::writeScaleSession(
        m_root, "plan", {shapedScaleKernel("a->n > 10000"), shapedScaleKernel("a->n <= 10000")});
    std::string error;
    auto session = Session::open(dir, error);
    QVERIFY2(session, error.c_str());
    const auto state = session->loadState(error);
    QVERIFY2(state, error.c_str());
    const auto task = loadTask(m_root / "scale").task;
    QVERIFY(task);
    const auto plan = planDispatch(*state, *task, Language::Cpp, error);
    QVERIFY2(plan, error.c_str());
    QCOMPARE(plan->variants.size(), std::size_t {2});
    QCOMPARE(plan->variants[0].attempt, *state->bestAttempt());
    QCOMPARE(plan->cases.size(), std::size_t {2}); // both shapes are known; one runs the other kernel
    QCOMPARE(plan->routedShapes(), 1);
    const DispatchPlan::Case& routed = plan->cases[0].variant == 1 ? plan->cases[0] : plan->cases[1];
    QCOMPARE(routed.variant, 1);
    QCOMPARE(routed.axes.size(), std::size_t {1});
    QCOMPARE(routed.axes.front().first, std::string("n"));
    // The routed workload is the one the best single kernel is slow on.
    const Attempt& best = *state->tree.attempt(plan->variants[0].attempt);
    const bool bestSlowOnLarge = best.evaluation.workloads[1].speedup < best.evaluation.workloads[0].speedup;
    QCOMPARE(routed.axes.front().second, bestSlowOnLarge ? std::int64_t {65536} : std::int64_t {1000});
    QVERIFY(planDispatch(*state, *task, Language::Python, error)); // the scale task's n shows in x's shape

    const std::string text = dispatchSource(*plan, [&](const std::string& h) { return session->programSource(h); });
    QCOMPARE(text.find("#include \"ks_task.h\""), text.rfind("#include \"ks_task.h\"")); // hoisted once
    QVERIFY(text.find("namespace ks_dispatch_1") != std::string::npos);
    QVERIFY(text.find("#undef PASSES") != std::string::npos);
    QVERIFY(text.find("1}, // workload " + routed.workload + ": n " + std::to_string(routed.axes.front().second))
        != std::string::npos);
}

// Shapes no workload has run the variant of the nearest known one (by log(1 + n)): the
// dispatcher made for known shapes n = 1000 (variant 1) and n = 65536 (variant 0) is compiled
// with g++ and called with each row's n; each variant writes its number into y[0].
static void addShapeRows()
{
    QTest::addColumn<qlonglong>("n");
    QTest::addColumn<int>("variant");
    QTest::newRow("the small shape itself") << 1000LL << 1;
    QTest::newRow("the large shape itself") << 65536LL << 0;
    QTest::newRow("near the small one") << 3000LL << 1;
    QTest::newRow("near the large one") << 30000LL << 0;
    QTest::newRow("below both") << 1LL << 1;
    QTest::newRow("above both") << (1LL << 30) << 0;
}

void TestDispatch::unseenShapesRunTheNearestKnownOne_data()
{
    addShapeRows();
}

void TestDispatch::unseenShapesRunTheNearestKnownOne()
{
    QFETCH(qlonglong, n);
    QFETCH(int, variant);
    static fs::path program;
    if (program.empty()) {
        const auto task = loadTask(m_root / "scale").task;
        QVERIFY(task);
        const fs::path dir = m_root / "nearest";
        test::writeText(dir / "ks_task.h", generateAbiHeader(task->definition));
        DispatchPlan plan;
        plan.variants = {{0, "best"}, {1, "other"}};
        plan.cases = {{"small-1000", {{"n", 1000}}, 1}, {"large-65536", {{"n", 65536}}, 0}};
        const auto variantSource = [](const std::string& hash) {
            return "#include \"ks_task.h\"\n#define MARK " + std::string(hash == "best" ? "0" : "1")
                + "\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { a->y[0] = MARK; "
                  "return 0; }\n";
        };
        test::writeText(dir / "dispatch.cpp", dispatchSource(plan, variantSource));
        test::writeText(dir / "main.cpp",
            "#include \"dispatch.cpp\"\n#include <cstdio>\n#include <cstdlib>\n"
            "int main(int, char** argv) { float x = 1, y = -1; KsArgs a {}; a.x = &x; a.y = &y; a.n = "
            "std::atoll(argv[1]); ks_run(&a, nullptr, 0, nullptr); std::printf(\"%g\\n\", y); }\n");
        QProcess gxx;
        gxx.start(u"g++"_qs,
            {u"-std=c++17"_qs, u"-Wall"_qs, u"-Werror"_qs, u"-o"_qs, QString::fromStdString((dir / "main").string()),
                QString::fromStdString((dir / "main.cpp").string())});
        QVERIFY(gxx.waitForFinished(120000));
        QVERIFY2(gxx.exitCode() == 0, gxx.readAllStandardError().constData());
        program = dir / "main";
    }
    const auto r = test::runProgram(QString::fromStdString(program.string()), {QString::number(n)});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(r.out.trimmed(), QString::number(variant));
}

void TestDispatch::pythonDispatcherRunsTheNearestKnownOne_data()
{
    addShapeRows();
}

// The Python dispatcher of the same plan, run by python3 on stand-ins for tensors (a shape and a
// mark): variant 0 fills its output (destination-passing), variant 1 returns one, which the
// dispatcher copies into the output given. Nothing of it needs torch.
void TestDispatch::pythonDispatcherRunsTheNearestKnownOne()
{
    QFETCH(qlonglong, n);
    QFETCH(int, variant);
    static fs::path dir;
    if (dir.empty()) {
        const auto task = loadTask(m_root / "scale").task;
        QVERIFY(task);
        DispatchPlan plan;
        plan.variants = {{0, "best"}, {1, "other"}};
        plan.cases = {{"small-1000", {{"n", 1000}}, 1}, {"large-65536", {{"n", 65536}}, 0}};
        const auto variantSource = [](const std::string& hash) {
            return hash == "best"
                ? std::string("def run(x, alpha, y):\n    y.mark = 0  # it's a 'quoted' \\ line\n")
                : std::string("class Made:\n    mark = 1\n\n\ndef run(x, alpha):\n    return Made()\n");
        };
        dir = m_root / "python-nearest";
        test::writeText(dir / "dispatch.py", pythonDispatchSource(plan, task->definition, variantSource));
        test::writeText(dir / "main.py",
            "import sys\nimport dispatch\n\n\nclass Tensor:\n    def __init__(self, n):\n"
            "        self.shape = (n,)\n        self.mark = -1\n\n    def copy_(self, other):\n"
            "        self.mark = other.mark\n\n\ny = Tensor(int(sys.argv[1]))\n"
            "dispatch.run(Tensor(int(sys.argv[1])), 1.5, y)\nprint(y.mark)\n");
    }
    QProcess python;
    python.setWorkingDirectory(QString::fromStdString(dir.string()));
    python.start(u"python3"_qs, {u"main.py"_qs, QString::number(n)});
    QVERIFY(python.waitForFinished(60000));
    QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
    QCOMPARE(QString::fromUtf8(python.readAllStandardOutput()).trimmed(), QString::number(variant));
}

// Each single kernel is slow on one of the two workloads (4,000 passes on the large one, 100,000
// on the small one; shapedScaleKernel says why so many), the dispatching kernel makes one pass on
// both. Measured side by side in one evaluator, the dispatcher must beat the best single kernel by
// far more than timing noise (3x; about 20x where both runners time alike, at least 9x where the
// dispatcher's runner times its one-pass calls 4x slower), and it is written with its record and
// its line in the report.
void TestDispatch::exportMeasuresTheDispatcher_data()
{
    QTest::addColumn<bool>("confine");
    QTest::newRow("confined") << true;
    QTest::newRow("--unconfined") << false; // to debug a dispatcher: measured alike, and recorded so
}

void TestDispatch::exportMeasuresTheDispatcher()
{
    QFETCH(bool, confine);
    const std::string name = confine ? "export" : "export-unconfined";
    const fs::path dir =
        test::writeScaleSession(m_root, name, {shapedScaleKernel("a->n > 10000"), shapedScaleKernel("a->n <= 10000")});
    const fs::path out = m_root / (name + "-out");
    QStringList args {u"export"_qs, u"--session"_qs, QString::fromStdString(dir.string()), u"--out"_qs,
        QString::fromStdString(out.string()), u"--dispatch"_qs, u"--bench-seconds"_qs, u"0.05"_qs};
    if (!confine)
        args << u"--unconfined"_qs;
    const auto r = test::runProgram(u"ksearch"_qs, args);
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(u"dispatching kernel: 2 variants, 1 shapes routed, PASSED"), qPrintable(r.out));
    QVERIFY(fs::exists(out / "dispatch.cpp"));
    const auto record = nlohmann::json::parse(test::readText(out / "dispatch.json"));
    const double dispatched = record["dispatch"]["score"].get<double>();
    const double single = record["best_single"]["score_now"].get<double>();
    QCOMPARE(record["dispatch"]["status"].get<std::string>(), std::string("PASSED"));
    QCOMPARE(record["dispatch"]["confinement"]["off"].get<bool>(), !confine);
    qInfo("dispatching J %.1f, best single J %.1f (measured one after the other)", dispatched, single);
    for (const auto& w : record["dispatch"]["workloads"])
        qInfo("  %s: %.1f us, baseline %.1f us", w["id"].get<std::string>().c_str(), w["latency_us"].get<double>(),
            w["baseline_latency_us"].get<double>());
    QVERIFY2(
        dispatched > 3.0 * single, qPrintable(u"dispatching J %1, best single J %2"_qs.arg(dispatched).arg(single)));
    QVERIFY(test::readText(out / "report.md").find("## Dispatching kernel") != std::string::npos);
}

// PyTorch programs (the host backend, Debian's CPU torch): each slow on one workload, one
// destination-passing and one returning its output. The Python dispatcher routes each workload
// to its fastest and is measured next to the best single program before it is written.
void TestDispatch::exportMeasuresAPythonDispatcher()
{
    const std::string python = test::pythonWithTorch();
    if (python.empty())
        QSKIP("no python3 with torch here: scripts/setup.sh --tests installs Debian's python3-torch");
    const auto program = [](const char* slowWhen, bool returning) {
        return std::string("import torch\n\n\ndef run(x, alpha") + (returning ? "" : ", y")
            + "):\n    n = x.numel()\n    passes = (4000 if n > 10000 else 20000) if (" + slowWhen + ") else 1\n"
            + (returning ? "    y = torch.empty_like(x)\n" : "")
            + "    for _ in range(passes):\n        torch.mul(x, alpha, out=y)\n" + (returning ? "    return y\n" : "");
    };
    const fs::path dir = test::writeScaleSession(
        m_root, "python", {program("n > 10000", false), program("n <= 10000", true)}, Language::Python);
    const fs::path out = m_root / "python-out";
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"export"_qs, u"--session"_qs, QString::fromStdString(dir.string()), u"--out"_qs,
            QString::fromStdString(out.string()), u"--dispatch"_qs, u"--bench-seconds"_qs, u"0.05"_qs, u"--python"_qs,
            QString::fromStdString(python)});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(u"dispatching kernel: 2 variants, 1 shapes routed, PASSED"), qPrintable(r.out));
    QVERIFY(fs::exists(out / "dispatch.py"));
    const auto record = nlohmann::json::parse(test::readText(out / "dispatch.json"));
    const double dispatched = record["dispatch"]["score"].get<double>();
    const double single = record["best_single"]["score_now"].get<double>();
    qInfo("Python dispatcher J %.1f, best single J %.1f (measured one after the other)", dispatched, single);
    for (const auto& w : record["dispatch"]["workloads"])
        qInfo("  %s: %.1f us, baseline %.1f us", w["id"].get<std::string>().c_str(), w["latency_us"].get<double>(),
            w["baseline_latency_us"].get<double>());
    QVERIFY2(
        dispatched > 3.0 * single, qPrintable(u"dispatching J %1, best single J %2"_qs.arg(dispatched).arg(single)));
}

// One program only: the best kernel is the fastest everywhere; the export says so, fails, and
// writes no dispatcher (the rest of the export is written as without --dispatch).
void TestDispatch::nothingToDispatchWritesNothing()
{
    const fs::path dir = test::writeScaleSession(m_root, "single", {shapedScaleKernel("false")});
    const fs::path out = m_root / "single-out";
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"export"_qs, u"--session"_qs, QString::fromStdString(dir.string()), u"--out"_qs,
            QString::fromStdString(out.string()), u"--dispatch"_qs});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(u"nothing to dispatch"), qPrintable(r.err));
    QVERIFY(!fs::exists(out / "dispatch.cpp"));
    QVERIFY(fs::exists(out / "best_kernel.cpp"));
}

KS_TEST_MAIN_CORE(TestDispatch)
#include "tst_dispatch.moc"
