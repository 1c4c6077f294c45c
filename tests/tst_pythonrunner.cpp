// Python candidates (PyTorch) through the Python runner on the host backend: the same rules as
// compiled kernels (docs/evaluation.md), each adversarial pattern answered with its verdict, and
// the environment errors of a python3 without torch named.

#include "testmain.h"
#include "testsupport.h"

#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <evaluator.h>
#include <workerclient.h>
#include <workerprotocol.h>

using namespace ks;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const char* kHonest = "import torch\n\ndef run(x, alpha, y):\n    torch.mul(x, alpha, out=y)\n";

} // namespace

class TestPythonRunner : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void honestCandidatePasses();
    void runnersStartedAheadAreUsed();
    void verdicts_data();
    void verdicts();
    void endlessCandidateTimesOut();
    void precisionRuleReachesTheRunner();
    void rmsnormInPyTorchPasses();
    void evaluatesInAWorker();
    void cliNamesWhatIsMissing_data();
    void cliNamesWhatIsMissing();

private:
    std::unique_ptr<Evaluator> makeEvaluator(
        const fs::path& taskDir, std::chrono::milliseconds runTimeout = 60s, std::vector<std::string> workloads = {});
    fs::path candidate(const std::string& name, const std::string& source);

    QTemporaryDir m_dir;
    fs::path m_root;
    std::string m_python;
    std::unique_ptr<Evaluator> m_shared; // one for the verdict rows: expected outputs made once
};

void TestPythonRunner::initTestCase()
{
    m_root = fs::path(m_dir.path().toStdString());
    m_python = test::pythonWithTorch();
    if (m_python.empty())
        QSKIP("no python3 with torch here: scripts/setup.sh --tests installs Debian's python3-torch");
    test::writeScaleTask(m_root / "scale", {1000, 65536}, 1);
    qputenv("OPENAI_API_KEY", "sk-must-not-leak");
    m_shared = makeEvaluator(m_root / "scale");
    QVERIFY(!m_shared->environmentProblem());
}

std::unique_ptr<Evaluator> TestPythonRunner::makeEvaluator(
    const fs::path& taskDir, std::chrono::milliseconds runTimeout, std::vector<std::string> workloads)
{
    auto loaded = loadTask(taskDir);
    if (!loaded.task)
        qFatal("%s", loaded.diagnostics.formatAll().c_str());
    EvaluatorSettings s;
    s.backend = Backend::Host;
    s.language = Language::Python;
    s.python = m_python;
    s.workDir = m_root / ("work-" + std::to_string(std::rand()));
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.05;
    s.runTimeout = runTimeout;
    s.workloadIds = std::move(workloads);
    return std::make_unique<Evaluator>(std::move(*loaded.task), s);
}

fs::path TestPythonRunner::candidate(const std::string& name, const std::string& source)
{
    const fs::path p = m_root / "candidates" / (name + ".py");
    test::writeText(p, source);
    return p;
}

void TestPythonRunner::honestCandidatePasses()
{
    QCOMPARE(m_shared->sourceSuffix(), std::string(".py"));
    const Evaluation e = m_shared->evaluate(candidate("honest", kHonest));
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QCOMPARE(e.workloads.size(), std::size_t {2});
    for (const auto& w : e.workloads) {
        QCOMPARE(w.status, Verdict::Passed);
        QVERIFY(w.latencyMicros > 0);
        QVERIFY(w.samples >= 10);
        QVERIFY(w.p25Micros <= w.latencyMicros && w.latencyMicros <= w.p75Micros);
    }
    QVERIFY(e.score > 0);
}

// The Python runner started ahead (its imports and device context paid while the candidate
// is checked) is the one the next candidate's job gets.
void TestPythonRunner::runnersStartedAheadAreUsed()
{
    auto ev = makeEvaluator(m_root / "scale");
    for (const char* name : {"ahead-1", "ahead-2", "ahead-3"}) {
        const Evaluation e = ev->evaluate(candidate(name, kHonest));
        QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    }
    QVERIFY2(ev->runsStartedAhead() >= 2, qPrintable(QString::number(ev->runsStartedAhead())));
}

void TestPythonRunner::verdicts_data()
{
    QTest::addColumn<QString>("source");
    QTest::addColumn<int>("verdict");
    QTest::addColumn<QString>("logMentions");

    const auto row = [](const char* name, const std::string& source, Verdict v, const char* mentions) {
        QTest::newRow(name) << QString::fromStdString(source) << static_cast<int>(v) << QString::fromLatin1(mentions);
    };
    row("returns its outputs", "def run(x, alpha):\n    return x * alpha\n", Verdict::Passed, "");
    row("NaN output", "def run(x, alpha, y):\n    y.fill_(float('nan'))\n", Verdict::IncorrectNumerical, "");
    row("half the output",
        "import torch\ndef run(x, alpha, y):\n    n = x.numel() // 2\n"
        "    torch.mul(x[:n], alpha, out=y[:n])\n",
        Verdict::IncorrectNumerical, "");
    row("modifies an input", "def run(x, alpha, y):\n    x.mul_(alpha)\n    y.copy_(x)\n", Verdict::Rejected,
        "modified its inputs");
    row("caches its output by tensor address",
        "_seen = {}\ndef run(x, alpha, y):\n    key = (x.data_ptr(), y.data_ptr())\n"
        "    if key not in _seen:\n        _seen[key] = x * alpha\n    y.copy_(_seen[key])\n",
        Verdict::IncorrectNumerical, "inside the timing loop");
    row("skips the work after the first call",
        "import torch\n_calls = [0]\ndef run(x, alpha, y):\n    _calls[0] += 1\n"
        "    if _calls[0] <= 2:\n        torch.mul(x, alpha, out=y)\n",
        Verdict::IncorrectNumerical, "");
    // The key is in ksearch's environment; a candidate that finds any *_API_KEY fails loudly.
    row("looks for an API key",
        std::string("import os\n") + kHonest
            + "    found = [k for k, v in os.environ.items() if 'API_KEY' in k or 'sk-must-not-leak' in v]\n"
              "    if found:\n        raise RuntimeError('saw ' + ','.join(found))\n",
        Verdict::Passed, "");
    // Computes its first 16 expected outputs and reads every file of the evaluator's scratch
    // folder (every job's), /tmp and /dev/shm for them: the expected outputs are never in a file.
    // The control writes them into its own folder first, and the search finds them there.
    const auto searching = [](const char* first) {
        return std::string("import os\n\n\ndef run(x, alpha, y):\n    expect = (x[:16] * alpha).numpy().tobytes()\n")
            + first
            + "    for top in ('..', '/tmp', '/dev/shm'):\n        for folder, _, files in os.walk(top):\n"
              "            for name in files:\n                try:\n"
              "                    with open(os.path.join(folder, name), 'rb') as f:\n"
              "                        data = f.read(64 << 20)\n                except OSError:\n"
              "                    continue\n                if expect in data:\n"
              "                    raise RuntimeError('found the expected outputs in ' + os.path.join(folder, name))\n"
              "    y.copy_(x * alpha)\n";
    };
    row("looks for the expected outputs in the scratch folders", searching(""), Verdict::Passed, "");
    row("finds outputs it wrote itself (the search's control)",
        searching("    with open('mine.bin', 'wb') as f:\n        f.write(expect)\n"), Verdict::RuntimeError,
        "found the expected outputs in ../");
    // The socket that brought the job is closed before the candidate is imported: nothing it
    // does can reach ksearch through it. It raises when it finds any socket open.
    row("looks for the handoff socket",
        std::string("import os\n") + kHonest
            + "    links = [os.readlink('/proc/self/fd/' + d) for d in os.listdir('/proc/self/fd')\n"
              "             if os.path.exists('/proc/self/fd/' + d)]\n"
              "    sockets = [l for l in links if l.startswith('socket:')]\n"
              "    if sockets:\n        raise RuntimeError('open: ' + ','.join(sockets))\n",
        Verdict::Passed, "");
    // The expected outputs are in ksearch's memfds: opening them through /proc/PPID/fd must fail.
    row("opens its parent's buffers through /proc",
        std::string("import os\n") + kHonest
            + "    d = '/proc/%d/fd' % os.getppid()\n    opened = []\n    try:\n        names = os.listdir(d)\n"
              "    except OSError:\n        names = []\n    for n in names:\n"
              "        try:\n            os.close(os.open(d + '/' + n, os.O_RDONLY))\n            opened.append(n)\n"
              "        except OSError:\n            pass\n"
              "    if opened:\n        raise RuntimeError('opened ' + ','.join(opened))\n",
        Verdict::Passed, "");
    // Right only while its output holds the noise it found on its first call.
    row("depends on the noise in its output",
        "import torch\n_seen = []\ndef run(x, alpha, y):\n    now = y.view(torch.int32)[0].item()\n"
        "    if not _seen:\n        _seen.append(now)\n    torch.mul(x, alpha, out=y)\n"
        "    if now != _seen[0]:\n        y.add_(1000.0)\n",
        Verdict::IncorrectNumerical, "other noise in its outputs");
    row("raises", "def run(x, alpha, y):\n    return 1 / 0\n", Verdict::RuntimeError, "ZeroDivisionError");
    row("returns the wrong shape", "def run(x, alpha):\n    return (x * alpha)[:-1]\n", Verdict::RuntimeError,
        "returned output y is torch.float32");
    // A subclass could compute only when the harness copies it (after the end event).
    row("returns a tensor subclass",
        "import torch\nclass Lazy(torch.Tensor):\n    pass\ndef run(x, alpha):\n    return (x * "
        "alpha).as_subclass(Lazy)\n",
        Verdict::RuntimeError, "not a torch.Tensor");
    row("takes the wrong parameters", "def run(x):\n    return x\n", Verdict::RuntimeError,
        "takes 1 positional parameters");
    row("syntax error", "def run(x, alpha, y)\n    y.copy_(x)\n", Verdict::CompileError, "SyntaxError");
    row("no run", "def kernel(x, alpha, y):\n    y.copy_(x)\n", Verdict::CompileError, "defines no top-level run");
    row("import fails", "import not_a_module_anyone_has\ndef run(x, alpha, y):\n    pass\n", Verdict::RuntimeError,
        "ModuleNotFoundError");
    row("exits the process", "import os\ndef run(x, alpha, y):\n    os._exit(0)\n", Verdict::RuntimeError,
        "during this call");
}

void TestPythonRunner::verdicts()
{
    QFETCH(QString, source);
    QFETCH(int, verdict);
    QFETCH(QString, logMentions);
    const Evaluation e = m_shared->evaluate(candidate(QTest::currentDataTag(), source.toStdString()));
    QVERIFY2(static_cast<int>(e.status) == verdict,
        (std::string(verdictName(e.status)) + " (expected " + std::string(verdictName(static_cast<Verdict>(verdict)))
            + "): " + e.log)
            .c_str());
    QVERIFY2(e.log.find(logMentions.toStdString()) != std::string::npos, e.log.c_str());
}

void TestPythonRunner::endlessCandidateTimesOut()
{
    auto ev = makeEvaluator(m_root / "scale", 8s);
    const auto start = std::chrono::steady_clock::now();
    const Evaluation e = ev->evaluate(candidate("endless", "def run(x, alpha, y):\n    while True:\n        pass\n"));
    QVERIFY2(e.status == Verdict::Timeout, e.log.c_str());
    QVERIFY(std::chrono::steady_clock::now() - start < 60s);
}

// The task's precision rule sets PyTorch's TF32 switches in the runner, for every job alike: a
// candidate that insists on TF32 passes on a task that allows it and fails on one that does not.
void TestPythonRunner::precisionRuleReachesTheRunner()
{
    const fs::path tf32Task = m_root / "scale-tf32";
    test::writeScaleTask(tf32Task, {1000, 65536}, 1);
    auto def = nlohmann::json::parse(test::readText(tf32Task / "definition.json"));
    def["precision"] = {{"rule", "TF32 products are fine here"}, {"tf32", true}};
    test::writeText(tf32Task / "definition.json", def.dump());
    const fs::path wantsTf32 = candidate("wants-tf32",
        "import torch\ndef run(x, alpha, y):\n"
        "    if not (torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32):\n"
        "        raise RuntimeError('TF32 is off here')\n"
        "    torch.mul(x, alpha, out=y)\n");
    const Evaluation allowed = makeEvaluator(tf32Task)->evaluate(wantsTf32);
    QVERIFY2(allowed.status == Verdict::Passed, allowed.log.c_str());
    const Evaluation refused = m_shared->evaluate(wantsTf32);
    QCOMPARE(refused.status, Verdict::RuntimeError);
    QVERIFY2(refused.log.find("TF32 is off here") != std::string::npos, refused.log.c_str());
}

// The example: a PyTorch rmsnorm on the shipped task, checked against reference.cpp.
void TestPythonRunner::rmsnormInPyTorchPasses()
{
    auto ev = makeEvaluator(test::tasksDir() / "rmsnorm", 60s, {"e316a464", "8852bde9", "51c353f8"});
    QVERIFY(!ev->environmentProblem());
    const Evaluation e = ev->evaluate(candidate("rmsnorm",
        "import torch\n\ndef run(hidden_states, weight, eps, output):\n"
        "    x = hidden_states.float()\n"
        "    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()\n"
        "    output.copy_(y.to(torch.bfloat16))\n"));
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QCOMPARE(e.workloads.size(), std::size_t {3});
}

// A search with --worker and --language python: the language travels in the settings, the
// worker runs the candidate with its own machine's interpreter (ksearch worker --python).
void TestPythonRunner::evaluatesInAWorker()
{
    const auto loaded = loadTask(m_root / "scale");
    QVERIFY(loaded.task);
    worker::WorkerClient::Options o;
    o.command = (test::binDir() / "ksearch").string() + " worker --python " + m_python;
    o.task = (m_root / "scale").string();
    o.taskDigest = worker::taskDigest(*loaded.task);
    o.settings.language = "python";
    o.settings.maxSeconds = 0.05;
    o.sourceSuffix = ".py";
    o.replyTimeout = std::chrono::seconds(120);
    std::string error;
    auto client = worker::WorkerClient::start(o, error);
    QVERIFY2(client, error.c_str());
    const Evaluation honest = client->evaluate(candidate("worker-honest", kHonest));
    QVERIFY2(honest.status == Verdict::Passed, honest.log.c_str());
    const Evaluation broken = client->evaluate(candidate("worker-broken", "def run(x, alpha, y)\n    pass\n"));
    QCOMPARE(broken.status, Verdict::CompileError);
    QVERIFY2(broken.log.find("SyntaxError") != std::string::npos, broken.log.c_str());
}

void TestPythonRunner::cliNamesWhatIsMissing_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("mentions");
    const QString file = QString::fromStdString((m_root / "candidates" / "honest.py").string());
    const QString fakeTorch = QString::fromStdString((m_root / "python-without-torch").string());
    QTest::newRow("no such interpreter") << QStringList {u"--python"_qs, u"/nonexistent/python3"_qs} << 3
                                         << u"cannot run the Python interpreter '/nonexistent/python3'"_qs;
    QTest::newRow("interpreter without torch")
        << QStringList {u"--python"_qs, fakeTorch} << 3 << u"cannot import torch: install torch for it, or point"_qs;
    QTest::newRow("interpreter too old") << QStringList {u"--python"_qs,
        QString::fromStdString((m_root / "python-3.8").string())}
                                         << 3 << u"is Python 3.8.10; the Python runner needs 3.9 or newer"_qs;
    QTest::newRow("triton on the host") << QStringList {u"--language"_qs, u"triton"_qs, u"--backend"_qs, u"host"_qs}
                                        << 2 << u"triton candidates run on the GPU"_qs;
    QTest::newRow("unknown language") << QStringList {u"--language"_qs, u"fortran"_qs} << 2
                                      << u"--language: 'fortran' is not a language"_qs;
    Q_UNUSED(file);
}

void TestPythonRunner::cliNamesWhatIsMissing()
{
    QFETCH(QStringList, arguments);
    QFETCH(int, exitCode);
    QFETCH(QString, mentions);
    // A python3 whose torch cannot be imported, as on a machine without it.
    const fs::path blocker = m_root / "blocked-torch";
    test::writeText(blocker / "torch.py", "raise ImportError('No module named torch (blocked by the test)')\n");
    const fs::path wrapper = m_root / "python-without-torch";
    test::writeText(wrapper, "#!/bin/sh\nPYTHONPATH='" + blocker.string() + "' exec " + m_python + " \"$@\"\n");
    fs::permissions(wrapper, fs::perms::owner_all);
    // A python3 that reports 3.8 (the runner needs socket.recv_fds, new in 3.9).
    const fs::path old = m_root / "python-3.8";
    test::writeText(old,
        "#!/bin/sh\nif [ \"$2\" = --probe ]; then echo '{\"python\": \"3.8.10\", \"executable\": "
        "\"/usr/bin/python3.8\", \"torch\": \"2.1.0\", \"cuda\": false}'; exit 0; fi\nexec "
            + m_python + " \"$@\"\n");
    fs::permissions(old, fs::perms::owner_all);
    const fs::path file = candidate("cli-honest", kHonest);
    QStringList args {u"eval"_qs, u"--task"_qs, QString::fromStdString((m_root / "scale").string()), u"--backend"_qs,
        u"host"_qs, QString::fromStdString(file.string())};
    if (arguments.contains(u"--backend"_qs))
        args.remove(3, 2);
    args.append(arguments);
    const auto r = test::runProgram(u"ksearch"_qs, args);
    QVERIFY2(r.exitCode == exitCode, qPrintable(r.err));
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
}

KS_TEST_MAIN_CORE(TestPythonRunner)
#include "tst_pythonrunner.moc"
