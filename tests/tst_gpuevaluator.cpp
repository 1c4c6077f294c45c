#include "testmain.h"
#include "testsupport.h"

#include <task/confinement.h>

#include <QTemporaryDir>

#include <algorithm>
#include <atomic>
#include <cudausernamespace.h>
#include <dlfcn.h>
#include <evaluator.h>
#include <map>
#include <sanitizer.h>
#include <thread>
#include <unistd.h>

using namespace ks;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The evaluator on a CUDA device: the shipped baselines pass and score about 100 against
// themselves, and the CUDA forms of the known cheats and faults get the verdict they must.
// Skips cleanly where no device is present.

static const char* kWorkloads =
    R"({"definition": "scale", "workload": {"uuid": "n-4m", "axes": {"n": 4194304}, "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": 1.5}}}}
{"definition": "scale", "workload": {"uuid": "n-64m", "axes": {"n": 67108864}, "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": -0.5}}}}
)";

static const char* kKernel = R"(
__global__ void scale_kernel(const float* __restrict__ x, float alpha, float* __restrict__ y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = alpha * x[i];
}
)";

class TestGpuEvaluator : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void shippedBaselinesPass_data();
    void shippedBaselinesPass();
    void cudaVerdicts_data();
    void cudaVerdicts();
    void sideStreamDoesNotPay_data();
    void sideStreamDoesNotPay();
    void memsetOnItsOwnStreamIsSeen();
    void priorityStreamUnderTheLeadInPays_data();
    void priorityStreamUnderTheLeadInPays();
    void launchBoundCallsScoreThemselves_data();
    void launchBoundCallsScoreThemselves();
    void persistingL2DoesNotHelp();
    void fasterThanTheFloorIsRejected();
    void taskCheatsAreCaught_data();
    void taskCheatsAreCaught();
    void oversizedWorkloadIsNamed();
    void cudaCandidatesAreConfined_data();
    void cudaCandidatesAreConfined();
    void sanitizerReports_data();
    void sanitizerReports();
    void failuresAreSanitized();
    void cublasDoesNotDoTheWork();

private:
    std::unique_ptr<Evaluator> scaleEvaluator(const std::string& bytesExpression,
        std::chrono::milliseconds timeout = 60s, bool confine = true,
        std::optional<SanitizerTool> sanitizeFailures = std::nullopt);
    fs::path candidate(const std::string& name, const std::string& body);
    std::string honestBody() const;

    QTemporaryDir m_dir;
    fs::path m_root;
};

void TestGpuEvaluator::initTestCase()
{
    m_root = fs::path(m_dir.path().toStdString());
    auto loaded = loadTask(test::tasksDir() / "rmsnorm");
    QVERIFY(loaded.task);
    EvaluatorSettings s;
    s.backend = Backend::Cuda;
    s.workDir = m_root / "probe";
    Evaluator probe(std::move(*loaded.task), s);
    if (const auto problem = probe.environmentProblem())
        QSKIP(qPrintable(u"no CUDA device or toolkit: "_qs + QString::fromStdString(*problem)));
    qputenv("OPENAI_API_KEY", "sk-must-not-leak");
}

std::string TestGpuEvaluator::honestBody() const
{
    return std::string(kKernel) + R"(
extern "C" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) {
    scale_kernel<<<528, 256, 0, stream>>>(a->x, a->alpha, a->y, a->n);
    return (int)cudaGetLastError();
})";
}

std::unique_ptr<Evaluator> TestGpuEvaluator::scaleEvaluator(const std::string& bytesExpression,
    std::chrono::milliseconds timeout, bool confine, std::optional<SanitizerTool> sanitizeFailures)
{
    const fs::path root = m_root / ("scale-" + std::to_string(std::rand()));
    test::writeText(root / "definition.json", test::scaleDefinition(bytesExpression));
    test::writeText(root / "workloads.jsonl", kWorkloads);
    test::writeText(root / "reference.cpp",
        "#include \"ks_task.h\"\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i];\n    return 0;\n}\n");
    test::writeText(root / "baseline.cu", "#include \"ks_task.h\"\n" + honestBody() + "\n");
    auto loaded = loadTask(root);
    if (!loaded.task)
        qFatal("%s", loaded.diagnostics.formatAll().c_str());
    EvaluatorSettings s;
    s.backend = Backend::Cuda;
    s.workDir = root / "work";
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.3;
    s.runTimeout = timeout;
    s.confineCandidates = confine;
    s.sanitizeFailures = sanitizeFailures;
    return std::make_unique<Evaluator>(std::move(*loaded.task), s);
}

fs::path TestGpuEvaluator::candidate(const std::string& name, const std::string& body)
{
    const fs::path p = m_root / "candidates" / (name + ".cu");
    test::writeText(p,
        "#include \"ks_task.h\"\n#include <cmath>\n#include <cstdio>\n#include <cstdlib>\n#include <dirent.h>\n"
        "#include <fcntl.h>\n"
        "#include <unistd.h>\n"
            + body + "\n");
    return p;
}

void TestGpuEvaluator::shippedBaselinesPass_data()
{
    test::addTaskRowsWith("baseline.cu");
}

void TestGpuEvaluator::shippedBaselinesPass()
{
    QFETCH(QString, task);
    auto loaded = loadTask(task.toStdString());
    QVERIFY(loaded.task);
    const fs::path baseline = *loaded.task->files.baselineCu;
    EvaluatorSettings s;
    s.backend = Backend::Cuda;
    s.workDir = m_root / ("task-" + fs::path(task.toStdString()).filename().string());
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.3;
    Evaluator ev(std::move(*loaded.task), s);
    const Evaluation e = ev.evaluate(baseline);
    qInfo("%s", e.log.c_str());
    QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
    // The baseline against itself, timed twice in one run: J near 100 says the timer is stable.
    QVERIFY2(e.score > 85 && e.score < 115, std::to_string(e.score).c_str());
    // Every shipped task holds two workloads out (scripts/held_out_workloads.py): the baseline is
    // verified and timed on them too, though the log above does not name them.
    QCOMPARE(std::count_if(e.workloads.begin(), e.workloads.end(), [](const auto& w) { return w.heldOut; }),
        static_cast<std::ptrdiff_t>(ev.task().definition.heldOutWorkloads.size()));
    for (const auto& w : e.workloads) {
        QVERIFY2(w.status == Verdict::Passed, w.id.c_str());
        QVERIFY(w.floorMicros > 0);
        QVERIFY2(w.rooflineFraction > 0 && w.rooflineFraction <= 1.0 / ev.settings().floorSlack, w.id.c_str());
    }
}

void TestGpuEvaluator::cudaVerdicts_data()
{
    QTest::addColumn<QString>("body");
    QTest::addColumn<QString>("verdict");
    QTest::addColumn<QString>("logFragment");
    const std::string k = kKernel;
    auto launch = [&](const std::string& before, const std::string& after) {
        return QString::fromStdString(k
            + "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { " + before
            + " scale_kernel<<<528, 256, 0, stream>>>(a->x, a->alpha, a->y, a->n); " + after
            + " return (int)cudaGetLastError(); }");
    };
    QTest::newRow("illegal address") << QString::fromStdString(
        "__global__ void bad(float* p) { p[threadIdx.x + (1ull << 40)] = 1.0f; }\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { bad<<<1, 32, 0, "
        "stream>>>(a->y); return 0; }")
                                     << "RUNTIME_ERROR"
                                     << "cudaErrorIllegalAddress";
    QTest::newRow("endless kernel") << QString::fromStdString(
        "__global__ void spin(volatile int* f) { f[0] = 0; while (f[0] == 0) {} }\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { spin<<<1, 1, 0, "
        "stream>>>((volatile int*)a->y + 1); return 0; }")
                                    << "TIMEOUT"
                                    << "timed out";
    QTest::newRow("honest after faults") << launch("", "") << "PASSED"
                                         << "";
    QTest::newRow("NaN output") << launch("", "cudaMemsetAsync(a->y, 0xff, 64, stream);") << "INCORRECT_NUMERICAL"
                                << "NaN";
    QTest::newRow("half the output") << QString::fromStdString(k
        + "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) {"
          " scale_kernel<<<528, 256, 0, stream>>>(a->x, a->alpha, a->y, a->n / 2); return 0; }")
                                     << "INCORRECT_NUMERICAL"
                                     << "elements outside tolerance";
    QTest::newRow("modifies an input") << launch("", "cudaMemsetAsync((void*)a->x, 0, 16, stream);") << "REJECTED"
                                       << "modified its inputs";
    // Replays the first result it computed into the same output buffer, without the kernel.
    QTest::newRow("caches by pointer") << launch(
        "static float* first; static float* saved; if (first == a->y) { "
        "cudaMemcpyAsync(a->y, saved, a->n * 4, cudaMemcpyDeviceToDevice, stream); "
        "return 0; }",
        "if (!first) { first = a->y; cudaMalloc(&saved, a->n * 4); "
        "cudaMemcpyAsync(saved, a->y, a->n * 4, cudaMemcpyDeviceToDevice, stream); }")
                                       << "INCORRECT_NUMERICAL"
                                       << "timing loop";
    // Keeps the result of every input pointer it has seen and replays it while the contents stay.
    QTest::newRow("memoises by input pointer")
        << launch("static const float* keys[8]; static float* memo[8]; static int used; for (int i = 0; i < used; ++i) "
                  "if (keys[i] == a->x) { cudaMemcpyAsync(a->y, memo[i], a->n * 4, cudaMemcpyDeviceToDevice, stream); "
                  "return 0; }",
               "if (used < 8) { keys[used] = a->x; cudaMalloc(&memo[used], a->n * 4); cudaMemcpyAsync(memo[used], "
               "a->y, a->n * 4, cudaMemcpyDeviceToDevice, stream); ++used; }")
        << "INCORRECT_NUMERICAL"
        << "refilled with other inputs";
    QTest::newRow("looks for an API key")
        << launch("", "if (std::getenv(\"OPENAI_API_KEY\")) cudaMemsetAsync(a->y, 0, 4, stream);") << "PASSED"
        << "";
    // 100 KiB of dynamic shared memory without cudaFuncSetAttribute: the launch is refused in the
    // candidate's own CUDA runtime, which it never asks; the harness does, after every call.
    QTest::newRow("shared memory over the limit") << QString::fromStdString(
        "__global__ void big(const float* x, float alpha, float* y, int64_t n) { extern __shared__ float s[];"
        " s[threadIdx.x] = alpha; for (int64_t i = blockIdx.x * 256 + threadIdx.x; i < n; i += 256 * gridDim.x)"
        " y[i] = s[threadIdx.x] * x[i]; }\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { big<<<528, 256, 100 * 1024,"
        " stream>>>(a->x, a->alpha, a->y, a->n); return 0; }")
                                                  << "RUNTIME_ERROR"
                                                  << "a kernel launch failed: cudaErrorInvalidValue";
    // Right only while its output holds the noise it found there on its first call.
    QTest::newRow("depends on the noise in its output") << QString::fromStdString(
        "__device__ unsigned g_seen; __device__ int g_have, g_differs;\n"
        "__global__ void look(const float* y) { unsigned now = __float_as_uint(y[0]);"
        " if (!g_have) { g_seen = now; g_have = 1; } g_differs = now != g_seen; }\n"
        "__global__ void scaled(const float* x, float alpha, float* y, int64_t n) { for (int64_t i = blockIdx.x *"
        " 256 + threadIdx.x; i < n; i += 256 * gridDim.x) y[i] = alpha * x[i] + (g_differs ? 1000.0f : 0.0f); }\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { look<<<1, 1, 0,"
        " stream>>>(a->y); scaled<<<528, 256, 0, stream>>>(a->x, a->alpha, a->y, a->n); return 0; }")
                                                        << "INCORRECT_NUMERICAL"
                                                        << "other noise in its outputs";
    // ksearch's expected outputs are in memfds: a CUDA runner must not open them either.
    QTest::newRow("opens its parent's buffers through /proc") << launch("",
        "char dir[64]; snprintf(dir, sizeof dir, \"/proc/%d/fd\", (int)getppid()); int opened = 0;"
        " if (DIR* d = opendir(dir)) { while (dirent* e = readdir(d)) { if (e->d_name[0] == '.') continue;"
        " char path[160]; snprintf(path, sizeof path, \"%s/%s\", dir, e->d_name);"
        " const int fd = open(path, O_RDONLY); if (fd >= 0) { ++opened; close(fd); } } closedir(d); }"
        " if (opened) return 99;") << "PASSED"
                                                              << "";
}

void TestGpuEvaluator::cudaVerdicts()
{
    QFETCH(QString, body);
    QFETCH(QString, verdict);
    QFETCH(QString, logFragment);
    static std::unique_ptr<Evaluator> ev; // one evaluator: a fault must not spoil the next candidate
    if (!ev)
        ev = scaleEvaluator("8 * n", 15s);
    const Evaluation e = ev->evaluate(candidate(QTest::currentDataTag(), body.toStdString()));
    QVERIFY2(QString::fromLatin1(verdictName(e.status).data()) == verdict, e.log.c_str());
    QVERIFY2(QString::fromStdString(e.log).contains(logFragment), e.log.c_str());
}

void TestGpuEvaluator::sideStreamDoesNotPay_data()
{
    QTest::addColumn<QString>("task"); // empty: the scale task
    QTest::newRow("scale kernel") << QString();
    QTest::newRow("GQA decode baseline") << QString::fromStdString(
        (test::tasksDir() / "gqa_paged_decode_h32_kv4_d128_ps1").string());
}

// The same kernel launched on a stream the candidate created is timed as on the given stream: by
// the span of its work plus what events add to a span (issue #15 point 5; before, the GQA
// baseline on a side stream read 4-9 % faster and the scale kernel 14 % faster on n-4m). Both in
// one evaluator, so they share the baseline and the device's state.
void TestGpuEvaluator::sideStreamDoesNotPay()
{
    QFETCH(QString, task);
    std::unique_ptr<Evaluator> ev;
    fs::path honest;
    std::string wrapped; // ks_run on a stream of its own around the honest ks_run
    if (task.isEmpty()) {
        ev = scaleEvaluator("8 * n");
        honest = candidate("honest", honestBody());
        wrapped = "#define ks_run ks_run_on_given_stream\n" + honestBody() + "\n#undef ks_run\n";
    } else {
        auto loaded = loadTask(task.toStdString());
        QVERIFY(loaded.task);
        honest = *loaded.task->files.baselineCu;
        // Its text, not an #include of it: the compiler cannot read the task's folder (confined).
        wrapped = "#define ks_run ks_run_on_given_stream\n" + test::readText(honest) + "\n#undef ks_run\n";
        EvaluatorSettings s;
        s.backend = Backend::Cuda;
        s.workDir = m_root / "side-gqa";
        s.cacheDir = m_root / "cache";
        s.bench.maxSeconds = 0.3;
        ev = std::make_unique<Evaluator>(std::move(*loaded.task), s);
    }
    const Evaluation given = ev->evaluate(honest);
    QVERIFY2(given.status == Verdict::Passed, given.log.c_str());
    const Evaluation side = ev->evaluate(candidate("sidestream-" + std::to_string(task.isEmpty()), wrapped + R"(
extern "C" int ks_run(const KsArgs* a, void* w, size_t bytes, ks_stream_t) {
    static cudaStream_t own;
    if (!own) cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    return ks_run_on_given_stream(a, w, bytes, own);
})"));
    QVERIFY2(side.status == Verdict::Passed, side.log.c_str());
    qInfo("J on the given stream %.2f, on its own stream %.2f", given.score, side.score);
    for (std::size_t i = 0; i < side.workloads.size(); ++i) {
        const auto& g = given.workloads[i];
        const auto& o = side.workloads[i];
        qInfo("%s: given %.2f us (span %.2f), own stream %.2f us (span %.2f; %d of %d samples had side work)",
            o.id.c_str(), g.latencyMicros, g.deviceSpanMicros, o.latencyMicros, o.deviceSpanMicros, o.sideWorkSamples,
            o.samples);
        QVERIFY(o.sideWorkSamples > o.samples / 2);
        // Two medians of the same kernel in one run: 2 % is their spread on the H200, where the
        // span alone made the side stream 4-14 % faster.
        QVERIFY2(o.latencyMicros > 0.98 * g.latencyMicros, o.id.c_str());
    }
    QVERIFY2(side.score < 1.02 * given.score, std::to_string(side.score).c_str());
}

// Work done by a memset on a stream the candidate made, unordered with the harness's, runs under
// the lead-in: the events miss it, the device's spans see it (memsets are recorded on every
// stream but the harness's, whose lead-in is made of them). The memset writes as many bytes as
// the output, so its work is well past the span rule's 5 % on both workloads (a fixed 16 MiB
// was 3 % of the 64M workload's time on the H200, inside the margin).
void TestGpuEvaluator::memsetOnItsOwnStreamIsSeen()
{
    auto ev = scaleEvaluator("8 * n");
    const Evaluation honest = ev->evaluate(candidate("honest", honestBody()));
    const Evaluation side = ev->evaluate(candidate("memset-own-stream", std::string(kKernel) + R"(
extern "C" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) {
    static cudaStream_t own;
    static void* scratch;
    static size_t have;
    const size_t bytes = (size_t)a->n * sizeof(float);
    if (!own)
        cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    if (bytes > have) {
        cudaFree(scratch);
        cudaMalloc(&scratch, bytes);
        have = bytes;
    }
    cudaMemsetAsync(scratch, 0, bytes, own);
    scale_kernel<<<528, 256, 0, stream>>>(a->x, a->alpha, a->y, a->n);
    return (int)cudaGetLastError();
})"));
    QVERIFY2(honest.status == Verdict::Passed, honest.log.c_str());
    QVERIFY2(side.status == Verdict::Passed, side.log.c_str());
    if (honest.workloads.front().deviceSpanMicros == 0)
        QSKIP("no CUPTI spans (KSEARCH_CUPTI_SPANS=0 or a build without CUPTI): only spans see a memset under the "
              "lead-in");
    for (std::size_t i = 0; i < side.workloads.size(); ++i) {
        const auto& h = honest.workloads[i];
        const auto& o = side.workloads[i];
        qInfo("%s: honest %.2f us (span %.2f, %d of %d samples side), with a memset on its own stream %.2f us "
              "(span %.2f, %d of %d)",
            o.id.c_str(), h.latencyMicros, h.deviceSpanMicros, h.sideWorkSamples, h.samples, o.latencyMicros,
            o.deviceSpanMicros, o.sideWorkSamples, o.samples);
        QVERIFY2(h.sideWorkSamples <= h.samples / 10, h.id.c_str());
        QVERIFY2(o.sideWorkSamples > o.samples / 2, o.id.c_str());
        QVERIFY2(o.latencyMicros > h.latencyMicros, o.id.c_str());
    }
}

void TestGpuEvaluator::priorityStreamUnderTheLeadInPays_data()
{
    QTest::addColumn<bool>("spans");
    QTest::newRow("CUPTI spans") << true;
    QTest::newRow("host clock only") << false; // KSEARCH_CUPTI_SPANS=0, or a candidate that turned CUPTI off
}

// The whole call on a stream of the candidate's at the device's highest priority, waiting for
// nothing: it starts while the lead-in's memsets still run, ahead of their remaining blocks, and
// the given stream's events hold nothing. The spans see it; without them the host clock must,
// although the lead-in it stretches is left out of the host view: only up to the calibrated
// lead-in and its margin (a first version of session 37 left out the whole stretched lead-in,
// and such a call read as the empty given stream's events, a few microseconds). Overlapped with
// the flush, the work stretches the lead-in by less than it takes alone, so by the host clock it
// may read below the honest call: not below half of it.
void TestGpuEvaluator::priorityStreamUnderTheLeadInPays()
{
    QFETCH(bool, spans);
    const QByteArray before = qgetenv("KSEARCH_CUPTI_SPANS");
    if (!spans)
        qputenv("KSEARCH_CUPTI_SPANS", "0"); // runners inherit it; restored below
    auto ev = scaleEvaluator("8 * n");
    const Evaluation honest = ev->evaluate(candidate("honest", honestBody()));
    const Evaluation ahead = ev->evaluate(candidate("priority-stream", std::string(kKernel) + R"(
extern "C" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {
    static cudaStream_t own;
    if (!own) {
        int least = 0, greatest = 0;
        cudaDeviceGetStreamPriorityRange(&least, &greatest);
        cudaStreamCreateWithPriority(&own, cudaStreamNonBlocking, greatest);
    }
    scale_kernel<<<528, 256, 0, own>>>(a->x, a->alpha, a->y, a->n);
    return (int)cudaGetLastError();
})"));
    if (!spans) {
        if (before.isNull())
            qunsetenv("KSEARCH_CUPTI_SPANS");
        else
            qputenv("KSEARCH_CUPTI_SPANS", before);
    }
    QVERIFY2(honest.status == Verdict::Passed, honest.log.c_str());
    QVERIFY2(ahead.status == Verdict::Passed, ahead.log.c_str());
    if (spans && honest.workloads.front().deviceSpanMicros == 0)
        QSKIP("no CUPTI spans (KSEARCH_CUPTI_SPANS=0 or a build without CUPTI)");
    qInfo("J honest %.2f, on a priority stream of its own %.2f", honest.score, ahead.score);
    for (std::size_t i = 0; i < ahead.workloads.size(); ++i) {
        const auto& h = honest.workloads[i];
        const auto& o = ahead.workloads[i];
        qInfo("%s: honest %.2f us, on a priority stream %.2f us (span %.2f; %d of %d samples raised)", o.id.c_str(),
            h.latencyMicros, o.latencyMicros, o.deviceSpanMicros, o.sideWorkSamples, o.samples);
        QVERIFY2(o.sideWorkSamples > o.samples / 2, o.id.c_str());
        // With spans, as sideStreamDoesNotPay.
        QVERIFY2(o.latencyMicros > (spans ? 0.98 : 0.5) * h.latencyMicros, o.id.c_str());
    }
}

void TestGpuEvaluator::launchBoundCallsScoreThemselves_data()
{
    QTest::addColumn<int>("busyThreads");
    QTest::newRow("quiet host") << 0;
    // What a search runs beside a timing loop: compiles, the next candidate's runner starting.
    QTest::newRow("half the host's cores busy")
        << static_cast<int>(std::max(1u, std::thread::hardware_concurrency() / 2));
}

// The MoE baseline's small calls launch four to seven kernels each, so the host's launch work sits
// near the lead-in that hides it. Evaluated three times against itself, every J stays near 100:
// in session 35 a per-sample host-clock rule charged some evaluations up to 3x their device time
// (J 131 for a byte-identical file).
void TestGpuEvaluator::launchBoundCallsScoreThemselves()
{
    QFETCH(int, busyThreads);
    auto loaded =
        loadTask((test::tasksDir() / "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048").string());
    QVERIFY(loaded.task);
    const fs::path baseline = *loaded.task->files.baselineCu;
    EvaluatorSettings s;
    s.backend = Backend::Cuda;
    s.workDir = m_root / ("moe-self-" + std::to_string(busyThreads));
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.3;
    s.workloadIds = {"a3055adc", "bc92338f", "04727f6c", "c6a323a3"}; // 1, 14, 55 and 80 tokens
    Evaluator ev(std::move(*loaded.task), s);
    std::atomic<bool> stop {false};
    std::vector<std::thread> busy;
    for (int t = 0; t < busyThreads; ++t)
        busy.emplace_back([&stop] {
            volatile unsigned long x = 0;
            while (!stop.load(std::memory_order_relaxed))
                x = x + 1;
        });
    std::vector<Evaluation> runs;
    for (int i = 0; i < 3; ++i)
        runs.push_back(ev.evaluate(baseline));
    stop = true;
    for (auto& t : busy)
        t.join();
    for (const Evaluation& e : runs) {
        QVERIFY2(e.status == Verdict::Passed, e.log.c_str());
        qInfo("J %.1f", e.score);
        for (const auto& w : e.workloads)
            qInfo("  %s: %.2f us against the baseline's %.2f (span %.2f; %d of %d samples side)", w.id.c_str(),
                w.latencyMicros, w.baselineLatencyMicros, w.deviceSpanMicros, w.sideWorkSamples, w.samples);
    }
    for (const Evaluation& e : runs) {
        QVERIFY2(e.score > 95 && e.score < 105, std::to_string(e.score).c_str());
        for (const auto& w : e.workloads)
            QVERIFY2(w.latencyMicros > 0.9 * w.baselineLatencyMicros && w.latencyMicros < 1.1 * w.baselineLatencyMicros,
                w.id.c_str());
    }
}

void TestGpuEvaluator::persistingL2DoesNotHelp()
{
    // The n-4m row's x (16 MiB) is the set a window must keep from one call to the next call on it.
    constexpr long long kSetBytes = 4194304LL * 4;
    const test::PersistingWindow window = test::persistingWindowPerSet(kSetBytes, EvaluatorSettings {}.timingSets);
    if (!window.skip.isEmpty())
        QSKIP(qPrintable(window.skip));
    auto ev = scaleEvaluator("8 * n");
    // The control makes the same runtime calls with normal hits: setting the limit inside the call
    // costs host time of its own (28 us a call in bench/persisting_l2_probe.py on an H100, and
    // its spread made the host-clock latencies of the two differ by 20 % on the n-64m row in
    // session 39), so the device spans, which that cost does not touch, are compared.
    const auto marking = [&](const char* name, const char* hitProp) {
        return ev->evaluate(candidate(name,
            std::string(kKernel) + "\nstatic const size_t kWindow = " + std::to_string(window.bytes) + ";\n" + R"(
extern "C" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) {
    int maxPersist = 0;
    cudaDeviceGetAttribute(&maxPersist, cudaDevAttrMaxPersistingL2CacheSize, 0);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, maxPersist);
    cudaStreamAttrValue w{};
    w.accessPolicyWindow.base_ptr = (void*)a->x;
    w.accessPolicyWindow.num_bytes = (size_t)a->n * 4 < kWindow ? (size_t)a->n * 4 : kWindow;
    w.accessPolicyWindow.hitRatio = 1.0f;
    w.accessPolicyWindow.hitProp = )"
                + hitProp + R"(;
    w.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &w);
    scale_kernel<<<528, 256, 0, stream>>>(a->x, a->alpha, a->y, a->n);
    return (int)cudaGetLastError();
})"));
    };
    const Evaluation normal = marking("normal", "cudaAccessPropertyNormal");
    const Evaluation sticky = marking("persisting", "cudaAccessPropertyPersisting");
    QCOMPARE(normal.status, Verdict::Passed);
    QCOMPARE(sticky.status, Verdict::Passed);
    bool judged = false;
    for (std::size_t i = 0; i < sticky.workloads.size(); ++i) {
        const WorkloadEvaluation& n = normal.workloads[i];
        const WorkloadEvaluation& p = sticky.workloads[i];
        qInfo("%s: normal window %.2f us (device %.2f), persisting window %.2f us (device %.2f)", p.id.c_str(),
            n.latencyMicros, n.deviceSpanMicros, p.latencyMicros, p.deviceSpanMicros);
        // The n-64m row's window holds a sixteenth of its x: kept, it would save under 5 %.
        if (p.id != "n-4m")
            continue;
        if (n.deviceSpanMicros == 0 || p.deviceSpanMicros == 0)
            QSKIP("no CUPTI spans (KSEARCH_CUPTI_SPANS=0 or a build without CUPTI): the host clock carries the "
                  "limit calls' own spread");
        QVERIFY(p.deviceSpanMicros > 0.85 * n.deviceSpanMicros);
        judged = true;
    }
    QVERIFY2(judged, "no n-4m row: nothing was compared");
}

void TestGpuEvaluator::fasterThanTheFloorIsRejected()
{
    // A cost model claiming 1000x the bytes really moved makes an honest kernel "impossibly fast".
    auto ev = scaleEvaluator("8000 * n");
    const Evaluation e = ev->evaluate(candidate("honest", honestBody()));
    QCOMPARE(e.status, Verdict::Rejected);
    QVERIFY2(e.log.find("below the physical floor") != std::string::npos, e.log.c_str());
    QCOMPARE(e.score, 0.0);
}

void TestGpuEvaluator::taskCheatsAreCaught_data()
{
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("workload"); // one small workload keeps the row short
    QTest::addColumn<QString>("cheat"); // statements after the honest call; `a` is the KsArgs
    QTest::addColumn<QString>("body"); // when set: replaces the honest call and the cheat
    QTest::addColumn<QString>("verdict");
    QTest::addColumn<QString>("logFragment");
    struct Task {
        const char* name;
        const char* workload;
        const char* outputBytes;
        const char* input;
    };
    const Task tasks[] = {
        {"gqa_paged_decode_h32_kv4_d128_ps1", "e5d9cdd9", "a->batch_size * 32 * 128 * 2", "a->q"},
        {"mla_paged_decode_h16_ckv512_kpe64_ps1", "e640aef1", "a->batch_size * 16 * 512 * 2", "a->q_nope"},
        {"mla_paged_prefill_causal_h16_ckv512_kpe64_ps1", "97971716", "a->total_q * 16 * 512 * 2", "a->q_nope"},
        {"trimul", "5316cb5e", "a->batch_size * a->seq_len * a->seq_len * a->dim * 4", "a->input"},
        // 80 tokens: four of them are 5 % of the output
        {"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048", "c6a323a3", "a->seq_len * 7168 * 2",
            "a->hidden_states"},
    };
    for (const Task& t : tasks) {
        const std::string bytes = t.outputBytes;
        // The second half of the output overwritten with zeros: as if only half had been computed.
        QTest::addRow("%s: half the output", t.name)
            << t.name << t.workload
            << QString::fromStdString("cudaMemsetAsync((char*)a->output + " + bytes + " / 2, 0, " + bytes + " / 2, s);")
            << QString() << "INCORRECT_NUMERICAL"
            << "elements outside tolerance";
        QTest::addRow("%s: modifies an input", t.name)
            << t.name << t.workload
            << QString::fromStdString(std::string("cudaMemsetAsync((void*)") + t.input + ", 0, 64, s);") << QString()
            << "REJECTED"
            << "modified its inputs";
        QTest::addRow("%s: NaN output", t.name)
            << t.name << t.workload << "cudaMemsetAsync(a->output, 0xff, 64, s);" << QString() << "INCORRECT_NUMERICAL"
            << "NaN";
    }
    // The MoE's tolerance lets 5 % of the elements miss; a kernel that skips the last 5 % of the
    // tokens (their rows keep the runner's noise) must still fail, on the bound on the misses.
    const Task& moe = tasks[std::size(tasks) - 1];
    QTest::addRow("%s: last 5%% of the output unwritten", moe.name)
        << moe.name << moe.workload << QString()
        << "KsArgs b = *a;\n"
           "    void* full = nullptr;\n"
           "    cudaMallocAsync(&full, a->seq_len * 7168 * 2, s);\n"
           "    b.output = static_cast<ks_bf16_t*>(full);\n"
           "    const int rc = ks_run_honest(&b, w, wb, s);\n"
           "    cudaMemcpyAsync(a->output, full, (a->seq_len - a->seq_len / 20) * 7168 * 2, cudaMemcpyDeviceToDevice, "
           "s);\n"
           "    cudaFreeAsync(full, s);\n"
           "    return rc;"
        << "INCORRECT_NUMERICAL"
        << "matched ratio";
}

// The shipped baseline wrapped by a candidate that calls it and then cheats: the verdicts of the
// scale task's cheats hold on the attention tasks' shapes, index tensors and 1 GB pools, and on
// TriMul's fp32 tensors with a mask and Cauchy inputs, too.
void TestGpuEvaluator::taskCheatsAreCaught()
{
    QFETCH(QString, task);
    QFETCH(QString, workload);
    QFETCH(QString, cheat);
    QFETCH(QString, body);
    const std::string call = body.isEmpty()
        ? "const int rc = ks_run_honest(a, w, wb, s);\n    " + cheat.toStdString() + "\n    return rc;"
        : body.toStdString();
    QFETCH(QString, verdict);
    QFETCH(QString, logFragment);
    static std::map<QString, std::unique_ptr<Evaluator>> evaluators; // one per task: inputs made once
    auto& ev = evaluators[task];
    const fs::path folder = test::tasksDir() / task.toStdString();
    if (!ev) {
        auto loaded = loadTask(folder);
        QVERIFY2(loaded.task, loaded.diagnostics.formatAll().c_str());
        EvaluatorSettings s;
        s.backend = Backend::Cuda;
        s.workDir = m_root / ("cheats-" + task.toStdString());
        s.cacheDir = m_root / "cache";
        s.workloadIds = {workload.toStdString()};
        s.bench.maxSeconds = 0.1;
        ev = std::make_unique<Evaluator>(std::move(*loaded.task), s);
    }
    const std::string source = "#define ks_run ks_run_honest\n" + test::readText(folder / "baseline.cu")
        + "\n#undef ks_run\n"
          "extern \"C\" int ks_run(const KsArgs* a, void* w, size_t wb, ks_stream_t s) {\n    "
        + call + "\n}\n";
    static int row = 0;
    const Evaluation e = ev->evaluate(candidate("cheat-" + std::to_string(++row), source));
    QCOMPARE(QString::fromLatin1(verdictName(e.status).data()), verdict);
    QVERIFY2(QString::fromStdString(e.log).contains(logFragment), e.log.c_str());
}

// A workload whose buffers cannot fit in GPU memory (here a 1.7 TB workspace) is refused before
// anything is allocated, with its id, what it needs and what is free, not a crash or a bare
// cudaMalloc failure. The reference runs on the GPU (host_check never holds), so no host job tries to
// allocate it either.
void TestGpuEvaluator::oversizedWorkloadIsNamed()
{
    const fs::path root = m_root / "oversized";
    std::string def = test::scaleDefinition();
    def.replace(def.find("\"op_type\""), 0, "\"workspace_bytes\": \"n * 400000\", \"host_check\": \"n < 0\", ");
    test::writeText(root / "definition.json", def);
    test::writeText(root / "workloads.jsonl", kWorkloads);
    test::writeText(root / "reference.cpp", "// never run: host_check is false\n");
    test::writeText(root / "reference.cu", "#include \"ks_task.h\"\n" + honestBody() + "\n");
    auto loaded = loadTask(root);
    QVERIFY2(loaded.task, loaded.diagnostics.formatAll().c_str());
    EvaluatorSettings s;
    s.backend = Backend::Cuda;
    s.workDir = root / "work";
    s.cacheDir = m_root / "cache";
    s.bench.maxSeconds = 0.05;
    Evaluator ev(std::move(*loaded.task), s);
    const Evaluation e = ev.evaluate(candidate("honest-oversized", honestBody()));
    QVERIFY(e.status != Verdict::Passed);
    QVERIFY2(e.log.find("n-4m") != std::string::npos, e.log.c_str());
    QVERIFY2(e.log.find("does not fit in GPU memory") != std::string::npos, e.log.c_str());
    QVERIFY2(e.log.find("GiB is free") != std::string::npos, e.log.c_str());
}

// Issue #15 point 1 on the CUDA runner: the namespaces and limits of the host runner, and a
// budget for the device memory a candidate allocates itself. Each candidate is the honest kernel
// after an escape that returns its own code when it works; confined it must not work (or, for the
// allocations, work only within the budget). The same candidates with confinement turned off show
// that each escape is real, so the confined run's verdict is the confinement's doing.
void TestGpuEvaluator::cudaCandidatesAreConfined_data()
{
    QTest::addColumn<QString>("before"); // runs before the kernel's launch in ks_run
    QTest::addColumn<QString>("confinedLog"); // empty: PASSED
    QTest::addColumn<QString>("unconfinedLog"); // empty: PASSED
    const std::string escape = (test::tasksDir() / ("escape-" + std::to_string(::getpid()) + ".txt")).string();
    QTest::newRow("writes outside its folder") << QString::fromStdString(
        "const int fd = open(\"" + escape + "\", O_WRONLY | O_CREAT, 0644); if (fd >= 0) { close(fd); return 91; }")
                                               << ""
                                               << "ks_run returned 91";
    // The CUDA driver's threads exist before the runner narrows the filesystem: one left in another
    // mount namespace would lead there through its root (tst_pythonconfinement shows the mechanism).
    QTest::newRow("writes through a driver thread's root") << QString::fromStdString(
        "int wrote = 0; if (DIR* d = opendir(\"/proc/self/task\")) { while (dirent* e = readdir(d)) { if (e->d_name[0] "
        "< '1' || e->d_name[0] > '9') continue; char path[1024]; std::snprintf(path, sizeof path, "
        "\"/proc/self/task/%s/root"
        + escape
        + ".thread\", e->d_name); const int fd = open(path, O_WRONLY | O_CREAT, "
          "0644); if (fd >= 0) { close(fd); ++wrote; } } closedir(d); } if (wrote) return 93;")
                                                           << ""
                                                           << "ks_run returned 93";
    QTest::newRow("sees the machine's processes")
        << u"int pids = 0; if (DIR* d = opendir(\"/proc\")) { while (dirent* e = readdir(d)) pids += e->d_name[0] >= "
           u"'1' "
           "&& e->d_name[0] <= '9'; closedir(d); } if (pids > 2) return 92;"_qs
        << ""
        << "ks_run returned 92";
    QTest::newRow("allocates past its GPU memory budget")
        << u"void* p = nullptr; const cudaError_t err = cudaMalloc(&p, 3ull << 30); if (err != cudaSuccess) return "
           "(int)err; cudaFree(p);"_qs
        << "ks_run returned 2"
        << ""; // cudaErrorMemoryAllocation
    QTest::newRow("allocates within its GPU memory budget")
        << u"void* p = nullptr; const cudaError_t err = cudaMalloc(&p, 512ull << 20); if (err != cudaSuccess) return "
           "(int)err; cudaMemsetAsync(p, 1, 512ull << 20, stream); cudaStreamSynchronize(stream); cudaFree(p);"_qs
        << ""
        << "";
}

void TestGpuEvaluator::cudaCandidatesAreConfined()
{
    QFETCH(QString, before);
    QFETCH(QString, confinedLog);
    QFETCH(QString, unconfinedLog);
    // An ordinary user's runner makes them in a user namespace where the device works in one.
    if (const CudaUserNamespace& userNamespace = cudaUserNamespace(); ::geteuid() != 0 && !userNamespace.use)
        QSKIP(("no namespaces for an ordinary user's CUDA runner here: " + userNamespace.why).c_str());
    static std::unique_ptr<Evaluator> confined, unconfined;
    if (!confined) {
        confined = scaleEvaluator("8 * n", 30s);
        unconfined = scaleEvaluator("8 * n", 30s, false);
    }
    const std::string body = std::string(kKernel)
        + "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, "
          "ks_stream_t stream) { "
        + before.toStdString()
        + " scale_kernel<<<528, 256, 0, stream>>>(a->x, a->alpha, a->y, a->n); return (int)cudaGetLastError(); }";
    const fs::path source = candidate(std::string("confined-") + QTest::currentDataTag(), body);
    const auto expect = [](const Evaluation& e, const QString& log) {
        QVERIFY2(
            QString::fromLatin1(verdictName(e.status).data()) == (log.isEmpty() ? u"PASSED"_qs : u"RUNTIME_ERROR"_qs),
            e.log.c_str());
        QVERIFY2(QString::fromStdString(e.log).contains(log), e.log.c_str());
    };
    const Evaluation inside = confined->evaluate(source);
    QVERIFY2(inside.confinement, inside.log.c_str());
    const Confinement& c = *inside.confinement;
    QVERIFY2(confinementGaps(c).empty() || (confinementGaps(c) == std::vector<std::string> {"no process limit"}),
        toJson(c).dump().c_str()); // the process limit needs Linux 6.14
    QCOMPARE(c.gpuMemoryBudgetBytes, std::optional<std::uint64_t>(std::uint64_t {1} << 30));
    expect(inside, confinedLog);
    const Evaluation outside = unconfined->evaluate(source);
    QVERIFY(outside.confinement && outside.confinement->off);
    expect(outside, unconfinedLog);
    std::error_code ec;
    for (const char* made : {".txt", ".txt.thread"}) // by the unconfined runs
        fs::remove(test::tasksDir() / ("escape-" + std::to_string(::getpid()) + made), ec);
}

void TestGpuEvaluator::sanitizerReports_data()
{
    QTest::addColumn<QString>("tool");
    QTest::addColumn<QString>("body");
    QTest::addColumn<bool>("errors");
    QTest::addColumn<QString>("finding");
    const std::string k = kKernel;
    QTest::newRow("memcheck, honest") << "memcheck" << QString::fromStdString(honestBody()) << false << "";
    QTest::newRow("memcheck, a write past the output")
        << "memcheck"
        << QString::fromStdString(k
               + "__global__ void past(float* y, int64_t n) { y[n + 1024 * 1024 + threadIdx.x] = 1.0f; }\n"
                 "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { scale_kernel<<<528, "
                 "256, 0,"
                 " stream>>>(a->x, a->alpha, a->y, a->n); past<<<1, 32, 0, stream>>>(a->y, a->n); return 0; }")
        << true << "Invalid __global__ write";
    // Small allocations are carved one after another out of one larger block: 512 bytes past a
    // 256-byte one is where the next may begin, which only memcheck's padding keeps unallocated.
    QTest::newRow("memcheck, a write past a small buffer")
        << "memcheck"
        << QString::fromStdString(k
               + "__global__ void past(float* p) { p[128 + threadIdx.x] = 1.0f; }\n"
                 "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { static float *s, *t;"
                 " if (!s) { cudaMalloc(&s, 256); cudaMalloc(&t, 256); } scale_kernel<<<528, 256, 0, stream>>>(a->x, "
                 "a->alpha, a->y, a->n); past<<<1, 32, 0, stream>>>(s); return 0; }")
        << true << "Invalid __global__ write";
    QTest::newRow("memcheck, a write just past the output")
        << "memcheck"
        << QString::fromStdString(k
               + "__global__ void past(float* y, int64_t n) { y[n + threadIdx.x] = 1.0f; }\n"
                 "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { scale_kernel<<<528, "
                 "256, 0,"
                 " stream>>>(a->x, a->alpha, a->y, a->n); past<<<1, 32, 0, stream>>>(a->y, a->n); return 0; }")
        << true << "Invalid __global__ write";
    QTest::newRow("racecheck, a shared-memory race")
        << "racecheck"
        << QString::fromStdString(k
               + "__global__ void racy(float* y) { __shared__ float s[32]; s[threadIdx.x % 32] = threadIdx.x;"
                 " y[0] = s[(threadIdx.x + 1) % 32] * 0.0f + y[0]; }\n"
                 "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { scale_kernel<<<528, "
                 "256, 0,"
                 " stream>>>(a->x, a->alpha, a->y, a->n); racy<<<1, 64, 0, stream>>>(a->y); return 0; }")
        << true << "hazard";
    QTest::newRow("initcheck, a read of memory nobody wrote")
        << "initcheck"
        << QString::fromStdString(k
               + "__global__ void add(const float* junk, float* y) { y[threadIdx.x] += 0.0f * junk[threadIdx.x]; }\n"
                 "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { static float* junk;"
                 " if (!junk) cudaMalloc(&junk, 4096); scale_kernel<<<528, 256, 0, stream>>>(a->x, a->alpha, a->y, "
                 "a->n);"
                 " add<<<1, 32, 0, stream>>>(junk, a->y); return 0; }")
        << true << "Uninitialized";
}

// One call under each compute-sanitizer tool: the honest kernel is clean, each planted bug is
// found and named (issue #15 point 7).
void TestGpuEvaluator::sanitizerReports()
{
    QFETCH(QString, tool);
    QFETCH(QString, body);
    QFETCH(bool, errors);
    QFETCH(QString, finding);
    if (computeSanitizerPath().empty())
        QSKIP("compute-sanitizer is not installed");
    static std::unique_ptr<Evaluator> ev;
    static int row = 0;
    if (!ev)
        ev = scaleEvaluator("8 * n", 300s);
    const SanitizerReport r = ev->sanitize(
        candidate("sanitize-" + std::to_string(++row), body.toStdString()), *parseSanitizerTool(tool.toStdString()));
    const std::string text = formatSanitizerReport(r);
    qInfo("%s", text.c_str());
    QVERIFY2(r.complete, r.problem.c_str());
    QCOMPARE(r.errors > 0, errors);
    QCOMPARE(r.workload, std::string("n-4m"));
    if (!finding.isEmpty())
        QVERIFY2(QString::fromStdString(text).contains(finding), text.c_str());
}

// With sanitizeFailures, a candidate that crashes is run again under memcheck and the report,
// naming the invalid write, is kept with its evaluation (the code policy's debug prompt shows it:
// tst_prompts::debugShowsTheSanitizersFindings); one that passes is not run again.
void TestGpuEvaluator::failuresAreSanitized()
{
    if (computeSanitizerPath().empty())
        QSKIP("compute-sanitizer is not installed with this CUDA toolkit");
    auto ev = scaleEvaluator("8 * n", 120s, true, SanitizerTool::Memcheck);
    const std::string k = kKernel;
    const Evaluation crashed = ev->evaluate(candidate("crashes",
        k
            + "__global__ void far(float* y, int64_t n) { y[n + (1ll << 36) + threadIdx.x] = 1.0f; }\n"
              "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) { far<<<1, 32, 0, "
              "stream>>>(a->y, "
              "a->n); return (int)cudaGetLastError(); }"));
    QVERIFY2(crashed.status == Verdict::RuntimeError, crashed.log.c_str());
    QVERIFY2(crashed.sanitizer.has_value(), crashed.log.c_str());
    QVERIFY2(crashed.sanitizer->errors > 0, formatSanitizerReport(*crashed.sanitizer).c_str());
    const std::string report = formatSanitizerReport(*crashed.sanitizer);
    QVERIFY2(report.find("Invalid __global__ write") != std::string::npos, report.c_str());
    QCOMPARE(evaluationFromJson(toJson(crashed)).sanitizer->findings, crashed.sanitizer->findings);
    const Evaluation passed = ev->evaluate(candidate("honest-sanitized", honestBody()));
    QVERIFY2(passed.status == Verdict::Passed, passed.log.c_str());
    QVERIFY(!passed.sanitizer.has_value());
}

// A CUDA candidate that loads cuBLAS and lets it compute the right outputs (a copy and a scal on
// the given stream) is REJECTED: its runner reports the library, and ksearch judges it
// (core/task/kernellibraries.h; docs/security.md, pattern 15). Found where this process finds it.
void TestGpuEvaluator::cublasDoesNotDoTheWork()
{
    void* here = ::dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    Dl_info info {};
    if (!here || !::dladdr(::dlsym(here, "cublasCreate_v2"), &info) || !info.dli_fname)
        QSKIP("no libcublas.so.13 to load here");
    const std::string path = info.dli_fname;
    auto ev = scaleEvaluator("8 * n");
    const Evaluation e = ev->evaluate(candidate("cublas",
        "#include <dlfcn.h>\n"
        "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t stream) {\n"
        "    static void* lib = dlopen(\""
            + path
            + "\", RTLD_NOW);\n"
              "    static void* handle = nullptr;\n"
              "    if (!lib) return 90;\n"
              "    using Create = int (*)(void**);\n"
              "    using SetStream = int (*)(void*, cudaStream_t);\n"
              "    using Copy = int (*)(void*, int, const float*, int, float*, int);\n"
              "    using Scal = int (*)(void*, int, const float*, float*, int);\n"
              "    if (!handle && reinterpret_cast<Create>(dlsym(lib, \"cublasCreate_v2\"))(&handle) != 0) return 91;\n"
              "    reinterpret_cast<SetStream>(dlsym(lib, \"cublasSetStream_v2\"))(handle, stream);\n"
              "    const int n = (int)a->n;\n"
              "    if (reinterpret_cast<Copy>(dlsym(lib, \"cublasScopy_v2\"))(handle, n, a->x, 1, a->y, 1) != 0) "
              "return 92;\n"
              "    return reinterpret_cast<Scal>(dlsym(lib, \"cublasSscal_v2\"))(handle, n, &a->alpha, a->y, 1) != 0 ? "
              "93 : 0;\n"
              "}"));
    QVERIFY2(e.status == Verdict::Rejected, e.log.c_str());
    QVERIFY2(e.log.find("loaded libcublas") != std::string::npos, e.log.c_str());
}

KS_TEST_MAIN_CORE(TestGpuEvaluator)
#include "tst_gpuevaluator.moc"
