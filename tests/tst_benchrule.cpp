#include "testmain.h"
#include "testsupport.h"

#include <task/comparison.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <cmath>
#include <limits>

using namespace ks;
using ks::test::pythonWithTorch;
using ks::test::sourceDir;

// bench/task_rule.py judges outputs on the GPU machine (the kernel lab, the PyTorch bench) by the
// evaluator's tolerance rule, in torch. A lab that judged more kindly than the evaluator once let
// a kernel win there that the evaluator would have failed; this test holds the two to the same
// verdict and matched share on the same data.
class TestBenchRule : public QObject
{
    Q_OBJECT
    QString m_python;
    QTemporaryDir m_dir;

private slots:
    void initTestCase();
    void sameVerdictAsTheEvaluator_data();
    void sameVerdictAsTheEvaluator();
};

namespace {

HostTensor floats(const std::vector<double>& values)
{
    HostTensor h;
    h.name = "output";
    h.dtype = DType::Float32;
    h.shape = {static_cast<std::int64_t>(values.size())};
    h.data.resize(values.size() * sizeof(float));
    for (std::size_t i = 0; i < values.size(); ++i)
        h.set(i, values[i]);
    return h;
}

bool writeRaw(const QString& path, const HostTensor& t)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly)
        && f.write(reinterpret_cast<const char*>(t.data.data()), static_cast<qint64>(t.data.size()))
        == static_cast<qint64>(t.data.size());
}

// The expected output, and the candidate's: damage applied to one element in `every`.
std::pair<std::vector<double>, std::vector<double>> outputs(const QString& damage, int every)
{
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> expected(8192);
    for (std::size_t i = 0; i < expected.size(); ++i)
        expected[i] = 14.0 * std::sin(0.37 * static_cast<double>(i)) + 0.5;
    std::vector<double> actual = expected;
    for (std::size_t i = 0; i < actual.size(); i += static_cast<std::size_t>(every)) {
        const double y = expected[i];
        if (damage == u"none")
            break;
        if (damage == u"-inf both")
            expected[i] = actual[i] = -inf;
        else if (damage == u"-inf expected")
            expected[i] = -inf;
        else
            actual[i] = damage == u"within atol" ? y + 0.009
                : damage == u"within rtol"       ? y * 1.0095
                : damage == u"atol plus rtol"    ? y + 0.009 + 0.009 * std::fabs(y)
                : damage == u"rounding"          ? y * 1.02 + 0.02 * (y < 0 ? -1 : 1)
                : damage == u"offset3"           ? y + 3.0
                : damage == u"zero"              ? 0.0
                : damage == u"nan"               ? std::numeric_limits<double>::quiet_NaN()
                                                 : inf;
    }
    return {expected, actual};
}

} // namespace

void TestBenchRule::initTestCase()
{
    m_python = QString::fromStdString(pythonWithTorch());
    if (m_python.isEmpty())
        QFAIL("no python3 that imports torch: run scripts/setup.sh --tests or set KSEARCH_PYTHON");
    QVERIFY(m_dir.isValid());
}

void TestBenchRule::sameVerdictAsTheEvaluator_data()
{
    QTest::addColumn<QString>("damage");
    QTest::addColumn<int>("every"); // one damaged element in this many
    QTest::addColumn<double>("ratio"); // the task's required matched share
    QTest::addColumn<bool>("passes"); // the evaluator's verdict, stated so a row cannot be vacuous
    QTest::newRow("equal") << "none" << 1 << 1.0 << true;
    QTest::newRow("every element within atol") << "within atol" << 1 << 1.0 << true;
    QTest::newRow("every element within rtol only") << "within rtol" << 1 << 1.0 << true;
    QTest::newRow("atol + rtol is looser than the rule") << "atol plus rtol" << 1 << 1.0 << false;
    QTest::newRow("one element off, all must match") << "offset3" << 100000 << 1.0 << false;
    QTest::newRow("3% off by 2%, 95% must match") << "rounding" << 33 << 0.95 << true;
    QTest::newRow("3% off by 3, within half the RMS") << "offset3" << 33 << 0.95 << true;
    QTest::newRow("3% left at zero (skipped work)") << "zero" << 33 << 0.95 << false;
    QTest::newRow("8% off by 2%, over the 5% budget") << "rounding" << 12 << 0.95 << false;
    QTest::newRow("one NaN among allowed misses") << "nan" << 100000 << 0.95 << false;
    QTest::newRow("one Inf, all must match") << "inf" << 100000 << 1.0 << false;
    QTest::newRow("the same -inf (empty softmax lse)") << "-inf both" << 50 << 1.0 << true;
    QTest::newRow("finite where the reference is -inf") << "-inf expected" << 50 << 1.0 << false;
    QTest::newRow("finite where the reference is -inf, 95%") << "-inf expected" << 50 << 0.95 << true;
}

void TestBenchRule::sameVerdictAsTheEvaluator()
{
    QFETCH(QString, damage);
    QFETCH(int, every);
    QFETCH(double, ratio);
    QFETCH(bool, passes);
    const auto [expectedValues, actualValues] = outputs(damage, every);
    const HostTensor expected = floats(expectedValues);
    const HostTensor actual = floats(actualValues);
    const Tolerance tolerance {0.01, 0.01, ratio, 0.5};
    const OutputComparison evaluator = compareOutput(actual, expected, tolerance);
    QCOMPARE(evaluator.passed, passes);

    const QString actualPath = m_dir.filePath(QStringLiteral("actual.f32"));
    const QString expectedPath = m_dir.filePath(QStringLiteral("expected.f32"));
    QVERIFY(writeRaw(actualPath, actual) && writeRaw(expectedPath, expected));
    const QStringList arguments {QString::fromStdString((sourceDir() / "bench" / "task_rule.py").string()),
        QStringLiteral("--judge"), actualPath, expectedPath, QString::number(tolerance.atol),
        QString::number(tolerance.rtol), QString::number(tolerance.requiredMatchedRatio),
        QString::number(tolerance.missRmsFraction)};
    QProcess python;
    python.start(m_python, arguments);
    QVERIFY2(python.waitForFinished(120000), qPrintable(python.errorString()));
    const QByteArray err = python.readAllStandardError();
    QVERIFY2(python.exitStatus() == QProcess::NormalExit && python.exitCode() == 0, err.constData());
    const QJsonObject verdict = QJsonDocument::fromJson(python.readAllStandardOutput()).object();
    QVERIFY2(verdict.contains(u"within_tolerance"), err.constData());

    QCOMPARE(verdict.value(u"within_tolerance").toBool(), evaluator.passed);
    const double evaluatorShare = static_cast<double>(evaluator.matched) / static_cast<double>(evaluator.total);
    QCOMPARE(verdict.value(u"matched_ratio").toDouble(), evaluatorShare);
}

KS_TEST_MAIN_CORE(TestBenchRule)
#include "tst_benchrule.moc"
