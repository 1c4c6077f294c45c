#include "fakellm.h"
#include "testmain.h"
#include "testsupport.h"

#include <task/evaluation.h>

#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>

#include <pwd.h>
#include <unistd.h>
#include <workerclient.h>

using namespace ks;
namespace fs = std::filesystem;

// Remote evaluation over real ssh: a private sshd (Debian's openssh-server, installed by
// scripts/setup.sh --tests) on loopback with throwaway host and user keys, and `ksearch worker` started
// through it exactly as `--worker "ssh HOST ksearch worker"` starts it on a GPU server. A refused
// key and a missing remote ksearch are reported with what to do.

class TestSshWorker : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void evaluatesOverSsh();
    void searchRunsOverSsh();
    void searchRunsOverRemoteAddress();
    void sshFailuresAreExplained_data();
    void sshFailuresAreExplained();

private:
    QString sshCommand(const QString& key, const QString& remote) const;
    worker::WorkerClient::Options options(const std::string& command) const;

    QTemporaryDir m_dir;
    fs::path m_root;
    QProcess m_sshd;
    quint16 m_port = 0;
    std::string m_digest;
};

static void run(const QString& program, const QStringList& args)
{
    QProcess p;
    p.start(program, args);
    QVERIFY2(p.waitForFinished(30000) && p.exitCode() == 0,
        qPrintable(program + u": "_qs + QString::fromLocal8Bit(p.readAllStandardError())));
}

void TestSshWorker::initTestCase()
{
    if (!fs::exists("/usr/sbin/sshd"))
        QSKIP("openssh-server is not installed (scripts/setup.sh --tests installs it)");
    m_root = m_dir.path().toStdString();
    const QString root = m_dir.path();
    run(u"ssh-keygen"_qs, {u"-q"_qs, u"-t"_qs, u"ed25519"_qs, u"-N"_qs, u""_qs, u"-f"_qs, root + u"/host_key"_qs});
    run(u"ssh-keygen"_qs, {u"-q"_qs, u"-t"_qs, u"ed25519"_qs, u"-N"_qs, u""_qs, u"-f"_qs, root + u"/user_key"_qs});
    run(u"ssh-keygen"_qs, {u"-q"_qs, u"-t"_qs, u"ed25519"_qs, u"-N"_qs, u""_qs, u"-f"_qs, root + u"/other_key"_qs});
    fs::copy_file(m_root / "user_key.pub", m_root / "authorized_keys");
    // A free port, chosen by the kernel and released for sshd.
    {
        QTcpServer probe;
        QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
        m_port = probe.serverPort();
    }
    test::writeText(m_root / "sshd_config",
        "Port " + std::to_string(m_port) + "\nListenAddress 127.0.0.1\nHostKey " + (m_root / "host_key").string()
            + "\nAuthorizedKeysFile " + (m_root / "authorized_keys").string() + "\nPidFile "
            + (m_root / "sshd.pid").string()
            + "\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
              "PubkeyAuthentication yes\nPermitRootLogin yes\n");
    std::error_code ec; // as root sshd wants its privilege-separation directory; as a user it does not
    fs::create_directories("/run/sshd", ec);
    m_sshd.setStandardErrorFile(root + u"/sshd.log"_qs); // its connection log, kept out of the test's output
    m_sshd.start(u"/usr/sbin/sshd"_qs, {u"-D"_qs, u"-e"_qs, u"-f"_qs, root + u"/sshd_config"_qs});
    QVERIFY(m_sshd.waitForStarted(10000));
    // Ready when it accepts a connection.
    QElapsedTimer waited;
    waited.start();
    bool up = false;
    while (!up && waited.elapsed() < 20000 && m_sshd.state() == QProcess::Running) {
        QTcpSocket s;
        s.connectToHost(QHostAddress::LocalHost, m_port);
        up = s.waitForConnected(200);
        if (!up)
            m_sshd.waitForFinished(100); // returns at once while it runs: a bounded wait, not a sleep
    }
    QVERIFY2(up, "sshd did not start listening");

    test::writeScaleTask(m_root / "scale", {1000, 65536}, 2);
    const auto loaded = loadTask(m_root / "scale");
    QVERIFY(loaded.task);
    m_digest = worker::taskDigest(*loaded.task);
}

void TestSshWorker::cleanupTestCase()
{
    if (m_sshd.state() != QProcess::NotRunning) {
        m_sshd.terminate();
        m_sshd.waitForFinished(5000);
    }
}

QString TestSshWorker::sshCommand(const QString& key, const QString& remote) const
{
    const QString user = QString::fromLocal8Bit(getpwuid(getuid())->pw_name);
    return u"ssh -p "_qs + QString::number(m_port) + u" -i "_qs + m_dir.path() + u"/"_qs + key
        + u" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR "_qs + user
        + u"@127.0.0.1 "_qs + remote;
}

worker::WorkerClient::Options TestSshWorker::options(const std::string& command) const
{
    worker::WorkerClient::Options o;
    o.command = command;
    o.task = (m_root / "scale").string();
    o.taskDigest = m_digest;
    o.settings.maxSeconds = 0.05;
    o.replyTimeout = std::chrono::seconds(120);
    return o;
}

void TestSshWorker::evaluatesOverSsh()
{
    const QString ksearch = QString::fromStdString((test::binDir() / "ksearch").string());
    std::string error;
    auto client =
        worker::WorkerClient::start(options(sshCommand(u"user_key"_qs, ksearch + u" worker"_qs).toStdString()), error);
    QVERIFY2(client, error.c_str());
    const fs::path file = m_root / "honest.cpp";
    test::writeText(file, test::scaleKernel(1)); // the honest kernel of the scale task
    const Evaluation first = client->evaluate(file);
    QVERIFY2(first.status == Verdict::Passed, first.log.c_str());
    QElapsedTimer t;
    t.start();
    const Evaluation again = client->evaluate(file); // compiled and prepared already: ssh's share shows
    const double wall = static_cast<double>(t.nsecsElapsed()) * 1e-9;
    QCOMPARE(again.status, Verdict::Passed);
    qInfo("over ssh: %.3f s for an evaluation whose worker-side total was %.3f s", wall, again.totalSeconds);
}

void TestSshWorker::searchRunsOverSsh()
{
    const QString ksearch = QString::fromStdString((test::binDir() / "ksearch").string());
    const QString session = m_dir.path() + u"/session"_qs;
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"run"_qs, u"--task"_qs, QString::fromStdString((m_root / "scale").string()), u"--session"_qs, session,
            u"--backend"_qs, u"host"_qs, u"--budget"_qs, u"3"_qs, u"--bench-seconds"_qs, u"0.03"_qs, u"--provider"_qs,
            u"command"_qs, u"--command"_qs, test::fakeLlmCommand(), u"--model"_qs, u"scripted"_qs, u"--worker"_qs,
            sshCommand(u"user_key"_qs, ksearch + u" worker"_qs), u"--worker-task"_qs,
            QString::fromStdString((m_root / "scale").string())},
        300000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains(u"Evaluations: 3 of 3"), qPrintable(r.out));
}

void TestSshWorker::searchRunsOverRemoteAddress()
{
    // --remote ssh://user@host:port/path: the command is made by ksearch; the key and host-key
    // settings come the way a user's would, here through $KSEARCH_SSH.
    const QString user = QString::fromLocal8Bit(getpwuid(getuid())->pw_name);
    if (!QRegularExpression(u"^[A-Za-z0-9._][A-Za-z0-9._-]*$"_qs).match(user).hasMatch())
        QSKIP("this login name cannot be written in an ssh:// address (tst_sshremote covers the rule)");
    const QString url = u"ssh://"_qs + user + u"@127.0.0.1:"_qs + QString::number(m_port)
        + QString::fromStdString((test::binDir() / "ksearch").string());
    const QString ssh = u"KSEARCH_SSH=ssh -i "_qs + m_dir.path()
        + u"/user_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"_qs;
    const QString task = QString::fromStdString((m_root / "scale").string());
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"run"_qs, u"--task"_qs, task, u"--session"_qs, m_dir.path() + u"/remote-session"_qs, u"--backend"_qs,
            u"host"_qs, u"--budget"_qs, u"3"_qs, u"--bench-seconds"_qs, u"0.03"_qs, u"--provider"_qs, u"command"_qs,
            u"--command"_qs, test::fakeLlmCommand(), u"--model"_qs, u"scripted"_qs, u"--remote"_qs, url,
            u"--worker-task"_qs, task},
        300000, {ssh});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains(u"Evaluations: 3 of 3"), qPrintable(r.out));
    QVERIFY2(
        r.err.contains(u"-o BatchMode=yes -p "_qs + QString::number(m_port)), qPrintable(r.err)); // the evaluator named

    const auto bad = test::runProgram(u"ksearch"_qs,
        {u"run"_qs, u"--task"_qs, task, u"--session"_qs, m_dir.path() + u"/bad-session"_qs, u"--provider"_qs,
            u"command"_qs, u"--command"_qs, test::fakeLlmCommand(), u"--model"_qs, u"scripted"_qs, u"--remote"_qs,
            u"ssh://127.0.0.1:70000"_qs});
    QCOMPARE(bad.exitCode, 2);
    QVERIFY2(bad.err.contains(u"--remote: 'ssh://127.0.0.1:70000': the port '70000'"), qPrintable(bad.err));
}

void TestSshWorker::sshFailuresAreExplained_data()
{
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("remote");
    QTest::addColumn<QString>("fragment");
    const QString ksearch = QString::fromStdString((test::binDir() / "ksearch").string());
    QTest::newRow("refused key") << "other_key" << ksearch + u" worker"_qs
                                 << "ssh could not connect or log in|Permission denied (publickey)";
    QTest::newRow("no ksearch there") << "user_key"
                                      << "/opt/nowhere/ksearch worker"
                                      << "install ksearch (the same version) where the worker runs|not found";
}

void TestSshWorker::sshFailuresAreExplained()
{
    QFETCH(QString, key);
    QFETCH(QString, remote);
    QFETCH(QString, fragment);
    std::string error;
    const std::string command = sshCommand(key, remote).toStdString();
    auto client = worker::WorkerClient::start(options(command), error);
    QVERIFY(!client);
    QVERIFY2(error.find(command) != std::string::npos, error.c_str()); // names the host, in the command
    for (const QString& part : fragment.split(u'|')) // every part: the hint and the tool's own words
        QVERIFY2(QString::fromStdString(error).contains(part), error.c_str());
}

KS_TEST_MAIN_CORE(TestSshWorker)
#include "tst_sshworker.moc"
