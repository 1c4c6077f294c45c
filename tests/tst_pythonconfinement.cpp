// What the Python runner keeps a Python candidate from (docs/security.md, "Confinement"): the
// same as ksearch-runner keeps a compiled one from (tst_confinement), through the same code
// (libksearch_confine). Each test provokes the escape for real from a PyTorch candidate on the
// host backend; the candidate raises, naming what it reached, if the escape worked, and computes
// its outputs otherwise. Skipped, saying why, where the runner reports that it could not set the
// mechanism up. threadsOutsideTheNamespaceAreFound shows why the namespaces are made before
// torch starts a thread, and that a runner that made them later would say so. Checked to fail
// when they were written, with the Python runner reporting each mechanism without setting it up:
// the candidate wrote into the test's folder, read the secret, connected, kept the run to its
// time limit with its children, allocated 64 GiB, and forked past the limit.

#include "confinementsupport.h"
#include "scaletask.h"
#include "testmain.h"
#include "testsupport.h"

#include <QProcess>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTcpServer>

#include <nlohmann/json.hpp>

#include <csignal>
#include <runnerclient.h>
#include <unistd.h>

using namespace ks;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TestPythonConfinement : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void candidateCannotWriteOutsideItsFolder();
    void candidateCannotReadTheHomeFolder_data();
    void candidateCannotReadTheHomeFolder();
    void candidateCannotReadTheTaskFolder();
    void candidateCannotReachTheNetwork();
    void forkedProcessesDieWithTheRunner();
    void allocationsPastTheMemoryLimitFail();
    void forksPastTheProcessLimitFail();
    void interpreterInAHomeFolderStillImports();
    void threadsOutsideTheNamespaceAreFound_data();
    void threadsOutsideTheNamespaceAreFound();

private:
    struct Outcome {
        Evaluation evaluation;
        std::optional<ksr::EnvironmentLine> environment;
        fs::path jobDir;
    };
    // Evaluates a candidate whose first call runs `escape` (the body of a function that returns
    // what it reached, or None), raising when it returns something, then computes y = alpha * x.
    Outcome evaluateEscape(const std::string& name, const std::string& escape,
        const std::function<void(EvaluatorSettings&)>& adjust = {}, const fs::path& taskRoot = {});

    QTemporaryDir m_dir;
    fs::path m_root;
    std::string m_python;
    std::unique_ptr<QTemporaryDir> m_outside, m_home; // on the disk, outside /tmp
    std::unique_ptr<test::HomeFolder> m_homeForRunners;
};

void TestPythonConfinement::initTestCase()
{
    m_root = fs::path(m_dir.path().toStdString());
    m_python = test::pythonWithTorch();
    if (m_python.empty())
        QSKIP("no python3 with torch here: scripts/setup.sh --tests installs Debian's python3-torch");
    test::writeTwoWorkloadScaleTask(m_root / "scale");
    m_outside = test::folderOnTheDisk("outside");
    m_home = test::folderOnTheDisk("home");
    if (!m_outside || !m_home)
        QSKIP("the working directory is not writable: no folder outside /tmp and the home folder to test with");
    test::writeText(fs::path(m_home->path().toStdString()) / "secret.txt", "s3cret");
    m_homeForRunners = std::make_unique<test::HomeFolder>(m_home->path().toStdString());
}

TestPythonConfinement::Outcome TestPythonConfinement::evaluateEscape(const std::string& name, const std::string& escape,
    const std::function<void(EvaluatorSettings&)>& adjust, const fs::path& taskRoot)
{
    const fs::path workDir = m_root / ("work-" + name);
    auto ev = test::makeScaleEvaluator(taskRoot.empty() ? m_root : taskRoot, workDir, 30s, [&](EvaluatorSettings& s) {
        s.language = Language::Python;
        s.python = m_python;
        if (adjust)
            adjust(s);
    });
    const fs::path source = m_root / "candidates" / (name + ".py");
    test::writeText(source,
        "import ctypes, os, signal, socket, sys, time\nimport torch\n\ntried = False\n\n\ndef escape():\n" + escape
            + "\n\n\ndef run(x, alpha, y):\n    global tried\n    if not tried:\n        tried = True\n"
              "        reached = escape()\n        if reached:\n            raise RuntimeError('escaped: ' + "
              "str(reached))\n    torch.mul(x, alpha, out=y)\n");
    Outcome o;
    o.evaluation = ev->evaluate(source);
    o.jobDir = workDir / "candidate-1";
    o.environment = test::runnerEnvironment(workDir, "candidate-1");
    return o;
}

// Writes into a folder of the test's on the disk and into $HOME, looks for a folder the test made
// under /tmp and writes into its own private one, writes through the root of every thread of its
// process (a thread left in the system's mount namespace would lead there), and last into its
// working directory, the job's folder, which is its own.
void TestPythonConfinement::candidateCannotWriteOutsideItsFolder()
{
    QTemporaryDir underTmp;
    QVERIFY(underTmp.isValid() && underTmp.path().startsWith(u"/tmp/"_qs));
    const std::string outside = m_outside->path().toStdString(), tmp = underTmp.path().toStdString();
    const Outcome o = evaluateEscape("writes-outside",
        "    for path in ['" + outside
            + "/escaped', os.environ.get('HOME', '/nonexistent') + '/escaped']:\n"
              "        try:\n            with open(path, 'w') as f:\n                f.write('x')\n"
              "            return 'wrote ' + path\n        except OSError:\n            pass\n"
              "    if os.path.exists('"
            + tmp + "'):\n        return 'saw " + tmp
            + "'\n"
              "    os.makedirs('"
            + tmp + "')\n    with open('" + tmp
            + "/escaped', 'w') as f:\n        f.write('x')\n"
              "    for tid in os.listdir('/proc/self/task'):\n"
              "        path = '/proc/self/task/%s/root"
            + outside
            + "/through-%s' % (tid, tid)\n"
              "        try:\n            with open(path, 'w') as f:\n                f.write('x')\n"
              "            return 'wrote ' + path\n        except OSError:\n            pass\n"
              "    with open('scratch', 'w') as f:\n        f.write('x')\n    return None");
    QVERIFY2(o.environment.has_value(), o.evaluation.log.c_str());
    if (!o.environment->filesystemConfined)
        QSKIP("the Python runner reported filesystem_confined: false (no mount namespace allowed here, or a mount "
              "stayed writable: its stderr names it)");
    QVERIFY2(o.evaluation.status == Verdict::Passed, o.evaluation.log.c_str());
    QVERIFY(QDir(m_outside->path()).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden));
    QVERIFY(!fs::exists(fs::path(m_home->path().toStdString()) / "escaped"));
    QVERIFY(!fs::exists(fs::path(tmp) / "escaped"));
    QVERIFY(fs::exists(o.jobDir / "scratch"));
}

// Reads the secret the test put in its HOME, lists that folder and /root: all behind empty tmpfs.
// The task's folder (on the disk: under /tmp the private /tmp would hide it anyway) is hidden as
// the home folders are: its workloads.jsonl names the held-out shapes. With confinement off the
// same candidate reads it.
void TestPythonConfinement::candidateCannotReadTheTaskFolder()
{
    const fs::path taskRoot = fs::path(m_outside->path().toStdString()) / "task-root";
    test::writeTwoWorkloadScaleTask(taskRoot / "scale");
    const std::string escape = "    try:\n        with open('"
        + (fs::canonical(taskRoot / "scale") / "workloads.jsonl").string()
        + "') as f:\n            return 'read ' + f.read(20)\n    except OSError:\n        return None";
    const Outcome confined = evaluateEscape("reads-task", escape, {}, taskRoot);
    QVERIFY2(confined.environment.has_value(), confined.evaluation.log.c_str());
    if (!confined.environment->filesystemConfined)
        QSKIP("the Python runner reported filesystem_confined: false");
    QVERIFY2(confined.evaluation.status == Verdict::Passed, confined.evaluation.log.c_str());
    const Outcome off = evaluateEscape(
        "reads-task-off", escape, [](EvaluatorSettings& s) { s.confineCandidates = false; }, taskRoot);
    QVERIFY2(
        off.evaluation.status == Verdict::RuntimeError && off.evaluation.log.find("escaped: read") != std::string::npos,
        off.evaluation.log.c_str());
}

void TestPythonConfinement::candidateCannotReadTheHomeFolder_data()
{
    QTest::addColumn<bool>("homeOnImportPath");
    QTest::newRow("plain") << false;
    // The interpreter's import path is kept readable; a home folder on it (PYTHONPATH, or the
    // working directory) stays hidden: the runner binds back no path that holds a hidden folder.
    // Where the home has a cover of its own, a recursive bind would copy that cover too; where it
    // lies under /tmp (a clean clone's build folder on CI), the private /tmp is its only cover, and
    // the rule alone keeps it: the first version resolved $HOME after /tmp was covered, found
    // nothing, and bound the home back whole (caught by the clean-clone CI run).
    QTest::newRow("the home folder on PYTHONPATH") << true;
}

void TestPythonConfinement::candidateCannotReadTheHomeFolder()
{
    QFETCH(bool, homeOnImportPath);
    const QByteArray before = qgetenv("PYTHONPATH");
    const auto restore = qScopeGuard([&] {
        if (before.isEmpty())
            qunsetenv("PYTHONPATH");
        else
            qputenv("PYTHONPATH", before);
    });
    if (homeOnImportPath)
        qputenv("PYTHONPATH", m_home->path().toLocal8Bit());
    const Outcome o = evaluateEscape(homeOnImportPath ? "reads-home-on-path" : "reads-home",
        "    home = os.environ.get('HOME', '/nonexistent')\n"
        "    try:\n        with open(home + '/secret.txt') as f:\n            return 'read ' + f.read()\n"
        "    except OSError:\n        pass\n"
        "    for folder in (home, '/root'):\n"
        "        if os.path.isdir(folder) and os.listdir(folder):\n            return 'listed ' + folder\n"
        "    return None");
    QVERIFY2(o.environment.has_value(), o.evaluation.log.c_str());
    if (!o.environment->filesystemConfined)
        QSKIP("the Python runner reported filesystem_confined: false");
    QVERIFY2(o.evaluation.status == Verdict::Passed, o.evaluation.log.c_str());
}

// Connects to a server of the test's on loopback. The kernel would accept the connection into the
// server's backlog without the test's event loop, so the candidate's connect succeeding is the
// escape; in its network namespace only a loopback that is down is there.
void TestPythonConfinement::candidateCannotReachTheNetwork()
{
    QTcpServer server;
    QVERIFY2(server.listen(QHostAddress::LocalHost, 0), qPrintable(server.errorString()));
    const Outcome o = evaluateEscape("connects",
        "    try:\n        socket.create_connection(('127.0.0.1', " + std::to_string(server.serverPort())
            + "), timeout=2).close()\n        return 'connected'\n    except OSError:\n        return None");
    QVERIFY2(o.environment.has_value(), o.evaluation.log.c_str());
    if (!o.environment->networkIsolated)
        QSKIP("the Python runner reported network_isolated: false");
    QVERIFY2(o.evaluation.status == Verdict::Passed, o.evaluation.log.c_str());
    QVERIFY(!server.waitForNewConnection(0));
}

// Forks 20 children that leave the runner's session and group, rename themselves to a marker and
// pause for ever. They live in the runner's PID namespace, which ends with the job.
void TestPythonConfinement::forkedProcessesDieWithTheRunner()
{
    const std::string marker = "kspyfork" + std::to_string(::getpid() % 100000);
    const auto cleanup = qScopeGuard([&] {
        for (const int pid : test::processesNamed(marker))
            ::kill(pid, SIGKILL);
    });
    const Outcome o = evaluateEscape("forks",
        "    for _ in range(20):\n        if os.fork() == 0:\n            os.setsid()\n"
        "            ctypes.CDLL(None).prctl(15, b'"
            + marker + "', 0, 0, 0)\n            while True:\n                signal.pause()\n    return None");
    QVERIFY2(o.environment.has_value(), o.evaluation.log.c_str());
    if (!o.environment->processesContained)
        QSKIP("the Python runner reported processes_contained: false (no PID namespace allowed here)");
    QVERIFY2(o.evaluation.status == Verdict::Passed, o.evaluation.log.c_str());
    QVERIFY2(o.evaluation.candidateSeconds < 15.0, qPrintable(QString::number(o.evaluation.candidateSeconds)));
    QTRY_VERIFY2_WITH_TIMEOUT(test::processesNamed(marker).empty(),
        (std::to_string(test::processesNamed(marker).size()) + " children still alive").c_str(), 5000);
}

// Allocates 1 GiB pieces with malloc, up to 64, and names how many it got: its data may grow by
// 4 GiB (RLIMIT_DATA beyond what the runner held when the job began), so it gets at most four. The
// pieces are never touched (a Python bytearray would be: it zeroes its memory), so a missing limit
// shows as 64, not as a machine out of memory.
void TestPythonConfinement::allocationsPastTheMemoryLimitFail()
{
    constexpr std::uint64_t limit = std::uint64_t {4} << 30;
    const Outcome o = evaluateEscape("allocates",
        "    libc = ctypes.CDLL(None)\n    libc.malloc.restype = ctypes.c_void_p\n"
        "    libc.malloc.argtypes = [ctypes.c_size_t]\n    libc.free.argtypes = [ctypes.c_void_p]\n"
        "    pieces = []\n    while len(pieces) < 64:\n        piece = libc.malloc(1 << 30)\n"
        "        if not piece:\n            break\n        pieces.append(piece)\n    for piece in pieces:\n"
        "        libc.free(piece)\n    return 'allocated %d GiB' % len(pieces)",
        [](EvaluatorSettings& s) { s.runnerMemoryLimitBytes = limit; });
    QVERIFY2(o.environment.has_value(), o.evaluation.log.c_str());
    if (o.environment->memoryLimitBytes == 0)
        QSKIP("the Python runner reported no memory limit");
    QCOMPARE(o.environment->memoryLimitBytes, limit);
    QVERIFY2(o.evaluation.status == Verdict::RuntimeError, o.evaluation.log.c_str());
    const QString log = QString::fromStdString(o.evaluation.log);
    static const QRegularExpression allocated(u"escaped: allocated ([0-9]+) GiB"_qs);
    const auto m = allocated.match(log);
    QVERIFY2(m.hasMatch(), qPrintable(log));
    QVERIFY2(m.captured(1).toInt() >= 1 && m.captured(1).toInt() <= 4, qPrintable(log));
}

// Forks children (pausing for ever) until a fork fails or it has 2,000, and writes the count and
// the error into its job's folder. The namespace's pid_max is 400 (the evaluator's setting here),
// of which torch's threads, the init and the runner hold some.
void TestPythonConfinement::forksPastTheProcessLimitFail()
{
    const std::string marker = "kspybomb" + std::to_string(::getpid() % 100000);
    const auto cleanup = qScopeGuard([&] {
        for (const int pid : test::processesNamed(marker))
            ::kill(pid, SIGKILL);
    });
    const Outcome o = evaluateEscape("forks-2000",
        "    n, err = 0, 0\n    while n < 2000:\n        try:\n            pid = os.fork()\n"
        "        except OSError as e:\n            err = e.errno\n            break\n"
        "        if pid == 0:\n            ctypes.CDLL(None).prctl(15, b'"
            + marker
            + "', 0, 0, 0)\n            while True:\n                signal.pause()\n        n += 1\n"
              "    with open('forked.txt', 'w') as f:\n        f.write('%d %d' % (n, err))\n    return None",
        [](EvaluatorSettings& s) { s.runnerProcessLimit = 400; });
    QVERIFY2(o.environment.has_value(), o.evaluation.log.c_str());
    if (o.environment->processLimit == 0)
        QSKIP("the Python runner reported no process limit (a kernel before 6.14, no PID namespace, or a read-only "
              "/proc/sys)");
    QCOMPARE(o.environment->processLimit, std::uint64_t {400});
    QVERIFY2(o.evaluation.status == Verdict::Passed, o.evaluation.log.c_str());
    std::ifstream in(o.jobDir / "forked.txt");
    int forked = -1, error = -1;
    in >> forked >> error;
    QVERIFY2(forked >= 300 && forked < 400, qPrintable(QString::number(forked)));
    QCOMPARE(error, EAGAIN);
    QTRY_VERIFY_WITH_TIMEOUT(test::processesNamed(marker).empty(), 5000);
}

// A Python in a virtual environment under the (hidden) home folder, as conda, a venv or
// ~/.local keep one: the candidate imports a module of that environment's site-packages only
// once the filesystem is narrowed. The runner keeps the interpreter's prefixes and import path
// readable, so the import works and the candidate passes.
void TestPythonConfinement::interpreterInAHomeFolderStillImports()
{
    const fs::path venv = fs::path(m_home->path().toStdString()) / "venv";
    QProcess make;
    make.start(QString::fromStdString(m_python),
        {u"-m"_qs, u"venv"_qs, u"--without-pip"_qs, u"--system-site-packages"_qs,
            QString::fromStdString(venv.string())});
    QVERIFY(make.waitForFinished(120000));
    if (make.exitCode() != 0)
        QSKIP(qPrintable(
            u"no virtual environment could be made here: "_qs + QString::fromUtf8(make.readAllStandardError())));
    const std::string python = (venv / "bin" / "python3").string();
    QProcess where;
    where.start(QString::fromStdString(python), {u"-c"_qs, u"import site; print(site.getsitepackages()[0])"_qs});
    QVERIFY(where.waitForFinished(60000));
    const fs::path sitePackages = QString::fromUtf8(where.readAllStandardOutput()).trimmed().toStdString();
    QVERIFY2(sitePackages.string().rfind(venv.string(), 0) == 0, sitePackages.c_str());
    test::writeText(sitePackages / "ks_venv_helper.py", "def scale(x, alpha, y):\n    y.copy_(x * alpha)\n");
    const fs::path workDir = m_root / "work-venv";
    auto ev = test::makeScaleEvaluator(m_root, workDir, 30s, [&](EvaluatorSettings& s) {
        s.language = Language::Python;
        s.python = python;
    });
    const fs::path source = m_root / "candidates" / "venv.py";
    test::writeText(
        source, "def run(x, alpha, y):\n    import ks_venv_helper\n    ks_venv_helper.scale(x, alpha, y)\n");
    const Evaluation e = ev->evaluate(source);
    const auto env = test::runnerEnvironment(workDir, "candidate-1");
    QVERIFY2(env.has_value(), e.log.c_str());
    if (!env->filesystemConfined)
        QSKIP("the Python runner reported filesystem_confined: false");
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
}

void TestPythonConfinement::threadsOutsideTheNamespaceAreFound_data()
{
    QTest::addColumn<bool>("namespaceFirst");
    QTest::newRow("namespace made before the thread") << true;
    QTest::newRow("namespace made after the thread") << false;
}

// A process (python3 with libksearch_confine, as the Python runner; in a user namespace of its own
// where it is not root, and a PID namespace for its /proc) starts a thread before or after its
// private mount namespace, confines its filesystem to a folder, and writes through each
// thread's /proc/self/task/TID/root into a folder of the test's. Made first, every thread is in
// the namespace: confineFilesystem says confined and nothing is written. Made after (as a runner
// that made it only with the job would), the thread stays in the system's namespace: the write
// through its root lands, which is why both runners make it before any thread, and
// confineFilesystem reports the process as not confined.
void TestPythonConfinement::threadsOutsideTheNamespaceAreFound()
{
    QFETCH(bool, namespaceFirst);
    const fs::path library = runnerLibraryPath("KSEARCH_CONFINE_LIBRARY", "libksearch_confine.so");
    QVERIFY2(!library.empty(), "libksearch_confine.so is not next to ksearch-runner");
    auto target = test::folderOnTheDisk("through-threads");
    QVERIFY(target);
    const fs::path jobDir = m_root / ("thread-job-" + std::to_string(namespaceFirst));
    fs::create_directories(jobDir);
    const std::string script = "import ctypes, json, os, threading\n"
                               "lib = ctypes.PyDLL('"
        + library.string()
        + "')\nlib.ks_confine_filesystem.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64]\n"
          "lib.ks_confine_isolate_network(1)\n" // a user namespace of its own where it is not root
        + (namespaceFirst ? "private = lib.ks_confine_private_mounts()\n" : "")
        + "ctypes.pythonapi.PyOS_BeforeFork()\nif lib.ks_confine_contain_processes() == 1:\n"
          "    ctypes.pythonapi.PyOS_AfterFork_Child()\nelse:\n    ctypes.pythonapi.PyOS_AfterFork_Parent()\n"
          "stop = threading.Event()\nthread = threading.Thread(target=stop.wait)\nthread.start()\n"
        + (namespaceFirst ? "" : "private = lib.ks_confine_private_mounts()\n")
        + "confined = private == 1 and lib.ks_confine_filesystem(b'" + jobDir.string() + "', b'" + jobDir.string()
        + "', 0) == 1\nwritten = 0\nfor tid in os.listdir('/proc/self/task'):\n    try:\n"
          "        with open('/proc/self/task/%s/root"
        + target->path().toStdString()
        + "/through-%s' % (tid, tid), 'w') as f:\n            f.write('x')\n        written += 1\n"
          "    except OSError:\n        pass\nstop.set()\nthread.join()\n"
          "print(json.dumps({'private': private == 1, 'confined': confined, 'written': written}))\n";
    QProcess p;
    p.start(QString::fromStdString(m_python), {u"-c"_qs, QString::fromStdString(script)});
    QVERIFY(p.waitForFinished(60000));
    const QByteArray out = p.readAllStandardOutput(), err = p.readAllStandardError();
    QVERIFY2(p.exitCode() == 0, err.constData());
    const auto j = nlohmann::json::parse(out.toStdString(), nullptr, false);
    QVERIFY2(j.is_object(), out.constData());
    if (!j.value("private", false))
        QSKIP("no mount namespace may be made here (not root, and no user namespace allowed)");
    const int written = j.value("written", -1);
    const int files = static_cast<int>(QDir(target->path()).entryList(QDir::Files).size());
    QCOMPARE(files, written);
    if (namespaceFirst) {
        QVERIFY2(j.value("confined", false), err.constData());
        QCOMPARE(written, 0);
    } else {
        QVERIFY2(!j.value("confined", true), out.constData());
        QVERIFY2(err.contains("another mount namespace"), err.constData());
        QVERIFY2(written >= 1, out.constData()); // the danger is real: the thread's root is the system's
    }
}

KS_TEST_MAIN_CORE(TestPythonConfinement)
#include "tst_pythonconfinement.moc"
