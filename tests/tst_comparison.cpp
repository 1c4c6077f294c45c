#include "testmain.h"

#include <task/comparison.h>

#include <cmath>
#include <limits>

using namespace ks;

static HostTensor tensor(const std::vector<double>& values, DType t = DType::Float32)
{
    HostTensor h;
    h.name = "y";
    h.dtype = t;
    h.shape = {static_cast<std::int64_t>(values.size())};
    h.data.resize(values.size() * dtypeSize(t));
    for (std::size_t i = 0; i < values.size(); ++i)
        h.set(i, values[i]);
    return h;
}

class TestComparison : public QObject
{
    Q_OBJECT
private slots:
    void rule_data();
    void rule();
    void matchedRatio();
    void shapeMismatch();
    void describesWorstElement();
    void samplingFindsWrongRegions_data();
    void samplingFindsWrongRegions();
    void missesAreBounded_data();
    void missesAreBounded();
    void screenedBlocksKeepTheRule_data();
    void screenedBlocksKeepTheRule();
};

void TestComparison::rule_data()
{
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    QTest::addColumn<double>("actual");
    QTest::addColumn<double>("expected");
    QTest::addColumn<bool>("passes");
    QTest::newRow("exact") << 1.0 << 1.0 << true;
    QTest::newRow("within atol") << 0.005 << 0.0 << true;
    QTest::newRow("beyond atol, within rtol") << 100.5 << 100.0 << true; // abs 0.5 > atol, rel 0.005 < rtol
    QTest::newRow("beyond both") << 0.5 << 0.4 << false;
    QTest::newRow("small beyond both") << 0.03 << 0.0 << false;
    QTest::newRow("NaN fails") << nan << 1.0 << false;
    QTest::newRow("NaN never matches NaN") << nan << nan << false;
    QTest::newRow("Inf fails against finite") << inf << 1e30 << false;
    QTest::newRow("-Inf matches -Inf (empty softmax lse)") << -inf << -inf << true;
    QTest::newRow("finite fails against -Inf") << -1e30 << -inf << false;
}

void TestComparison::rule()
{
    QFETCH(double, actual);
    QFETCH(double, expected);
    QFETCH(bool, passes);
    const Tolerance tol {0.01, 0.01, 1.0};
    const auto c = compareOutput(tensor({1.0, actual}), tensor({1.0, expected}), tol);
    QCOMPARE(c.passed, passes);
    QCOMPARE(c.matched, passes ? std::size_t {2} : std::size_t {1});
}

void TestComparison::matchedRatio()
{
    // Misses of 0.3 on values of 1: outside 1e-2, inside the misses' bound (half the RMS).
    std::vector<double> exp(100, 1.0), act(100, 1.0);
    for (int i = 0; i < 5; ++i)
        act[static_cast<std::size_t>(i)] = 1.3;
    QVERIFY(compareOutput(tensor(act), tensor(exp), {0.01, 0.01, 0.95}).passed);
    act[5] = 1.3;
    QVERIFY(!compareOutput(tensor(act), tensor(exp), {0.01, 0.01, 0.95}).passed);
    QVERIFY(!compareOutput(tensor(act), tensor(exp), {0.01, 0.01, 1.0}).passed);
}

void TestComparison::shapeMismatch()
{
    const auto c = compareOutput(tensor({1, 2, 3}), tensor({1, 2}), {});
    QVERIFY(c.shapeMismatch);
    QVERIFY(!c.passed);
    const auto d = compareOutput(tensor({1, 2}, DType::BFloat16), tensor({1, 2}), {});
    QVERIFY(d.shapeMismatch);
}

void TestComparison::describesWorstElement()
{
    const auto c = compareOutput(tensor({1, 2, 7, 4}), tensor({1, 2, 3, 4}), {});
    const QString text = QString::fromStdString(describeComparison(c));
    QVERIFY2(text.contains(u"MISMATCH") && text.contains(u"1 of 4") && text.contains(u"element 2")
            && text.contains(u"got 7") && text.contains(u"expected 3"),
        qPrintable(text));
}

void TestComparison::samplingFindsWrongRegions_data()
{
    QTest::addColumn<int>("wrongFrom"); // elements [wrongFrom, wrongTo) are wrong
    QTest::addColumn<int>("wrongTo");
    QTest::addColumn<bool>("passes");
    QTest::newRow("all right") << 0 << 0 << true;
    QTest::newRow("last tenth wrong (rows skipped)") << 180000 << 200000 << false;
    QTest::newRow("first half wrong (half written)") << 0 << 100000 << false;
    QTest::newRow("every element wrong (stale)") << 0 << 200000 << false;
}

void TestComparison::samplingFindsWrongRegions()
{
    QFETCH(int, wrongFrom);
    QFETCH(int, wrongTo);
    QFETCH(bool, passes);
    std::vector<double> exp(200000), act(200000);
    for (std::size_t i = 0; i < exp.size(); ++i)
        exp[i] = act[i] = std::sin(static_cast<double>(i));
    for (int i = wrongFrom; i < wrongTo; ++i)
        act[static_cast<std::size_t>(i)] += 1.0;
    const HostTensor a = tensor(act), e = tensor(exp);
    // Several secret seeds: each must reach the same verdict while comparing about an eighth.
    for (const std::uint64_t seed : {1ULL, 42ULL, 0xdeadbeefULL}) {
        const auto c = compareOutput(a.view(), e.view(), {0.01, 0.01, 1.0}, {8, seed, 1000});
        QCOMPARE(c.passed, passes);
        QCOMPARE(c.population, exp.size());
        QVERIFY2(c.total > exp.size() / 12 && c.total < exp.size() / 5, qPrintable(QString::number(c.total)));
        if (!passes)
            QVERIFY(QString::fromStdString(describeComparison(c)).contains(u"sampled"));
    }
    // Below the size threshold everything is compared.
    QCOMPARE(compareOutput(a.view(), e.view(), {0.01, 0.01, 1.0}, {8, 1, exp.size()}).total, exp.size());
}

// A 95 % ratio (FlashInfer-Bench's fp8 MoE rule) still bounds the 5 % that miss: skipped work
// (zeros or garbage) and NaN fail however few elements they touch; small misses within the
// budget pass. Expected values: a smooth signal of RMS about 10.
void TestComparison::missesAreBounded_data()
{
    QTest::addColumn<QString>("damage");
    QTest::addColumn<int>("every"); // one damaged element in this many
    QTest::addColumn<bool>("passes");
    QTest::newRow("3% off by 2% (fp8 rounding)") << "rounding" << 33 << true;
    QTest::newRow("3% off by 3 (within half the RMS)") << "offset3" << 33 << true;
    QTest::newRow("3% left at zero (skipped work)") << "zero" << 33 << false;
    QTest::newRow("3% off by 20 (garbage)") << "offset20" << 33 << false;
    QTest::newRow("one NaN") << "nan" << 100000 << false;
    QTest::newRow("8% off by 2% (over the 5% budget)") << "rounding" << 12 << false;
}

void TestComparison::missesAreBounded()
{
    QFETCH(QString, damage);
    QFETCH(int, every);
    QFETCH(bool, passes);
    std::vector<double> expected(20000), actual(20000);
    for (std::size_t i = 0; i < expected.size(); ++i)
        expected[i] = actual[i] = 14.0 * std::sin(0.37 * static_cast<double>(i)) + 0.5;
    for (std::size_t i = 0; i < actual.size(); i += static_cast<std::size_t>(every)) {
        const double y = expected[i];
        actual[i] = damage == u"rounding" ? y * 1.02 + 0.02 * (y < 0 ? -1 : 1)
            : damage == u"offset3"        ? y + 3.0
            : damage == u"zero"           ? 0.0
            : damage == u"offset20"       ? y + 20.0
                                          : std::numeric_limits<double>::quiet_NaN();
    }
    Tolerance t;
    t.requiredMatchedRatio = 0.95;
    const auto c = compareOutput(tensor(actual), tensor(expected), t);
    QVERIFY2(c.passed == passes, describeComparison(c).c_str());
    QVERIFY(c.expectedRms > 9.0 && c.expectedRms < 11.0);
    if (c.total > c.matched)
        QVERIFY2(
            QString::fromStdString(describeComparison(c)).contains(u"matched ratio"), describeComparison(c).c_str());
    // With every element required, the same damage never passes.
    t.requiredMatchedRatio = 1.0;
    QVERIFY(!compareOutput(tensor(actual), tensor(expected), t).passed);
}

// Most blocks are judged by a vectorised screen and only the rest element by element: whatever
// the damage and wherever it falls, the figures must be those of the rule applied to every
// element in order (computed here the plain way), for both element loaders.
void TestComparison::screenedBlocksKeepTheRule_data()
{
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("damage");
    for (const DType t : {DType::Float32, DType::BFloat16})
        for (const char* damage : {"noise", "one miss deep inside", "NaN late", "matching -inf", "error exactly atol",
                 "largest error twice", "growing errors"})
            QTest::addRow("%s %s", t == DType::Float32 ? "float32" : "bfloat16", damage)
                << static_cast<int>(t) << QString::fromLatin1(damage);
}

void TestComparison::screenedBlocksKeepTheRule()
{
    QFETCH(int, dtype);
    QFETCH(QString, damage);
    const auto t = static_cast<DType>(dtype);
    const std::size_t n = 300007; // several threads' chunks, and a last block that is not full
    std::vector<double> want(n), got(n);
    for (std::size_t i = 0; i < n; ++i) {
        want[i] = 3.0 * std::sin(0.011 * static_cast<double>(i));
        got[i] = want[i] + 0.004 * std::cos(0.7 * static_cast<double>(i));
    }
    const double inf = std::numeric_limits<double>::infinity();
    if (damage == u"one miss deep inside")
        got[200003] += 0.5;
    else if (damage == u"NaN late")
        got[n - 3] = std::numeric_limits<double>::quiet_NaN();
    else if (damage == u"matching -inf")
        got[77777] = want[77777] = -inf;
    else if (damage == u"error exactly atol") { // 2^-7, exact in bf16 too
        got[123457] = 0.0078125;
        want[123457] = 0.0;
    } else if (damage == u"largest error twice") { // the first one is the worst
        got[1000] = want[1000] + 0.25;
        got[250000] = want[250000] + 0.25;
    } else if (damage == u"growing errors")
        for (std::size_t i = 5; i < n; i += 4099)
            got[i] = want[i] + 1e-6 * static_cast<double>(i);
    const HostTensor a = tensor(got, t), e = tensor(want, t);
    Tolerance tol;
    tol.atol = 0.0078125;
    // The rule, element by element, on the values as stored.
    std::size_t matched = 0, nonFinite = 0, worst = 0;
    double maxAbs = -1.0, maxRel = 0.0, maxMiss = 0.0, sumSquares = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double x = loadElement(t, a.data.data() + i * dtypeSize(t));
        const double y = loadElement(t, e.data.data() + i * dtypeSize(t));
        if (!std::isfinite(x) || !std::isfinite(y)) {
            if (!std::isfinite(x) && !std::isnan(x) && x == y)
                ++matched;
            else if (!std::isfinite(x))
                ++nonFinite;
            continue;
        }
        const double d = std::fabs(x - y);
        const bool miss = d > tol.atol && d > tol.rtol * std::fabs(y);
        matched += miss ? 0 : 1;
        maxMiss = miss ? std::max(maxMiss, d) : maxMiss;
        maxRel = std::max(maxRel, d / (std::fabs(y) + 1e-8));
        sumSquares += y * y;
        if (d > maxAbs)
            maxAbs = d, worst = i;
    }
    const auto c = compareOutput(a, e, tol);
    QCOMPARE(c.total, n);
    QCOMPARE(c.matched, matched);
    QCOMPARE(c.nonFinite, nonFinite);
    QCOMPARE(c.maxAbsError, maxAbs);
    QCOMPARE(c.maxRelError, maxRel);
    QCOMPARE(c.maxMissError, maxMiss);
    QCOMPARE(c.worstIndex, worst);
    QCOMPARE(c.passed, matched == n);
    // Summed in another order: equal to rounding (a matching -inf counts in the denominator).
    const double rms = std::sqrt(sumSquares / static_cast<double>(n - nonFinite));
    QVERIFY2(std::fabs(c.expectedRms - rms) <= 1e-12 * rms, qPrintable(QString::number(c.expectedRms - rms)));
}

KS_TEST_MAIN_CORE(TestComparison)
#include "tst_comparison.moc"
