#include "enginefixture.h"
#include "scaletask.h"
#include "testmain.h"
#include "testsupport.h"

#include <QDir>
#include <QFutureWatcher>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <compilecache.h>
#include <dlfcn.h>
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

static const char* const kLoop = test::kScaleLoop;

class TestEvaluator : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void honestCandidatePasses();
    void runnersStartedAheadAreUsed();
    void verdicts_data();
    void verdicts();
    void staysResponsiveDuringAHang();
    void compileCacheAndParallelCompiles();
    void scoredWorkloadsAloneMakeJ();
    void heldOutWorkloadsCatchFittedPrograms();
    void evaluatorsOfADeviceShareOnePreparation();
    void harnessFailureSaysNothingOfTheCandidate();
    void expectedOutputsAreNotReadableThroughProc();
    void kernelLibrariesDoNotDoTheWork_data();
    void kernelLibrariesDoNotDoTheWork();

private:
    std::unique_ptr<Evaluator> makeEvaluator(std::chrono::milliseconds runTimeout = 20s,
        std::shared_ptr<SharedPreparation> preparation = nullptr,
        const std::function<void(EvaluatorSettings&)>& adjust = {});
    fs::path candidate(const std::string& name, const std::string& body);
    // A host evaluator of the two-workload scale task in m_root/NAME, its definition given `field`
    // (a JSON member, such as scored_workloads).
    std::unique_ptr<Evaluator> scaleEvaluatorWith(const std::string& name, const std::string& field);

    QTemporaryDir m_dir;
    fs::path m_root;
    fs::path m_lastWorkDir; // makeEvaluator's last: where its jobs' result.jsonl files are
};

void TestEvaluator::initTestCase()
{
    m_root = fs::path(m_dir.path().toStdString());
    test::writeTwoWorkloadScaleTask(m_root / "scale");
    qputenv("OPENAI_API_KEY", "sk-must-not-leak");
}

std::unique_ptr<Evaluator> TestEvaluator::makeEvaluator(std::chrono::milliseconds runTimeout,
    std::shared_ptr<SharedPreparation> preparation, const std::function<void(EvaluatorSettings&)>& adjust)
{
    m_lastWorkDir = m_root / ("work-" + std::to_string(std::rand()));
    return test::makeScaleEvaluator(m_root, m_lastWorkDir, runTimeout, [&](EvaluatorSettings& s) {
        s.preparation = std::move(preparation);
        if (adjust)
            adjust(s);
    });
}

fs::path TestEvaluator::candidate(const std::string& name, const std::string& body)
{
    return test::writeScaleCandidate(m_root, name, body);
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
    // Computes the first 16 expected outputs itself (y = alpha * x), then reads every file of the
    // evaluator's scratch folder (every job's folder: the reference's and the baseline's too),
    // /tmp and /dev/shm for them, and returns 98 if any file holds them: the expected outputs
    // live in memfds, never in a file. The control row writes them into its own folder first, so
    // the search finds them there: without it, a search that could not find anything would pass.
    const QString findsExpected = QString::fromLatin1(
        "#include <cstdio>\n#include <sys/stat.h>\n#include <vector>\n"
        "static bool holds(const std::string& path, const void* needle, size_t n) {"
        "  FILE* f = fopen(path.c_str(), \"rb\"); if (!f) return false; std::vector<char> b(64 << 20);"
        "  const size_t got = fread(b.data(), 1, b.size(), f); fclose(f);"
        "  return got >= n && memmem(b.data(), got, needle, n) != nullptr; }\n"
        "static bool search(const std::string& dir, const void* needle, size_t n, int depth) {"
        "  DIR* d = opendir(dir.c_str()); if (!d) return false; bool found = false;"
        "  while (dirent* e = readdir(d)) { const std::string name = e->d_name;"
        "    if (found || name == \".\" || name == \"..\") continue; const std::string path = dir + \"/\" + name;"
        "    struct stat st {}; if (lstat(path.c_str(), &st) != 0) continue;"
        "    if (S_ISDIR(st.st_mode) && depth < 6) found = search(path, needle, n, depth + 1);"
        "    else if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) >= n) found = holds(path, needle, n); }"
        "  closedir(d); return found; }\n");
    // QString, not auto: the sum would be a QStringBuilder holding the temporary withLoop made.
    const auto searching = [&](const char* first) -> QString {
        return findsExpected
            + withLoop((std::string("static bool done; if (!done && a->n >= 16) { done = true; float expect[16];"
                                    " for (int i = 0; i < 16; ++i) expect[i] = a->alpha * a->x[i]; ")
                           + first
                           + " for (const char* dir : {\"..\", \"/tmp\", \"/dev/shm\"})"
                             " if (search(dir, expect, sizeof expect, 0)) return 98; }")
                           .c_str(),
                "return 0;");
    };
    QTest::newRow("looks for the expected outputs in the scratch folders") << searching("") << "PASSED"
                                                                           << "";
    QTest::newRow("finds outputs it wrote itself (the search's control)")
        << searching("if (FILE* f = fopen(\"mine.bin\", \"wb\")) { fwrite(expect, 1, sizeof expect, f); fclose(f); }")
        << "RUNTIME_ERROR"
        << "returned 98";
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

// Each candidate after the first runs in the runner started ahead of it, while it compiled: its
// kind (backend, device, language, confinement) is the job's. A session of this one broke that
// (the kind gained a field and one initialiser filled the wrong one), and every candidate paid a
// runner's start again; nothing failed.
void TestEvaluator::runnersStartedAheadAreUsed()
{
    auto ev = makeEvaluator();
    for (const char* name : {"ahead-1", "ahead-2", "ahead-3"}) {
        const Evaluation e = ev->evaluate(candidate(name,
            std::string("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { ") + kLoop
                + " return 0; }"));
        QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    }
    QCOMPARE(ev->runsStartedAhead(), 2);
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

void TestEvaluator::kernelLibrariesDoNotDoTheWork_data()
{
    QTest::addColumn<QString>("library");
    QTest::addColumn<QString>("work"); // after the library is loaded as `lib`
    QTest::addColumn<QString>("verdict");
    QTest::newRow("BLAS computes the output") // right outputs: only the rule on libraries rejects it
        << "libblas.so.3"
        << "using Copy = void (*)(const int*, const float*, const int*, float*, const int*); using Scal = void "
           "(*)(const int*, const float*, float*, const int*); auto copy = (Copy)dlsym(lib, \"scopy_\"); auto scal = "
           "(Scal)dlsym(lib, \"sscal_\"); if (!copy || !scal) return 91; const int n = (int)a->n, one = 1; "
           "copy(&n, a->x, &one, a->y, &one); scal(&n, &a->alpha, a->y, &one);"
        << "REJECTED";
    QTest::newRow("zlib loaded, its own loop computes") // not a kernel library: allowed
        << "libz.so.1" << QString::fromLatin1(kLoop) << "PASSED";
}

// A compiled candidate that loads a kernel library (cuBLAS, a CPU BLAS...) and lets it compute is
// REJECTED: the runner reports the shared objects that appeared after the candidate's load, and
// ksearch judges them (core/task/kernellibraries.h; docs/security.md, pattern 15). Other
// libraries a candidate loads are its business. Skipped where the library is not installed.
void TestEvaluator::kernelLibrariesDoNotDoTheWork()
{
    QFETCH(QString, library);
    QFETCH(QString, work);
    QFETCH(QString, verdict);
    void* here = ::dlopen(library.toLatin1().constData(), RTLD_NOW | RTLD_LOCAL);
    if (!here)
        QSKIP(qPrintable(library + u" is not installed here"_qs));
    ::dlclose(here);
    auto ev = makeEvaluator();
    const Evaluation e = ev->evaluate(candidate(std::string("library-") + QTest::currentDataTag(),
        "#include <dlfcn.h>\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { void* lib = "
        "dlopen(\""
            + library.toStdString() + "\", RTLD_NOW); if (!lib) return 90; " + work.toStdString() + " return 0; }"));
    QVERIFY2(QString::fromLatin1(verdictName(e.status).data()) == verdict, e.log.c_str());
    if (e.status == Verdict::Rejected)
        QVERIFY2(QString::fromStdString(e.log).contains(u"loaded libblas.so.3, a kernel library"_qs), e.log.c_str());
}

KS_TEST_MAIN_CORE(TestEvaluator)
#include "tst_evaluator.moc"

std::unique_ptr<Evaluator> TestEvaluator::scaleEvaluatorWith(const std::string& name, const std::string& field)
{
    const fs::path root = m_root / name;
    test::writeTwoWorkloadScaleTask(root);
    std::string def = test::scaleDefinition();
    def.replace(def.find("\"op_type\""), 0, field + ", ");
    test::writeText(root / "definition.json", def);
    auto loaded = loadTask(root);
    if (!loaded.task)
        qFatal("%s", loaded.diagnostics.formatAll().c_str());
    EvaluatorSettings s;
    s.backend = Backend::Host;
    s.workDir = root / "work";
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.05;
    return std::make_unique<Evaluator>(std::move(*loaded.task), s);
}

// With scored_workloads, J's geometric mean covers the listed workloads only; the others are
// still verified (a wrong answer there still fails the candidate) and marked in the JSON.
void TestEvaluator::scoredWorkloadsAloneMakeJ()
{
    auto evaluator = scaleEvaluatorWith("scored", "\"scored_workloads\": [\"large-65536\"]");
    Evaluator& ev = *evaluator;

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

// With held_out_workloads (docs/security.md, pattern 13), the large workload is one the code
// policy is never shown: a program fitted to the shape it was shown (it computes the first 1,000
// elements, all the small workload has) fails there, and the log the code policy reads says a
// held-out workload failed without its id, size or message. An honest program passes, J is the
// shown workload's alone, and the record keeps which workload was held out.
void TestEvaluator::heldOutWorkloadsCatchFittedPrograms()
{
    auto evaluator = scaleEvaluatorWith("held-out", "\"held_out_workloads\": [\"large-65536\"]");
    Evaluator& ev = *evaluator;

    const Evaluation fitted = ev.evaluate(candidate("held-out-fitted",
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    for (int64_t i = 0; i < 1000; ++i) a->y[i] = a->alpha * a->x[i];\n    return 0;\n}"));
    QCOMPARE(fitted.status, Verdict::IncorrectNumerical);
    QCOMPARE(fitted.workloads[0].status, Verdict::Passed);
    QCOMPARE(fitted.workloads[1].status, Verdict::IncorrectNumerical);
    QVERIFY(fitted.workloads[1].heldOut && !fitted.workloads[0].heldOut);
    QVERIFY2(fitted.log.find("a held-out workload: INCORRECT_NUMERICAL") != std::string::npos, fitted.log.c_str());
    for (const char* hidden : {"large", "65536"})
        QVERIFY2(fitted.log.find(hidden) == std::string::npos, fitted.log.c_str());

    const Evaluation honest = ev.evaluate(candidate("held-out-honest",
        std::string("extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) { ") + kLoop
            + " return 0; }"));
    QVERIFY2(honest.status == Verdict::Passed, honest.log.c_str());
    QVERIFY(honest.workloads[0].scored && !honest.workloads[1].scored);
    QCOMPARE(honest.latencyMicros, honest.workloads[0].latencyMicros);
    QVERIFY(honest.workloads[1].latencyMicros > 0); // timed all the same, for a person to see
    QVERIFY(evaluationFromJson(toJson(honest)).workloads[1].heldOut);
    QVERIFY(!toJson(honest)["workloads"][0].contains("held_out")); // older journals read back unchanged
}
