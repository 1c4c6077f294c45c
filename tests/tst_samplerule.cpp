#include "testmain.h"
#include "testsupport.h"

#include <QProcess>
#include <QStandardPaths>

#include <nlohmann/json.hpp>

#include <runner/samplerule.h>

using namespace ksr;

// Which figure each timed sample counts with (gpu/runner/samplerule.h), and the Python runner's
// copy of the rule (resources/python/ksearch_pyrunner.py, charge_samples) on the same rows: both
// runners must charge a candidate alike.

namespace {

using Micros = std::vector<double>;

Micros repeated(double value, int n)
{
    return Micros(static_cast<std::size_t>(n), value);
}

// Every third sample of `base` raised to `hiccup`: host jitter on a third of the loop.
Micros everyThird(double base, double hiccup, int n)
{
    Micros v = repeated(base, n);
    for (std::size_t k = 0; k < v.size(); k += 3)
        v[k] = hiccup;
    return v;
}

ChargedSamples chargedByPython(const SampleViews& v, bool spansOn)
{
    const std::string python = QStandardPaths::findExecutable(QStringLiteral("python3")).toStdString();
    if (python.empty())
        return {};
    const nlohmann::json input {{"events", v.events}, {"hosts", v.hostViews},
        {"spans", spansOn ? nlohmann::json(v.spans) : nlohmann::json()}, {"offset", v.spanOffset}};
    QProcess p;
    p.setProgram(QString::fromStdString(python));
    p.setArguments({QStringLiteral("-c"),
        QStringLiteral("import json, sys; sys.path.insert(0, sys.argv[1]); import ksearch_pyrunner as r; "
                       "a = json.loads(sys.stdin.read()); "
                       "print(json.dumps(r.charge_samples(a['events'], a['hosts'], a['spans'], a['offset'])))"),
        QString::fromStdString((ks::test::sourceDir() / "resources" / "python").string())});
    p.start();
    p.write(QByteArray::fromStdString(input.dump()));
    p.closeWriteChannel();
    if (!p.waitForFinished(30000) || p.exitCode() != 0) {
        qWarning("python: %s", p.readAllStandardError().constData());
        return {};
    }
    const auto out = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    ChargedSamples c;
    c.micros = out.at(0).get<Micros>();
    c.side = out.at(1).get<std::vector<bool>>();
    return c;
}

} // namespace

class TestSampleRule : public QObject
{
    Q_OBJECT

private slots:
    void charges_data();
    void charges();
    void medianOfIsTheReportedMedian();
};

void TestSampleRule::charges_data()
{
    QTest::addColumn<Micros>("events");
    QTest::addColumn<Micros>("hosts");
    QTest::addColumn<Micros>("spans"); // empty: CUPTI off
    QTest::addColumn<double>("offset");
    QTest::addColumn<Micros>("expected");
    QTest::addColumn<int>("sideSamples");
    QTest::addColumn<bool>("byHostClock");

    const int n = 9;
    // Session 35's case (the MoE's 1-token call on an H100): host jitter that a per-sample rule
    // charged; on a third of the samples it changes nothing.
    QTest::newRow("spans agree, host hiccups on a third")
        << repeated(10.6, n) << everyThird(10.9, 31.8, n) << repeated(8.1, n) << 2.8 << repeated(10.6, n) << 0 << false;
    QTest::newRow("spans show work on another stream")
        << repeated(2.0, n) << repeated(12.0, n) << repeated(10.0, n) << 2.8 << repeated(12.8, n) << n << false;
    QTest::newRow("span within 1 us of the events")
        << repeated(10.0, n) << repeated(10.0, n) << repeated(10.9, n) << 2.8 << repeated(10.0, n) << 0 << false;
    QTest::newRow("span over 1 us but within 5 %")
        << repeated(100.0, n) << repeated(100.0, n) << repeated(104.0, n) << 2.8 << repeated(100.0, n) << 0 << false;
    QTest::newRow("span over 5 %") << repeated(100.0, n) << repeated(100.0, n) << repeated(106.0, n) << 2.8
                                   << repeated(108.8, n) << n << false;
    // A candidate runs in the runner's process and could turn CUPTI's recording off: the spans
    // then see nothing, and the host clock still sees the device busy on another stream.
    QTest::newRow("spans blind, the host clock sees side work")
        << repeated(2.0, n) << repeated(30.0, n) << repeated(0.0, n) << 2.8 << repeated(30.0, n) << n << true;
    QTest::newRow("spans agree with a late host on every sample")
        << repeated(10.6, n) << repeated(21.0, n) << repeated(8.1, n) << 2.8 << repeated(21.0, n) << n << true;
    // Without spans the host clock alone, on the same medians.
    QTest::newRow("no spans, host hiccups on a third")
        << repeated(10.0, n) << everyThird(10.5, 30.0, n) << Micros {} << 0.0 << repeated(10.0, n) << 0 << false;
    QTest::newRow("no spans, work on another stream")
        << repeated(2.0, n) << everyThird(12.0, 11.0, n) << Micros {} << 0.0 << everyThird(12.0, 11.0, n) << n << true;
    QTest::newRow("no spans, excess under the 3 us floor")
        << repeated(10.0, n) << repeated(12.9, n) << Micros {} << 0.0 << repeated(10.0, n) << 0 << false;
    QTest::newRow("no spans, excess under 10 %")
        << repeated(100.0, n) << repeated(109.0, n) << Micros {} << 0.0 << repeated(100.0, n) << 0 << false;
    QTest::newRow("no spans, excess over 10 %")
        << repeated(100.0, n) << repeated(111.0, n) << Micros {} << 0.0 << repeated(111.0, n) << n << true;
    // Exactly at the margin, where a sum and a difference can round apart (events 10, excess
    // just over 3 us): both runners compare the difference.
    QTest::newRow("no spans, excess a hair over the floor")
        << repeated(10.0, n) << repeated(13.000000000000002, n) << Micros {} << 0.0 << repeated(13.000000000000002, n)
        << n << true;
    // A raised loop keeps a sample's events where its host view happens to read less.
    QTest::newRow("no spans, raised loop, one early host view")
        << repeated(2.0, 3) << Micros {12.0, 1.5, 12.0} << Micros {} << 0.0 << Micros {12.0, 2.0, 12.0} << 2 << true;
}

void TestSampleRule::charges()
{
    QFETCH(Micros, events);
    QFETCH(Micros, hosts);
    QFETCH(Micros, spans);
    QFETCH(double, offset);
    QFETCH(Micros, expected);
    QFETCH(int, sideSamples);
    QFETCH(bool, byHostClock);
    const SampleViews views {events, hosts, spans, offset};
    const ChargedSamples c = chargeSamples(views);
    QCOMPARE(c.micros.size(), expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k)
        QVERIFY2(std::abs(c.micros[k] - expected[k]) < 1e-9, std::to_string(k).c_str());
    QCOMPARE(static_cast<int>(std::count(c.side.begin(), c.side.end(), true)), sideSamples);
    QCOMPARE(c.byHostClock, byHostClock);

    const ChargedSamples py = chargedByPython(views, !spans.empty());
    QVERIFY2(!py.micros.empty(), "the Python runner's charge_samples did not answer");
    QCOMPARE(py.micros.size(), c.micros.size());
    for (std::size_t k = 0; k < expected.size(); ++k)
        QVERIFY2(std::abs(py.micros[k] - expected[k]) < 1e-9, ("python, sample " + std::to_string(k)).c_str());
    QCOMPARE(py.side, c.side);
}

void TestSampleRule::medianOfIsTheReportedMedian()
{
    QCOMPARE(medianOf({}), 0.0);
    QCOMPARE(medianOf({3.0, 1.0, 2.0}), 2.0);
    QCOMPARE(medianOf({4.0, 1.0, 3.0, 2.0}), 3.0); // the upper middle, as statistics() reports
}

KS_TEST_MAIN_CORE(TestSampleRule)
#include "tst_samplerule.moc"
