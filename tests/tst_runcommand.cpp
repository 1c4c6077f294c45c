#include "fakehttpserver.h"
#include "fakellm.h"
#include "testmain.h"
#include "testsupport.h"

#include <QDirIterator>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <set>
#include <sstream>

using namespace ks;
using test::FakeHttpServer;
namespace fs = std::filesystem;

// `ksearch run` and `ksearch export` as a user runs them: the planner is an OpenAI-compatible
// endpoint on loopback (real HTTP, a key in the environment), the coder a command; the run is
// killed with SIGKILL mid-way, resumed, finishes with exact budget counts, and is exported.
class TestRunCommand : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void killResumeExport();
    void resumeWithTheSameCommandLine();
    void usageErrors_data();
    void usageErrors();
    void cudaBackendWithoutGpu();
    void evaluatesThroughAWorker();
    void workerThatDiesHaltsTheRun();
    void parallelEvaluatorsGoOnWithoutALostOne();
    void parallelFlagsAreChecked_data();
    void parallelFlagsAreChecked();

private:
    QStringList runArgs(const QString& session, int budget) const;
    QStringList environment() const;
    static int countEvaluations(const fs::path& journal);

    QTemporaryDir m_tmp;
    fs::path m_root;
    std::unique_ptr<FakeHttpServer> m_planner;
};

static constexpr char kKey[] = "sk-live-RUNCOMMAND-7d1e0c55a9";

void TestRunCommand::initTestCase()
{
    m_root = m_tmp.path().toStdString();
    test::writeScaleTask(m_root / "scale", {4096, 8192}, 8);
    // The world model: chat completions answered by the scripted planner, streamed.
    m_planner = std::make_unique<FakeHttpServer>();
    m_planner->setResponder([](const FakeHttpServer::Request& request) {
        const QJsonObject body = QJsonDocument::fromJson(request.body).object();
        std::vector<std::pair<std::string, std::string>> messages;
        for (const auto& m : body.value(u"messages").toArray())
            messages.push_back({m.toObject().value(u"role").toString().toStdString(),
                m.toObject().value(u"content").toString().toStdString()});
        const std::string text = test::fakeLlmAnswer("planner", messages, "");
        const nlohmann::json delta {
            {"model", "gpt-5.2-test"}, {"choices", {{{"index", 0}, {"delta", {{"content", text}}}}}}};
        const nlohmann::json usage {{"model", "gpt-5.2-test"}, {"choices", nlohmann::json::array()},
            {"usage", {{"prompt_tokens", 1000}, {"completion_tokens", 200}}}};
        return FakeHttpServer::sse({QByteArray::fromStdString(delta.dump()), QByteArray::fromStdString(usage.dump())});
    });
}

QStringList TestRunCommand::runArgs(const QString& session, int budget) const
{
    return {u"run"_qs, u"--task"_qs, QString::fromStdString((m_root / "scale").string()), u"--session"_qs, session,
        u"--backend"_qs, u"host"_qs, u"--budget"_qs, QString::number(budget), u"--k"_qs, u"2"_qs, u"--bench-seconds"_qs,
        u"0.03"_qs, u"--min-improvement"_qs, u"1.0"_qs, u"--provider"_qs, u"openai"_qs, u"--model"_qs, u"gpt-5.2"_qs,
        u"--base-url"_qs, m_planner->baseUrl(), u"--coder-provider"_qs, u"command"_qs, u"--coder-command"_qs,
        test::fakeLlmCommand(), u"--coder-model"_qs, u"local-coder"_qs, u"--label"_qs, u"tst_runcommand"_qs};
}

QStringList TestRunCommand::environment() const
{
    const QString home = QString::fromStdString((m_root / "home").string());
    return {u"OPENAI_API_KEY="_qs + QLatin1String(kKey), u"HOME="_qs + home, u"XDG_DATA_HOME="_qs + home + u"/data",
        u"XDG_CONFIG_HOME="_qs + home + u"/config", u"XDG_CACHE_HOME="_qs + home + u"/cache"};
}

int TestRunCommand::countEvaluations(const fs::path& journal)
{
    int n = 0;
    const QStringList lines = QString::fromStdString(test::readText(journal)).split(u'\n', Qt::SkipEmptyParts);
    for (const QString& line : lines)
        n += line.contains(uR"("type":"evaluation")"_qs) ? 1 : 0;
    return n;
}

void TestRunCommand::killResumeExport()
{
    const QString session = QString::fromStdString((m_root / "session").string());
    const fs::path journal = m_root / "session" / "journal.jsonl";
    QProcess run;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString& kv : environment())
        env.insert(kv.section(u'=', 0, 0), kv.section(u'=', 1));
    run.setProcessEnvironment(env);
    run.start(QString::fromStdString((test::binDir() / "ksearch").string()), runArgs(session, 8));
    QVERIFY(run.waitForStarted());
    // Kill it without warning once three evaluations are in the journal.
    QTRY_VERIFY_WITH_TIMEOUT(fs::exists(journal) && countEvaluations(journal) >= 3, 120000);
    ::kill(static_cast<pid_t>(run.processId()), SIGKILL);
    QVERIFY(run.waitForFinished(10000));
    QCOMPARE(run.exitStatus(), QProcess::CrashExit);
    const int before = countEvaluations(journal);
    QVERIFY(before >= 3 && before < 8);

    const auto resumed =
        test::runProgram(u"ksearch"_qs, {u"run"_qs, u"--resume"_qs, u"--session"_qs, session}, 300000, environment());
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err + resumed.out));
    QVERIFY2(resumed.err.contains(u"resuming"), qPrintable(resumed.err));
    QVERIFY2(resumed.out.contains(u"Finished: budget of 8 evaluations used"), qPrintable(resumed.out));
    QVERIFY2(resumed.out.contains(u"Evaluations: 8 of 8"), qPrintable(resumed.out));
    QVERIFY(resumed.out.contains(u"planner") && resumed.out.contains(u"coder") && resumed.out.contains(u"Time: LLM"));
    QCOMPARE(countEvaluations(journal), 8); // exactly the budget, none lost, none twice
    // One progress line per evaluation of the resumed part.
    QCOMPARE(resumed.out.count(QRegularExpression(uR"(^round +\d+/8 )"_qs, QRegularExpression::MultilineOption)),
        8 - before);

    const QString out = QString::fromStdString((m_root / "export").string());
    const auto exported = test::runProgram(u"ksearch"_qs, {u"export"_qs, u"--session"_qs, session, u"--out"_qs, out});
    QVERIFY2(exported.exitCode == 0, qPrintable(exported.err));
    for (const char* name : {"best_kernel.cpp", "report.md", "tree.json", "tree.svg", "solution.json"})
        QVERIFY2(exported.out.contains(QLatin1String(name)), name);
    const std::string report = test::readText(m_root / "export" / "report.md");
    for (const char* must : {"# K-Search report: scale", "## Best kernel", "| workload | status |", "## LLM use",
             "| planner |", "| coder |", "tst_runcommand", "How the search got there"})
        QVERIFY2(report.find(must) != std::string::npos, must);
    QVERIFY(test::readText(m_root / "export" / "best_kernel.cpp").find("ks_run") != std::string::npos);
    const auto solution = nlohmann::json::parse(test::readText(m_root / "export" / "solution.json"));
    QCOMPARE(solution["spec"]["entry_point"].get<std::string>(), std::string("main.cpp::run"));
    QCOMPARE(solution["spec"]["binding"].get<std::string>(), std::string("torch"));
    QCOMPARE(solution["sources"].size(), std::size_t {3});
    // FlashInfer-Bench traces: a line per evaluation and workload, each naming an exported solution;
    // the fields FlashInfer-Bench's validator requires per status.
    // Where a FlashInfer-Bench dataset keeps them: solutions/<author>/<op_type>/<definition>/ and
    // traces/<author>/<op_type>/<definition>.jsonl, the author and op_type the files' own.
    const fs::path fib = m_root / "export" / "flashinfer-bench";
    QCOMPARE(solution["author"].get<std::string>(), std::string("k-search-studio"));
    std::istringstream workloads(test::readText(fib / "workloads" / "elementwise" / "scale.jsonl"));
    int workloadLines = 0;
    for (std::string line; std::getline(workloads, line); ++workloadLines) {
        const auto w = nlohmann::json::parse(line);
        QCOMPARE(w["definition"].get<std::string>(), std::string("scale"));
        QVERIFY(w["solution"].is_null() && w["evaluation"].is_null() && w["workload"].contains("uuid"));
    }
    QVERIFY(workloadLines > 0);
    // The task has reference.cpp only, and a FlashInfer-Bench definition needs its PyTorch reference.
    QVERIFY(!fs::exists(fib / "definitions"));
    QVERIFY2(exported.err.contains(u"definitions/ not written"_qs) && exported.err.contains(u"add reference.py"_qs),
        qPrintable(exported.err));
    std::istringstream traces(test::readText(fib / "traces" / "k-search-studio" / "elementwise" / "scale.jsonl"));
    int lines = 0, passed = 0;
    for (std::string line; std::getline(traces, line); ++lines) {
        const auto t = nlohmann::json::parse(line);
        QCOMPARE(t["definition"].get<std::string>(), std::string("scale"));
        const std::string name = t["solution"].get<std::string>();
        const fs::path file = fib / "solutions" / "k-search-studio" / "elementwise" / "scale" / (name + ".json");
        QVERIFY2(fs::exists(file), name.c_str());
        const auto stored = nlohmann::json::parse(test::readText(file));
        QCOMPARE(stored["name"].get<std::string>(), name);
        QCOMPARE(stored["author"].get<std::string>(), std::string("k-search-studio"));
        QVERIFY(t["workload"].contains("uuid") && t["workload"].contains("axes"));
        const auto& ev = t["evaluation"];
        const std::string status = ev["status"].get<std::string>();
        QVERIFY2(std::set<std::string>(
                     {"PASSED", "INCORRECT_NUMERICAL", "INCORRECT_SHAPE", "RUNTIME_ERROR", "COMPILE_ERROR", "TIMEOUT"})
                     .count(status),
            status.c_str());
        QCOMPARE(ev.contains("performance"), status == "PASSED");
        QCOMPARE(ev.contains("correctness"), status == "PASSED" || status == "INCORRECT_NUMERICAL");
        if (status == "PASSED") {
            ++passed;
            QVERIFY(ev["performance"]["latency_ms"].get<double>() > 0);
        }
    }
    QVERIFY(passed >= 2 && lines >= passed);
    QVERIFY(test::readText(m_root / "export" / "tree.svg").find("<svg") != std::string::npos);

    // The key went to the endpoint, and into no file the program wrote.
    QVERIFY(std::any_of(m_planner->requests().begin(), m_planner->requests().end(),
        [](const FakeHttpServer::Request& r) { return r.head.contains(QByteArray(QByteArray("Bearer ") + kKey)); }));
    int files = 0;
    for (const fs::path& dir : {m_root / "session", m_root / "export", m_root / "home"})
        for (QDirIterator it(
                 QString::fromStdString(dir.string()), QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
             it.hasNext();) {
            const QString path = it.next();
            ++files;
            QVERIFY2(test::readText(path.toStdString()).find(kKey) == std::string::npos, qPrintable(path));
        }
    QVERIFY(files >= 8);
}

// People resume by re-running the command that started the session with --resume added: that
// works, and a budget raised on the same line is spent; a setting that differs is refused with
// the flag and both values named, and the session is left as it was.
void TestRunCommand::resumeWithTheSameCommandLine()
{
    const QString session = QString::fromStdString((m_root / "again").string());
    const fs::path journal = m_root / "again" / "journal.jsonl";
    const auto first = test::runProgram(u"ksearch"_qs, runArgs(session, 2), 300000, environment());
    QVERIFY2(first.exitCode == 0, qPrintable(first.err + first.out));
    QCOMPARE(countEvaluations(journal), 2);

    struct Change {
        QString flag, value, named;
    };
    const Change changes[] = {{u"--strategy"_qs, u"evolve"_qs, u"'ksearch'"_qs},
        {u"--backend"_qs, u"cuda"_qs, u"'host'"_qs}, {u"--task"_qs, u"rmsnorm"_qs, u"'scale'"_qs},
        {u"--min-improvement"_qs, u"0.5"_qs, u"1"_qs}, {u"--model"_qs, u"gpt-4.1"_qs, u"gpt-5.2"_qs}};
    for (const Change& c : changes) {
        QStringList args = runArgs(session, 3) << u"--resume"_qs;
        const qsizetype at = args.indexOf(c.flag);
        if (at >= 0)
            args[at + 1] = c.value;
        else
            args << c.flag << c.value;
        const auto refused = test::runProgram(u"ksearch"_qs, args, 60000, environment());
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains(c.value) && refused.err.contains(c.named) && refused.err.contains(u"the session"),
            qPrintable(refused.err));
    }
    QCOMPARE(countEvaluations(journal), 2); // nothing ran

    const auto resumed = test::runProgram(u"ksearch"_qs, runArgs(session, 3) << u"--resume"_qs, 300000, environment());
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err + resumed.out));
    QVERIFY2(resumed.out.contains(u"Evaluations: 3 of 3"), qPrintable(resumed.out));
    QCOMPARE(countEvaluations(journal), 3);
}

void TestRunCommand::usageErrors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("no session") << QStringList {u"run"_qs, u"--task"_qs, u"rmsnorm"_qs} << "--session DIR is required";
    QTest::newRow("no task") << QStringList {u"run"_qs, u"--session"_qs, u"/tmp/x"_qs}
                             << "--task NAME|PATH is required";
    QTest::newRow("bad strategy") << QStringList {u"run"_qs, u"--session"_qs, u"/tmp/x"_qs, u"--task"_qs, u"rmsnorm"_qs,
        u"--strategy"_qs, u"annealing"_qs}
                                  << "--strategy: 'annealing'";
    QTest::newRow("bad budget") << QStringList {u"run"_qs, u"--session"_qs, u"/tmp/x"_qs, u"--task"_qs, u"rmsnorm"_qs,
        u"--budget"_qs, u"0"_qs} << "--budget: '0' is not a positive integer";
    QTest::newRow("no provider") << QStringList {u"run"_qs, u"--session"_qs, u"/tmp/x"_qs, u"--task"_qs, u"rmsnorm"_qs}
                                 << "--provider: is required";
    QTest::newRow("resume nothing") << QStringList {u"run"_qs, u"--resume"_qs, u"--session"_qs, u"/nonexistent/s"_qs}
                                    << "no session here";
    QTest::newRow("export nothing") << QStringList {u"export"_qs, u"--session"_qs, u"/nonexistent/s"_qs, u"--out"_qs,
        u"/tmp/e"_qs} << "no session here";
}

void TestRunCommand::usageErrors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    const auto r = test::runProgram(u"ksearch"_qs, args);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
}

void TestRunCommand::cudaBackendWithoutGpu()
{
    if (QFileInfo::exists(u"/dev/nvidia0"_qs))
        QSKIP("a GPU is present: the CUDA backend is available here");
    QStringList args = runArgs(QString::fromStdString((m_root / "cuda-session").string()), 4);
    args[args.indexOf(u"host"_qs)] = u"cuda"_qs;
    const auto r = test::runProgram(u"ksearch"_qs, args, 60000, environment());
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.err.contains(u"the cuda backend is not available"), qPrintable(r.err));
}

// `--worker CMD`: every candidate goes to `ksearch worker` started by the command (as ssh would
// start it on a GPU server) and comes back judged; a worker that cannot start stops the run with
// its reason before any LLM call.
void TestRunCommand::evaluatesThroughAWorker()
{
    const QString worker = QString::fromStdString((test::binDir() / "ksearch").string()) + u" worker"_qs;
    const QString task = QString::fromStdString((m_root / "scale").string());
    const QString session = QString::fromStdString((m_root / "worker-session").string());
    QStringList args = runArgs(session, 3);
    args << u"--worker"_qs << worker << u"--worker-task"_qs << task;
    const auto r = test::runProgram(u"ksearch"_qs, args, 300000, environment());
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains(u"Evaluations: 3 of 3"), qPrintable(r.out));
    QCOMPARE(countEvaluations(m_root / "worker-session" / "journal.jsonl"), 3);
    QVERIFY2(r.out.contains(u"PASSED"), qPrintable(r.out));

    QStringList broken = runArgs(QString::fromStdString((m_root / "worker-broken").string()), 3);
    broken << u"--worker"_qs << u"exit 3"_qs;
    const auto failed = test::runProgram(u"ksearch"_qs, broken, 60000, environment());
    QCOMPARE(failed.exitCode, 2);
    QVERIFY2(failed.err.contains(u"worker `exit 3` did not answer the hello"), qPrintable(failed.err));
}

// A worker that dies with a candidate in hand is the evaluator's failure, not the candidate's: the
// run halts with the reason and records no evaluation; resumed with a working worker, the same
// candidate is evaluated and the budget comes out exact.
void TestRunCommand::workerThatDiesHaltsTheRun()
{
    const QString task = QString::fromStdString((m_root / "scale").string());
    const QString session = QString::fromStdString((m_root / "dying-worker").string());
    QStringList args = runArgs(session, 3);
    args << u"--worker"_qs << uR"(read l; echo '{"type": "hello", "version": 1}'; read l; exit 0)"_qs;
    const auto halted = test::runProgram(u"ksearch"_qs, args, 120000, environment());
    QCOMPARE(halted.exitCode, 3);
    QVERIFY2(halted.err.contains(u"halted"), qPrintable(halted.err));
    QVERIFY2(halted.err.contains(u"was not judged: worker `"), qPrintable(halted.err));
    QVERIFY2(halted.err.contains(u"the worker has gone (exit status 0)"), qPrintable(halted.err));
    const fs::path journal = m_root / "dying-worker" / "journal.jsonl";
    QCOMPARE(countEvaluations(journal), 0);

    const QString worker = QString::fromStdString((test::binDir() / "ksearch").string()) + u" worker"_qs;
    const auto resumed = test::runProgram(u"ksearch"_qs,
        {u"run"_qs, u"--resume"_qs, u"--session"_qs, session, u"--worker"_qs, worker, u"--worker-task"_qs, task},
        300000, environment());
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err + resumed.out));
    QVERIFY2(resumed.out.contains(u"Evaluations: 3 of 3"), qPrintable(resumed.out));
    QCOMPARE(countEvaluations(journal), 3);
}

// Three executors in one search: a local evaluator, a real worker, a worker that greets and dies
// on its first candidate, and one that never starts. The search names what it left out, goes on
// without the one that died (its candidate is given to another), and spends exactly the budget.
void TestRunCommand::parallelEvaluatorsGoOnWithoutALostOne()
{
    const QString task = QString::fromStdString((m_root / "scale").string());
    const QString session = QString::fromStdString((m_root / "parallel-workers").string());
    const QString worker = QString::fromStdString((test::binDir() / "ksearch").string()) + u" worker"_qs;
    const QString dying = uR"(read l; echo '{"type": "hello", "version": 1}'; read l; exit 0)"_qs;
    QStringList args = runArgs(session, 6);
    args << u"--local-workers"_qs << u"1"_qs << u"--worker"_qs << worker << u"--worker"_qs << dying << u"--worker"_qs
         << u"exit 7"_qs << u"--worker-task"_qs << task;
    const auto r = test::runProgram(u"ksearch"_qs, args, 300000, environment());
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.err.contains(u"3 evaluators: local0, "_qs + worker), qPrintable(r.err));
    QVERIFY2(r.err.contains(u"left out: worker `exit 7`"), qPrintable(r.err));
    QVERIFY2(r.err.contains(u"failed and takes no more candidates: worker `"), qPrintable(r.err));
    QVERIFY2(r.out.contains(u"Evaluations: 6 of 6"), qPrintable(r.out));
    const fs::path journal = m_root / "parallel-workers" / "journal.jsonl";
    QCOMPARE(countEvaluations(journal), 6);
    std::set<std::string> workers;
    std::ifstream in(journal);
    for (std::string line; std::getline(in, line);) {
        const auto e = nlohmann::json::parse(line);
        if (e["type"] == "evaluation")
            workers.insert(e.value("worker", std::string()));
    }
    QVERIFY(!workers.contains(dying.toStdString()) && !workers.contains("exit 7"));
    QVERIFY2(workers.size() == 2 || (workers.size() == 1 && !workers.contains("")), "named evaluators only");
}

void TestRunCommand::parallelFlagsAreChecked_data()
{
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QString>("message");
    QTest::newRow("--gpus on host") << QStringList {u"--gpus"_qs, u"0,1"_qs} << u"--gpus: the host backend"_qs;
    QTest::newRow("--gpus twice the same")
        << QStringList {u"--gpus"_qs, u"1,1"_qs} << u"--gpus: GPU 1 is listed twice"_qs;
    QTest::newRow("--gpus not a GPU") << QStringList {u"--gpus"_qs, u"first"_qs}
                                      << u"--gpus: 'first' is not a GPU index or UUID"_qs;
    QTest::newRow("--parallel 0") << QStringList {u"--parallel"_qs, u"0"_qs} << u"--parallel: '0' is not a positive"_qs;
    QTest::newRow("--local-workers -1") << QStringList {u"--local-workers"_qs, u"-1"_qs}
                                        << u"--local-workers: '-1' is not a number >= 0"_qs;
    QTest::newRow("--sanitize-failures not a tool") << QStringList {u"--sanitize-failures"_qs, u"valgrind"_qs}
                                                    << u"--sanitize-failures: 'valgrind' is not a tool (memcheck"_qs;
    QTest::newRow("no evaluator") << QStringList {u"--local-workers"_qs, u"0"_qs}
                                  << u"no evaluator: --local-workers 0 needs --worker CMD or --remote URL"_qs;
}

void TestRunCommand::parallelFlagsAreChecked()
{
    QFETCH(QStringList, flags);
    QFETCH(QString, message);
    static int run = 0;
    const QString session = QString::fromStdString((m_root / ("flags-" + std::to_string(++run))).string());
    const auto r = test::runProgram(u"ksearch"_qs, runArgs(session, 2) + flags, 60000, environment());
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
}

KS_TEST_MAIN_CORE(TestRunCommand)
#include "tst_runcommand.moc"
