#pragma once

// The protocol between ksearch (gpu/runnerclient.cpp) and ksearch-runner, in one place: job.json
// says what to run, each line of result.jsonl says what happened. Both sides write and read
// through these types and functions, so a key renamed on one side cannot silently mean nothing
// on the other. Plain C++ and nlohmann/json only: the runner builds without Qt. The schema is
// described in docs/evaluation.md ("ksearch-runner protocol").

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ksr {

// ------------------------------------------------------------------ job.json

struct Field {
    enum class Role { Input, Scalar, Output, Axis };
    std::string name;
    Role role = Role::Input;
    std::size_t offset = 0; // in the KsArgs bytes
    std::size_t size = 0;
    std::string dtype; // element type, FlashInfer-Bench's name ("bfloat16"); axes are "int64"
};

struct Buffer {
    int fd = -1; // shared memory inherited from the parent: raw little-endian bytes (inputs are sealed)
    std::size_t bytes = 0;
    std::string file; // a copy of an input's bytes next to job.json, for replay tools; the runner ignores it
    // The tensor's shape ([] for a scalar): the Python runner views the bytes as a tensor of it.
    std::vector<std::int64_t> shape;
};

using BufferSet = std::map<std::string, Buffer>; // by field name

struct Call {
    std::string id; // workload uuid
    BufferSet inputs; // the correctness set, scalars included
    BufferSet outputs;
    // Benchmark only: further input sets the timing loop rotates through (all resident, so
    // pointers differ), and where the outputs of the last timed call on each set go.
    std::vector<BufferSet> timingInputs;
    std::vector<BufferSet> timingOutputs;
    // Outputs of the final round's second pass, where set k's buffers hold the next set's inputs.
    std::vector<BufferSet> swappedOutputs;
    // Where the outputs of a second correctness call go, made on the same inputs after the outputs
    // and workspace were refilled with other noise; empty: no second call. A kernel whose results
    // depend on memory it did not write (uninitialised outputs, workspace or shared memory) gives
    // different results then: the runner writes them here only when they differ from the first
    // call's (CallLine::repeatIdentical), and the parent judges them.
    BufferSet repeatOutputs;
    std::map<std::string, std::int64_t> axes;
    std::size_t workspaceBytes = 0;
    std::uint64_t poisonSeed = 0; // outputs and workspace are filled with noise from this
};

struct BenchSettings {
    bool enabled = false;
    int minSamples = 10;
    int maxSamples = 1000;
    double maxNoise = 0.005; // stop when the relative standard error of the mean is below
    double maxSeconds = 1.0; // per call: wall time of the timed loop
    double warmupSeconds = 0.025; // at least 3 calls
};

struct Job {
    std::string dir; // where job.json and result.jsonl live; not part of job.json
    std::string backend; // "host" or "cuda"
    std::string library;
    std::string symbol = "ks_run";
    std::size_t argsSize = 0;
    std::vector<Field> fields;
    std::vector<Call> calls;
    BenchSettings bench;
    bool measureDevice = false; // measure copy bandwidth (and warm the clocks) before the calls
    bool allowTf32 = false; // the task's precision rule, for runners that can set it (Python's)
    // Limits a host runner sets on its own process before it loads the candidate; 0: the runner's
    // defaults (files of 1 GiB; data of half the machine's memory). RLIMIT_FSIZE: no file the
    // process writes may grow beyond fileLimitBytes. RLIMIT_DATA: its data mappings (heap,
    // anonymous memory; not the shared buffers) may grow by at most memoryLimitBytes.
    std::uint64_t fileLimitBytes = 0;
    std::uint64_t memoryLimitBytes = 0;
    // At most this many processes and threads at once in the job's PID namespace (its pid_max,
    // Linux 6.14 or later); 0: the runner's default of 1024. The kernel's floor is 301.
    std::uint64_t processLimit = 0;
    // A GPU runner's budget for what the candidate allocates on the device itself, beyond the
    // buffers and workspace the runner gives it: everything else is held by the runner during a
    // call, so an allocation past it fails as on a full device. 0: the runner's default of 1 GiB.
    std::uint64_t gpuMemoryBudgetBytes = 0;
    // The job runs under compute-sanitizer: no GPU-memory budget is held, because memcheck checks
    // each access against the allocations it saw, and the hold is one that spans most of the
    // device, so a stray write landing in it would go unreported.
    bool underSanitizer = false;
    // Folders hidden from the candidate as the home folders are (the task's: its workloads.jsonl
    // names the held-out shapes). Absolute paths.
    std::vector<std::string> hiddenPaths;
    // false: a person turned confinement off (to debug a candidate): no namespaces, no limits.
    // A runner started ahead of its job is told so on its command line (--unconfined) as well.
    bool confine = true;
};

inline const char* roleName(Field::Role role)
{
    switch (role) {
    case Field::Role::Input:
        return "input";
    case Field::Role::Scalar:
        return "scalar";
    case Field::Role::Output:
        return "output";
    case Field::Role::Axis:
        return "axis";
    }
    return "";
}

inline nlohmann::json toJson(const Buffer& b)
{
    nlohmann::json j {{"fd", b.fd}, {"bytes", b.bytes}, {"shape", b.shape}};
    if (!b.file.empty())
        j["file"] = b.file;
    return j;
}

inline nlohmann::json toJson(const BufferSet& set)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, b] : set)
        j[name] = toJson(b);
    return j;
}

inline nlohmann::json toJson(const Job& job)
{
    nlohmann::json doc {{"backend", job.backend}, {"library", job.library}, {"symbol", job.symbol},
        {"args_size", job.argsSize}, {"fields", nlohmann::json::array()}, {"calls", nlohmann::json::array()},
        {"measure_device", job.measureDevice}, {"allow_tf32", job.allowTf32}, {"file_limit_bytes", job.fileLimitBytes},
        {"memory_limit_bytes", job.memoryLimitBytes}, {"process_limit", job.processLimit},
        {"gpu_memory_budget_bytes", job.gpuMemoryBudgetBytes}, {"confine", job.confine}};
    if (job.underSanitizer)
        doc["under_sanitizer"] = true;
    if (!job.hiddenPaths.empty())
        doc["hidden_paths"] = job.hiddenPaths;
    doc["bench"] = {{"enabled", job.bench.enabled}, {"min_samples", job.bench.minSamples},
        {"max_samples", job.bench.maxSamples}, {"max_noise", job.bench.maxNoise}, {"max_seconds", job.bench.maxSeconds},
        {"warmup_seconds", job.bench.warmupSeconds}};
    for (const auto& f : job.fields)
        doc["fields"].push_back(
            {{"name", f.name}, {"role", roleName(f.role)}, {"offset", f.offset}, {"size", f.size}, {"dtype", f.dtype}});
    for (const auto& c : job.calls) {
        nlohmann::json j {{"id", c.id}, {"inputs", toJson(c.inputs)}, {"outputs", toJson(c.outputs)}, {"axes", c.axes},
            {"workspace_bytes", c.workspaceBytes}, {"poison_seed", c.poisonSeed}};
        if (!c.repeatOutputs.empty())
            j["repeat_outputs"] = toJson(c.repeatOutputs);
        for (const char* key : {"timing_inputs", "timing_outputs", "swapped_outputs"})
            j[key] = nlohmann::json::array();
        for (const auto& s : c.timingInputs)
            j["timing_inputs"].push_back(toJson(s));
        for (const auto& s : c.timingOutputs)
            j["timing_outputs"].push_back(toJson(s));
        for (const auto& s : c.swappedOutputs)
            j["swapped_outputs"].push_back(toJson(s));
        doc["calls"].push_back(std::move(j));
    }
    return doc;
}

namespace detail {

// An integer field, range-checked: nlohmann converts a float or an out-of-range integer to the
// C++ type without complaint (undefined behaviour for 1e54 as a size; found by fuzz/fuzz_job).
template<typename T> T integer(const nlohmann::json& v, const std::string& where)
{
    const bool fits = v.is_number_unsigned() ? std::in_range<T>(v.get<std::uint64_t>())
        : v.is_number_integer()              ? std::in_range<T>(v.get<std::int64_t>())
                                             : false;
    if (!fits)
        throw std::runtime_error(where + ": must be an integer in range, not " + v.dump());
    return v.get<T>();
}

template<typename T> T integerAt(const nlohmann::json& j, const char* key, const std::string& where)
{
    if (!j.is_object() || !j.contains(key))
        throw std::runtime_error(where + key + ": missing");
    return integer<T>(j.at(key), where + key);
}

template<typename T> T integerOr(const nlohmann::json& j, const char* key, T fallback, const std::string& where)
{
    return j.is_object() && j.contains(key) ? integer<T>(j.at(key), where + key) : fallback;
}

// Booleans and real numbers get their field named too (nlohmann's own type error names none).
inline bool booleanOr(const nlohmann::json& j, const char* key, bool fallback, const std::string& where)
{
    if (!j.is_object() || !j.contains(key))
        return fallback;
    if (!j.at(key).is_boolean())
        throw std::runtime_error(where + key + ": must be true or false, not " + j.at(key).dump());
    return j.at(key).get<bool>();
}

inline double numberOr(const nlohmann::json& j, const char* key, double fallback, const std::string& where)
{
    if (!j.is_object() || !j.contains(key))
        return fallback;
    if (!j.at(key).is_number())
        throw std::runtime_error(where + key + ": must be a number, not " + j.at(key).dump());
    return j.at(key).get<double>();
}

// A count in a result line, or `fallback` when it is missing or not an integer that fits: result
// lines come from a process the candidate shares, so what they hold must never reach an
// out-of-range conversion in ksearch (undefined behaviour), nor stop the reading of the rest.
template<typename T> T countOr(const nlohmann::json& j, const char* key, T fallback)
{
    if (!j.is_object() || !j.contains(key))
        return fallback;
    const nlohmann::json& v = j.at(key);
    if (v.is_number_unsigned())
        return std::in_range<T>(v.get<std::uint64_t>()) ? static_cast<T>(v.get<std::uint64_t>()) : fallback;
    if (v.is_number_integer())
        return std::in_range<T>(v.get<std::int64_t>()) ? static_cast<T>(v.get<std::int64_t>()) : fallback;
    return fallback;
}

// A tensor's shape: integers in range, each named when it is not one (found by fuzz/fuzz_job: a
// dimension of 1.6e129 was converted to int64 without a check).
inline std::vector<std::int64_t> readShape(const nlohmann::json& j, const std::string& where)
{
    std::vector<std::int64_t> shape;
    if (!j.contains("shape"))
        return shape;
    const nlohmann::json& s = j.at("shape");
    if (!s.is_array())
        throw std::runtime_error(where + ".shape: must be an array of integers");
    for (std::size_t i = 0; i < s.size(); ++i)
        shape.push_back(integer<std::int64_t>(s[i], where + ".shape[" + std::to_string(i) + "]"));
    return shape;
}

inline Buffer readBuffer(const nlohmann::json& j, const std::string& where)
{
    if (!j.is_object() || !j.contains("fd") || !j.contains("bytes"))
        throw std::runtime_error(where + ": needs fd and bytes");
    Buffer b {integerAt<int>(j, "fd", where + "."), integerAt<std::size_t>(j, "bytes", where + "."),
        j.value("file", std::string()), readShape(j, where)};
    if (b.fd < 3)
        throw std::runtime_error(where + ": fd " + std::to_string(b.fd) + " is not a shared buffer");
    return b;
}

inline BufferSet readSet(const nlohmann::json& j, const std::string& where)
{
    if (!j.is_object())
        throw std::runtime_error(where + ": must be an object of buffers by field name");
    BufferSet set;
    for (const auto& [name, b] : j.items()) {
        std::string field = where;
        field += '.';
        field += name;
        set[name] = readBuffer(b, field);
    }
    return set;
}

inline std::vector<BufferSet> readSets(const nlohmann::json& call, const char* key, const std::string& where)
{
    std::vector<BufferSet> sets;
    for (const auto& s : call.value(key, nlohmann::json::array()))
        sets.push_back(readSet(s, where + "." + key));
    return sets;
}

inline Field::Role parseRole(const std::string& role)
{
    for (const auto r : {Field::Role::Input, Field::Role::Scalar, Field::Role::Output, Field::Role::Axis})
        if (role == roleName(r))
            return r;
    throw std::runtime_error("fields: unknown role '" + role + "'");
}

} // namespace detail

// Throws std::runtime_error naming the field on malformed input (nlohmann's type errors included).
inline Job jobFromJson(const nlohmann::json& j)
{
    Job job;
    job.backend = j.at("backend").get<std::string>();
    job.library = j.at("library").get<std::string>();
    job.symbol = j.value("symbol", std::string("ks_run"));
    job.argsSize = detail::integerAt<std::size_t>(j, "args_size", "");
    for (const auto& f : j.at("fields")) {
        const std::string name = f.at("name").get<std::string>();
        Field field {name, detail::parseRole(f.at("role").get<std::string>()),
            detail::integerAt<std::size_t>(f, "offset", "fields." + name + "."),
            detail::integerAt<std::size_t>(f, "size", "fields." + name + "."), f.value("dtype", std::string())};
        if (field.offset > job.argsSize || field.size > job.argsSize - field.offset) // no wrap-around
            throw std::runtime_error("fields." + field.name + ": outside args_size");
        job.fields.push_back(field);
    }
    for (const auto& c : j.at("calls")) {
        Call call;
        call.id = c.at("id").get<std::string>();
        const std::string where = "calls." + call.id;
        call.inputs = detail::readSet(c.at("inputs"), where + ".inputs");
        call.outputs = detail::readSet(c.at("outputs"), where + ".outputs");
        for (const auto& [name, v] : c.at("axes").items())
            call.axes[name] = detail::integer<std::int64_t>(v, where + ".axes." + name);
        call.timingInputs = detail::readSets(c, "timing_inputs", where);
        call.timingOutputs = detail::readSets(c, "timing_outputs", where);
        call.swappedOutputs = detail::readSets(c, "swapped_outputs", where);
        if (c.contains("repeat_outputs"))
            call.repeatOutputs = detail::readSet(c.at("repeat_outputs"), where + ".repeat_outputs");
        if (!call.swappedOutputs.empty() && call.swappedOutputs.size() != call.timingInputs.size())
            throw std::runtime_error(where + ": swapped_outputs and timing_inputs differ in length");
        if (call.timingInputs.size() != call.timingOutputs.size())
            throw std::runtime_error(where + ": timing_inputs and timing_outputs differ in length");
        call.workspaceBytes = detail::integerOr<std::size_t>(c, "workspace_bytes", 0, where + ".");
        call.poisonSeed = detail::integerOr<std::uint64_t>(c, "poison_seed", 0, where + ".");
        job.calls.push_back(std::move(call));
    }
    job.measureDevice = detail::booleanOr(j, "measure_device", false, "");
    job.allowTf32 = detail::booleanOr(j, "allow_tf32", false, "");
    job.fileLimitBytes = detail::integerOr<std::uint64_t>(j, "file_limit_bytes", 0, "");
    job.memoryLimitBytes = detail::integerOr<std::uint64_t>(j, "memory_limit_bytes", 0, "");
    job.processLimit = detail::integerOr<std::uint64_t>(j, "process_limit", 0, "");
    job.gpuMemoryBudgetBytes = detail::integerOr<std::uint64_t>(j, "gpu_memory_budget_bytes", 0, "");
    job.confine = !j.contains("confine") || !j["confine"].is_boolean() || j["confine"].get<bool>();
    job.underSanitizer = detail::booleanOr(j, "under_sanitizer", false, "");
    if (j.contains("hidden_paths")) {
        if (!j["hidden_paths"].is_array())
            throw std::runtime_error("hidden_paths: not an array");
        for (const auto& p : j["hidden_paths"]) {
            if (!p.is_string())
                throw std::runtime_error("hidden_paths: not a string");
            job.hiddenPaths.push_back(p.get<std::string>());
        }
    }
    if (j.contains("bench")) {
        const auto& b = j["bench"];
        job.bench.enabled = detail::booleanOr(b, "enabled", false, "bench.");
        job.bench.minSamples = detail::integerOr<int>(b, "min_samples", job.bench.minSamples, "bench.");
        job.bench.maxSamples = detail::integerOr<int>(b, "max_samples", job.bench.maxSamples, "bench.");
        job.bench.maxNoise = detail::numberOr(b, "max_noise", job.bench.maxNoise, "bench.");
        job.bench.maxSeconds = detail::numberOr(b, "max_seconds", job.bench.maxSeconds, "bench.");
        job.bench.warmupSeconds = detail::numberOr(b, "warmup_seconds", job.bench.warmupSeconds, "bench.");
    }
    return job;
}

// ------------------------------------------------------------------ result.jsonl

// The "status" of a result line. A call's lines: kStarted, then one of kOk, kError (the kernel
// failed, or the call could not run, as when it cannot fit), kDeviceError (sticky: the runner
// stops) or kHarnessError. Job lines (id ""): kEnvironment first, kLoadError instead of calls,
// and kFinished last, once every other line is written: the runner then closes its output and
// exits, and ksearch need not wait for the exit (the driver taking the context down) to judge.
namespace status {
inline constexpr const char* kEnvironment = "environment";
inline constexpr const char* kLoadError = "load_error";
inline constexpr const char* kStarted = "started";
inline constexpr const char* kOk = "ok";
inline constexpr const char* kError = "error";
inline constexpr const char* kDeviceError = "device_error";
inline constexpr const char* kHarnessError = "harness_error";
inline constexpr const char* kFinished = "finished";
} // namespace status

// Written by the runner on its standard output (a pipe ksearch reads as it comes) right before it
// loads the candidate. A candidate can add output but never take this back, so a runner that
// failed without it failed before any of the candidate's code ran: a harness failure, not the
// candidate's (result.jsonl cannot tell: the candidate may rewrite it).
inline constexpr const char* kLoadingMarker = "ksearch-runner: loading the kernel";

struct EnvironmentLine {
    bool networkIsolated = false;
    double startupSeconds = 0.0; // from exec to a ready backend (CUDA context included)
    // When the backend was ready, in seconds of CLOCK_MONOTONIC (the parent's steady clock): with
    // the time the job was handed over, how long the job waited for its runner. 0: not reported.
    double readyMonotonicSeconds = 0.0;
    // Measured only when the job asks (measure_device); empty / 0 otherwise.
    std::string device;
    std::size_t l2Bytes = 0;
    double copyBandwidthGBs = 0.0; // read + write bytes per second of a device copy
    // Whether the processes the candidate forks live in a PID namespace that ends with the runner
    // (none outlives it), or only in its process group (a child that leaves the group does).
    bool processesContained = false;
    // Whether the candidate sees the filesystem read-only but for its job's folder and a private,
    // empty /tmp, with the home folders hidden (a mount namespace of its own; host backend).
    bool filesystemConfined = false;
    // The limits the runner set before loading the candidate (Job::fileLimitBytes and
    // memoryLimitBytes as applied); 0: none set.
    std::uint64_t fileLimitBytes = 0;
    std::uint64_t memoryLimitBytes = 0;
    std::uint64_t processLimit = 0; // Job::processLimit as applied; 0: none
    bool confinementOff = false; // the job asked for no confinement (Job::confine false)
    std::uint64_t gpuMemoryBudgetBytes = 0; // Job::gpuMemoryBudgetBytes as applied; 0: none (host: no GPU)
};

inline nlohmann::json toJson(const EnvironmentLine& e)
{
    nlohmann::json j {{"id", ""}, {"status", status::kEnvironment}, {"network_isolated", e.networkIsolated},
        {"startup_s", e.startupSeconds}, {"ready_monotonic_s", e.readyMonotonicSeconds},
        {"processes_contained", e.processesContained}, {"filesystem_confined", e.filesystemConfined},
        {"file_limit_bytes", e.fileLimitBytes}, {"memory_limit_bytes", e.memoryLimitBytes},
        {"process_limit", e.processLimit}, {"confinement_off", e.confinementOff},
        {"gpu_memory_budget_bytes", e.gpuMemoryBudgetBytes}};
    if (!e.device.empty())
        j.update({{"device", e.device}, {"l2_bytes", e.l2Bytes}, {"copy_bandwidth_gbs", e.copyBandwidthGBs}});
    return j;
}

inline EnvironmentLine environmentFromJson(const nlohmann::json& j)
{
    return {j.value("network_isolated", false), j.value("startup_s", 0.0), j.value("ready_monotonic_s", 0.0),
        j.value("device", std::string()), detail::countOr<std::size_t>(j, "l2_bytes", 0),
        j.value("copy_bandwidth_gbs", 0.0), j.value("processes_contained", false),
        j.value("filesystem_confined", false), detail::countOr<std::uint64_t>(j, "file_limit_bytes", 0),
        detail::countOr<std::uint64_t>(j, "memory_limit_bytes", 0),
        detail::countOr<std::uint64_t>(j, "process_limit", 0), j.value("confinement_off", false),
        detail::countOr<std::uint64_t>(j, "gpu_memory_budget_bytes", 0)};
}

// ------------------------------------------------------------------ the handoff socket

// ksearch starts its runners ahead of their jobs (`--warm BACKEND --handoff FD`): the process,
// its imports and the device context come up while the candidate compiles or the model thinks.
// The job then arrives on FD, an AF_UNIX SOCK_SEQPACKET socket, as messages of this JSON with
// descriptors attached (SCM_RIGHTS): `fds` are the numbers job.json uses for the descriptors of
// this message, in order. SCM_RIGHTS carries few descriptors per message, so a job with many
// buffers takes several messages; the last says so. The socket closed before a last message
// means there is no job: the runner leaves quietly. Once its backend is ready the runner sends
// one message, kHandoffReady, the other way (ksearch may read it or not).
struct HandoffMessage {
    std::string jobDir;
    std::vector<int> fds;
    bool last = true;
};

inline constexpr const char* kHandoffReady = "ready";
inline constexpr std::size_t kHandoffFdsPerMessage = 200; // the kernel's cap is 253 (SCM_MAX_FD)
inline constexpr std::size_t kHandoffMessageBytes = 16384; // with 200 descriptors' numbers and a path

inline nlohmann::json toJson(const HandoffMessage& m)
{
    return {{"job", m.jobDir}, {"fds", m.fds}, {"last", m.last}};
}

inline HandoffMessage handoffFromJson(const nlohmann::json& j)
{
    return {j.at("job").get<std::string>(), j.at("fds").get<std::vector<int>>(), j.at("last").get<bool>()};
}

// What the timing loop measured, in microseconds unless named otherwise.
struct BenchReport {
    std::vector<double> samplesMicros; // per sample: the figure that counts (events, or a longer device span)
    std::vector<double> deviceSamplesMicros; // per sample: the stream's events alone
    std::vector<double> hostSamplesMicros; // per sample: the host clock less the lead-in and the launch overhead
    std::vector<double> leadInSamplesMicros; // per sample: the lead-in's device time (CUDA; else 0)
    std::vector<double> spanSamplesMicros; // per sample: the CUPTI span; empty without spans
    double medianMicros = 0, meanMicros = 0, stdevMicros = 0, p25Micros = 0, p75Micros = 0, minMicros = 0;
    int sideWorkSamples = 0; // samples charged above their events (samplerule.h)
    int stretchedLeadIns = 0; // samples whose lead-in ran past the calibrated one (TimedCall::leadInCreditMicros)
    bool deviceSpans = false; // whether CUPTI spans were recorded
    double spanMedianMicros = 0; // their median; 0 without spans
    double spanOffsetMicros = 0; // added to a span that replaced a sample (Backend::spanOffsetMicros)
    int warmupCalls = 0;
    double warmupSeconds = 0;
    double launchOverheadMicros = 0;
    double loopSeconds = 0;
    std::string stop; // noise | time | max_samples
    bool inputsUnchanged = true;
    std::string error; // a warm-up or timed call returned an error
};

inline nlohmann::json toJson(const BenchReport& b)
{
    nlohmann::json j {{"samples_us", b.samplesMicros}, {"device_samples_us", b.deviceSamplesMicros},
        {"host_samples_us", b.hostSamplesMicros}, {"lead_in_samples_us", b.leadInSamplesMicros},
        {"median_us", b.medianMicros}, {"mean_us", b.meanMicros}, {"stdev_us", b.stdevMicros}, {"p25_us", b.p25Micros},
        {"p75_us", b.p75Micros}, {"min_us", b.minMicros}, {"side_work_samples", b.sideWorkSamples},
        {"stretched_lead_ins", b.stretchedLeadIns}, {"device_spans", b.deviceSpans}, {"warmup_calls", b.warmupCalls},
        {"warmup_seconds", b.warmupSeconds}, {"launch_overhead_us", b.launchOverheadMicros},
        {"loop_seconds", b.loopSeconds}, {"stop", b.stop}, {"inputs_unchanged", b.inputsUnchanged}};
    if (b.deviceSpans) {
        j["span_median_us"] = b.spanMedianMicros;
        j["span_offset_us"] = b.spanOffsetMicros;
        j["span_samples_us"] = b.spanSamplesMicros;
    }
    if (!b.error.empty())
        j["error"] = b.error;
    return j;
}

inline BenchReport benchFromJson(const nlohmann::json& j)
{
    BenchReport b;
    b.samplesMicros = j.value("samples_us", std::vector<double> {});
    b.deviceSamplesMicros = j.value("device_samples_us", std::vector<double> {});
    b.hostSamplesMicros = j.value("host_samples_us", std::vector<double> {});
    b.leadInSamplesMicros = j.value("lead_in_samples_us", std::vector<double> {});
    b.spanSamplesMicros = j.value("span_samples_us", std::vector<double> {});
    b.medianMicros = j.value("median_us", 0.0);
    b.meanMicros = j.value("mean_us", 0.0);
    b.stdevMicros = j.value("stdev_us", 0.0);
    b.p25Micros = j.value("p25_us", 0.0);
    b.p75Micros = j.value("p75_us", 0.0);
    b.minMicros = j.value("min_us", 0.0);
    b.sideWorkSamples = detail::countOr(j, "side_work_samples", 0);
    b.stretchedLeadIns = detail::countOr(j, "stretched_lead_ins", 0);
    b.deviceSpans = j.value("device_spans", false);
    b.spanMedianMicros = j.value("span_median_us", 0.0);
    b.spanOffsetMicros = j.value("span_offset_us", 0.0);
    b.warmupCalls = detail::countOr(j, "warmup_calls", 0);
    b.warmupSeconds = j.value("warmup_seconds", 0.0);
    b.launchOverheadMicros = j.value("launch_overhead_us", 0.0);
    b.loopSeconds = j.value("loop_seconds", 0.0);
    b.stop = j.value("stop", std::string());
    b.inputsUnchanged = j.value("inputs_unchanged", true);
    b.error = j.value("error", std::string());
    return b;
}

// The end of one call (any status but kStarted), or a job line of kLoadError.
struct CallLine {
    std::string id;
    std::string status = status::kHarnessError;
    std::string message;
    int returnCode = 0;
    double wallMicros = 0; // the correctness call alone
    bool inputsUnchanged = true;
    double totalSeconds = 0; // everything the runner did for this call
    // Where the untimed part of totalSeconds went (allocate, upload, poison, correctness_call,
    // download, input_check, repeat_call, bench_setup), for the overhead breakdown; empty from older runners.
    std::map<std::string, double> untimedSeconds;
    // After a second correctness call (Call::repeatOutputs): whether its outputs were the first
    // call's bit for bit, compared on the device. Only when they were not are they downloaded
    // into repeatOutputs for the parent to judge. Unset: no second call was made.
    std::optional<bool> repeatIdentical;
    std::optional<BenchReport> bench;
    // Shared objects the process loaded since just before the candidate, but the candidate's own
    // library, seen after this call (the parent judges them: core/task/kernellibraries.h).
    std::vector<std::string> loadedLibraries;
};

inline nlohmann::json toJson(const CallLine& c)
{
    nlohmann::json j {{"id", c.id}, {"status", c.status}, {"return_code", c.returnCode}, {"wall_us", c.wallMicros},
        {"inputs_unchanged", c.inputsUnchanged}, {"total_s", c.totalSeconds}};
    if (!c.message.empty())
        j["message"] = c.message;
    if (!c.untimedSeconds.empty())
        j["untimed_s"] = c.untimedSeconds;
    if (c.repeatIdentical)
        j["repeat_identical"] = *c.repeatIdentical;
    if (c.bench)
        j["bench"] = toJson(*c.bench);
    if (!c.loadedLibraries.empty())
        j["loaded_libraries"] = c.loadedLibraries;
    return j;
}

inline CallLine callFromJson(const nlohmann::json& j)
{
    CallLine c;
    c.id = j.value("id", std::string());
    c.status = j.value("status", std::string());
    c.message = j.value("message", std::string());
    c.returnCode = detail::countOr(j, "return_code", 0);
    c.wallMicros = j.value("wall_us", 0.0);
    c.inputsUnchanged = j.value("inputs_unchanged", true);
    c.totalSeconds = j.value("total_s", 0.0);
    if (j.contains("repeat_identical") && j.at("repeat_identical").is_boolean())
        c.repeatIdentical = j.at("repeat_identical").get<bool>();
    if (j.contains("untimed_s") && j.at("untimed_s").is_object())
        for (const auto& [part, seconds] : j.at("untimed_s").items())
            if (seconds.is_number())
                c.untimedSeconds[part] = seconds.get<double>();
    if (j.contains("bench"))
        c.bench = benchFromJson(j["bench"]);
    if (j.contains("loaded_libraries") && j.at("loaded_libraries").is_array())
        for (const auto& path : j.at("loaded_libraries"))
            if (path.is_string())
                c.loadedLibraries.push_back(path.get<std::string>());
    return c;
}

inline nlohmann::json startedLine(const std::string& callId)
{
    return {{"id", callId}, {"status", status::kStarted}};
}

} // namespace ksr
