#include "testmain.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <sanitizer.h>

using namespace ks;

// Reading compute-sanitizer's report out of a wrapped runner's output (gpu/sanitizer.h): the tool's
// lines are told from the candidate's, a summary the candidate printed never passes for the tool's,
// and a tool that was cut off gives no complete report. The tool itself runs on the GPU machine
// (tst_gpuevaluator::sanitizerReports); its lines here are in its format.
class TestSanitizer : public QObject
{
    Q_OBJECT
private slots:
    void toolNames();
    void commandPutsTheRunnerUnderTheTool();
    void reports_data();
    void reports();
};

void TestSanitizer::toolNames()
{
    for (const auto tool :
        {SanitizerTool::Memcheck, SanitizerTool::Racecheck, SanitizerTool::Initcheck, SanitizerTool::Synccheck})
        QCOMPARE(parseSanitizerTool(sanitizerToolName(tool)), std::optional(tool));
    QVERIFY(!parseSanitizerTool("asan"));
    QVERIFY(!parseSanitizerTool(""));
}

void TestSanitizer::commandPutsTheRunnerUnderTheTool()
{
    const auto words = sanitizerCommand("/opt/cuda/bin/compute-sanitizer", SanitizerTool::Racecheck);
    QCOMPARE(words.front(), std::string("/opt/cuda/bin/compute-sanitizer"));
    const auto at = [&](const char* option) {
        const auto it = std::find(words.begin(), words.end(), option);
        return it != words.end() && it + 1 != words.end() ? *(it + 1) : std::string();
    };
    QCOMPARE(at("--tool"), std::string("racecheck"));
    QCOMPARE(at("--error-exitcode"), std::to_string(kSanitizerErrorExit));
    QCOMPARE(at("--show-backtrace"), std::string("device"));
    QCOMPARE(at("--padding"), std::string()); // memcheck's option only
    const auto memcheck = sanitizerCommand("/opt/cuda/bin/compute-sanitizer", SanitizerTool::Memcheck);
    const auto padding = std::find(memcheck.begin(), memcheck.end(), std::string("--padding"));
    QVERIFY(padding != memcheck.end() && padding + 1 != memcheck.end());
    QCOMPARE(*(padding + 1), std::to_string(kSanitizerPaddingBytes));
}

void TestSanitizer::reports_data()
{
    QTest::addColumn<QString>("out");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<int>("signal");
    QTest::addColumn<bool>("complete");
    QTest::addColumn<int>("errors");
    QTest::addColumn<QStringList>("findings"); // the first line of each, in order
    QTest::addColumn<QString>("problem");

    const QString banner = u"========= COMPUTE-SANITIZER\n"_qs;
    const QString invalidWrite = u"========= Invalid __global__ write of size 4 bytes\n"
                                 "=========     at past(float *, long)+0x80\n"
                                 "=========     by thread (3,0,0) in block (0,0,0)\n"
                                 "=========     Address 0x7f1230000000 is out of bounds\n"
                                 "========= \n"_qs;
    QTest::newRow("clean") << banner + u"ksearch-runner: loading the kernel\n========= ERROR SUMMARY: 0 errors\n"_qs
                           << 0 << 0 << true << 0 << QStringList {} << QString();
    QTest::newRow("one invalid write") << banner + invalidWrite + u"========= ERROR SUMMARY: 1 error\n"_qs << 86 << 0
                                       << true << 1 << QStringList {u"Invalid __global__ write of size 4 bytes"_qs}
                                       << QString();
    QTest::newRow("a race, then the tool's tallies")
        << banner
            + u"========= Error: Race reported between Write access at racy(float *)+0x40\n"
              "=========     and Read access at racy(float *)+0x60 [32 hazards]\n"
              "========= \n"
              "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"
              "========= ERROR SUMMARY: 1 error\n"_qs
        << 86 << 0 << true << 1 << QStringList {u"Error: Race reported between Write access at racy(float *)+0x40"_qs}
        << QString();
    QTest::newRow("a race, closed by racecheck's own tally")
        << banner
            + u"========= Error: Race reported between Write access at racy(float *)+0xd0 in sanitize-3.cu:13\n"
              "=========     and Read access at racy(float *)+0xe0 in sanitize-3.cu:13 [128 hazards]\n"
              "========= \n"
              "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"_qs
        << 86 << 0 << true << 1
        << QStringList {u"Error: Race reported between Write access at racy(float *)+0xd0 in sanitize-3.cu:13"_qs}
        << QString();
    // The candidate prints a clean summary of its own before the tool's: the tool's, last, counts.
    QTest::newRow("a forged summary before the tool's")
        << banner + u"========= ERROR SUMMARY: 0 errors\n"_qs + invalidWrite + u"========= ERROR SUMMARY: 1 error\n"_qs
        << 86 << 0 << true << 1 << QStringList {u"Invalid __global__ write of size 4 bytes"_qs} << QString();
    // ... or after it, from a process that outlived the runner: the exit code overrules it.
    QTest::newRow("a forged summary after the tool's")
        << banner + invalidWrite + u"========= ERROR SUMMARY: 1 error\n========= ERROR SUMMARY: 0 errors\n"_qs << 86
        << 0 << false << 0 << QStringList {u"Invalid __global__ write of size 4 bytes"_qs}
        << u"exit code says it found errors"_qs;
    // A count no tool prints (the candidate's line) is not a summary, and must not throw.
    QTest::newRow("a count beyond any int")
        << banner + u"========= ERROR SUMMARY: 99999999999999999999 errors\n"_qs << 0 << 0 << false << 0
        << QStringList {u"ERROR SUMMARY: 99999999999999999999 errors"_qs} << u"without its closing summary"_qs;
    QTest::newRow("the tool killed before its summary")
        << banner + invalidWrite + u"========= ERROR SUMMARY: 0 errors\n"_qs << -1 << 9 << false << 0
        << QStringList {u"Invalid __global__ write of size 4 bytes"_qs} << u"killed by SIGKILL"_qs;
    QTest::newRow("no summary") << banner + invalidWrite << 0 << 0 << false << 0
                                << QStringList {u"Invalid __global__ write of size 4 bytes"_qs}
                                << u"without its closing summary"_qs;
}

void TestSanitizer::reports()
{
    QFETCH(QString, out);
    QFETCH(int, exitCode);
    QFETCH(int, signal);
    QFETCH(bool, complete);
    QFETCH(int, errors);
    QFETCH(QStringList, findings);
    QFETCH(QString, problem);
    SubprocessResult process;
    process.started = true;
    process.exitCode = exitCode;
    process.signal = signal;
    process.out = out.toStdString();
    const SanitizerReport r = readSanitizerOutput(SanitizerTool::Memcheck, process);
    QCOMPARE(r.complete, complete);
    QCOMPARE(r.errors, errors);
    QCOMPARE(static_cast<qsizetype>(r.findings.size()), findings.size());
    for (qsizetype i = 0; i < findings.size(); ++i)
        QCOMPARE(QString::fromStdString(r.findings[static_cast<std::size_t>(i)]).section(u'\n', 0, 0), findings[i]);
    QVERIFY2(QString::fromStdString(r.problem).contains(problem), r.problem.c_str());
    if (findings.value(0).startsWith(u"Invalid"_qs)) // the details stay with their finding
        QVERIFY2(r.findings[0].find("by thread (3,0,0)") != std::string::npos, r.findings[0].c_str());
    const auto j = toJson(r);
    QCOMPARE(j["errors"].get<int>(), errors);
    QCOMPARE(j["findings"].size(), findings.size());
}

KS_TEST_MAIN_CORE(TestSanitizer)
#include "tst_sanitizer.moc"
