#include "testmain.h"
#include "testsupport.h"

#include <task/evaluation.h>

#include <QProcess>
#include <QTemporaryDir>

#include <functional>
#include <workerclient.h>
#include <workerprotocol.h>

using namespace ks;
namespace fs = std::filesystem;

// `ksearch worker`, the real executable, spoken to over its stdin and stdout as a remote caller
// would: the handshake, candidates evaluated where the worker runs (verdicts and J made there,
// inputs made once per search), and every malformed or unservable request answered with an error
// that says what is wrong, without ending the conversation (except a version mismatch).

namespace {

class WorkerProcess
{
public:
    WorkerProcess()
    {
        m_process.start(QString::fromStdString((test::binDir() / "ksearch").string()), {u"worker"_qs});
        m_started = m_process.waitForStarted(10000);
    }
    ~WorkerProcess()
    {
        if (m_process.state() != QProcess::NotRunning) {
            m_process.kill();
            m_process.waitForFinished(5000);
        }
    }
    bool started() const { return m_started; }
    // Sends one line and returns the reply line (null when none came within the limit).
    nlohmann::json ask(const nlohmann::json& request, int timeoutMs = 120000)
    {
        return askRaw(request.dump(), timeoutMs);
    }
    nlohmann::json askRaw(const std::string& line, int timeoutMs = 120000)
    {
        m_process.write(QByteArray::fromStdString(line + "\n"));
        while (!m_process.canReadLine())
            if (!m_process.waitForReadyRead(timeoutMs))
                return nullptr;
        return nlohmann::json::parse(m_process.readLine().toStdString());
    }
    int finish()
    {
        m_process.closeWriteChannel();
        if (!m_process.waitForFinished(30000))
            return -1;
        return m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
    }

private:
    QProcess m_process;
    bool m_started = false;
};

nlohmann::json hello(int version = worker::kProtocolVersion)
{
    return {{"type", "hello"}, {"version", version}, {"ksearch", "test"}};
}

const char* kHonest = "#include \"ks_task.h\"\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
                      "    for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i];\n    return 0;\n}\n";

} // namespace

class TestWorker : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void evaluatesWhereItRuns();
    void badRequestsGetErrors_data();
    void badRequestsGetErrors();
    void versionMismatchEndsTheConversation();
    void clientEvaluatesThroughAWorker();
    void clientReportsWorkersThatFail_data();
    void clientReportsWorkersThatFail();
    void failedWorkerIsStartedAgainOnce();

private:
    worker::WorkerClient::Options clientOptions(const std::string& command) const;
    worker::EvaluateRequest request(const std::string& id, const std::string& source) const;

    QTemporaryDir m_dir;
    fs::path m_task;
    std::string m_digest;
};

void TestWorker::initTestCase()
{
    m_task = fs::path(m_dir.path().toStdString()) / "scale";
    test::writeScaleTask(m_task, {1000, 65536}, 2);
    const auto loaded = loadTask(m_task);
    QVERIFY2(loaded.task, loaded.diagnostics.formatAll().c_str());
    m_digest = worker::taskDigest(*loaded.task);
}

worker::EvaluateRequest TestWorker::request(const std::string& id, const std::string& source) const
{
    worker::EvaluateRequest r;
    r.id = id;
    r.task = m_task.string();
    r.taskDigest = m_digest;
    r.source = source;
    r.settings.seed = 1234;
    r.settings.maxSeconds = 0.05;
    return r;
}

void TestWorker::evaluatesWhereItRuns()
{
    WorkerProcess w;
    QVERIFY(w.started());
    const auto greeting = w.ask(hello());
    QCOMPARE(greeting.value("type", ""), std::string("hello"));
    QCOMPARE(greeting.value("version", 0), worker::kProtocolVersion);
    QCOMPARE(greeting.value("ksearch", ""), std::string(KSEARCH_VERSION));

    const auto first = w.ask(worker::toJson(request("e1", kHonest)));
    QCOMPARE(first.value("type", ""), std::string("evaluation"));
    QCOMPARE(first.value("id", ""), std::string("e1"));
    const Evaluation e1 = evaluationFromJson(first["evaluation"]);
    QVERIFY2(e1.status == Verdict::Passed, e1.log.c_str());
    QCOMPARE(e1.workloads.size(), std::size_t {2});
    QVERIFY(e1.score > 0 && e1.baselineLatencyMicros > 0);

    const auto broken = w.ask(worker::toJson(request("e2", "this is not C++")));
    QCOMPARE(evaluationFromJson(broken["evaluation"]).status, Verdict::CompileError);

    // The same search again: the worker's evaluator kept its inputs, reference and baseline.
    const Evaluation e3 = evaluationFromJson(w.ask(worker::toJson(request("e3", kHonest)))["evaluation"]);
    QCOMPARE(e3.status, Verdict::Passed);
    QVERIFY(e3.compileCached);
    QCOMPARE(e3.baselineLatencyMicros, e1.baselineLatencyMicros);
    QCOMPARE(e3.referenceSeconds, e1.referenceSeconds);

    QCOMPARE(w.ask({{"type", "bye"}}).value("type", ""), std::string("bye"));
    QCOMPARE(w.finish(), 0);
}

void TestWorker::badRequestsGetErrors_data()
{
    QTest::addColumn<bool>("greet");
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("fragment");
    auto line = [this](const std::function<void(nlohmann::json&)>& change) {
        nlohmann::json j = worker::toJson(request("bad", kHonest));
        change(j);
        return QString::fromStdString(j.dump());
    };
    QTest::newRow("before hello") << false << line([](nlohmann::json&) {}) << "say hello first";
    QTest::newRow("not JSON") << true << "{\"type\": "
                              << "not a JSON line";
    QTest::newRow("no type") << true << "{\"id\": \"x\"}"
                             << "needs \"type\"";
    QTest::newRow("unknown type") << true << "{\"type\": \"compile\"}"
                                  << "unknown request type 'compile'";
    QTest::newRow("no source") << true << line([](nlohmann::json& j) { j.erase("source"); }) << "source: missing";
    QTest::newRow("unknown task") << true << line([](nlohmann::json& j) { j["task"] = "no_such_task_here"; })
                                  << "task 'no_such_task_here'";
    QTest::newRow("task differs") << true << line([](nlohmann::json& j) { j["task_digest"] = "0123456789abcdef"; })
                                  << "differs on this worker";
    QTest::newRow("bad backend") << true << line([](nlohmann::json& j) { j["settings"]["backend"] = "tpu"; })
                                 << "settings.backend: 'tpu' is not host or cuda";
    QTest::newRow("id not a string") << true << line([](nlohmann::json& j) { j["id"] = 5; }) << "id: wrong type";
    QTest::newRow("bad seed") << true << line([](nlohmann::json& j) { j["settings"]["seed"] = "secret"; })
                              << "settings.seed: wrong type";
}

void TestWorker::badRequestsGetErrors()
{
    QFETCH(bool, greet);
    QFETCH(QString, line);
    QFETCH(QString, fragment);
    WorkerProcess w;
    QVERIFY(w.started());
    if (greet)
        QCOMPARE(w.ask(hello()).value("type", ""), std::string("hello"));
    const auto reply = w.askRaw(line.toStdString());
    QCOMPARE(reply.value("type", ""), std::string("error"));
    QVERIFY2(QString::fromStdString(reply.value("message", "")).contains(fragment), reply.dump().c_str());
    // The conversation goes on: a hello (or a second one) is still answered.
    QCOMPARE(w.ask(hello()).value("type", ""), std::string("hello"));
    QCOMPARE(w.finish(), 0); // end of input: a clean exit
}

void TestWorker::versionMismatchEndsTheConversation()
{
    WorkerProcess w;
    QVERIFY(w.started());
    const auto reply = w.ask(hello(worker::kProtocolVersion + 1));
    QCOMPARE(reply.value("type", ""), std::string("error"));
    QVERIFY2(
        reply.value("message", "").find("install the same ksearch version") != std::string::npos, reply.dump().c_str());
    QCOMPARE(w.finish(), 2);
}

worker::WorkerClient::Options TestWorker::clientOptions(const std::string& command) const
{
    worker::WorkerClient::Options o;
    o.command = command;
    o.task = m_task.string();
    o.taskDigest = m_digest;
    o.settings.seed = 99;
    o.settings.maxSeconds = 0.05;
    o.replyTimeout = std::chrono::seconds(120);
    return o;
}

// The caller's side: a CandidateEvaluator whose evaluations happen in `ksearch worker`, started
// by a shell command as ssh would start it on another machine.
void TestWorker::clientEvaluatesThroughAWorker()
{
    std::string error;
    auto client = worker::WorkerClient::start(clientOptions((test::binDir() / "ksearch").string() + " worker"), error);
    QVERIFY2(client, error.c_str());
    const fs::path dir = fs::path(m_dir.path().toStdString()) / "client";
    test::writeText(dir / "honest.cpp", kHonest);
    test::writeText(dir / "broken.cpp", "not C++ at all");
    const Evaluation honest = client->evaluate(dir / "honest.cpp");
    QVERIFY2(honest.status == Verdict::Passed, honest.log.c_str());
    QCOMPARE(honest.workloads.size(), std::size_t {2});
    QVERIFY(!client->unavailable()); // the candidate was judged
    QCOMPARE(client->evaluate(dir / "broken.cpp").status, Verdict::CompileError);
    QVERIFY(!client->unavailable()); // a compile error is the candidate's, not the worker's
    QVERIFY(client->targetDescription().find("ksearch worker") != std::string::npos);
    QCOMPARE(client->exitCode(), -1); // still running, ready for more
    client.reset(); // says bye; the worker leaves
}

void TestWorker::clientReportsWorkersThatFail_data()
{
    QTest::addColumn<QString>("command");
    QTest::addColumn<bool>("starts");
    QTest::addColumn<QString>("fragment");
    const QString ksearch = QString::fromStdString((test::binDir() / "ksearch").string());
    QTest::newRow("no such program") << "/nonexistent/ksearch worker" << false << "did not answer the hello";
    QTest::newRow("exits at once") << "exit 3" << false << "exit status 3";
    QTest::newRow("another protocol version")
        << R"x(read l; echo '{"type": "error", "message": "protocol version 1 is not this worker'"'"'s (2)"}')x"
        << false << "is not this worker's (2)";
    QTest::newRow("dies after the hello")
        << R"(read l; echo '{"type": "hello", "version": 1}'; exit 0)" << true << "the worker has gone (exit status 0)";
    QTest::newRow("answers with garbage")
        << R"(read l; echo '{"type": "hello", "version": 1}'; read l; echo oops)" << true << "not JSON: oops";
}

void TestWorker::clientReportsWorkersThatFail()
{
    QFETCH(QString, command);
    QFETCH(bool, starts);
    QFETCH(QString, fragment);
    std::string error;
    auto client = worker::WorkerClient::start(clientOptions(command.toStdString()), error);
    QCOMPARE(client != nullptr, starts);
    if (!starts) {
        QVERIFY2(QString::fromStdString(error).contains(fragment), error.c_str());
        return;
    }
    const fs::path file = fs::path(m_dir.path().toStdString()) / "client" / "any.cpp";
    test::writeText(file, kHonest);
    const Evaluation e = client->evaluate(file);
    QCOMPARE(e.status, Verdict::RuntimeError);
    QVERIFY2(e.log.rfind("worker: ", 0) == 0 && QString::fromStdString(e.log).contains(fragment), e.log.c_str());
    QVERIFY(client->unavailable()); // the engine must not count it against the candidate
}

// A worker lost with a candidate in hand (a preempted step, a dropped connection) is started again
// once and given the same candidate; the caller gets one evaluation, never two.
void TestWorker::failedWorkerIsStartedAgainOnce()
{
    const fs::path marker = fs::path(m_dir.path().toStdString()) / "worker-died-once";
    const std::string ksearch = (test::binDir() / "ksearch").string();
    // The first process greets and then dies when the candidate comes; the second is a real worker.
    const std::string command = "if [ -e " + marker.string() + " ]; then exec " + ksearch + " worker; fi; touch "
        + marker.string() + "; read l; echo '{\"type\": \"hello\", \"version\": 1}'; read l; exit 9";
    std::string error;
    auto client = worker::WorkerClient::start(clientOptions(command), error);
    QVERIFY2(client, error.c_str());
    const fs::path file = fs::path(m_dir.path().toStdString()) / "client" / "again.cpp";
    test::writeText(file, kHonest);
    const Evaluation e = client->evaluate(file);
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QVERIFY(!client->unavailable());
    QCOMPARE(client->restarts(), 1);
}

KS_TEST_MAIN_CORE(TestWorker)
#include "tst_worker.moc"
