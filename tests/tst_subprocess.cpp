#include "testmain.h"
#include "testsupport.h"

#include <QTemporaryDir>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <subprocess.h>

using namespace ks;
using namespace std::chrono_literals;

class TestSubprocess : public QObject
{
    Q_OBJECT
private slots:
    void capturesOutputAndExitCode();
    void reportsSignal();
    void timeoutKillsTheWholeGroup();
    void missingProgram();
    void outputClosedBeforeTheExit();
    void secretsNeverReachTheChild();
    void secretNames_data();
    void secretNames();
};

static SubprocessRequest shell(const std::string& script, std::chrono::milliseconds timeout = 10s)
{
    SubprocessRequest r;
    r.argv = {"/bin/sh", "-c", script};
    r.environment = scrubbedEnvironment();
    r.timeout = timeout;
    return r;
}

void TestSubprocess::capturesOutputAndExitCode()
{
    const auto r = runSubprocess(shell("echo out; echo err >&2; exit 3"));
    QVERIFY(r.started);
    QCOMPARE(r.exitCode, 3);
    QCOMPARE(r.out, std::string("out\n"));
    QCOMPARE(r.err, std::string("err\n"));
    QVERIFY(!r.succeeded());
    QCOMPARE(r.describeExit(), std::string("exit code 3"));
}

void TestSubprocess::reportsSignal()
{
    const auto r = runSubprocess(shell("kill -SEGV $$"));
    QCOMPARE(r.signal, SIGSEGV);
    QCOMPARE(r.describeExit(), std::string("killed by SIGSEGV"));
}

void TestSubprocess::timeoutKillsTheWholeGroup()
{
    QTemporaryDir dir;
    const std::string pidFile = dir.path().toStdString() + "/child.pid";
    // The grandchild ignores SIGTERM and keeps the pipes open: only a group SIGKILL ends it.
    const auto r = runSubprocess(shell(
        "trap '' TERM; (trap '' TERM; echo $$ > /dev/null; sleep 300) & echo $! > " + pidFile + "; sleep 300", 1500ms));
    QVERIFY(r.timedOut);
    QVERIFY(r.seconds < 10.0);
    std::ifstream in(pidFile);
    pid_t child = 0;
    in >> child;
    QVERIFY(child > 0);
    // The grandchild was killed with the group; it is a zombie or gone, never running.
    QTRY_VERIFY_WITH_TIMEOUT(::kill(child, 0) != 0
            || test::readText("/proc/" + std::to_string(child) + "/stat").find(" Z ") != std::string::npos,
        5000);
}

void TestSubprocess::outputClosedBeforeTheExit()
{
    // A program that has said everything and closes its output is not waited for until it exits;
    // finish() then still enforces the limit on the rest of its life.
    ChildProcess child(shell("echo said; exec >&- 2>&-; sleep 300"));
    QVERIFY(child.captureOutput(std::chrono::steady_clock::now() + 60s));
    QCOMPARE(child.partialResult().out, std::string("said\n"));
    QVERIFY(!child.partialResult().timedOut);
    const SubprocessResult end = child.finish(std::chrono::steady_clock::now() + 300ms);
    QVERIFY(end.timedOut); // still sleeping at the limit: killed
    QCOMPARE(end.out, std::string("said\n"));
}

void TestSubprocess::missingProgram()
{
    SubprocessRequest req;
    req.argv = {"/nonexistent/program"};
    const auto r = runSubprocess(req);
    QVERIFY(!r.started);
    QVERIFY(r.error.find("/nonexistent/program") != std::string::npos);
}

void TestSubprocess::secretsNeverReachTheChild()
{
    qputenv("OPENAI_API_KEY", "sk-test-secret-value");
    qputenv("MY_SERVICE_TOKEN", "tok-secret");
    qputenv("KS_HARMLESS", "visible");
    const auto r = runSubprocess(shell("env"));
    QVERIFY(r.succeeded());
    QVERIFY(r.out.find("sk-test-secret-value") == std::string::npos);
    QVERIFY(r.out.find("tok-secret") == std::string::npos);
    QVERIFY(r.out.find("KS_HARMLESS=visible") != std::string::npos);
}

void TestSubprocess::secretNames_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("secret");
    QTest::newRow("openai") << "OPENAI_API_KEY" << true;
    QTest::newRow("anthropic") << "ANTHROPIC_API_KEY" << true;
    QTest::newRow("gemini") << "GEMINI_API_KEY" << true;
    QTest::newRow("lower case") << "hf_token" << true;
    QTest::newRow("aws") << "AWS_SECRET_ACCESS_KEY" << true;
    QTest::newRow("aws id") << "AWS_ACCESS_KEY_ID" << true;
    QTest::newRow("credentials file") << "GOOGLE_APPLICATION_CREDENTIALS" << true;
    QTest::newRow("password") << "DB_PASSWORD" << true;
    QTest::newRow("path") << "PATH" << false;
    QTest::newRow("cuda") << "CUDA_VISIBLE_DEVICES" << false;
    QTest::newRow("home") << "HOME" << false;
}

void TestSubprocess::secretNames()
{
    QFETCH(QString, name);
    QFETCH(bool, secret);
    QCOMPARE(isSecretVariable(name.toStdString()), secret);
}

KS_TEST_MAIN_CORE(TestSubprocess)
#include "tst_subprocess.moc"
