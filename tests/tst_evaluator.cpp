#include "enginefixture.h"
#include "testmain.h"
#include "testsupport.h"

#include <QDir>
#include <QFutureWatcher>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <compilecache.h>
#include <evaluator.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <linux/capability.h>
#include <runner/protocol.h>
#include <set>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>

using namespace ks;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A small host task, y = alpha * x, with two workloads: every verdict can be provoked on it in
// well under a second.
static void writeScaleTask(const fs::path& root)
{
    test::writeText(root / "definition.json", test::scaleDefinition());
    test::writeText(root / "workloads.jsonl",
        R"({"definition": "scale", "workload": {"uuid": "small-1000", "axes": {"n": 1000}, "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": 1.5}}}}
{"definition": "scale", "workload": {"uuid": "large-65536", "axes": {"n": 65536}, "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": -0.5}}}}
)");
    const std::string honest =
        "#include \"ks_task.h\"\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i];\n    return 0;\n}\n";
    test::writeText(root / "reference.cpp", honest);
    test::writeText(root / "baseline.cpp", honest);
}

static const char* kLoop = "for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i];";

class TestEvaluator : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void honestCandidatePasses();
    void verdicts_data();
    void verdicts();
    void staysResponsiveDuringAHang();
    void compileCacheAndParallelCompiles();
    void scoredWorkloadsAloneMakeJ();
    void evaluatorsOfADeviceShareOnePreparation();
    void harnessFailureSaysNothingOfTheCandidate();
    void expectedOutputsAreNotReadableThroughProc();
    void candidateCannotReachTheNetwork();
    void forkedProcessesDieWithTheRunner_data();
    void forkedProcessesDieWithTheRunner();
    void candidateCannotWriteOutsideItsFolder();
    void candidateCannotReadTheHomeFolder();
    void allocationsPastTheMemoryLimitFail();
    void filesPastTheSizeLimitAreRefused();

private:
    std::unique_ptr<Evaluator> makeEvaluator(std::chrono::milliseconds runTimeout = 20s,
        std::shared_ptr<SharedPreparation> preparation = nullptr,
        const std::function<void(EvaluatorSettings&)>& adjust = {});
    fs::path candidate(const std::string& name, const std::string& body);

    QTemporaryDir m_dir;
    fs::path m_root;
    fs::path m_lastWorkDir; // makeEvaluator's last: where its jobs' result.jsonl files are
};

void TestEvaluator::initTestCase()
{
    m_root = fs::path(m_dir.path().toStdString());
    writeScaleTask(m_root / "scale");
    qputenv("OPENAI_API_KEY", "sk-must-not-leak");
}

std::unique_ptr<Evaluator> TestEvaluator::makeEvaluator(std::chrono::milliseconds runTimeout,
    std::shared_ptr<SharedPreparation> preparation, const std::function<void(EvaluatorSettings&)>& adjust)
{
    auto loaded = loadTask(m_root / "scale");
    if (!loaded.task)
        qFatal("%s", loaded.diagnostics.formatAll().c_str());
    EvaluatorSettings s;
    s.backend = Backend::Host;
    s.workDir = m_root / ("work-" + std::to_string(std::rand()));
    m_lastWorkDir = s.workDir;
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.05;
    s.runTimeout = runTimeout;
    s.preparation = std::move(preparation);
    if (adjust)
        adjust(s);
    return std::make_unique<Evaluator>(std::move(*loaded.task), s);
}

fs::path TestEvaluator::candidate(const std::string& name, const std::string& body)
{
    const fs::path p = m_root / "candidates" / (name + ".cpp");
    test::writeText(p,
        "#include \"ks_task.h\"\n#include <cmath>\n#include <cstdlib>\n#include <cstring>\n#include <dirent.h>\n"
        "#include <fcntl.h>\n#include <string>\n#include <unistd.h>\n"
            + body + "\n");
    return p;
}

void TestEvaluator::honestCandidatePasses()
{
    auto ev = makeEvaluator();
    const Evaluation e = ev->evaluate(candidate("honest",
        std::string("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { ") + kLoop
            + " return 0; }"));
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QCOMPARE(e.workloads.size(), std::size_t {2});
    for (const auto& w : e.workloads) {
        QCOMPARE(w.status, Verdict::Passed);
        QVERIFY(w.latencyMicros > 0);
        QVERIFY(w.baselineLatencyMicros > 0);
        QVERIFY(w.samples >= 10);
        QVERIFY(w.p25Micros <= w.latencyMicros && w.latencyMicros <= w.p75Micros);
    }
    QVERIFY(e.score > 0);
    QCOMPARE(e.baselineLatencyMicros,
        geometricMean({e.workloads[0].baselineLatencyMicros, e.workloads[1].baselineLatencyMicros}));
    QCOMPARE(e.score, 100.0 * e.baselineLatencyMicros / e.latencyMicros);
    const auto j = toJson(e);
    for (const char* key : {"status", "score", "latency_us", "baseline_latency_us", "log", "workloads"})
        QVERIFY2(j.contains(key), key);
    for (const char* key : {"id", "status", "max_abs_error", "max_rel_error", "latency_us", "baseline_latency_us",
             "speedup", "roofline_fraction"})
        QVERIFY2(j["workloads"][0].contains(key), key);
    // The expected outputs and the baseline are reused, not recomputed, for the next candidate.
    const double referenceSeconds = e.referenceSeconds, baselineSeconds = e.baselineSeconds;
    const Evaluation again = ev->evaluate(candidate("honest",
        std::string("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { ") + kLoop
            + " return 0; }"));
    QCOMPARE(again.status, Verdict::Passed);
    QVERIFY(again.compileCached);
    QCOMPARE(again.referenceSeconds, referenceSeconds);
    QCOMPARE(again.baselineSeconds, baselineSeconds);
}

void TestEvaluator::verdicts_data()
{
    QTest::addColumn<QString>("body");
    QTest::addColumn<QString>("verdict");
    QTest::addColumn<QString>("logFragment");
    auto withLoop = [](const char* before, const char* after) {
        return QString::fromLatin1("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { %1 %2 %3 }")
            .arg(QLatin1String(before), QLatin1String(kLoop), QLatin1String(after));
    };
    QTest::newRow("does not compile")
        << "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { return undefined_thing(a); }"
        << "COMPILE_ERROR"
        << "undefined_thing";
    QTest::newRow("endless loop") << "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { volatile "
                                     "int s = 1; while (s) {} return 0; }"
                                  << "TIMEOUT"
                                  << "timed out";
    QTest::newRow("segfault") << "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { volatile int* p "
                                 "= nullptr; *p = 1; return 0; }"
                              << "RUNTIME_ERROR"
                              << "SEGV"; // SIGSEGV, or "SEGV on unknown address" from AddressSanitizer in an asan build
    QTest::newRow("error code") << "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { return 7; }"
                                << "RUNTIME_ERROR"
                                << "returned 7";
    QTest::newRow("NaN output") << withLoop("", "a->y[3] = NAN; return 0;") << "INCORRECT_NUMERICAL"
                                << "NaN";
    QTest::newRow("half the output") << "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { for "
                                        "(int64_t i = 0; i < a->n / 2; ++i) a->y[i] = a->alpha * a->x[i]; return 0; }"
                                     << "INCORRECT_NUMERICAL"
                                     << "elements outside tolerance";
    QTest::newRow("modifies an input") << withLoop("", "const_cast<float*>(a->x)[0] += 1; return 0;") << "REJECTED"
                                       << "modified its inputs";
    // Correct on the first call, then replays what it computed for the first pointer it saw.
    QTest::newRow("caches by pointer") << withLoop(
        "static float* first; static float saved[65536]; if (first == a->y && a->n <= 65536) { std::memcpy(a->y, "
        "saved, a->n * 4); return 0; }",
        "if (!first) { first = a->y; std::memcpy(saved, a->y, a->n * 4); } return 0;")
                                       << "INCORRECT_NUMERICAL"
                                       << "timing loop";
    // Remembers the result for every input pointer it has seen and replays it: right for as long
    // as a buffer keeps its contents, which the timing loop's final round changes.
    QTest::newRow("memoises by input pointer") << QString::fromLatin1(
        "#include <map>\n#include <vector>\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) "
        "{ static std::map<const float*, std::vector<float>> memo; auto it = memo.find(a->x); if (it != "
        "memo.end()) { std::memcpy(a->y, it->second.data(), a->n * 4); return 0; } %1 memo[a->x].assign(a->y, "
        "a->y + a->n); return 0; }")
                                                      .arg(QLatin1String(kLoop))
                                               << "INCORRECT_NUMERICAL"
                                               << "refilled with other inputs";
    QTest::newRow("skips work after the first call")
        << withLoop("static int calls; if (calls++ > 0) return 0;", "return 0;") << "INCORRECT_NUMERICAL"
        << "wrong on a second call";
    // ksearch holds the expected outputs in memfds; a same-user process could open them through
    // /proc/PID/fd. It fails loudly (returns 99) if it can open any of the evaluator's, its first
    // ancestor that is not one of the runner's processes, found through /proc/self/stat (getppid()
    // says 1: the init of the runner's PID namespace, which the system's /proc shows as another).
    QTest::newRow("opens its parent's buffers through /proc") << QString::fromLatin1("#include <cstdio>\n")
            + withLoop("",
                "auto up = [](const std::string& pid, std::string& comm) {"
                "  char b[512] = {}; FILE* f = fopen((\"/proc/\" + pid + \"/stat\").c_str(), \"r\");"
                "  if (!f) return std::string();"
                "  b[fread(b, 1, sizeof b - 1, f)] = 0; fclose(f);"
                "  const char* l = strchr(b, '('); const char* r = strrchr(b, ')');"
                "  if (!l || !r) return std::string();"
                "  comm.assign(l + 1, r); return std::to_string(atoi(r + 4)); };"
                " std::string comm, pid = up(\"self\", comm);"
                " for (std::string c; !up(pid, c).empty() && (c == \"ksearch-runner\" || c == \"ksearch-init\");)"
                "  pid = up(pid, c);"
                " const std::string dir = \"/proc/\" + pid + \"/fd\"; int opened = 0;"
                " if (DIR* d = opendir(dir.c_str())) { while (dirent* e = readdir(d)) {"
                "  if (e->d_name[0] == '.') continue;"
                "  const int fd = open((dir + \"/\" + e->d_name).c_str(), O_RDONLY);"
                "  if (fd >= 0) { ++opened; close(fd); } }"
                " closedir(d); } return opened > 0 ? 99 : 0;") << "PASSED"
                                                              << "";
    QTest::newRow("looks for an API key")
        << withLoop("", "if (std::getenv(\"OPENAI_API_KEY\")) a->y[0] += 1; return 0;") << "PASSED"
        << "";
    // Right only while its output holds the noise it found there on its first call: a kernel
    // whose result depends on memory it never wrote. Every call used to get the same noise.
    QTest::newRow("depends on the noise in its output")
        << withLoop("static uint32_t seen; static bool first = true; uint32_t now; std::memcpy(&now, a->y, 4);"
                    " if (first) { seen = now; first = false; }",
               "if (now != seen) for (int64_t i = 0; i < a->n; ++i) a->y[i] += 1000.0f; return 0;")
        << "INCORRECT_NUMERICAL"
        << "other noise in its outputs";
    // Every other call differs in the last bit of one element, as a sum reordered by atomics
    // would: within tolerance, so it passes, and the log says its results are not repeatable.
    QTest::newRow("differs in the last bit between calls")
        << withLoop("", "static int calls; if (calls++ % 2) a->y[0] = std::nextafter(a->y[0], INFINITY); return 0;")
        << "PASSED"
        << "results differ bit for bit between two calls";
    // Hands its work to a thread of its own and returns at once; the thread writes the outputs
    // 300 ms later (one at a time: the calls in between do nothing). The outputs are copied out
    // when the call returns, so the first call is judged on the noise it left. Checked to fail
    // without that when it was written: with the host backend made to wait 400 ms after each
    // call before the outputs were copied out, this candidate PASSED.
    QTest::newRow("defers its work to a background thread") << QString::fromLatin1(
        "#include <atomic>\n#include <chrono>\n#include <thread>\nextern \"C\" int ks_run(const KsArgs* a, void*, "
        "size_t, ks_stream_t) { static std::atomic<bool> busy {false}; if (!busy.exchange(true)) std::thread([k = "
        "*a] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); for (int64_t i = 0; i < k.n; ++i) "
        "k.y[i] = k.alpha * k.x[i]; busy = false; }).detach(); return 0; }")
                                                            << "INCORRECT_NUMERICAL"
                                                            << "elements outside tolerance";
}

void TestEvaluator::verdicts()
{
    QFETCH(QString, body);
    QFETCH(QString, verdict);
    QFETCH(QString, logFragment);
    auto ev = makeEvaluator(verdict == u"TIMEOUT" ? 2500ms : 20s);
    const Evaluation e = ev->evaluate(candidate(QTest::currentDataTag(), body.toStdString()));
    QCOMPARE(QString::fromLatin1(verdictName(e.status).data()), verdict);
    QVERIFY2(QString::fromStdString(e.log).contains(logFragment), e.log.c_str());
    if (e.status != Verdict::Passed)
        QCOMPARE(e.score, 0.0);
}

void TestEvaluator::staysResponsiveDuringAHang()
{
    auto ev = makeEvaluator(2000ms);
    const fs::path hang = candidate("hang",
        "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { for (;;) { asm volatile(\"\"); } }");
    QTimer ticker;
    QSignalSpy ticks(&ticker, &QTimer::timeout);
    ticker.start(50);
    QFutureWatcher<Evaluation> watcher;
    QSignalSpy finished(&watcher, &QFutureWatcherBase::finished);
    watcher.setFuture(QtConcurrent::run([&] { return ev->evaluate(hang); }));
    QVERIFY(finished.wait(30000));
    QCOMPARE(watcher.result().status, Verdict::Timeout);
    // The event loop kept running while the evaluation hung (at least the 2 s limit's worth).
    QVERIFY2(ticks.count() >= 20, qPrintable(QString::number(ticks.count())));
}

void TestEvaluator::compileCacheAndParallelCompiles()
{
    CompileCache cache(m_root / "cache-parallel");
    std::vector<CompileRequest> requests;
    for (int i = 0; i < 3; ++i) {
        CompileRequest r;
        r.source = candidate("parallel" + std::to_string(i),
            "extern \"C\" int ks_run(const KsArgs*, void*, size_t, ks_stream_t) { return " + std::to_string(i) + "; }");
        r.abiHeader = "#pragma once\n#include <stddef.h>\n#include <stdint.h>\ntypedef void* ks_stream_t;\ntypedef "
                      "struct KsArgs { int64_t n; } KsArgs;\n";
        requests.push_back(r);
    }
    const auto first = cache.compileAll(requests);
    std::set<std::string> keys;
    for (const auto& r : first) {
        QVERIFY2(r.compile.ok, r.compile.log.c_str());
        QVERIFY(!r.cached);
        keys.insert(r.key);
    }
    QCOMPARE(keys.size(), std::size_t {3});
    const auto second = cache.compileAll(requests);
    for (std::size_t i = 0; i < second.size(); ++i) {
        QVERIFY(second[i].cached);
        QCOMPARE(second[i].key, first[i].key);
        QVERIFY(fs::exists(second[i].compile.library));
    }
    requests[0].extraFlags = {"-DVARIANT=1"}; // flags are part of the key
    QVERIFY(!cache.compile(requests[0]).cached);
}

// Three evaluators of one device, started at once on the same program: one prepares the task
// (inputs, reference outputs, baseline timing) while the others wait, and they adopt it: the same
// baseline latencies to the last bit (two timings never agree so exactly), and every evaluation
// judged against the same expected outputs, so all pass. The preparer may be destroyed first.
void TestEvaluator::evaluatorsOfADeviceShareOnePreparation()
{
    const auto share = makeSharedPreparation();
    std::vector<std::unique_ptr<Evaluator>> evaluators;
    for (int i = 0; i < 3; ++i)
        evaluators.push_back(makeEvaluator(20s, share));
    const fs::path program = candidate("shared-preparation",
        std::string("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { ") + kLoop
            + " return 0; }");
    std::vector<Evaluation> results(evaluators.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < evaluators.size(); ++i)
        threads.emplace_back([&, i] { results[i] = evaluators[i]->evaluate(program); });
    for (auto& t : threads)
        t.join();
    for (const Evaluation& e : results) {
        QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
        QCOMPARE(e.workloads.size(), std::size_t {2});
        for (std::size_t w = 0; w < 2; ++w)
            QCOMPARE(e.workloads[w].baselineLatencyMicros, results[0].workloads[w].baselineLatencyMicros);
        QCOMPARE(e.referenceSeconds, results[0].referenceSeconds);
    }
    evaluators.erase(evaluators.begin()); // whichever prepared, the others keep what they adopted
    evaluators.erase(evaluators.begin());
    const Evaluation later = evaluators.back()->evaluate(program);
    QVERIFY2(later.status == Verdict::Passed, later.log.c_str());
    QCOMPARE(later.workloads[0].baselineLatencyMicros, results[0].workloads[0].baselineLatencyMicros);
}

// The machine loses its device between two candidates (the runner exits before loading the
// kernel): the evaluation is a HARNESS_ERROR with the runner's words, not the candidate's
// failure, and once the device is back the same evaluator judges the same candidate again.
void TestEvaluator::harnessFailureSaysNothingOfTheCandidate()
{
    const fs::path flag = m_root / "device-gone";
    const fs::path runner = test::writeRunnerWithoutDevice(m_root / "runner-without-device.sh", flag, false);
    qputenv("KSEARCH_RUNNER", QByteArray::fromStdString(runner.string()));
    auto loaded = loadTask(m_root / "scale");
    QVERIFY(loaded.task.has_value());
    EvaluatorSettings s;
    s.backend = Backend::Host;
    s.workDir = m_root / "work-harness";
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.05;
    s.prestartRunners = false; // each runner starts with its job: the flag decides for that job
    Evaluator ev(std::move(*loaded.task), s);
    const fs::path honest = candidate("harness-honest",
        std::string("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { ") + kLoop
            + " return 0; }");
    const Evaluation before = ev.evaluate(honest);
    QVERIFY2(before.status == Verdict::Passed, before.log.c_str());

    test::writeText(flag, "");
    const Evaluation lost = ev.evaluate(honest);
    QCOMPARE(lost.status, Verdict::HarnessError);
    QVERIFY2(lost.log.find("before loading the kernel") != std::string::npos
            && lost.log.find("no CUDA-capable device") != std::string::npos,
        lost.log.c_str());
    QCOMPARE(lost.score, 0.0);
    QCOMPARE(toJson(lost)["status"].get<std::string>(), std::string("HARNESS_ERROR"));
    QCOMPARE(parseVerdict("HARNESS_ERROR"), std::optional<Verdict>(Verdict::HarnessError));

    fs::remove(flag);
    const Evaluation after = ev.evaluate(honest);
    qunsetenv("KSEARCH_RUNNER");
    QVERIFY2(after.status == Verdict::Passed, after.log.c_str());

    // A task that cannot be prepared (its reference's runner never comes up) is the harness's too,
    // and is tried again by the next evaluation instead of being remembered as broken.
    test::writeText(flag, "");
    qputenv("KSEARCH_RUNNER", QByteArray::fromStdString(runner.string()));
    auto again = loadTask(m_root / "scale");
    s.workDir = m_root / "work-harness-prepare";
    Evaluator fresh(std::move(*again.task), s);
    const Evaluation unprepared = fresh.evaluate(honest);
    QCOMPARE(unprepared.status, Verdict::HarnessError);
    QVERIFY2(unprepared.log.find("could not be prepared") != std::string::npos
            && unprepared.log.find("reference.cpp") != std::string::npos,
        unprepared.log.c_str());
    fs::remove(flag);
    const Evaluation prepared = fresh.evaluate(honest);
    qunsetenv("KSEARCH_RUNNER");
    QVERIFY2(prepared.status == Verdict::Passed, prepared.log.c_str());
}

// A process of the same user (a CUDA runner is one: no user namespace) may open another's
// descriptors through /proc/PID/fd while that process is dumpable, so an evaluator makes its
// process not dumpable: the memfds holding expected outputs stay out of reach. The mechanism is
// shown between two forked processes that both drop their capabilities first, as the runners do
// before loading a kernel (with root's, the capability check alone would decide): the child reads
// the holder's memfd when the holder is dumpable, and not when it is not.
void TestEvaluator::expectedOutputsAreNotReadableThroughProc()
{
    auto ev = makeEvaluator();
    QCOMPARE(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
    auto dropCapabilities = [] {
        __user_cap_header_struct header {_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct none[2] = {};
        ::syscall(SYS_capset, &header, none);
    };
    auto childReads = [&](bool holderDumpable) {
        const pid_t holder = ::fork();
        if (holder == 0) {
            dropCapabilities();
            ::prctl(PR_SET_DUMPABLE, holderDumpable ? 1 : 0, 0, 0, 0);
            // Only async-signal-safe calls between fork and _exit: the test process has threads.
            const int secret = ::memfd_create("expected", 0);
            char path[64];
            std::snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(::getpid()), secret);
            const pid_t reader = ::fork();
            if (reader == 0) {
                dropCapabilities();
                ::_exit(::open(path, O_RDONLY) >= 0 ? 0 : 1);
            }
            int status = 0;
            ::waitpid(reader, &status, 0);
            ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 2);
        }
        int status = 0;
        ::waitpid(holder, &status, 0);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    };
    QVERIFY(!childReads(false));
    QVERIFY(childReads(true)); // the refusal above is the flag's doing
}

// The environment line of the runner of `job` in `workDir` (the first line of its result.jsonl):
// whether it could cut the candidate off the network and contain the processes it starts.
static std::optional<ksr::EnvironmentLine> runnerEnvironment(const fs::path& workDir, const std::string& job)
{
    std::ifstream in(workDir / job / "result.jsonl");
    std::string line;
    if (!std::getline(in, line))
        return std::nullopt;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != ksr::status::kEnvironment)
        return std::nullopt;
    return ksr::environmentFromJson(j);
}

// A candidate that connects to a server of the test's on loopback, then computes its outputs:
// its runner is in a network namespace of its own (only a loopback that is down), so the
// connection fails and the server never sees it. Where the runner could not isolate the network
// it says so in its environment line, and the test is skipped. Checked to fail without the
// namespace when it was written: with isolateNetwork() returning true without unshare(), the
// server got the connection (and with it returning false, the test skipped).
void TestEvaluator::candidateCannotReachTheNetwork()
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

// The processes whose name (comm) is `marker` and that are still alive (zombies are not).
static std::vector<int> processesNamed(const std::string& marker)
{
    std::vector<int> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string pid = entry.path().filename().string();
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream stat(entry.path() / "stat");
        std::string text; // one line: pid (comm) state ...
        std::getline(stat, text);
        const auto open = text.find('('), close = text.rfind(')');
        if (open == std::string::npos || close == std::string::npos || close + 2 >= text.size())
            continue;
        if (text.substr(open + 1, close - open - 1) == marker && text[close + 2] != 'Z' && text[close + 2] != 'X')
            found.push_back(std::stoi(pid));
    }
    return found;
}

void TestEvaluator::forkedProcessesDieWithTheRunner_data()
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
void TestEvaluator::forkedProcessesDieWithTheRunner()
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

// A folder for a test, made in the test's working directory (the build folder on CI): on the
// disk, neither under /tmp nor in the home folder, so that only the read-only mounts keep a
// confined candidate from writing there.
static std::unique_ptr<QTemporaryDir> folderOnTheDisk(const char* name)
{
    auto dir = std::make_unique<QTemporaryDir>(
        QDir::currentPath() + QLatin1Char('/') + QLatin1String(name) + QLatin1String("-XXXXXX"));
    return dir->isValid() ? std::move(dir) : nullptr;
}

// Sets HOME, which the runners started from now on inherit, for as long as it lives.
class HomeFolder
{
public:
    explicit HomeFolder(const fs::path& dir)
        : m_wasSet(qEnvironmentVariableIsSet("HOME"))
        , m_before(qgetenv("HOME"))
    {
        qputenv("HOME", QByteArray::fromStdString(dir.string()));
    }
    ~HomeFolder()
    {
        if (m_wasSet)
            qputenv("HOME", m_before);
        else
            qunsetenv("HOME");
    }
    HomeFolder(const HomeFolder&) = delete;
    HomeFolder& operator=(const HomeFolder&) = delete;

private:
    bool m_wasSet;
    QByteArray m_before;
};

// A candidate that, on its first call, tries to write a file into a folder of the test's on the
// disk, and into its $HOME (a folder the test made and named HOME for the runner); then looks for
// a folder the test made under /tmp, makes it and writes there; then writes a file in its working
// directory. Its runner sees the filesystem read-only but for its job's folder and a private,
// empty /tmp, with the home folders behind empty read-only tmpfs (confineFilesystem in
// gpu/runner/main.cpp): both first writes fail, the test's /tmp folder is not there
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
void TestEvaluator::candidateCannotWriteOutsideItsFolder()
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
void TestEvaluator::candidateCannotReadTheHomeFolder()
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

// A candidate that allocates 1 GiB pieces, up to 64 GiB, on its first call, and returns 100 plus
// the number it got. Its runner's data may grow by 4 GiB (the evaluator's limit for this test;
// RLIMIT_DATA): the fourth piece fails (three and the runner's own buffers fill the limit), the
// candidate returns 103 and the workload is RUNTIME_ERROR, well within the time limit. Safe
// without the limit too: only the first three pieces are touched (3 GiB, under the limit and far
// under the CI machine's 24 GiB), the others are only reserved, so a missing limit shows as a
// count past 4 (all 64 where the system overcommits, as Linux does by default) rather than as a
// machine out of memory. The pieces are kept in a volatile array: a compiler may otherwise drop
// an allocation whose pointer is only compared and freed. Skipped where the runner reports no
// memory limit. Checked to fail when it was written: with RLIMIT_DATA not set, it returned 164.
void TestEvaluator::allocationsPastTheMemoryLimitFail()
{
    constexpr std::uint64_t limit = std::uint64_t {4} << 30;
    auto ev = makeEvaluator(20s, nullptr, [&](EvaluatorSettings& s) { s.runnerMemoryLimitBytes = limit; });
    const fs::path workDir = m_lastWorkDir;
    const fs::path source = candidate("allocates-64-gib",
        "static void* volatile pieces[64];\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    static bool tried; if (!tried) { tried = true; const size_t gib = size_t {1} << 30; int got = 0;\n"
        "        for (; got < 64; ++got) {\n"
        "            void* p = malloc(gib); pieces[got] = p; if (!p) break;\n"
        "            if (got < 3) for (size_t i = 0; i < gib; i += 4096) static_cast<volatile char*>(p)[i] = 1; }\n"
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
void TestEvaluator::filesPastTheSizeLimitAreRefused()
{
    constexpr std::uint64_t limit = std::uint64_t {1} << 20;
    QTemporaryDir underTmp;
    QVERIFY(underTmp.isValid());
    const std::string dir = underTmp.path().toStdString();
    auto ev = makeEvaluator(20s, nullptr, [&](EvaluatorSettings& s) { s.runnerFileLimitBytes = limit; });
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

KS_TEST_MAIN_CORE(TestEvaluator)
#include "tst_evaluator.moc"

// With scored_workloads, J's geometric mean covers the listed workloads only; the others are
// still verified (a wrong answer there still fails the candidate) and marked in the JSON.
void TestEvaluator::scoredWorkloadsAloneMakeJ()
{
    const fs::path root = m_root / "scored";
    writeScaleTask(root);
    std::string def = test::scaleDefinition();
    def.replace(def.find("\"op_type\""), 0, "\"scored_workloads\": [\"large-65536\"], ");
    test::writeText(root / "definition.json", def);
    auto loaded = loadTask(root);
    QVERIFY2(loaded.task.has_value(), loaded.diagnostics.formatAll().c_str());
    EvaluatorSettings s;
    s.backend = Backend::Host;
    s.workDir = root / "work";
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.05;
    Evaluator ev(std::move(*loaded.task), s);

    const Evaluation e = ev.evaluate(candidate("scored-honest",
        std::string("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { ") + kLoop
            + " return 0; }"));
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    QCOMPARE(e.workloads.size(), std::size_t {2});
    QVERIFY(!e.workloads[0].scored && e.workloads[1].scored);
    QCOMPARE(e.latencyMicros, e.workloads[1].latencyMicros);
    QCOMPARE(e.baselineLatencyMicros, e.workloads[1].baselineLatencyMicros);
    QVERIFY2(e.log.find("checked only: not in J") != std::string::npos, e.log.c_str());
    const auto j = toJson(e);
    QCOMPARE(j["workloads"][0].value("scored", true), false);
    QVERIFY(!j["workloads"][1].contains("scored"));
    QCOMPARE(evaluationFromJson(j).workloads[0].scored, false);

    // An unscored workload still decides correctness.
    const Evaluation wrongOnSmall = ev.evaluate(candidate("scored-wrong-small",
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i] * (a->n == 1000 ? 2.0f : 1.0f);\n"
        "    return 0;\n}"));
    QCOMPARE(wrongOnSmall.status, Verdict::IncorrectNumerical);
    QCOMPARE(wrongOnSmall.workloads[0].status, Verdict::IncorrectNumerical);
}
