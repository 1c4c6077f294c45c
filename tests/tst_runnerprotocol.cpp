#include "testmain.h"

#include <runner/protocol.h>

using namespace ksr;

// The protocol both sides speak (gpu/runner/protocol.h): a job survives the trip through
// job.json unchanged, a malformed job is refused with the field named, and result lines read
// back what was written. The real client and runner speak it in tst_runner.

namespace {

Job sampleJob()
{
    Job job;
    job.backend = "cuda";
    job.library = "/abs/candidate.so";
    job.argsSize = 40;
    job.fields = {{"x", Field::Role::Input, 0, 8, "bfloat16"}, {"alpha", Field::Role::Scalar, 8, 4, "float32"},
        {"y", Field::Role::Output, 16, 8, "bfloat16"}, {"n", Field::Role::Axis, 24, 8, "int64"}};
    job.bench = {true, 12, 500, 0.01, 0.3, 0.05};
    job.measureDevice = true;
    job.fileLimitBytes = std::uint64_t {1} << 20;
    job.memoryLimitBytes = std::uint64_t {4} << 30;
    job.processLimit = 512;
    job.gpuMemoryBudgetBytes = std::uint64_t {3} << 30;
    job.hiddenPaths = {"/srv/tasks/scale"};
    job.confine = false;
    job.underSanitizer = true;
    Call call;
    call.id = "w-1";
    call.inputs = {{"x", {17, 4096, "input0_x.bin", {16, 128}}}, {"alpha", {18, 4, {}, {}}}};
    call.outputs = {{"y", {19, 4096, {}, {16, 128}}}};
    call.timingInputs = {{{"x", {20, 4096, {}, {16, 128}}}, {"alpha", {18, 4, {}, {}}}}};
    call.timingOutputs = {{{"y", {21, 4096, {}, {16, 128}}}}};
    call.swappedOutputs = {{{"y", {22, 4096, {}, {16, 128}}}}};
    call.repeatOutputs = {{"y", {23, 4096, {}, {16, 128}}}};
    call.axes = {{"n", 1024}};
    call.workspaceBytes = 256;
    call.poisonSeed = 0x123456789abcdefULL;
    job.calls = {call};
    return job;
}

} // namespace

class TestRunnerProtocol : public QObject
{
    Q_OBJECT
private slots:
    void jobRoundTrip();
    void malformedJobsNameTheField_data();
    void malformedJobsNameTheField();
    void resultLinesRoundTrip();
    void handoffMessagesRoundTrip();
};

void TestRunnerProtocol::jobRoundTrip()
{
    const nlohmann::json written = toJson(sampleJob());
    const Job read = jobFromJson(written);
    QVERIFY2(toJson(read) == written, toJson(read).dump().c_str());
    QCOMPARE(read.calls.at(0).inputs.at("x").file, std::string("input0_x.bin"));
    QCOMPARE(read.calls.at(0).poisonSeed, 0x123456789abcdefULL);
    QCOMPARE(read.fields.at(3).role, Field::Role::Axis);
    QCOMPARE(read.fields.at(0).dtype, std::string("bfloat16")); // the Python runner's tensor views need both
    QCOMPARE(read.calls.at(0).outputs.at("y").shape, (std::vector<std::int64_t> {16, 128}));
    QCOMPARE(read.calls.at(0).repeatOutputs.at("y").fd, 23);
    QCOMPARE(read.bench.maxSamples, 500);
    QVERIFY(read.measureDevice);
    QCOMPARE(read.memoryLimitBytes, std::uint64_t {4} << 30);
    QCOMPARE(read.processLimit, std::uint64_t {512});
    QCOMPARE(read.gpuMemoryBudgetBytes, std::uint64_t {3} << 30);
    QCOMPARE(read.hiddenPaths, std::vector<std::string> {"/srv/tasks/scale"});
    QVERIFY(!read.confine);
    QVERIFY(read.underSanitizer);
    // What the runner requires and what it may default.
    for (const char* key : {"backend", "library", "args_size", "fields", "calls"})
        QVERIFY2(written.contains(key), key);
    nlohmann::json minimal = written;
    minimal.erase("bench");
    minimal.erase("symbol");
    minimal["calls"][0].erase("timing_inputs");
    minimal["calls"][0].erase("timing_outputs");
    minimal["calls"][0].erase("swapped_outputs");
    minimal["calls"][0].erase("repeat_outputs");
    minimal.erase("file_limit_bytes");
    minimal.erase("memory_limit_bytes");
    minimal.erase("process_limit");
    minimal.erase("gpu_memory_budget_bytes");
    minimal.erase("hidden_paths");
    minimal.erase("confine");
    minimal.erase("under_sanitizer");
    const Job defaults = jobFromJson(minimal);
    QVERIFY(defaults.confine); // a job that says nothing is confined
    QVERIFY(!defaults.underSanitizer); // and holds its GPU-memory budget
    QCOMPARE(defaults.processLimit, std::uint64_t {0});
    QCOMPARE(defaults.gpuMemoryBudgetBytes, std::uint64_t {0});
    QVERIFY(defaults.hiddenPaths.empty());
    QCOMPARE(defaults.fileLimitBytes, std::uint64_t {0}); // the runner's defaults
    QCOMPARE(defaults.memoryLimitBytes, std::uint64_t {0});
    QCOMPARE(defaults.symbol, std::string("ks_run"));
    QVERIFY(!defaults.bench.enabled);
    QVERIFY(defaults.calls.at(0).timingInputs.empty());
    QVERIFY(defaults.calls.at(0).repeatOutputs.empty()); // no second correctness call
}

void TestRunnerProtocol::malformedJobsNameTheField_data()
{
    QTest::addColumn<QString>("pointer"); // JSON pointer of the value to replace
    QTest::addColumn<QString>("value"); // its new JSON text; empty: remove it
    QTest::addColumn<QString>("fragment");
    QTest::newRow("hidden path not a string") << "/hidden_paths/0"
                                              << "3"
                                              << "hidden_paths: not a string";
    QTest::newRow("hidden paths not an array") << "/hidden_paths"
                                               << "\"/srv\""
                                               << "hidden_paths: not an array";
    QTest::newRow("buffer without fd") << "/calls/0/inputs/x/fd"
                                       << ""
                                       << "calls.w-1.inputs.x: needs fd and bytes";
    QTest::newRow("fd of a standard stream") << "/calls/0/outputs/y/fd"
                                             << "2"
                                             << "calls.w-1.outputs.y: fd 2 is not a shared buffer";
    QTest::newRow("unknown role") << "/fields/1/role"
                                  << "\"constant\""
                                  << "fields: unknown role 'constant'";
    QTest::newRow("field past the arguments") << "/fields/3/offset"
                                              << "36"
                                              << "fields.n: outside args_size";
    QTest::newRow("timing sets without outputs") << "/calls/0/timing_outputs"
                                                 << "[]"
                                                 << "calls.w-1: timing_inputs and timing_outputs differ in length";
    QTest::newRow("swapped outputs of another length") << "/calls/0/swapped_outputs"
                                                       << "[{}, {}]"
                                                       << "calls.w-1: swapped_outputs and timing_inputs differ";
    QTest::newRow("inputs not an object") << "/calls/0/inputs"
                                          << "[1]"
                                          << "calls.w-1.inputs: must be an object";
    QTest::newRow("missing library") << "/library"
                                     << ""
                                     << "library";
    QTest::newRow("args_size of the wrong type") << "/args_size"
                                                 << "\"forty\""
                                                 << "args_size: must be an integer";
    // Found by fuzz/fuzz_job: a float converted to a size was undefined behaviour, and an offset
    // near 2^64 wrapped the bounds check around.
    QTest::newRow("size as a huge float") << "/fields/3/size"
                                          << "8.7e54"
                                          << "fields.n.size: must be an integer in range";
    QTest::newRow("offset that wraps around") << "/fields/3/offset"
                                              << "18446744073709551615"
                                              << "fields.n: outside args_size";
    QTest::newRow("negative bytes") << "/calls/0/inputs/x/bytes"
                                    << "-8"
                                    << "calls.w-1.inputs.x.bytes: must be an integer in range";
    QTest::newRow("negative memory limit") << "/memory_limit_bytes"
                                           << "-1"
                                           << "memory_limit_bytes: must be an integer in range";
    // fuzz/regressions/job/shape-as-huge-float: a dimension converted to int64 unchecked.
    QTest::newRow("shape as a huge float") << "/calls/0/inputs/x/shape/0"
                                           << "1.6e129"
                                           << "calls.w-1.inputs.x.shape[0]: must be an integer in range";
    QTest::newRow("under_sanitizer not a boolean") << "/under_sanitizer"
                                                   << "\"yes\""
                                                   << "under_sanitizer: must be true or false";
    QTest::newRow("bench noise as a string") << "/bench/max_noise"
                                             << "\"low\""
                                             << "bench.max_noise: must be a number";
    QTest::newRow("bench enabled as a number") << "/bench/enabled"
                                               << "1"
                                               << "bench.enabled: must be true or false";
    QTest::newRow("shape not an array") << "/calls/0/outputs/y/shape"
                                        << "\"16\""
                                        << "calls.w-1.outputs.y.shape: must be an array of integers";
}

void TestRunnerProtocol::malformedJobsNameTheField()
{
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QString, fragment);
    nlohmann::json doc = toJson(sampleJob());
    const nlohmann::json::json_pointer at(pointer.toStdString());
    if (value.isEmpty())
        doc[at.parent_pointer()].erase(at.back());
    else
        doc[at] = nlohmann::json::parse(value.toStdString());
    try {
        jobFromJson(doc);
        QFAIL("accepted a malformed job");
    } catch (const std::exception& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(fragment), e.what());
    }
}

void TestRunnerProtocol::resultLinesRoundTrip()
{
    EnvironmentLine env {true, 0.21, 12345.5, "NVIDIA H200", 62914560, 4143.0, true, true, std::uint64_t {1} << 30,
        12ULL << 30, 1024, true, std::uint64_t {1} << 30};
    const EnvironmentLine envBack = environmentFromJson(toJson(env));
    QVERIFY2(toJson(envBack) == toJson(env), toJson(envBack).dump().c_str());
    QVERIFY(envBack.filesystemConfined);
    QCOMPARE(envBack.memoryLimitBytes, std::uint64_t {12} << 30);
    QCOMPARE(envBack.processLimit, std::uint64_t {1024});
    QVERIFY(envBack.confinementOff);
    QCOMPARE(envBack.gpuMemoryBudgetBytes, std::uint64_t {1} << 30);
    QVERIFY(!environmentFromJson({{"id", ""}}).confinementOff);
    QVERIFY(!environmentFromJson({{"id", ""}}).filesystemConfined); // an older runner: not confined, no limits
    QCOMPARE(environmentFromJson({{"file_limit_bytes", -1}}).fileLimitBytes, std::uint64_t {0});
    QCOMPARE(toJson(env)["status"].get<std::string>(), std::string(status::kEnvironment));

    CallLine call;
    call.id = "w-1";
    call.status = status::kOk;
    call.returnCode = 0;
    call.wallMicros = 12.5;
    call.totalSeconds = 0.4;
    call.untimedSeconds = {{"upload", 0.125}, {"download", 0.0625}};
    call.repeatIdentical = false;
    call.loadedLibraries = {"/usr/lib/x86_64-linux-gnu/libz.so.1"};
    BenchReport bench;
    bench.samplesMicros = {10.0, 11.0, 12.0};
    bench.deviceSamplesMicros = {10.0, 10.5, 12.0};
    bench.hostSamplesMicros = {10.25, 13.0, 12.5};
    bench.leadInSamplesMicros = {101.5, 99.75, 100.0};
    bench.spanSamplesMicros = {8.0, 11.0, 9.5};
    bench.medianMicros = 11.0;
    bench.sideWorkSamples = 1;
    bench.stretchedLeadIns = 2;
    bench.deviceSpans = true;
    bench.spanMedianMicros = 11.5;
    bench.spanOffsetMicros = 1.25;
    bench.stop = "noise";
    bench.inputsUnchanged = false;
    call.bench = bench;
    const nlohmann::json line = toJson(call);
    const CallLine back = callFromJson(line);
    QVERIFY2(toJson(back) == line, toJson(back).dump().c_str());
    QVERIFY(back.bench && back.bench->samplesMicros.size() == 3 && !back.bench->inputsUnchanged);
    QCOMPARE(back.bench->spanOffsetMicros, 1.25);
    QCOMPARE(back.bench->hostSamplesMicros, bench.hostSamplesMicros); // the views bench/sample_views.py reads
    QCOMPARE(back.bench->leadInSamplesMicros, bench.leadInSamplesMicros);
    QCOMPARE(back.bench->spanSamplesMicros, bench.spanSamplesMicros);
    QCOMPARE(back.bench->stretchedLeadIns, 2);
    QCOMPARE(back.repeatIdentical, std::optional<bool>(false));
    QVERIFY(!callFromJson(toJson(CallLine {})).repeatIdentical); // no second call, nothing said
    // A line the candidate rewrote: counts out of every range read as none, never converted.
    nlohmann::json forged = line;
    forged["return_code"] = 1e300;
    forged["bench"]["warmup_calls"] = -1e300;
    forged["bench"]["side_work_samples"] = 1e20;
    const CallLine read = callFromJson(forged);
    QCOMPARE(read.returnCode, 0);
    QCOMPARE(read.bench->warmupCalls, 0);
    QCOMPARE(read.bench->sideWorkSamples, 0);
    QCOMPARE(environmentFromJson({{"l2_bytes", -5}}).l2Bytes, std::size_t {0});
    QCOMPARE(environmentFromJson({{"l2_bytes", 1e40}}).l2Bytes, std::size_t {0});
    QCOMPARE(back.untimedSeconds.at("upload"), 0.125);
    QVERIFY(!line.contains("message")); // written only when there is one
    QCOMPARE(back.loadedLibraries, call.loadedLibraries);
    QVERIFY(!toJson(CallLine {}).contains("loaded_libraries"));
    QCOMPARE(startedLine("w-1")["status"].get<std::string>(), std::string(status::kStarted));
}

void TestRunnerProtocol::handoffMessagesRoundTrip()
{
    const HandoffMessage m {"/tmp/search/candidate-3", {5, 9, 11}, false};
    const HandoffMessage back = handoffFromJson(toJson(m));
    QCOMPARE(back.jobDir, m.jobDir);
    QCOMPARE(back.fds, m.fds);
    QCOMPARE(back.last, false);
    nlohmann::json noLast = toJson(m);
    noLast.erase("last");
    QVERIFY_THROWS_EXCEPTION(nlohmann::json::exception, handoffFromJson(noLast));
}

KS_TEST_MAIN_CORE(TestRunnerProtocol)
#include "tst_runnerprotocol.moc"
