#include "fakellm.h"
#include "testmain.h"
#include "testsupport.h"

#include <task/evaluation.h>

#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTemporaryDir>

#include <atomic>
#include <fstream>
#include <slurmallocation.h>
#include <thread>
#include <unistd.h>
#include <workerclient.h>

using namespace ks;
namespace fs = std::filesystem;

// Evaluation on a SLURM cluster: a real single-node SLURM (Debian's slurm-wlm and munge, installed
// by scripts/setup.sh --tests) configured in a temporary folder, and `ksearch worker` started as a job
// step with srun, exactly as `--worker "srun --partition=P ... ksearch worker"` starts it. A
// partition that does not exist is reported with srun's own words. Needs root (slurmd does).

class TestSlurmWorker : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void evaluatesInAJobStep();
    void searchRunsOnTheCluster();
    void unknownPartitionIsNamed();
    void searchRunsInOneAllocation();
    void cancelledStepIsStartedAgain();
    void stepCancelledMidEvaluationIsRetriedOnce();
    void unknownPartitionForTheAllocation();

private:
    std::string srun(const std::string& partition) const;
    // A worker client for the scale task started by `command` (a short timing loop).
    worker::WorkerClient::Options workerOptions(const std::string& command) const;
    static bool cancelStep(const SlurmAllocation& allocation); // scancel JOB.0, the first step
    QProcess* daemon(const QString& program, const QStringList& args, const QString& log);

    QTemporaryDir m_dir;
    fs::path m_root;
    std::vector<std::unique_ptr<QProcess>> m_daemons;
    std::string m_digest;
};

static quint16 freePort()
{
    QTcpServer probe;
    return probe.listen(QHostAddress::LocalHost, 0) ? probe.serverPort() : 0;
}

QProcess* TestSlurmWorker::daemon(const QString& program, const QStringList& args, const QString& log)
{
    auto p = std::make_unique<QProcess>();
    p->setStandardOutputFile(m_dir.path() + u"/"_qs + log);
    p->setStandardErrorFile(m_dir.path() + u"/"_qs + log, QIODevice::Append);
    p->start(program, args);
    p->waitForStarted(10000);
    m_daemons.push_back(std::move(p));
    return m_daemons.back().get();
}

void TestSlurmWorker::initTestCase()
{
    for (const char* tool : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/srun"})
        if (!fs::exists(tool))
            QSKIP("slurm-wlm or munge is not installed (scripts/setup.sh --tests installs them)");
    if (geteuid() != 0)
        QSKIP("a private slurmd needs root");
    m_root = m_dir.path().toStdString();
    for (const char* sub : {"spool", "state", "munge"})
        fs::create_directories(m_root / sub);
    QProcess key;
    key.start(
        u"/usr/sbin/mungekey"_qs, {u"-c"_qs, u"-k"_qs, QString::fromStdString((m_root / "munge/munge.key").string())});
    QVERIFY(key.waitForFinished(30000) && key.exitCode() == 0);
    fs::permissions(m_root / "munge/munge.key", fs::perms::owner_read | fs::perms::owner_write);
    const std::string socket = (m_root / "munge/munge.sock").string();
    daemon(u"/usr/sbin/munged"_qs,
        {u"-F"_qs, u"-f"_qs, u"--key-file"_qs, QString::fromStdString((m_root / "munge/munge.key").string()),
            u"--socket"_qs, QString::fromStdString(socket), u"--pid-file"_qs,
            QString::fromStdString((m_root / "munge/munged.pid").string()), u"--seed-file"_qs,
            QString::fromStdString((m_root / "munge/seed").string()), u"--log-file"_qs,
            QString::fromStdString((m_root / "munge/munged.log").string())},
        u"munged.out"_qs);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string shortHost = host;
    shortHost = shortHost.substr(0, shortHost.find('.'));
    const std::string conf = (m_root / "slurm.conf").string();
    test::writeText(conf,
        "ClusterName=ksearchtest\nSlurmctldHost=" + shortHost + "\nSlurmctldPort=" + std::to_string(freePort())
            + "\nSlurmdPort=" + std::to_string(freePort()) + "\nAuthType=auth/munge\nAuthInfo=socket=" + socket
            + "\nCryptoType=crypto/munge\nStateSaveLocation=" + (m_root / "state").string() + "\nSlurmdSpoolDir="
            + (m_root / "spool").string() + "\nSlurmctldPidFile=" + (m_root / "slurmctld.pid").string()
            + "\nSlurmdPidFile=" + (m_root / "slurmd.pid").string()
            + "\nSlurmUser=root\nProctrackType=proctrack/pgid\nTaskPlugin=task/none\nSchedulerType=sched/builtin\n"
              "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\nMpiDefault=none\n"
              "JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\nNodeName="
            + shortHost + " CPUs=" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN))
            + " State=UNKNOWN\nPartitionName=debug Nodes=" + shortHost + " Default=YES MaxTime=INFINITE State=UP\n");
    qputenv("SLURM_CONF", QByteArray::fromStdString(conf)); // for srun, sinfo and the workers' steps
    daemon(u"/usr/sbin/slurmctld"_qs, {u"-D"_qs, u"-f"_qs, QString::fromStdString(conf)}, u"slurmctld.out"_qs);
    daemon(u"/usr/sbin/slurmd"_qs, {u"-D"_qs, u"-f"_qs, QString::fromStdString(conf)}, u"slurmd.out"_qs);
    // Ready when the node is idle.
    QElapsedTimer waited;
    waited.start();
    bool idle = false;
    while (!idle && waited.elapsed() < 60000) {
        QProcess sinfo;
        sinfo.start(u"sinfo"_qs, {u"-h"_qs, u"-o"_qs, u"%t"_qs});
        idle = sinfo.waitForFinished(10000) && sinfo.readAllStandardOutput().trimmed() == "idle";
        if (!idle)
            m_daemons.back()->waitForFinished(250); // slurmd runs on: a bounded wait between polls
    }
    QVERIFY2(idle, qPrintable(u"the node did not come up; see "_qs + m_dir.path()));

    test::writeScaleTask(m_root / "scale", {1000, 65536}, 2);
    const auto loaded = loadTask(m_root / "scale");
    QVERIFY(loaded.task);
    m_digest = worker::taskDigest(*loaded.task);
}

void TestSlurmWorker::cleanupTestCase()
{
    for (auto it = m_daemons.rbegin(); it != m_daemons.rend(); ++it) {
        (*it)->terminate();
        if (!(*it)->waitForFinished(10000))
            (*it)->kill();
    }
}

std::string TestSlurmWorker::srun(const std::string& partition) const
{
    return "srun --partition=" + partition + " --nodes=1 --ntasks=1 " + (test::binDir() / "ksearch").string()
        + " worker";
}

worker::WorkerClient::Options TestSlurmWorker::workerOptions(const std::string& command) const
{
    worker::WorkerClient::Options o;
    o.command = command;
    o.task = (m_root / "scale").string();
    o.taskDigest = m_digest;
    o.settings.maxSeconds = 0.05;
    o.replyTimeout = std::chrono::seconds(120);
    return o;
}

bool TestSlurmWorker::cancelStep(const SlurmAllocation& allocation)
{
    QProcess cancel;
    cancel.start(u"scancel"_qs, {QString::fromStdString(allocation.jobId() + ".0")});
    return cancel.waitForFinished(30000) && cancel.exitCode() == 0;
}

void TestSlurmWorker::evaluatesInAJobStep()
{
    const worker::WorkerClient::Options o = workerOptions(srun("debug"));
    std::string error;
    auto client = worker::WorkerClient::start(o, error);
    QVERIFY2(client, error.c_str());
    const fs::path file = m_root / "honest.cpp";
    test::writeText(file, test::scaleKernel(1)); // the honest kernel of the scale task
    const Evaluation e = client->evaluate(file);
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QVERIFY(!client->unavailable());
}

void TestSlurmWorker::searchRunsOnTheCluster()
{
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"run"_qs, u"--task"_qs, QString::fromStdString((m_root / "scale").string()), u"--session"_qs,
            m_dir.path() + u"/session"_qs, u"--backend"_qs, u"host"_qs, u"--budget"_qs, u"3"_qs, u"--bench-seconds"_qs,
            u"0.03"_qs, u"--provider"_qs, u"command"_qs, u"--command"_qs, test::fakeLlmCommand(), u"--model"_qs,
            u"scripted"_qs, u"--worker"_qs, QString::fromStdString(srun("debug")), u"--worker-task"_qs,
            QString::fromStdString((m_root / "scale").string())},
        300000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains(u"Evaluations: 3 of 3"), qPrintable(r.out));
}

void TestSlurmWorker::unknownPartitionIsNamed()
{
    worker::WorkerClient::Options o;
    o.command = srun("nosuch");
    o.task = (m_root / "scale").string();
    std::string error;
    QVERIFY(!worker::WorkerClient::start(o, error));
    QVERIFY2(error.find("--partition=nosuch") != std::string::npos, error.c_str());
    QVERIFY2(error.find("invalid partition specified: nosuch") != std::string::npos, error.c_str());
}

// `ksearch run --slurm debug --slurm-workers 2`: one salloc, two worker steps in it, the budget
// spent exactly, and the allocation gone when the run ends.
void TestSlurmWorker::searchRunsInOneAllocation()
{
    const QString session = m_dir.path() + u"/one-allocation"_qs;
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"run"_qs, u"--task"_qs, QString::fromStdString((m_root / "scale").string()), u"--session"_qs, session,
            u"--backend"_qs, u"host"_qs, u"--budget"_qs, u"4"_qs, u"--bench-seconds"_qs, u"0.03"_qs, u"--provider"_qs,
            u"command"_qs, u"--command"_qs, test::fakeLlmCommand(), u"--model"_qs, u"scripted"_qs, u"--slurm"_qs,
            u"debug"_qs, u"--slurm-workers"_qs, u"2"_qs, u"--slurm-ksearch"_qs,
            QString::fromStdString((test::binDir() / "ksearch").string()), u"--worker-task"_qs,
            QString::fromStdString((m_root / "scale").string())},
        300000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains(u"Evaluations: 4 of 4"), qPrintable(r.out));
    const QRegularExpression evaluators(u"2 evaluators: srun --jobid=(\\d+) .*, srun --jobid=(\\d+) "_qs);
    const auto m = evaluators.match(r.err);
    QVERIFY2(m.hasMatch(), qPrintable(r.err));
    QCOMPARE(m.captured(1), m.captured(2)); // both steps of one job
    QProcess squeue;
    squeue.start(u"squeue"_qs, {u"-h"_qs, u"-j"_qs, m.captured(1), u"-o"_qs, u"%T"_qs});
    QVERIFY(squeue.waitForFinished(30000));
    const QString state = QString::fromUtf8(squeue.readAllStandardOutput()).trimmed();
    QVERIFY2(state.isEmpty() || state == u"CANCELLED" || state == u"COMPLETING", qPrintable(state));
}

// A step cancelled between two evaluations (as scancel or a preemption ends it): the next
// candidate finds the worker gone, a new step is started in the same allocation, and the candidate
// is evaluated there, once.
void TestSlurmWorker::cancelledStepIsStartedAgain()
{
    std::string error;
    auto allocation = SlurmAllocation::start({"debug", 1, std::chrono::seconds(60)}, error);
    QVERIFY2(allocation, error.c_str());
    worker::WorkerClient::Options o = workerOptions(allocation->workerCommand((test::binDir() / "ksearch").string()));
    auto client = worker::WorkerClient::start(o, error);
    QVERIFY2(client, error.c_str());
    const fs::path file = m_root / "honest-step.cpp";
    test::writeText(file, test::scaleKernel(1));
    QCOMPARE(client->evaluate(file).status, Verdict::Passed);
    QVERIFY(cancelStep(*allocation));
    QTRY_VERIFY_WITH_TIMEOUT(client->exitCode() != -1, 60000); // the step's srun has gone
    const Evaluation again = client->evaluate(file);
    QVERIFY2(again.status == Verdict::Passed, again.log.c_str());
    QCOMPARE(client->restarts(), 1);
    QVERIFY(!client->unavailable());
}

// The step is cancelled while its worker evaluates (a candidate that never returns, under a
// 3-second limit): the candidate goes to a new step in the same allocation, and one verdict comes
// back, TIMEOUT, from the second step; nothing is counted twice.
void TestSlurmWorker::stepCancelledMidEvaluationIsRetriedOnce()
{
    std::string error;
    auto allocation = SlurmAllocation::start({"debug", 1, std::chrono::seconds(60)}, error);
    QVERIFY2(allocation, error.c_str());
    worker::WorkerClient::Options o = workerOptions(allocation->workerCommand((test::binDir() / "ksearch").string()));
    o.settings.timeoutSeconds = 3;
    auto client = worker::WorkerClient::start(o, error);
    QVERIFY2(client, error.c_str());
    const fs::path file = m_root / "endless-step.cpp";
    test::writeText(file,
        "#include \"ks_task.h\"\nextern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { "
        "for (volatile int i = 0;; i = i + 1) {} return 0; }\n");
    Evaluation result;
    std::atomic<bool> done {false};
    std::thread evaluation([&] {
        result = client->evaluate(file);
        done = true;
    });
    // Cancel once this job's worker is busy with the candidate: it has a child (the compiler or
    // the runner). Other tests' workers and runners may be running too: only this job's count.
    const std::string job = "SLURM_JOB_ID=" + allocation->jobId();
    const auto pids = [](const QStringList& args) {
        QProcess pgrep;
        pgrep.start(u"pgrep"_qs, args);
        pgrep.waitForFinished(10000);
        return QString::fromUtf8(pgrep.readAllStandardOutput()).split(u'\n', Qt::SkipEmptyParts);
    };
    const auto workerBusy = [&] {
        for (const QString& pid : pids({u"-f"_qs, u"ksearch worker"_qs})) {
            std::ifstream variables("/proc/" + pid.toStdString() + "/environ");
            std::string entry;
            bool ours = false;
            while (std::getline(variables, entry, '\0'))
                ours = ours || entry == job;
            if (ours && !pids({u"-P"_qs, pid}).isEmpty())
                return true;
        }
        return false;
    };
    QElapsedTimer waited;
    waited.start();
    bool busy = false;
    while (!(busy = workerBusy()) && waited.elapsed() < 60000 && !done)
        QTest::qWait(20);
    const bool cancelled = busy && cancelStep(*allocation);
    evaluation.join();
    QVERIFY2(busy && cancelled,
        ("the step was not cancelled mid-evaluation; the evaluation gave " + std::string(verdictName(result.status))
            + ": " + result.log)
            .c_str());
    QVERIFY2(result.status == Verdict::Timeout, (std::string(verdictName(result.status)) + ": " + result.log).c_str());
    QCOMPARE(client->restarts(), 1);
    QVERIFY(!client->unavailable());
}

void TestSlurmWorker::unknownPartitionForTheAllocation()
{
    std::string error;
    QVERIFY(!SlurmAllocation::start({"nosuch", 2, std::chrono::seconds(30)}, error));
    QVERIFY2(error.find("SLURM partition nosuch") != std::string::npos, error.c_str());
    QVERIFY2(error.find("invalid partition specified: nosuch") != std::string::npos, error.c_str());
    QVERIFY(!SlurmAllocation::start({",--time=5", 1, std::chrono::seconds(30)}, error));
    QVERIFY2(error.find("names no partition") != std::string::npos, error.c_str());
}

KS_TEST_MAIN_CORE(TestSlurmWorker)
#include "tst_slurmworker.moc"
