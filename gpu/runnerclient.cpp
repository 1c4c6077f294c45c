#include "runnerclient.h"

#include <task/strictjson.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

namespace ks {

namespace fs = std::filesystem;

std::string runnerStatusName(RunnerCallOutcome::Status s)
{
    switch (s) {
    case RunnerCallOutcome::Status::Ok:
        return "ok";
    case RunnerCallOutcome::Status::KernelError:
        return "kernel error";
    case RunnerCallOutcome::Status::DeviceError:
        return "device error";
    case RunnerCallOutcome::Status::HarnessError:
        return "harness error";
    case RunnerCallOutcome::Status::Crashed:
        return "crashed";
    case RunnerCallOutcome::Status::TimedOut:
        return "timed out";
    case RunnerCallOutcome::Status::NotRun:
        return "not run";
    }
    return "?";
}

fs::path runnerPath()
{
    if (const char* env = std::getenv("KSEARCH_RUNNER"); env && *env)
        return env;
    std::error_code ec;
    const auto exe = fs::read_symlink("/proc/self/exe", ec);
    return exe.parent_path() / "ksearch-runner";
}

fs::path runnerLibraryPath(const char* variable, const char* file)
{
    if (const char* env = std::getenv(variable); env && *env)
        return env;
    const fs::path dir = runnerPath().parent_path();
    std::error_code ec;
    for (const fs::path& p : {dir / file, dir / ".." / "lib" / "ksearch" / file})
        if (fs::exists(p, ec))
            return fs::weakly_canonical(p, ec);
    return {};
}

namespace {

ksr::Field::Role protocolRole(AbiField::Role r)
{
    switch (r) {
    case AbiField::Role::Input:
        return ksr::Field::Role::Input;
    case AbiField::Role::Scalar:
        return ksr::Field::Role::Scalar;
    case AbiField::Role::Output:
        return ksr::Field::Role::Output;
    case AbiField::Role::Axis:
        return ksr::Field::Role::Axis;
    }
    return ksr::Field::Role::Input;
}

// A buffer as job.json names it: a descriptor the runner inherits, and its size.
ksr::Buffer bufferEntry(const SharedMemory& m, const std::vector<std::int64_t>& shape, std::vector<int>& fds)
{
    fds.push_back(m.fd());
    return {m.fd(), m.size(), {}, shape};
}

std::size_t outputBytes(const HostTensor& t)
{
    return t.elements() * dtypeSize(t.dtype);
}

std::string outputKey(const RunnerCall& call, std::size_t set, const std::string& name)
{
    return call.id + "/" + std::to_string(set) + "/" + name;
}

// The output set of the second correctness call: after the first call's (0), each timing set's
// (1 to n) and their swapped passes (n + 1 to 2n).
std::size_t repeatSet(const RunnerCall& call)
{
    return 2 * call.timingInputs.size() + 1;
}

BenchMeasurement measurementOf(const ksr::BenchReport& b)
{
    BenchMeasurement m;
    static_cast<ksr::BenchReport&>(m) = b;
    m.present = true;
    return m;
}

// job.json: the library, the argument layout, and per call the shared buffers by descriptor
// (collected in fds for the runner to inherit). Throws when shared memory cannot be had.
ksr::Job describeJob(const RunnerJob& job, SharedBufferPool& pool, std::vector<int>& fds)
{
    ksr::Job doc;
    doc.backend = backendName(job.backend);
    doc.library = fs::absolute(job.library).string();
    doc.argsSize = job.layout.size;
    if (job.python)
        doc.symbol = "run";
    doc.bench = {job.bench.enabled, job.bench.minSamples, job.bench.maxSamples, job.bench.maxNoise,
        job.bench.maxSeconds, job.bench.warmupSeconds};
    doc.measureDevice = job.measureDevice;
    doc.allowTf32 = job.allowTf32;
    doc.fileLimitBytes = job.fileLimitBytes;
    doc.memoryLimitBytes = job.memoryLimitBytes;
    doc.processLimit = job.processLimit;
    doc.gpuMemoryBudgetBytes = job.gpuMemoryBudgetBytes;
    doc.underSanitizer = !job.wrapper.empty(); // the only wrapper is compute-sanitizer (Evaluator::sanitize)
    for (const auto& p : job.hiddenPaths)
        doc.hiddenPaths.push_back(p.string());
    doc.confine = job.confine;
    for (const auto& f : job.layout.fields)
        doc.fields.push_back({f.name, protocolRole(f.role), f.offset, f.size, std::string(dtypeName(f.dtype))});
    // Outputs go to shared buffers marked before the job; inputs are the callers' sealed copies.
    std::uint64_t markSeed = std::random_device {}();
    auto outputEntry = [&](const RunnerCall& call, std::size_t set, const HostTensor& t) {
        auto buffer = pool.output(outputKey(call, set, t.name), outputBytes(t));
        buffer->plantMarks(markSeed++ * 0x9e3779b97f4a7c15ULL);
        return bufferEntry(*buffer, t.shape, fds);
    };
    int fileCounter = 0;
    auto inputEntries = [&](const std::vector<SharedTensor>& set) {
        ksr::BufferSet in;
        for (const auto& t : set) {
            if (!t.memory)
                throw std::invalid_argument("runner input " + t.name + " has no shared memory");
            in[t.name] = bufferEntry(*t.memory, t.shape, fds);
            if (job.writeInputFiles) {
                const std::string file = "input" + std::to_string(fileCounter++) + "_" + t.name + ".bin";
                std::ofstream out(job.jobDir / file, std::ios::binary | std::ios::trunc);
                const auto bytes = t.memory->bytes();
                out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
                if (!out)
                    throw std::runtime_error((job.jobDir / file).string() + ": cannot write");
                in[t.name].file = file;
            }
        }
        return in;
    };
    for (const auto& call : job.calls) {
        const std::size_t sets = call.timingInputs.size();
        ksr::Call c;
        c.id = call.id;
        c.inputs = inputEntries(call.inputs);
        c.axes = call.axes;
        c.workspaceBytes = static_cast<std::size_t>(call.workspaceBytes);
        c.poisonSeed = call.poisonSeed;
        for (const auto& t : call.outputs)
            c.outputs[t.name] = outputEntry(call, 0, t);
        if (call.repeat)
            for (const auto& t : call.outputs)
                c.repeatOutputs[t.name] = outputEntry(call, repeatSet(call), t);
        for (std::size_t k = 0; k < sets; ++k) {
            ksr::BufferSet out;
            ksr::BufferSet swapped;
            for (const auto& t : call.outputs) {
                out[t.name] = outputEntry(call, k + 1, t);
                swapped[t.name] = outputEntry(call, sets + k + 1, t);
            }
            c.timingInputs.push_back(inputEntries(call.timingInputs[k]));
            c.timingOutputs.push_back(std::move(out));
            c.swappedOutputs.push_back(std::move(swapped));
        }
        doc.calls.push_back(std::move(c));
    }
    return doc;
}

// Whether the runner's last result line is its "finished" line (a crash leaves none).
bool lastLineSaysFinished(const fs::path& file)
{
    std::ifstream in(file);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty())
            last = line;
    std::string err;
    const auto j = parseStrictJson(last, err);
    return j && j->is_object() && j->contains("status") && j->at("status").is_string()
        && j->at("status").get<std::string>() == ksr::status::kFinished;
}

} // namespace

RunnerKind runnerKind(const RunnerJob& job)
{
    return {.backend = job.backend,
        .cudaVisibleDevices = job.cudaVisibleDevices,
        .python = job.python,
        .wrapper = job.wrapper,
        .wrapperConfined = job.wrapperConfined,
        .confined = job.confine};
}

RunnerJobResult runRunnerJob(const RunnerJob& job, std::unique_ptr<PrestartedRunner> runner)
{
    const auto t0 = std::chrono::steady_clock::now();
    auto since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    RunnerJobResult result;
    result.calls.resize(job.calls.size());
    std::error_code ec;
    fs::create_directories(job.jobDir, ec);

    const auto pool = job.outputBuffers ? job.outputBuffers : std::make_shared<SharedBufferPool>();
    std::vector<int> fds;
    ksr::Job doc;
    try {
        doc = describeJob(job, *pool, fds);
    } catch (const std::exception& e) {
        result.harnessFailure = std::string("cannot hand the buffers to the runner: ") + e.what();
        for (auto& c : result.calls) {
            c.status = RunnerCallOutcome::Status::HarnessError;
            c.message = result.harnessFailure;
        }
        return result;
    }
    {
        std::ofstream out(job.jobDir / "job.json", std::ios::trunc);
        out << ksr::toJson(doc).dump(1);
    }
    fs::remove(job.jobDir / "result.jsonl", ec);

    result.writeSeconds = since(t0);
    std::sort(fds.begin(), fds.end());
    fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
    result.startedAhead = runner && runner->kind() == runnerKind(job) && runner->alive();
    if (!result.startedAhead)
        runner = std::make_unique<PrestartedRunner>(runnerKind(job)); // never charge a candidate for a dead one
    const auto t1 = std::chrono::steady_clock::now();
    runner->handOver(job.jobDir, fds, job.timeout);
    const bool outputClosed = runner->waitForOutput(); // false: never started, or past its limit
    if (!outputClosed)
        result.process = runner->finish(); // the group killed now
    result.processSeconds = since(t1);
    if (!outputClosed && !result.process.started) {
        result.harnessFailure = "the runner could not be started: " + result.process.error;
        for (auto& c : result.calls) {
            c.status = RunnerCallOutcome::Status::HarnessError;
            c.message = result.harnessFailure;
        }
        return result;
    }
    const auto t2 = std::chrono::steady_clock::now();
    // A runner whose last line says it finished is only exiting: its group is killed before
    // anything is read (nothing of the candidate's may touch the outputs while they are judged)
    // and reaped later, off the candidate's clock. Any other is waited for, and read once ended.
    // A wrapped runner's tool reports after the runner's end: it is always waited for.
    const bool finished = outputClosed && job.wrapper.empty() && lastLineSaysFinished(job.jobDir / "result.jsonl");
    double exitWait = 0.0;
    if (finished) {
        runner->kill();
    } else if (outputClosed) {
        const auto exitStart = std::chrono::steady_clock::now();
        result.process = runner->finish(); // it died, or closed its output early: its end tells
        exitWait = since(exitStart);
        result.processSeconds += exitWait;
    }

    // Read what the runner recorded; the last "started" without an end is the call that died.
    std::map<std::string, std::size_t> indexOf;
    for (std::size_t c = 0; c < job.calls.size(); ++c)
        indexOf[job.calls[c].id] = c;
    std::optional<std::size_t> running;
    std::ifstream lines(job.jobDir / "result.jsonl");
    std::string line;
    while (std::getline(lines, line)) {
        std::string err;
        const auto j = parseStrictJson(line, err);
        if (!j || !j->contains("status") || !(*j)["status"].is_string())
            continue;
        // The candidate shares the runner's process and can rewrite these lines: one whose fields
        // have the wrong types is skipped like one that does not parse (its call then has no end).
        ksr::CallLine end;
        ksr::EnvironmentLine env;
        try {
            end = ksr::callFromJson(*j);
            if (end.status == ksr::status::kEnvironment)
                env = ksr::environmentFromJson(*j);
        } catch (const nlohmann::json::exception&) {
            continue;
        }
        if (end.status == ksr::status::kEnvironment) {
            result.environment = {env.networkIsolated, env.device, env.l2Bytes, env.copyBandwidthGBs,
                env.processesContained, env.filesystemConfined, env.fileLimitBytes, env.memoryLimitBytes,
                env.processLimit, env.confinementOff, env.gpuMemoryBudgetBytes};
            // What the job waited for its runner: nothing when it was ready before the handoff.
            const double handedOver = std::chrono::duration<double>(runner->handedOverAt().time_since_epoch()).count();
            result.startupSeconds = env.readyMonotonicSeconds > 0
                ? std::max(0.0, env.readyMonotonicSeconds - handedOver)
                : env.startupSeconds;
            continue;
        }
        if (end.status == ksr::status::kFinished)
            continue;
        if (end.status == ksr::status::kLoadError) {
            result.loadError = end.message;
            continue;
        }
        const auto it = indexOf.find(end.id);
        if (it == indexOf.end())
            continue;
        auto& outcome = result.calls[it->second];
        if (end.status == ksr::status::kStarted) {
            running = it->second;
            continue;
        }
        running.reset();
        outcome.message = end.message;
        outcome.returnCode = end.returnCode;
        outcome.inputsUnchanged = end.inputsUnchanged;
        outcome.wallMicros = end.wallMicros;
        outcome.totalSeconds = end.totalSeconds;
        outcome.untimedSeconds = end.untimedSeconds;
        outcome.loadedLibraries = end.loadedLibraries;
        const bool ok = end.status == ksr::status::kOk;
        if (ok || end.status == ksr::status::kError) {
            outcome.status = ok ? RunnerCallOutcome::Status::Ok : RunnerCallOutcome::Status::KernelError;
            const auto& call = job.calls[it->second];
            auto readSet = [&](std::size_t set, std::vector<SharedTensor>& into) {
                for (const auto& t : call.outputs) {
                    auto buffer = pool->output(outputKey(call, set, t.name), outputBytes(t));
                    if (buffer->marksSurvive()) {
                        outcome.status = RunnerCallOutcome::Status::HarnessError;
                        outcome.message = "output " + t.name + " was not written after the call";
                        return;
                    }
                    into.push_back({t.name, t.dtype, t.shape, t.scalar, std::move(buffer)});
                }
            };
            if (ok)
                readSet(0, outcome.outputs);
            if (ok && call.repeat && !end.repeatIdentical) {
                outcome.status = RunnerCallOutcome::Status::HarnessError;
                outcome.message = "the runner did not report the second correctness call";
            }
            if (ok && call.repeat && end.repeatIdentical == false && outcome.status == RunnerCallOutcome::Status::Ok)
                readSet(repeatSet(call), outcome.repeatOutputs);
            if (end.bench && outcome.status == RunnerCallOutcome::Status::Ok) {
                outcome.bench = measurementOf(*end.bench);
                outcome.timingOutputs.resize(call.timingInputs.size());
                outcome.swappedOutputs.resize(call.timingInputs.size());
                for (std::size_t k = 0; k < call.timingInputs.size(); ++k) {
                    readSet(k + 1, outcome.timingOutputs[k]);
                    readSet(call.timingInputs.size() + k + 1, outcome.swappedOutputs[k]);
                }
            }
        } else if (end.status == ksr::status::kDeviceError) {
            outcome.status = RunnerCallOutcome::Status::DeviceError;
        } else {
            outcome.status = RunnerCallOutcome::Status::HarnessError;
        }
    }
    if (finished && !running) {
        result.process = runner->output(); // every result is in: the exit is not the candidate's time
        result.exiting = std::move(runner);
    } else if (finished) {
        result.process = runner->finish(); // a "finished" with a call still running was not the runner's
    }
    if (running) {
        auto& outcome = result.calls[*running];
        outcome.status =
            result.process.timedOut ? RunnerCallOutcome::Status::TimedOut : RunnerCallOutcome::Status::Crashed;
        outcome.message = "the runner " + result.process.describeExit() + " during this call";
        // The start says what happened (a sanitizer's or the kernel's own message), the end
        // where; the middle of a long stack trace is dropped.
        const std::string& err = result.process.err;
        const std::string excerpt =
            err.size() > 1200 ? err.substr(0, 400) + "\n[...]\n" + err.substr(err.size() - 400) : err;
        if (!excerpt.empty())
            outcome.message += "; stderr: " + excerpt;
    } else if (result.process.timedOut) {
        for (auto& c : result.calls)
            if (c.status == RunnerCallOutcome::Status::NotRun) {
                c.status = RunnerCallOutcome::Status::TimedOut;
                c.message = "the runner " + result.process.describeExit() + " before this call";
                break;
            }
    }
    // Without the marker the runner writes before it loads the library, the candidate never ran
    // (no device, no interpreter, a full disk), whatever result.jsonl says.
    if (result.process.out.find(ksr::kLoadingMarker) == std::string::npos) {
        const std::string& err = result.process.err;
        result.harnessFailure = "the runner ended (" + result.process.describeExit() + ") before loading the kernel"
            + (err.empty() ? std::string() : ": " + err.substr(err.size() > 800 ? err.size() - 800 : 0));
    }
    result.readSeconds = since(t2) - exitWait;
    return result;
}

} // namespace ks
