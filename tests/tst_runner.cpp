#include "testmain.h"
#include "testsupport.h"

#include <task/abiheader.h>
#include <task/comparison.h>
#include <task/definitionparser.h>
#include <task/strictjson.h>

#include <QTemporaryDir>

#include <compiler.h>
#include <csignal>
#include <devicequeue.h>
#include <runnerclient.h>
#include <unistd.h>

using namespace ks;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

static const char* kPrologue = "#include \"ks_task.h\"\n#include <cmath>\n#include <cstdlib>\n";
static const char* kHonest = "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {"
                             " for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i]; return 0; }";

class TestRunner : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void kernels_data();
    void kernels();
    void missingEntryPoint();
    void underAToolConfinedOrNot_data();
    void underAToolConfinedOrNot();
    void crashStopsOnlyTheRestOfTheJob();
    void sharedInputsCannotBeRewritten();
    void unwrittenOutputsAreNotJudged();
    void runnerStartedAheadWaitsForItsJob();
    void manyBuffersTakeSeveralHandoffMessages();
    void runnerThatDiedWhileWaitingIsReplaced();
    void candidateSeesNoHandoffSocket();
    void finishedRunnerIsLeftExiting();
    void runnerLeftExitingIsKilled();
    void runnerThatCannotStartIsAHarnessError();
    void runnerThatStopsBeforeLoadingIsAHarnessFailure();
    void candidateCannotPassForAHarnessFailure();
    void forgedResultLinesAreSkipped();

private:
    CompileResult build(const std::string& name, const std::string& body);
    RunnerJob job(const fs::path& library, int calls, std::chrono::milliseconds timeout = 20s);
    HostTensor expected(const RunnerCall& call) const;
    // Every call ran and wrote y = alpha * x; what went wrong is logged.
    bool allCallsCorrect(const RunnerJob& j, const RunnerJobResult& r) const;
    // A stand-in for ksearch-runner (a Python script, executable): it takes its job from the
    // handoff socket as a runner does, then runs `rest` with the job's folder in m['job'].
    fs::path fakeRunner(const std::string& name, const std::string& rest) const;
    // The job run by `runner` (KSEARCH_RUNNER) instead of ksearch-runner.
    static RunnerJobResult runWith(const fs::path& runner, const RunnerJob& j);

    QTemporaryDir m_dir;
    Definition m_def;
};

// A candidate that finds the runner's result.jsonl among its own descriptors and does `action` to
// it (the descriptor is atoi(e->d_name)), after `before`; then it exits with 3.
static std::string onResultFile(const std::string& before, const std::string& action)
{
    return "#include <dirent.h>\n#include <unistd.h>\n#include <climits>\n#include <cstdlib>\n#include "
           "<cstring>\n#include <string>\n"
           "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) {"
           " DIR* d = opendir(\"/proc/self/fd\"); char link[PATH_MAX];"
        + before
        + " while (dirent* e = readdir(d)) {"
          "  const std::string p = std::string(\"/proc/self/fd/\") + e->d_name;"
          "  const ssize_t n = readlink(p.c_str(), link, sizeof link - 1); if (n <= 0) continue; link[n] = 0;"
          "  if (std::strstr(link, \"result.jsonl\")) "
        + action + "; } _exit(3); }";
}

void TestRunner::initTestCase()
{
    std::string err;
    Diagnostics diag;
    m_def = *parseDefinition(*parseStrictJson(test::scaleDefinition(), err), "scale.json", diag);
    qputenv("OPENAI_API_KEY", "sk-must-not-leak");
}

CompileResult TestRunner::build(const std::string& name, const std::string& body)
{
    const fs::path src = fs::path(m_dir.path().toStdString()) / (name + ".cpp");
    test::writeText(src, kPrologue + body);
    CompileRequest req;
    req.source = src;
    req.abiHeader = generateAbiHeader(m_def);
    req.workDir = fs::path(m_dir.path().toStdString()) / ("build-" + name);
    return compileKernel(req);
}

RunnerJob TestRunner::job(const fs::path& library, int calls, std::chrono::milliseconds timeout)
{
    RunnerJob j;
    j.library = library;
    j.layout = computeAbiLayout(m_def);
    j.timeout = timeout;
    j.jobDir = library.parent_path() / "job";
    for (int c = 0; c < calls; ++c) {
        RunnerCall call;
        call.id = "call" + std::to_string(c);
        HostTensor x {"x", DType::Float32, {1000}, false, {}};
        x.data.resize(4000);
        for (std::size_t i = 0; i < 1000; ++i)
            x.set(i, static_cast<double>(i) * 0.5 - 100.0 + c);
        HostTensor alpha {"alpha", DType::Float32, {}, true, {}};
        alpha.data.resize(4);
        alpha.set(0, 2.0 + c);
        call.inputs = shareTensors({x, alpha});
        HostTensor y {"y", DType::Float32, {1000}, false, {}};
        y.data.resize(4000);
        call.outputs = {y};
        call.axes = {{"n", 1000}};
        call.poisonSeed = 77 + static_cast<std::uint64_t>(c);
        j.calls.push_back(call);
    }
    return j;
}

HostTensor TestRunner::expected(const RunnerCall& call) const
{
    HostTensor y = call.outputs[0];
    for (std::size_t i = 0; i < 1000; ++i)
        y.set(i, call.inputs[0].view().at(i) * call.inputs[1].view().at(0));
    return y;
}

fs::path TestRunner::fakeRunner(const std::string& name, const std::string& rest) const
{
    const fs::path path = fs::path(m_dir.path().toStdString()) / name;
    test::writeText(path,
        "#!/usr/bin/env python3\nimport json, os, socket, sys, time\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=int(sys.argv[4]))\n"
        "while True:\n    m = json.loads(socket.recv_fds(s, 16384, 253)[0])\n    if m['last']: break\n"
            + rest);
    fs::permissions(path, fs::perms::owner_all);
    return path;
}

RunnerJobResult TestRunner::runWith(const fs::path& runner, const RunnerJob& j)
{
    qputenv("KSEARCH_RUNNER", QByteArray::fromStdString(runner.string()));
    RunnerJobResult r = runRunnerJob(j);
    qunsetenv("KSEARCH_RUNNER");
    return r;
}

bool TestRunner::allCallsCorrect(const RunnerJob& j, const RunnerJobResult& r) const
{
    for (std::size_t c = 0; c < j.calls.size(); ++c) {
        if (r.calls[c].status != RunnerCallOutcome::Status::Ok) {
            qWarning("call %zu: %s (%s; %s)", c, runnerStatusName(r.calls[c].status).c_str(),
                r.process.describeExit().c_str(), r.process.err.c_str());
            return false;
        }
        if (!compareOutput(r.calls[c].outputs[0].view(), expected(j.calls[c]).view(), {1e-6, 1e-6, 1.0}).passed) {
            qWarning("call %zu: wrong output", c);
            return false;
        }
    }
    return true;
}

void TestRunner::kernels_data()
{
    QTest::addColumn<QString>("body");
    QTest::addColumn<QString>("status"); // runner outcome of the first call
    QTest::addColumn<bool>("correct"); // every call's output matches y = alpha * x
    QTest::addColumn<bool>("inputsIntact");

    const char* loop = "for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i];";
    QTest::newRow("honest") << QString::fromLatin1(
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { %1 return 0; }")
                                   .arg(QLatin1String(loop))
                            << "ok" << true << true;
    QTest::newRow("segfault") << "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { volatile int* p "
                                 "= nullptr; *p = 1; return 0; }"
                              << "crashed" << false << true;
    QTest::newRow("endless loop") << "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { volatile "
                                     "int spin = 1; while (spin) {} return 0; }"
                                  << "timed out" << false << true;
    QTest::newRow("error code") << "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { return 7; }"
                                << "kernel error" << false << true;
    QTest::newRow("NaN output") << "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { for "
                                   "(int64_t i = 0; i < a->n; ++i) a->y[i] = NAN; return 0; }"
                                << "ok" << false << true;
    QTest::newRow("half the output") << "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { for "
                                        "(int64_t i = 0; i < a->n / 2; ++i) a->y[i] = a->alpha * a->x[i]; return 0; }"
                                     << "ok" << false << true;
    QTest::newRow("modifies input") << QString::fromLatin1(
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { %1 const_cast<float*>(a->x)[0] = 0; "
        "return 0; }")
                                           .arg(QLatin1String(loop))
                                    << "ok" << true << false;
    // Computes once, then skips the work when it sees the same input pointer again: the poisoned
    // output buffer of the second call exposes it.
    QTest::newRow("caches by pointer") << QString::fromLatin1(
        "static const float* seen; extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { if (seen) "
        "return 0; seen = a->x; %1 return 0; }")
                                              .arg(QLatin1String(loop))
                                       << "ok" << false << true;
    QTest::newRow("reads an API key") << QString::fromLatin1(
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { %1 if "
        "(std::getenv(\"OPENAI_API_KEY\")) a->y[0] = 12345; return 0; }")
                                             .arg(QLatin1String(loop))
                                      << "ok" << true << true;
}

void TestRunner::kernels()
{
    QFETCH(QString, body);
    QFETCH(QString, status);
    QFETCH(bool, correct);
    QFETCH(bool, inputsIntact);
    const CompileResult lib = build(QTest::currentDataTag(), body.toStdString());
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 2, status == u"timed out" ? 1500ms : 20s);
    const RunnerJobResult r = runRunnerJob(j);
    QVERIFY(r.process.started);
    QCOMPARE(QString::fromStdString(runnerStatusName(r.calls[0].status)), status);
    QVERIFY2(r.harnessFailure.empty(), r.harnessFailure.c_str()); // whatever the kernel did, it did it
    bool allCorrect = true;
    for (std::size_t c = 0; c < j.calls.size(); ++c) {
        if (r.calls[c].status != RunnerCallOutcome::Status::Ok) {
            allCorrect = false;
            continue;
        }
        QCOMPARE(r.calls[c].inputsUnchanged, inputsIntact);
        allCorrect = allCorrect
            && compareOutput(r.calls[c].outputs[0].view(), expected(j.calls[c]).view(), {1e-6, 1e-6, 1.0}).passed;
    }
    QCOMPARE(allCorrect, correct);
    if (status == u"crashed")
        QVERIFY2(r.calls[0].message.find("SEGV") != std::string::npos, r.calls[0].message.c_str());
}

void TestRunner::missingEntryPoint()
{
    const CompileResult lib = build("noentry", "extern \"C\" int something_else() { return 0; }");
    QVERIFY(lib.ok);
    const RunnerJobResult r = runRunnerJob(job(lib.library, 1));
    QVERIFY2(r.loadError.find("ks_run") != std::string::npos, r.loadError.c_str());
    QCOMPARE(r.calls[0].status, RunnerCallOutcome::Status::NotRun);
}

void TestRunner::underAToolConfinedOrNot_data()
{
    QTest::addColumn<bool>("confined");
    QTest::newRow("a person's run under a tool: unconfined") << false;
    QTest::newRow("a run for the code policy: confined but for the network") << true;
}

// A runner under a tool (env here, compute-sanitizer for real) keeps the network, which the tool
// talks to its injection over. A person's own run of an attempt under it drops the rest too; a
// failed candidate's run that ksearch makes for the code policy (sanitizeFailures) keeps it: the
// model's code never gets a run less confined than its evaluation by failing on purpose.
void TestRunner::underAToolConfinedOrNot()
{
    QFETCH(bool, confined);
    const CompileResult lib = build(confined ? "tool-confined" : "tool-unconfined",
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {"
        " for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i]; return 0; }");
    QVERIFY(lib.ok);
    RunnerJob j = job(lib.library, 1);
    j.wrapper = {"/usr/bin/env"};
    j.wrapperConfined = confined;
    const RunnerJobResult r = runRunnerJob(j);
    QVERIFY(allCallsCorrect(j, r));
    QVERIFY(!r.environment.networkIsolated);
    if (confined && !r.environment.processesContained && ::geteuid() != 0)
        QSKIP("no namespaces for an ordinary user without the user namespace the network's isolation makes");
    QCOMPARE(r.environment.processesContained, confined);
    QCOMPARE(r.environment.filesystemConfined, confined);
}

void TestRunner::crashStopsOnlyTheRestOfTheJob()
{
    // Crashes on the second call only: the first call's result must survive the crash.
    const CompileResult lib = build("crashlater",
        "static int calls; extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {"
        " if (calls++ == 1) std::abort(); for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i]; return 0; "
        "}");
    QVERIFY(lib.ok);
    const RunnerJob j = job(lib.library, 3);
    const RunnerJobResult r = runRunnerJob(j);
    QCOMPARE(r.calls[0].status, RunnerCallOutcome::Status::Ok);
    QVERIFY(compareOutput(r.calls[0].outputs[0].view(), expected(j.calls[0]).view(), {1e-6, 1e-6, 1.0}).passed);
    QCOMPARE(r.calls[1].status, RunnerCallOutcome::Status::Crashed);
    QVERIFY2(r.calls[1].message.find("SIGABRT") != std::string::npos, r.calls[1].message.c_str());
    QCOMPARE(r.calls[2].status, RunnerCallOutcome::Status::NotRun);
    QVERIFY(!r.exiting); // a runner that died is waited for: its end is what it reports
}

void TestRunner::sharedInputsCannotBeRewritten()
{
    // Finds every shared buffer it inherited and tries to overwrite it through a write, a writable
    // mapping and a truncation: the parent's copy of x, which the unchanged-inputs check and
    // every later candidate rely on, must come through intact.
    const CompileResult lib = build("tamper",
        "#include <fcntl.h>\n#include <sys/mman.h>\n#include <unistd.h>\n#include <string>\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {"
        " for (int fd = 3; fd < 1024; ++fd) { char link[256] = {0};"
        "  if (readlink((\"/proc/self/fd/\" + std::to_string(fd)).c_str(), link, 255) <= 0) continue;"
        "  if (std::string(link).find(\"ksearch-x\") == std::string::npos) continue;"
        "  float zero[4] = {0}; (void)!pwrite(fd, zero, sizeof zero, 0);"
        "  void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);"
        "  if (m != MAP_FAILED) static_cast<float*>(m)[1] = 0;"
        "  (void)!ftruncate(fd, 0); }"
        " for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i]; return 0; }");
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 1);
    const HostTensor before = j.calls[0].inputs[0].copy();
    const RunnerJobResult r = runRunnerJob(j);
    QCOMPARE(r.calls[0].status, RunnerCallOutcome::Status::Ok);
    const HostTensor after = j.calls[0].inputs[0].copy();
    QCOMPARE(after.data.size(), before.data.size());
    QVERIFY(after.data == before.data);
}

void TestRunner::unwrittenOutputsAreNotJudged()
{
    // An honest job fills the pooled output buffers; then a "runner" that reports success without
    // writing anything must not get the earlier job's correct results judged as its own.
    const CompileResult lib = build("honest2",
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {"
        " for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i]; return 0; }");
    QVERIFY2(lib.ok, lib.log.c_str());
    RunnerJob j = job(lib.library, 2);
    j.outputBuffers = std::make_shared<SharedBufferPool>();
    const RunnerJobResult honest = runRunnerJob(j);
    QCOMPARE(honest.calls[1].status, RunnerCallOutcome::Status::Ok);
    QVERIFY(compareOutput(honest.calls[1].outputs[0].view(), expected(j.calls[1]).view(), {1e-6, 1e-6, 1.0}).passed);

    // Takes its job from the handoff socket as a runner does, then only claims success.
    const fs::path liar = fakeRunner("liar.py",
        "with open(os.path.join(m['job'], 'result.jsonl'), 'a') as f:\n"
        "    for i in ('call0', 'call1'): f.write(json.dumps({'status': 'ok', 'id': i}) + '\\n')\n");
    const RunnerJobResult lie = runWith(liar, j);
    QVERIFY(lie.process.succeeded());
    for (const auto& c : lie.calls) {
        QCOMPARE(c.status, RunnerCallOutcome::Status::HarnessError);
        QVERIFY2(c.message.find("not written") != std::string::npos, c.message.c_str());
    }
}

void TestRunner::runnerStartedAheadWaitsForItsJob()
{
    const CompileResult lib = build("ahead", kHonest);
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 2);
    auto ahead = std::make_unique<PrestartedRunner>(runnerKind(j));
    QVERIFY(ahead->waitUntilReady(20s));
    const RunnerJobResult warm = runRunnerJob(j, std::move(ahead));
    QVERIFY(allCallsCorrect(j, warm));
    // Ready before the handoff: the job waited for none of its start-up.
    QCOMPARE(warm.startupSeconds, 0.0);

    // A runner that needs a second to come up (a shell that waits, then becomes the runner),
    // handed its job at once: the job waits for most of that second, and the figure says so.
    const fs::path slow = fs::path(m_dir.path().toStdString()) / "slow-runner.sh";
    test::writeText(slow, "#!/bin/sh\nsleep 1\nexec '" + runnerPath().string() + "' \"$@\"\n");
    fs::permissions(slow, fs::perms::owner_all);
    const RunnerJobResult cold = runWith(slow, j);
    QVERIFY(allCallsCorrect(j, cold));
    QVERIFY2(cold.startupSeconds > 0.5, std::to_string(cold.startupSeconds).c_str());
}

void TestRunner::runnerThatDiedWhileWaitingIsReplaced()
{
    // A runner started ahead that died before its job came (a device that refused it a context)
    // is not handed the candidate: its failure is not the candidate's. A fresh one runs the job.
    const CompileResult lib = build("replaced", kHonest);
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 2);
    const fs::path dying = fs::path(m_dir.path().toStdString()) / "dying-runner.sh";
    test::writeText(dying, "#!/bin/sh\necho 'CUDA unavailable (the test)' >&2\nexit 3\n");
    fs::permissions(dying, fs::perms::owner_all);
    qputenv("KSEARCH_RUNNER", QByteArray::fromStdString(dying.string()));
    auto ahead = std::make_unique<PrestartedRunner>(runnerKind(j));
    qunsetenv("KSEARCH_RUNNER");
    QVERIFY(!ahead->waitUntilReady(20s)); // returns once the runner has gone
    QVERIFY(!ahead->alive());
    const RunnerJobResult r = runRunnerJob(j, std::move(ahead));
    QVERIFY(allCallsCorrect(j, r));
}

void TestRunner::manyBuffersTakeSeveralHandoffMessages()
{
    // 120 calls of two inputs and one output each: 360 descriptors, two handoff messages.
    const CompileResult lib = build("many", kHonest);
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 120);
    const RunnerJobResult r = runRunnerJob(j);
    QVERIFY(allCallsCorrect(j, r));
}

void TestRunner::candidateSeesNoHandoffSocket()
{
    // The socket that brought the job is closed before the candidate is loaded: nothing the
    // candidate does can reach ksearch through it. It returns 9 when it finds any socket open.
    const CompileResult lib = build("sockets",
        "#include <dirent.h>\n#include <string>\n#include <unistd.h>\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {"
        " DIR* d = opendir(\"/proc/self/fd\"); if (!d) return 8; int found = 0;"
        " while (dirent* e = readdir(d)) { char target[256] = {}; std::string p = std::string(\"/proc/self/fd/\") + "
        "e->d_name;"
        "  if (readlink(p.c_str(), target, sizeof target - 1) > 0 && std::string(target).rfind(\"socket:\", 0) == 0) "
        "found = 1; }"
        " closedir(d); if (found) return 9;"
        " for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i]; return 0; }");
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJobResult r = runRunnerJob(job(lib.library, 1));
    QCOMPARE(r.calls[0].returnCode, 0);
    QCOMPARE(r.calls[0].status, RunnerCallOutcome::Status::Ok);
}

void TestRunner::finishedRunnerIsLeftExiting()
{
    // Every result written, the runner says so and closes its output: the job is read and judged
    // while the process exits, and its end is still there to be reaped.
    const CompileResult lib = build("exiting", kHonest);
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 2);
    RunnerJobResult r = runRunnerJob(j);
    QVERIFY(allCallsCorrect(j, r));
    QVERIFY(r.exiting);
    QCOMPARE(r.process.exitCode, -1); // not known yet
    std::string lines = test::readText(j.jobDir / "result.jsonl"), err;
    lines.pop_back();
    const auto last = parseStrictJson(lines.substr(lines.rfind('\n') + 1), err);
    QVERIFY2(last && last->value("status", "") == "finished", lines.c_str());
    // It had exited by itself, or was still exiting when its group was killed.
    const SubprocessResult end = r.exiting->finish();
    QVERIFY2(!end.timedOut && (end.exitCode == 0 || end.signal == SIGKILL), end.describeExit().c_str());
}

void TestRunner::runnerLeftExitingIsKilled()
{
    // A "runner" that reports, closes its output and then lingers (as a candidate's leftover could):
    // the job does not wait for it, and its group is killed before the results are read, so
    // nothing of it outlives the judging. The device's next turn reaps it at once.
    const CompileResult lib = build("lingers", kHonest);
    QVERIFY2(lib.ok, lib.log.c_str());
    RunnerJob j = job(lib.library, 1);
    const fs::path lingering = fakeRunner("lingering.py",
        "with open(os.path.join(m['job'], 'result.jsonl'), 'a') as f:\n"
        "    f.write(json.dumps({'status': 'error', 'id': 'call0', 'message': 'reported'}) + '\\n')\n"
        "    f.write(json.dumps({'status': 'finished', 'id': ''}) + '\\n')\n"
        "os.close(1)\nos.close(2)\ntime.sleep(300)\n");
    RunnerJobResult r = runWith(lingering, j);
    QCOMPARE(r.calls[0].status, RunnerCallOutcome::Status::KernelError);
    QVERIFY(r.exiting);
    const SubprocessResult end = r.exiting->finish(); // reaps: the kill came before the judging
    QCOMPARE(end.signal, SIGKILL);
    QVERIFY(!end.timedOut);

    DeviceQueue& queue = DeviceQueue::of("tst_runner");
    {
        const DeviceQueue::Turn turn = queue.take();
        queue.leaveExiting(std::move(r.exiting));
    }
    const DeviceQueue::Turn next = queue.take(); // the runner left there is over: nothing to wait for
    QVERIFY(next.lock.owns_lock());
}

void TestRunner::runnerThatCannotStartIsAHarnessError()
{
    const CompileResult lib = build("nostart", kHonest);
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 2);
    const RunnerJobResult r = runWith("/nonexistent/ksearch-runner", j);
    QVERIFY(!r.exiting);
    QVERIFY2(r.harnessFailure.find("could not be started") != std::string::npos, r.harnessFailure.c_str());
    for (const auto& c : r.calls) {
        QCOMPARE(c.status, RunnerCallOutcome::Status::HarnessError);
        QVERIFY2(c.message.find("could not be started") != std::string::npos, c.message.c_str());
    }
}

// A runner that takes its job and ends before it loads the kernel (no GPU, no interpreter): the
// harness failed, not the candidate, even with an environment line written.
void TestRunner::runnerThatStopsBeforeLoadingIsAHarnessFailure()
{
    const CompileResult lib = build("neverloaded", kHonest);
    QVERIFY2(lib.ok, lib.log.c_str());
    const fs::path quitter = fakeRunner("quitter.py",
        "with open(os.path.join(m['job'], 'result.jsonl'), 'w') as f:\n"
        "    f.write(json.dumps({'id': '', 'status': 'environment'}) + '\\n')\n"
        "sys.stderr.write('no CUDA device is available\\n')\n"
        "sys.exit(3)\n");
    const RunnerJobResult r = runWith(quitter, job(lib.library, 2));
    QVERIFY2(r.harnessFailure.find("before loading the kernel") != std::string::npos
            && r.harnessFailure.find("exit code 3") != std::string::npos
            && r.harnessFailure.find("no CUDA device") != std::string::npos,
        r.harnessFailure.c_str());
}

// A kernel can rewrite result.jsonl (it shares the runner's process) but cannot take back what
// the runner wrote to ksearch before loading it: erasing its results and dying is still its own
// failure, never a harness failure that would spare it a verdict.
void TestRunner::candidateCannotPassForAHarnessFailure()
{
    const CompileResult lib = build("eraser", onResultFile("", "ftruncate(atoi(e->d_name), 0)"));
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 2);
    const RunnerJobResult r = runRunnerJob(j);
    std::error_code ec;
    QCOMPARE(fs::file_size(j.jobDir / "result.jsonl", ec), std::uintmax_t {0}); // it did erase them
    QVERIFY2(r.harnessFailure.empty(), r.harnessFailure.c_str());
    QCOMPARE(r.calls[0].status, RunnerCallOutcome::Status::NotRun);
}

// The candidate appends result lines of its own, with fields of the wrong type and counts beyond
// every range: ksearch reads past them (no exception, no unchecked conversion) and reports the
// call as the crash it was.
void TestRunner::forgedResultLinesAreSkipped()
{
    const CompileResult lib = build("forger",
        onResultFile(" const char* forged = \"{\\\"id\\\": 5, \\\"status\\\": \\\"ok\\\"}\\n"
                     "{\\\"id\\\": \\\"\\\", \\\"status\\\": \\\"environment\\\", \\\"device\\\": 7, "
                     "\\\"l2_bytes\\\": 1e40}\\n{\\\"id\\\": \\\"call0\\\", \\\"status\\\": "
                     "\\\"error\\\", \\\"return_code\\\": 1e300}\\n\";",
            "write(atoi(e->d_name), forged, strlen(forged))"));
    QVERIFY2(lib.ok, lib.log.c_str());
    const RunnerJob j = job(lib.library, 2);
    const RunnerJobResult r = runRunnerJob(j);
    QVERIFY(test::readText(j.jobDir / "result.jsonl").find("1e300") != std::string::npos); // it did write them
    QVERIFY2(r.harnessFailure.empty(), r.harnessFailure.c_str());
    QCOMPARE(r.environment.l2Bytes, std::size_t {0});
    QVERIFY(r.calls[0].status == RunnerCallOutcome::Status::Crashed
        || r.calls[0].status == RunnerCallOutcome::Status::KernelError);
    QCOMPARE(r.calls[0].returnCode, 0);
}

KS_TEST_MAIN_CORE(TestRunner)
#include "tst_runner.moc"
