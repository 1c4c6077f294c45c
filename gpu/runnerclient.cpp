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

namespace {

const char* roleName(AbiField::Role r)
{
    switch (r) {
    case AbiField::Role::Input:
        return "input";
    case AbiField::Role::Scalar:
        return "scalar";
    case AbiField::Role::Output:
        return "output";
    case AbiField::Role::Axis:
        return "axis";
    }
    return "";
}

// A buffer as job.json names it: a descriptor the runner inherits, and its size.
nlohmann::json bufferEntry(const SharedMemory& m, std::vector<int>& fds)
{
    fds.push_back(m.fd());
    return {{"fd", m.fd()}, {"bytes", m.size()}};
}

std::size_t outputBytes(const HostTensor& t)
{
    return t.elements() * dtypeSize(t.dtype);
}

std::string outputKey(const RunnerCall& call, std::size_t set, const std::string& name)
{
    return call.id + "/" + std::to_string(set) + "/" + name;
}

BenchMeasurement readBench(const nlohmann::ordered_json& b)
{
    BenchMeasurement m;
    m.present = true;
    m.samplesMicros = b.value("samples_us", std::vector<double> {});
    m.medianMicros = b.value("median_us", 0.0);
    m.meanMicros = b.value("mean_us", 0.0);
    m.stdevMicros = b.value("stdev_us", 0.0);
    m.p25Micros = b.value("p25_us", 0.0);
    m.p75Micros = b.value("p75_us", 0.0);
    m.minMicros = b.value("min_us", 0.0);
    m.sideWorkSamples = b.value("side_work_samples", 0);
    m.warmupCalls = b.value("warmup_calls", 0);
    m.launchOverheadMicros = b.value("launch_overhead_us", 0.0);
    m.loopSeconds = b.value("loop_seconds", 0.0);
    m.warmupSeconds = b.value("warmup_seconds", 0.0);
    m.spanMedianMicros = b.value("span_median_us", 0.0);
    m.stop = b.value("stop", std::string());
    m.inputsUnchanged = b.value("inputs_unchanged", true);
    return m;
}

// job.json: the library, the argument layout, and per call the shared buffers by descriptor
// (collected in fds for the runner to inherit). Throws when shared memory cannot be had.
nlohmann::json describeJob(const RunnerJob& job, SharedBufferPool& pool, std::vector<int>& fds)
{
    nlohmann::json doc {{"backend", backendName(job.backend)}, {"library", fs::absolute(job.library).string()},
        {"args_size", job.layout.size}, {"fields", nlohmann::json::array()}, {"calls", nlohmann::json::array()}};
    doc["bench"] = {{"enabled", job.bench.enabled}, {"min_samples", job.bench.minSamples},
        {"max_samples", job.bench.maxSamples}, {"max_noise", job.bench.maxNoise}, {"max_seconds", job.bench.maxSeconds},
        {"warmup_seconds", job.bench.warmupSeconds}};
    doc["measure_device"] = job.measureDevice;
    for (const auto& f : job.layout.fields)
        doc["fields"].push_back({{"name", f.name}, {"role", roleName(f.role)}, {"offset", f.offset}, {"size", f.size}});
    // Outputs go to shared buffers marked before the job; inputs are the callers' sealed copies.
    std::uint64_t markSeed = std::random_device {}();
    auto outputEntry = [&](const RunnerCall& call, std::size_t set, const HostTensor& t) {
        auto buffer = pool.output(outputKey(call, set, t.name), outputBytes(t));
        buffer->plantMarks(markSeed++ * 0x9e3779b97f4a7c15ULL);
        return bufferEntry(*buffer, fds);
    };
    int fileCounter = 0;
    auto inputEntries = [&](const std::vector<SharedTensor>& set) {
        nlohmann::json in = nlohmann::json::object();
        for (const auto& t : set) {
            if (!t.memory)
                throw std::invalid_argument("runner input " + t.name + " has no shared memory");
            in[t.name] = bufferEntry(*t.memory, fds);
            if (job.writeInputFiles) {
                const std::string file = "input" + std::to_string(fileCounter++) + "_" + t.name + ".bin";
                std::ofstream out(job.jobDir / file, std::ios::binary | std::ios::trunc);
                const auto bytes = t.memory->bytes();
                out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
                if (!out)
                    throw std::runtime_error((job.jobDir / file).string() + ": cannot write");
                in[t.name]["file"] = file;
            }
        }
        return in;
    };
    for (const auto& call : job.calls) {
        const std::size_t sets = call.timingInputs.size();
        nlohmann::json j {{"id", call.id}, {"inputs", inputEntries(call.inputs)}, {"outputs", nlohmann::json::object()},
            {"axes", call.axes}, {"workspace_bytes", call.workspaceBytes}, {"poison_seed", call.poisonSeed}};
        for (const auto& t : call.outputs)
            j["outputs"][t.name] = outputEntry(call, 0, t);
        for (std::size_t k = 0; k < sets; ++k) {
            nlohmann::json out = nlohmann::json::object(), swapped = nlohmann::json::object();
            for (const auto& t : call.outputs) {
                out[t.name] = outputEntry(call, k + 1, t);
                swapped[t.name] = outputEntry(call, sets + k + 1, t);
            }
            j["timing_inputs"].push_back(inputEntries(call.timingInputs[k]));
            j["timing_outputs"].push_back(out);
            j["swapped_outputs"].push_back(swapped);
        }
        doc["calls"].push_back(j);
    }
    return doc;
}

} // namespace

RunnerJobResult runRunnerJob(const RunnerJob& job)
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
    nlohmann::json doc;
    try {
        doc = describeJob(job, *pool, fds);
    } catch (const std::exception& e) {
        for (auto& c : result.calls) {
            c.status = RunnerCallOutcome::Status::HarnessError;
            c.message = std::string("cannot hand the buffers to the runner: ") + e.what();
        }
        return result;
    }
    {
        std::ofstream out(job.jobDir / "job.json", std::ios::trunc);
        out << doc.dump(1);
    }
    fs::remove(job.jobDir / "result.jsonl", ec);

    result.writeSeconds = since(t0);
    SubprocessRequest sub;
    sub.argv = {runnerPath().string(), "--job", job.jobDir.string()};
    sub.environment = scrubbedEnvironment();
    if (!job.cudaVisibleDevices.empty())
        sub.environment["CUDA_VISIBLE_DEVICES"] = job.cudaVisibleDevices;
    sub.timeout = job.timeout;
    std::sort(fds.begin(), fds.end());
    fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
    sub.inheritedFds = fds;
    const auto t1 = std::chrono::steady_clock::now();
    result.process = runSubprocess(sub);
    result.processSeconds = since(t1);
    const auto t2 = std::chrono::steady_clock::now();

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
        if (!j || !j->contains("status"))
            continue;
        const std::string status = (*j)["status"].get<std::string>();
        const std::string id = j->value("id", std::string());
        if (status == "environment") {
            result.environment.networkIsolated = j->value("network_isolated", false);
            result.environment.device = j->value("device", std::string());
            result.environment.l2Bytes = j->value("l2_bytes", std::size_t {0});
            result.environment.copyBandwidthGBs = j->value("copy_bandwidth_gbs", 0.0);
            result.startupSeconds = j->value("startup_s", 0.0);
            continue;
        }
        if (status == "load_error") {
            result.loadError = j->value("message", std::string());
            continue;
        }
        const auto it = indexOf.find(id);
        if (it == indexOf.end())
            continue;
        auto& outcome = result.calls[it->second];
        if (status == "started") {
            running = it->second;
            continue;
        }
        running.reset();
        outcome.message = j->value("message", std::string());
        outcome.returnCode = j->value("return_code", 0);
        outcome.inputsUnchanged = j->value("inputs_unchanged", true);
        outcome.wallMicros = j->value("wall_us", 0.0);
        outcome.totalSeconds = j->value("total_s", 0.0);
        if (status == "ok" || status == "error") {
            outcome.status = status == "ok" ? RunnerCallOutcome::Status::Ok : RunnerCallOutcome::Status::KernelError;
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
            if (status == "ok")
                readSet(0, outcome.outputs);
            if (j->contains("bench") && outcome.status == RunnerCallOutcome::Status::Ok) {
                outcome.bench = readBench((*j)["bench"]);
                outcome.timingOutputs.resize(call.timingInputs.size());
                outcome.swappedOutputs.resize(call.timingInputs.size());
                for (std::size_t k = 0; k < call.timingInputs.size(); ++k) {
                    readSet(k + 1, outcome.timingOutputs[k]);
                    readSet(call.timingInputs.size() + k + 1, outcome.swappedOutputs[k]);
                }
            }
        } else if (status == "device_error") {
            outcome.status = RunnerCallOutcome::Status::DeviceError;
        } else {
            outcome.status = RunnerCallOutcome::Status::HarnessError;
        }
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
    result.readSeconds = since(t2);
    return result;
}

} // namespace ks
