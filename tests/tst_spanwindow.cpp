#include "testmain.h"

#include <QTest>

#include <runner/spanwindow.h>
#include <vector>

using namespace ksr;

// The device time a timed call is charged from CUPTI's activities (gpu/runner/spanwindow.h): the
// arithmetic both runners' spans go through (ksearch-runner and, through libksearch_spans.so, the
// Python runner), here on hand-made records because CI has no device to record them.

using Activities = std::vector<DeviceActivity>;
Q_DECLARE_METATYPE(Activities)

namespace {

constexpr std::uint32_t kHarness = 7; // the harness's stream: the candidate's given stream too
constexpr std::uint32_t kSide = 9; // a stream of the candidate's own

} // namespace

class TestSpanWindow : public QObject
{
    Q_OBJECT

private slots:
    void charged_data();
    void charged();
};

void TestSpanWindow::charged_data()
{
    QTest::addColumn<Activities>("activities");
    QTest::addColumn<bool>("harnessKnown");
    QTest::addColumn<qulonglong>("expected"); // ns, for the window [100, 1000]

    QTest::newRow("no work") << Activities {} << true << 0ULL;
    QTest::newRow("one kernel") << Activities {{110, 120, kHarness}} << true << 10ULL;
    QTest::newRow("overlapping kernels on two streams")
        << Activities {{110, 120, kHarness}, {115, 140, kSide}} << true << 30ULL;
    QTest::newRow("a gap between kernels is the call's")
        << Activities {{110, 120, kHarness}, {300, 310, kSide}} << true << 200ULL;
    QTest::newRow("started after the window closed")
        << Activities {{110, 120, kHarness}, {1500, 1600, kSide}} << true << 10ULL;
    QTest::newRow("ended before the opening: an earlier call's")
        << Activities {{20, 90, kSide}, {110, 120, kHarness}} << true << 10ULL;
    QTest::newRow("running at the opening, ended before the call's first start")
        << Activities {{50, 105, kSide}, {110, 120, kHarness}} << true << 15ULL;
    QTest::newRow("running at the opening, ended inside the call's own span")
        << Activities {{50, 115, kSide}, {110, 120, kHarness}} << true << 20ULL;
    QTest::newRow("running at the opening, ended after the call's own span")
        << Activities {{50, 200, kSide}, {110, 120, kHarness}} << true << 100ULL;
    QTest::newRow("running at the opening, nothing of the call's own")
        << Activities {{50, 130, kSide}} << true << 30ULL;
    QTest::newRow("the latest end of several running")
        << Activities {{50, 104, kSide}, {60, 108, kSide + 1}, {110, 120, kHarness}} << true << 18ULL;
    QTest::newRow("running on the harness's stream is not the candidate's")
        << Activities {{50, 130, kHarness}, {140, 150, kHarness}} << true << 10ULL;
    QTest::newRow("harness stream unknown: running work left out")
        << Activities {{50, 130, kSide}, {140, 150, kHarness}} << false << 10ULL;
    QTest::newRow("zero-length activity alone") << Activities {{110, 110, kHarness}} << true << 0ULL;
    QTest::newRow("zero-length own activity under running work")
        << Activities {{50, 130, kSide}, {110, 110, kHarness}} << true << 30ULL;
    QTest::newRow("starting at the opening is the call's") << Activities {{100, 120, kHarness}} << true << 20ULL;
    QTest::newRow("starting at the closing is the call's") << Activities {{1000, 1010, kSide}} << true << 10ULL;
    QTest::newRow("ending at the opening is an earlier call's")
        << Activities {{50, 100, kSide}, {110, 120, kHarness}} << true << 10ULL;
}

void TestSpanWindow::charged()
{
    QFETCH(Activities, activities);
    QFETCH(bool, harnessKnown);
    QFETCH(qulonglong, expected);
    const auto harness = harnessKnown ? std::optional<std::uint32_t>(kHarness) : std::nullopt;
    QCOMPARE(qulonglong(chargedNanos(activities, 100, 1000, harness)), expected);
}

KS_TEST_MAIN_CORE(TestSpanWindow)
#include "tst_spanwindow.moc"
