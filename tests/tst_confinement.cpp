#include "confinementsupport.h"
#include "scaletask.h"
#include "testmain.h"
#include "testsupport.h"

#include <QDir>
#include <QFutureWatcher>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QtConcurrent/QtConcurrentRun>

#include <csignal>
#include <evaluator.h>
#include <fstream>
#include <functional>
#include <runner/protocol.h>
#include <sys/types.h>
#include <unistd.h>

using namespace ks;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::folderOnTheDisk;
using test::HomeFolder;
using test::processesNamed;
using test::runnerEnvironment;

static const char* const kLoop = test::kScaleLoop;

// What a host runner keeps a candidate from (docs/security.md, "Confinement"): the network, the
// processes it forks outliving it, the filesystem outside its job's folder, the home folders,
// memory, file sizes and processes beyond their limits; and the record of it in every
// evaluation. Each test provokes the candidate's escape for real and is skipped, saying why,
// where the runner reports that it could not set the mechanism up (a kernel or a container that
// refuses the namespace).
class TestConfinement : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void candidateCannotReachTheNetwork();
    void forkedProcessesDieWithTheRunner_data();
    void forkedProcessesDieWithTheRunner();
    void candidateCannotWriteOutsideItsFolder();
    void candidateCannotReadTheHomeFolder();
    void candidateCannotReadTheTaskFolder();
    void allocationsPastTheMemoryLimitFail();
    void filesPastTheSizeLimitAreRefused();
    void forksPastTheProcessLimitFail();
    void evaluationRecordsItsConfinement_data();
    void evaluationRecordsItsConfinement();
    void gapsAreNamed_data();
    void gapsAreNamed();
    void cudaProbeSaysWhetherTheDeviceWorksConfined();

private:
    std::unique_ptr<Evaluator> makeEvaluator(
        std::chrono::milliseconds runTimeout = 20s, const std::function<void(EvaluatorSettings&)>& adjust = {});
    fs::path candidate(const std::string& name, const std::string& body);

    QTemporaryDir m_dir;
    fs::path m_root;
    fs::path m_lastWorkDir; // makeEvaluator's last: where its jobs' result.jsonl files are
};

void TestConfinement::initTestCase()
{
    m_root = fs::path(m_dir.path().toStdString());
    test::writeTwoWorkloadScaleTask(m_root / "scale");
}

std::unique_ptr<Evaluator> TestConfinement::makeEvaluator(
    std::chrono::milliseconds runTimeout, const std::function<void(EvaluatorSettings&)>& adjust)
{
    m_lastWorkDir = m_root / ("work-" + std::to_string(std::rand()));
    return test::makeScaleEvaluator(m_root, m_lastWorkDir, runTimeout, adjust);
}

fs::path TestConfinement::candidate(const std::string& name, const std::string& body)
{
    return test::writeScaleCandidate(m_root, name, body);
}

// A candidate that connects to a server of the test's on loopback, then computes its outputs:
// its runner is in a network namespace of its own (only a loopback that is down), so the
// connection fails and the server never sees it. Where the runner could not isolate the network
// it says so in its environment line, and the test is skipped. Checked to fail without the
// namespace when it was written: with isolateNetwork() returning true without unshare(), the
// server got the connection (and with it returning false, the test skipped).
void TestConfinement::candidateCannotReachTheNetwork()
{
    QTcpServer server;
    QVERIFY2(server.listen(QHostAddress::LocalHost, 0), qPrintable(server.errorString()));
    QSignalSpy connections(&server, &QTcpServer::newConnection);
    auto ev = makeEvaluator();
    const fs::path workDir = m_lastWorkDir;
    const fs::path source = candidate("connects",
        "#include <arpa/inet.h>\n#include <netinet/in.h>\n#include <sys/socket.h>\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static bool tried; if (!tried) { tried = true; const int s = socket(AF_INET, SOCK_STREAM, 0);\n"
        "        sockaddr_in to {}; to.sin_family = AF_INET; to.sin_port = htons("
            + std::to_string(server.serverPort())
            + ");\n"
              "        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);\n"
              "        connect(s, reinterpret_cast<const sockaddr*>(&to), sizeof to); close(s); }\n    "
            + kLoop + "\n    return 0;\n}");
    QFutureWatcher<Evaluation> watcher;
    QSignalSpy finished(&watcher, &QFutureWatcherBase::finished);
    watcher.setFuture(QtConcurrent::run([&] { return ev->evaluate(source); }));
    QVERIFY(finished.wait(60000)); // the event loop runs meanwhile: a connection would be announced
    const Evaluation e = watcher.result();
    const auto env = runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    if (!env->networkIsolated)
        QSKIP("the runner reported network_isolated: false (no network namespace allowed here), so the candidate "
              "could reach the network");
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QCOMPARE(connections.count(), 0);
    QVERIFY(!server.hasPendingConnections());
    QVERIFY(!server.waitForNewConnection(0)); // nothing queued in the kernel either
}

void TestConfinement::forkedProcessesDieWithTheRunner_data()
{
    QTest::addColumn<QString>("child");
    // What each forked child does before it pauses forever.
    QTest::newRow("children in the runner's group") << QString();
    QTest::newRow("children in sessions of their own") << QStringLiteral("setsid();");
    // The classic daemon: a session of its own, forked again (orphaned), its descriptors closed.
    QTest::newRow("daemons") << QStringLiteral(
        "setsid(); if (fork() != 0) _exit(0); for (int fd = 0; fd < 1024; ++fd) close(fd);");
}

// A candidate that forks 200 children on its first call (a failed fork fails the call), each
// renamed to a marker and pausing forever after what the row says, then computes its outputs.
// The runner puts them in a PID namespace whose init dies with it: the evaluation ends well within
// its limit (children that keep the runner's output pipes open no longer hold it up) and leaves
// none of them alive. Where the runner reports no namespace (processes_contained: false) only
// the group kill is checked: the row whose children stay in the group. Checked to fail without
// the namespace when it was written (before containChildProcesses() existed, and again with it
// reporting a namespace it did not make): the rows whose children keep the pipes took the whole
// 8 s limit, and the setsid and daemon rows left 200 children alive.
void TestConfinement::forkedProcessesDieWithTheRunner()
{
    QFETCH(QString, child);
    const std::string marker =
        "ksfork" + std::to_string(::getpid() % 100000) + "-" + std::to_string(std::rand() % 1000);
    const auto cleanup = qScopeGuard([&] { // whatever the outcome, none is left behind by the test
        for (const int pid : processesNamed(marker))
            ::kill(pid, SIGKILL);
    });
    const auto limit = 8s;
    auto ev = makeEvaluator(limit);
    const fs::path workDir = m_lastWorkDir;
    const fs::path source = candidate(std::string("forks-") + QTest::currentDataTag(),
        "#include <csignal>\n#include <sys/prctl.h>\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static bool forked; if (!forked) { forked = true; for (int k = 0; k < 200; ++k) {\n"
        "        const pid_t p = fork(); if (p < 0) return 98;\n"
        "        if (p == 0) { "
            + child.toStdString() + " prctl(PR_SET_NAME, \"" + marker + "\"); for (;;) pause(); } } }\n    " + kLoop
            + "\n    return 0;\n}");
    QFutureWatcher<Evaluation> watcher;
    QSignalSpy finished(&watcher, &QFutureWatcherBase::finished);
    watcher.setFuture(QtConcurrent::run([&] { return ev->evaluate(source); }));
    QVERIFY(finished.wait(60000));
    const Evaluation e = watcher.result();
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    const auto env = runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    if (!env->processesContained && !child.isEmpty())
        QSKIP("the runner reported processes_contained: false (no PID namespace allowed here): a child that leaves "
              "the runner's process group outlives it");
    if (env->processesContained)
        QVERIFY2(e.candidateSeconds < 0.5 * std::chrono::duration<double>(limit).count(),
            qPrintable(QString::number(e.candidateSeconds)));
    // SIGKILL is asynchronous: a child may take a moment to die. One that survived pauses forever.
    QTRY_VERIFY2_WITH_TIMEOUT(processesNamed(marker).empty(),
        (std::to_string(processesNamed(marker).size()) + " children named " + marker + " still alive").c_str(), 5000);
}

// A candidate that, on its first call, tries to write a file into a folder of the test's on the
// disk, and into its $HOME (a folder the test made and named HOME for the runner); then looks for
// a folder the test made under /tmp, makes it and writes there; then writes a file in its working
// directory. Its runner sees the filesystem read-only but for its job's folder and a private,
// empty /tmp, with the home folders behind empty read-only tmpfs (confineFilesystem in
// gpu/runner/confine.cpp): both first writes fail, the test's /tmp folder is not there
// and what is written in the candidate's /tmp never reaches the system's, and the last file lands
// in the job's folder (the first two writes fail with EROFS where the folders are on a read-only
// mount, with ENOENT where they lie under /tmp, which the private /tmp hides: a clone under /tmp
// runs its tests there). The candidate then computes its outputs: PASSED. Each step that went
// otherwise fails the call with a code of its own (RUNTIME_ERROR, "returned 9x"). Skipped where
// the runner reports filesystem_confined: false. Checked to fail when it was written: with
// confineFilesystem() returning true at once, the candidate wrote into the test's folder and
// returned 91; with the read-only remounts and the runner's check of them left out, 91 again
// (without the remounts alone, the runner reported false and the test skipped); with /tmp not
// made private, 93 (it saw the test's folder). $HOME is on the disk here, so its write fails as
// the first one does even where it is not covered; candidateCannotReadTheHomeFolder shows the
// cover.
void TestConfinement::candidateCannotWriteOutsideItsFolder()
{
    const auto outside = folderOnTheDisk("outside");
    const auto home = folderOnTheDisk("home");
    if (!outside || !home)
        QSKIP("the working directory is not writable: no folder outside /tmp and the home folder to test with");
    const fs::path outsideDir = outside->path().toStdString(), homeDir = home->path().toStdString();
    QTemporaryDir underTmp;
    QVERIFY(underTmp.isValid());
    const fs::path tmpDir = underTmp.path().toStdString();
    QVERIFY(tmpDir.string().rfind("/tmp/", 0) == 0);
    const HomeFolder homeForRunners(homeDir);
    auto ev = makeEvaluator();
    const fs::path workDir = m_lastWorkDir;
    const fs::path source = candidate("writes-outside",
        "#include <cerrno>\n#include <sys/stat.h>\n"
        "static int refusedWith(const std::string& path) {\n"
        "    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644); if (fd < 0) return errno;\n"
        "    const bool wrote = write(fd, \"x\", 1) == 1; close(fd); return wrote ? 0 : -1; }\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static int failed = -1; if (failed < 0) { failed = 0; const char* home = getenv(\"HOME\");\n"
        "        if (refusedWith(\""
            + (outsideDir / "escaped").string()
            + "\") == 0) failed = 91;\n"
              "        else if (!home || refusedWith(std::string(home) + \"/escaped\") == 0) failed = 92;\n"
              "        else if (opendir(\""
            + tmpDir.string()
            + "\")) failed = 93;\n"
              "        else if (mkdir(\""
            + tmpDir.string() + "\", 0700) != 0 || refusedWith(\"" + (tmpDir / "escaped").string()
            + "\") != 0) failed = 94;\n"
              "        else if (refusedWith(\"scratch\") != 0) failed = 95; }\n"
              "    if (failed) return failed;\n    "
            + kLoop + "\n    return 0;\n}");
    const Evaluation e = ev->evaluate(source);
    const auto env = runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    if (!env->filesystemConfined)
        QSKIP("the runner reported filesystem_confined: false (no mount namespace allowed here, or a mount stayed "
              "writable: its stderr names it), so the candidate could write outside its folder");
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QVERIFY(!fs::exists(outsideDir / "escaped"));
    QVERIFY(!fs::exists(homeDir / "escaped"));
    QVERIFY(!fs::exists(tmpDir / "escaped"));
    QVERIFY(fs::exists(workDir / "candidate-1" / "scratch")); // its job's folder is its own
}

// The test puts a file in a folder it names HOME for the runner; a candidate tries to read it,
// to list that folder and to list /root (where a root runner's user keeps theirs). The home
// folders are behind empty tmpfs: nothing to read, nothing listed, and the candidate computes its
// outputs: PASSED; a read or a listing that found something returns 96, 97 or 98 instead
// (RUNTIME_ERROR). Skipped where the runner reports filesystem_confined: false. Checked to fail
// when it was written: with the home folders not covered, the read succeeded (returned 96); with
// $HOME alone covered (not /root, /home, /run), as root, /root was listed (returned 98); with
// confineFilesystem() returning true at once, 96.
void TestConfinement::candidateCannotReadTheHomeFolder()
{
    const auto home = folderOnTheDisk("home");
    if (!home)
        QSKIP("the working directory is not writable: no folder outside /tmp to name HOME");
    const fs::path homeDir = home->path().toStdString();
    test::writeText(homeDir / "secret.txt", "s3cret");
    const HomeFolder homeForRunners(homeDir);
    auto ev = makeEvaluator();
    const fs::path workDir = m_lastWorkDir;
    const fs::path source = candidate("reads-home",
        "static bool listsAnything(const char* dir) {\n"
        "    DIR* d = dir ? opendir(dir) : nullptr; if (!d) return false; bool found = false;\n"
        "    while (dirent* e = readdir(d)) found = found || (std::strcmp(e->d_name, \".\") && std::strcmp(e->d_name, "
        "\"..\"));\n"
        "    closedir(d); return found; }\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static int found = -1; if (found < 0) { found = 0; const char* home = getenv(\"HOME\");\n"
        "        if (home && open((std::string(home) + \"/secret.txt\").c_str(), O_RDONLY) >= 0) found = 96;\n"
        "        else if (listsAnything(home)) found = 97;\n"
        "        else if (listsAnything(\"/root\")) found = 98; }\n"
        "    if (found) return found;\n    "
            + std::string(kLoop) + "\n    return 0;\n}");
    const Evaluation e = ev->evaluate(source);
    const auto env = runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    if (!env->filesystemConfined)
        QSKIP("the runner reported filesystem_confined: false (no mount namespace allowed here, or a mount stayed "
              "writable: its stderr names it), so the candidate could read the home folder");
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QCOMPARE(test::readText(homeDir / "secret.txt"), std::string("s3cret")); // it is there, for the others
}

// The task's folder is hidden from the candidate as the home folders are (Job::hiddenPaths, set
// by the evaluator): its workloads.jsonl names the held-out shapes, which a candidate could read
// and print to stderr before failing on a shown workload, whose message the code policy reads.
// The task lies on the disk (under /tmp the private /tmp would hide it anyway); with confinement
// off the same candidate reads it, which shows the read is real.
void TestConfinement::candidateCannotReadTheTaskFolder()
{
    const auto disk = folderOnTheDisk("task");
    if (!disk)
        QSKIP("the working directory is not writable: no folder outside /tmp for the task");
    const fs::path root = disk->path().toStdString();
    test::writeTwoWorkloadScaleTask(root / "scale");
    const fs::path source = test::writeScaleCandidate(root, "reads-task",
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static int found = -1; if (found < 0) found = open(\""
            + (fs::canonical(root / "scale") / "workloads.jsonl").string() + "\", O_RDONLY) >= 0 ? 95 : 0;\n"
            + "    if (found) return found;\n    " + std::string(kLoop) + "\n    return 0;\n}");
    for (const bool confine : {true, false}) {
        const fs::path workDir = root / (confine ? "work-confined" : "work-off");
        auto ev =
            test::makeScaleEvaluator(root, workDir, 20s, [&](EvaluatorSettings& s) { s.confineCandidates = confine; });
        const Evaluation e = ev->evaluate(source);
        if (confine) {
            const auto env = runnerEnvironment(workDir, "candidate-1");
            QVERIFY2(env.has_value(), e.log.c_str());
            if (!env->filesystemConfined)
                QSKIP("the runner reported filesystem_confined: false here, so the task's folder stays readable");
            QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
        } else {
            QVERIFY2(
                e.status == Verdict::RuntimeError && e.log.find("returned 95") != std::string::npos, e.log.c_str());
        }
    }
}

// A candidate that allocates 1 GiB pieces, up to 64 GiB, on its first call, and returns 100 plus
// the number it got. Its runner's data may grow by 4 GiB (the evaluator's limit for this test;
// RLIMIT_DATA): the fourth piece fails (three and the runner's own buffers fill the limit), the
// candidate returns 103 and the workload is RUNTIME_ERROR, well within the time limit. Safe
// without the limit too: only the first three pieces are touched, one page per MiB (every page
// made 3 GiB real, which took this VM's page faults about 10 s of the 20 s limit, and past it
// with the cores busy), the others are only reserved, so a missing limit shows as a
// count past 4 (all 64 where the system overcommits, as Linux does by default) rather than as a
// machine out of memory. The pieces are kept in a volatile array: a compiler may otherwise drop
// an allocation whose pointer is only compared and freed. Skipped where the runner reports no
// memory limit. Checked to fail when it was written: with RLIMIT_DATA not set, it returned 164.
void TestConfinement::allocationsPastTheMemoryLimitFail()
{
    constexpr std::uint64_t limit = std::uint64_t {4} << 30;
    auto ev = makeEvaluator(20s, [&](EvaluatorSettings& s) { s.runnerMemoryLimitBytes = limit; });
    const fs::path workDir = m_lastWorkDir;
    const fs::path source = candidate("allocates-64-gib",
        "static void* volatile pieces[64];\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static bool tried; if (!tried) { tried = true; const size_t gib = size_t {1} << 30; int got = 0;\n"
        "        for (; got < 64; ++got) {\n"
        "            void* p = malloc(gib); pieces[got] = p; if (!p) break;\n"
        "            if (got < 3) for (size_t i = 0; i < gib; i += size_t {1} << 20) static_cast<volatile char*>(p)[i] "
        "= 1; }\n"
        "        for (int k = 0; k < got; ++k) free(pieces[k]);\n"
        "        return 100 + got; }\n    "
            + std::string(kLoop) + "\n    return 0;\n}");
    const Evaluation e = ev->evaluate(source);
    const auto env = runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    if (env->memoryLimitBytes == 0)
        QSKIP("the runner reported no memory limit (memory_limit_bytes: 0)");
    QCOMPARE(env->memoryLimitBytes, limit);
    QVERIFY2(e.status == Verdict::RuntimeError, e.log.c_str());
    const bool failedWithinTheLimit = e.log.find("returned 101") != std::string::npos
        || e.log.find("returned 102") != std::string::npos || e.log.find("returned 103") != std::string::npos
        || e.log.find("returned 104") != std::string::npos;
    QVERIFY2(failedWithinTheLimit, e.log.c_str());
    QVERIFY2(e.candidateSeconds < 20.0, qPrintable(QString::number(e.candidateSeconds)));
}

// A candidate that writes a 2 MiB file in 64 KiB pieces into a folder of the test's under /tmp
// (its private /tmp where the filesystem is confined: it makes the folder first), then deletes it
// and computes its outputs. Its runner may write no file past 1 MiB (the evaluator's limit for
// this test; RLIMIT_FSIZE): the write past it is refused and SIGXFSZ ends the runner, so the
// workload is RUNTIME_ERROR ("killed by SIGXFSZ"); a write refused otherwise (a full /tmp)
// returns 96. Skipped where the runner reports no file limit. Checked to fail when it was
// written: with RLIMIT_FSIZE not set, the private /tmp (as large as the file limit) refused the
// write past 1 MiB (ENOSPC: returned 96), and with no confinement either the candidate wrote its
// 2 MiB and PASSED.
void TestConfinement::filesPastTheSizeLimitAreRefused()
{
    constexpr std::uint64_t limit = std::uint64_t {1} << 20;
    QTemporaryDir underTmp;
    QVERIFY(underTmp.isValid());
    const std::string dir = underTmp.path().toStdString();
    auto ev = makeEvaluator(20s, [&](EvaluatorSettings& s) { s.runnerFileLimitBytes = limit; });
    const fs::path workDir = m_lastWorkDir;
    const fs::path source = candidate("writes-2-mib",
        "#include <sys/stat.h>\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static bool written; if (!written) { written = true; mkdir(\""
            + dir + "\", 0700); const std::string file = \"" + dir
            + "/big.bin\";\n"
              "        const int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644); if (fd < 0) return 95;\n"
              "        static char piece[65536]; for (int k = 0; k < 32; ++k)\n"
              "            if (write(fd, piece, sizeof piece) != static_cast<ssize_t>(sizeof piece)) return 96;\n"
              "        close(fd); unlink(file.c_str()); }\n    "
            + kLoop + "\n    return 0;\n}");
    const Evaluation e = ev->evaluate(source);
    const auto env = runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    if (env->fileLimitBytes == 0)
        QSKIP("the runner reported no file size limit (file_limit_bytes: 0)");
    QCOMPARE(env->fileLimitBytes, limit);
    QVERIFY2(e.status == Verdict::RuntimeError, e.log.c_str());
    QVERIFY2(e.log.find("SIGXFSZ") != std::string::npos, e.log.c_str());
}

// A candidate that forks children (each renamed to a marker and pausing for ever) until a fork
// fails or it has 2,000, writes how many it got and the fork's error into its job's folder, and
// computes its outputs. Its runner's PID namespace holds at most 400 processes and threads (the
// evaluator's limit for this test; the namespace's pid_max): the fork past it fails with EAGAIN,
// the count stays under 400 (the namespace's init and the runner hold two of them), the
// candidate still computes its outputs, and the children end with the namespace. Skipped where
// the runner reports no process limit (a kernel before 6.14 has one pid_max for the whole
// machine, which no job may lower; a read-only /proc/sys). Checked to fail when it was written:
// with limitProcesses() reporting the limit without writing it, the candidate forked all 2,000.
void TestConfinement::forksPastTheProcessLimitFail()
{
    const std::string marker = "ksbomb" + std::to_string(::getpid() % 100000);
    const auto cleanup = qScopeGuard([&] {
        for (const int pid : processesNamed(marker))
            ::kill(pid, SIGKILL);
    });
    auto ev = makeEvaluator(20s, [](EvaluatorSettings& s) { s.runnerProcessLimit = 400; });
    const fs::path workDir = m_lastWorkDir;
    const fs::path count = workDir / "candidate-1" / "forked.txt";
    const fs::path source = candidate("forks-2000",
        "#include <cerrno>\n#include <cstdio>\n#include <sys/prctl.h>\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static bool forked; if (!forked) { forked = true; int n = 0, err = 0;\n"
        "        for (; n < 2000; ++n) { const pid_t p = fork(); if (p < 0) { err = errno; break; }\n"
        "            if (p == 0) { prctl(PR_SET_NAME, \""
            + marker + "\"); for (;;) pause(); } }\n        FILE* f = fopen(\"" + count.string()
            + "\", \"w\"); if (!f) return 95; fprintf(f, \"%d %d\", n, err); fclose(f); }\n    " + kLoop
            + "\n    return 0;\n}");
    const Evaluation e = ev->evaluate(source);
    const auto env = runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    if (env->processLimit == 0)
        QSKIP("the runner reported no process limit (process_limit: 0: a kernel before 6.14, no PID namespace, or a "
              "read-only /proc/sys)");
    QCOMPARE(env->processLimit, std::uint64_t {400});
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    std::ifstream in(count);
    int forked = -1, error = -1;
    in >> forked >> error;
    QVERIFY2(forked >= 350 && forked < 400, qPrintable(QString::number(forked)));
    QCOMPARE(error, EAGAIN);
    QTRY_VERIFY_WITH_TIMEOUT(processesNamed(marker).empty(), 5000);
}

void TestConfinement::evaluationRecordsItsConfinement_data()
{
    QTest::addColumn<bool>("confine");
    QTest::addColumn<bool>("prestart"); // the runner started ahead of its job (told on its command line)
    QTest::newRow("confined") << true << true;
    QTest::newRow("turned off, runner started ahead") << false << true;
    QTest::newRow("turned off, runner started for its job") << false << false;
}

// Every evaluation keeps what its runner reported of the candidate's confinement, and it reads
// back from the journal's form. The setting that turns confinement off reaches the runner
// however it was started: it then makes no namespace and sets no limit, and the evaluation's
// only gap is the setting itself.
void TestConfinement::evaluationRecordsItsConfinement()
{
    QFETCH(bool, confine);
    QFETCH(bool, prestart);
    auto ev = makeEvaluator(20s, [&](EvaluatorSettings& s) {
        s.confineCandidates = confine;
        s.prestartRunners = prestart;
    });
    const fs::path workDir = m_lastWorkDir;
    const Evaluation e = ev->evaluate(candidate("honest",
        std::string("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n    ") + kLoop
            + "\n    return 0;\n}"));
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    const auto env = runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    QVERIFY(e.confinement.has_value());
    const Confinement& c = *e.confinement;
    QCOMPARE(c.off, !confine);
    QCOMPARE(env->confinementOff, !confine);
    QCOMPARE(c.network, env->networkIsolated);
    QCOMPARE(c.processes, env->processesContained);
    QCOMPARE(c.filesystem, env->filesystemConfined);
    QCOMPARE(c.fileLimitBytes, env->fileLimitBytes);
    QCOMPARE(c.memoryLimitBytes, env->memoryLimitBytes);
    QCOMPARE(c.processLimit, env->processLimit);
    QCOMPARE(env->gpuMemoryBudgetBytes, std::uint64_t {0}); // the host backend has no device memory to budget
    QVERIFY(!c.gpuMemoryBudgetBytes.has_value());
    // The compiler gets the host runner's namespaces (ksearch-runner --compile): where the runner
    // had them all, so did it; turned off, neither.
    QVERIFY(c.compilerConfined.has_value());
    QCOMPARE(*c.compilerConfined, confine && c.network && c.processes && c.filesystem);
    if (confine) {
        QVERIFY(c.fileLimitBytes > 0 && c.memoryLimitBytes > 0); // resource limits need no namespace
    } else {
        QVERIFY(!c.network && !c.processes && !c.filesystem);
        QCOMPARE(c.fileLimitBytes + c.memoryLimitBytes + c.processLimit, std::uint64_t {0});
        QCOMPARE(confinementGaps(c), std::vector<std::string> {"confinement turned off in the settings"});
    }
    QCOMPARE(evaluationFromJson(toJson(e)).confinement, e.confinement);
}

// What a record lacks, as the log, `ksearch eval` and the window name it; and the record read
// back from its JSON, also from an evaluation written before GPU budgets were recorded.
void TestConfinement::gapsAreNamed_data()
{
    QTest::addColumn<QString>("record");
    QTest::addColumn<QStringList>("gaps");
    const QString full = u"\"off\": false, \"network\": true, \"processes\": true, \"filesystem\": true, "
                         "\"file_limit_bytes\": 1, \"memory_limit_bytes\": 1, \"process_limit\": 301"_qs;
    QTest::newRow("host, everything") << full << QStringList {};
    QTest::newRow("GPU, everything") << full + u", \"gpu_memory_budget_bytes\": 1073741824"_qs << QStringList {};
    QTest::newRow("GPU, no budget") << full + u", \"gpu_memory_budget_bytes\": 0"_qs
                                    << QStringList {u"no GPU memory budget"_qs};
    QTest::newRow("older runner") << u"\"network\": true"_qs
                                  << QStringList {u"forked processes may outlive the run"_qs,
                                         u"the filesystem is writable"_qs, u"no file size limit"_qs,
                                         u"no memory limit"_qs, u"no process limit"_qs};
    QTest::newRow("compiled confined") << full + u", \"compiler_confined\": true"_qs << QStringList {};
    QTest::newRow("compiler not confined")
        << full + u", \"compiler_confined\": false"_qs << QStringList {u"the compiler ran without full confinement"_qs};
    QTest::newRow("turned off") << u"\"off\": true, \"gpu_memory_budget_bytes\": 0"_qs
                                << QStringList {u"confinement turned off in the settings"_qs};
}

void TestConfinement::gapsAreNamed()
{
    QFETCH(QString, record);
    QFETCH(QStringList, gaps);
    const auto c = confinementFromJson(nlohmann::json::parse(u"{"_qs.toStdString() + record.toStdString() + "}"));
    QVERIFY(c.has_value());
    QStringList named;
    for (const auto& g : confinementGaps(*c))
        named << QString::fromStdString(g);
    QCOMPARE(named, gaps);
    QCOMPARE(confinementFromJson(toJson(*c)), c);
}

// `ksearch-runner --probe-confined DIR`, which ksearch asks once before it lets an ordinary
// user's CUDA runners make a user namespace (gpu/cudausernamespace.h): with a device it makes
// the namespaces (the user namespace where it is not root), narrows the filesystem to DIR and
// copies a buffer through the device, printing what it got; without one it exits 3 naming why,
// prints nothing, and CUDA runners then make no user namespace.
void TestConfinement::cudaProbeSaysWhetherTheDeviceWorksConfined()
{
    const auto devices = test::runProgram(u"ksearch-runner"_qs, {u"--probe"_qs});
    const bool device = !nlohmann::json::parse(devices.out.toStdString())["devices"].empty();
    QTemporaryDir scratch;
    const auto r = test::runProgram(u"ksearch-runner"_qs, {u"--probe-confined"_qs, scratch.path()});
    if (!device) {
        QCOMPARE(r.exitCode, 3);
        QVERIFY2(r.err.contains(u"CUDA unavailable"), qPrintable(r.err));
        QVERIFY2(r.out.trimmed().isEmpty(), qPrintable(r.out));
        return;
    }
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const auto answer = nlohmann::json::parse(r.out.toStdString(), nullptr, false);
    QVERIFY2(answer.is_object(), qPrintable(r.out));
    for (const char* key : {"network_isolated", "processes_contained", "filesystem_confined"})
        QVERIFY2(answer.value(key, false), qPrintable(r.out));
}

KS_TEST_MAIN_CORE(TestConfinement)
#include "tst_confinement.moc"
