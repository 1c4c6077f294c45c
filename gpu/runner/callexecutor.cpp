#include "callexecutor.h"

#include "samplerule.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>

namespace ksr {
namespace {

using Bytes = std::vector<unsigned char>;

// Noise that no correct kernel output is likely to equal.
Bytes noise(std::size_t bytes, std::uint64_t seed)
{
    Bytes data(bytes);
    std::uint64_t x = seed | 1;
    std::size_t i = 0;
    for (; i + 8 <= bytes; i += 8) { // eight bytes per step: outputs can be hundreds of MiB
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::memcpy(data.data() + i, &x, 8);
    }
    for (; i < bytes; ++i)
        data[i] = static_cast<unsigned char>(x >> (8 * (i % 8)));
    return data;
}

// A view of a buffer the parent shares by descriptor: read-only for inputs (the upload source
// and the pristine copy for the unchanged-inputs check), writable for outputs (results are
// downloaded straight into it). Mapped with its pages populated in one go: hundreds of MiB per
// call would otherwise cost a page fault per 4 KiB.
class SharedView
{
public:
    SharedView(const Buffer& buffer, bool writable, const std::string& what)
        : m_bytes(buffer.bytes)
    {
        struct stat st {
        };
        if (::fstat(buffer.fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < buffer.bytes)
            throw std::runtime_error(what + ": shared buffer " + std::to_string(buffer.fd)
                + " is missing or shorter than " + std::to_string(buffer.bytes) + " bytes");
        if (m_bytes == 0)
            return;
        m_data = ::mmap(
            nullptr, m_bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED | MAP_POPULATE, buffer.fd, 0);
        if (m_data == MAP_FAILED) {
            m_data = nullptr;
            throw std::runtime_error(what + ": cannot map shared buffer " + std::to_string(buffer.fd));
        }
    }
    SharedView(SharedView&& o) noexcept
        : m_data(std::exchange(o.m_data, nullptr))
        , m_bytes(o.m_bytes)
    {
    }
    SharedView(const SharedView&) = delete;
    SharedView& operator=(const SharedView&) = delete;
    SharedView& operator=(SharedView&&) = delete;
    ~SharedView()
    {
        if (m_data)
            ::munmap(m_data, m_bytes);
    }
    const unsigned char* data() const { return static_cast<const unsigned char*>(m_data); }
    unsigned char* writableData() { return static_cast<unsigned char*>(m_data); }
    std::size_t size() const { return m_bytes; }

private:
    void* m_data = nullptr;
    std::size_t m_bytes = 0;
};

class DeviceBuffer
{
public:
    DeviceBuffer(Backend& b, std::size_t bytes)
        : m_backend(&b)
        , m_ptr(b.allocate(bytes))
        , m_bytes(bytes)
    {
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept
        : m_backend(o.m_backend)
        , m_ptr(std::exchange(o.m_ptr, nullptr))
        , m_bytes(o.m_bytes)
    {
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(DeviceBuffer&&) = delete;
    ~DeviceBuffer()
    {
        if (m_ptr)
            m_backend->release(m_ptr);
    }
    void* get() const { return m_ptr; }
    std::size_t bytes() const { return m_bytes; }

private:
    Backend* m_backend;
    void* m_ptr;
    std::size_t m_bytes;
};

// Fills a device buffer with noise: one block made on the host, then repeated on the device by
// doubling copies. Output buffers reach hundreds of MiB per call; repeating a 4 MiB block keeps
// their poison unpredictable to a kernel at a fraction of the cost of making and uploading it all.
void fillNoise(Backend& backend, const DeviceBuffer& buffer, std::uint64_t seed)
{
    const std::size_t total = buffer.bytes();
    const Bytes block = noise(std::min<std::size_t>(total, std::size_t {4} << 20), seed);
    auto* base = static_cast<unsigned char*>(buffer.get());
    backend.upload(base, block.data(), block.size());
    for (std::size_t done = block.size(); done < total;) {
        const std::size_t n = std::min(done, total - done);
        backend.copyWithin(base + done, base, n);
        done += n;
    }
}

// One input set on the device plus the KsArgs bytes that point at it (and at the shared outputs).
// Each tensor input also has a pristine copy the candidate is never handed, in device memory: the
// unchanged-inputs checks and the refills of the final timing round use it where it lives. On
// the host backend that is the parent's sealed shared copy itself.
struct InputSet {
    std::vector<DeviceBuffer> buffers;
    std::vector<SharedView> shared; // the parent's copies, kept mapped on the host backend
    std::vector<DeviceBuffer> deviceCopies; // CUDA: device copies
    std::vector<const void*> pristine; // in buffers order
    Bytes args;
};

struct Outputs {
    std::vector<DeviceBuffer> buffers; // in field order
    std::vector<DeviceBuffer> noise; // per output: what it is overwritten with before each call
    std::vector<DeviceBuffer> first; // per output, with a second correctness call: the first call's
    std::vector<std::string> names;
    std::unique_ptr<DeviceBuffer> workspace;
    std::unique_ptr<DeviceBuffer> workspaceNoise;
};

// What poison() writes from now on: noise from the seed, other for each output and the workspace.
void makePoison(Outputs& out, Backend& backend, std::uint64_t seed)
{
    std::uint64_t salt = 0;
    for (const auto& n : out.noise)
        fillNoise(backend, n, seed + 0x9e3779b97f4a7c15ULL * ++salt);
    if (out.workspaceNoise)
        fillNoise(backend, *out.workspaceNoise, ~seed);
}

Outputs allocateOutputs(const Job& job, const Call& call, Backend& backend)
{
    Outputs out;
    for (const auto& field : job.fields) {
        if (field.role != Field::Role::Output)
            continue;
        const Buffer& spec = call.outputs.at(field.name);
        out.buffers.emplace_back(backend, spec.bytes);
        out.noise.emplace_back(backend, spec.bytes);
        if (!call.repeatOutputs.empty())
            out.first.emplace_back(backend, spec.bytes);
        out.names.push_back(field.name);
    }
    if (call.workspaceBytes > 0) {
        out.workspace = std::make_unique<DeviceBuffer>(backend, call.workspaceBytes);
        out.workspaceNoise = std::make_unique<DeviceBuffer>(backend, call.workspaceBytes);
    }
    makePoison(out, backend, call.poisonSeed);
    return out;
}

// The seed of the second correctness call's poison: every byte differs in distribution from the
// first call's, and the parent, which chose poisonSeed, can tell neither apart from random.
std::uint64_t repeatSeed(std::uint64_t poisonSeed)
{
    return (poisonSeed ^ 0xd1b54a32d192ed03ULL) * 0xbf58476d1ce4e5b9ULL + 1;
}

InputSet uploadInputs(
    const Job& job, const Call& call, const BufferSet& inputs, const Outputs& outputs, Backend& backend)
{
    InputSet set;
    set.args.assign(job.argsSize, 0);
    std::size_t outputIndex = 0;
    for (const auto& field : job.fields) {
        unsigned char* slot = set.args.data() + field.offset;
        switch (field.role) {
        case Field::Role::Input: {
            const Buffer& spec = inputs.at(field.name);
            SharedView data(spec, false, "input " + field.name);
            set.buffers.emplace_back(backend, spec.bytes);
            backend.upload(set.buffers.back().get(), data.data(), data.size());
            if (backend.hostMemory()) {
                set.pristine.push_back(data.data());
                set.shared.push_back(std::move(data));
            } else {
                set.deviceCopies.emplace_back(backend, spec.bytes);
                backend.copyWithin(set.deviceCopies.back().get(), set.buffers.back().get(), spec.bytes);
                set.pristine.push_back(set.deviceCopies.back().get());
            }
            void* p = set.buffers.back().get();
            std::memcpy(slot, &p, sizeof p);
            break;
        }
        case Field::Role::Scalar: {
            const Buffer& spec = inputs.at(field.name);
            if (spec.bytes != field.size)
                throw std::runtime_error("scalar " + field.name + ": size differs from the field");
            const SharedView data(spec, false, "scalar " + field.name);
            std::memcpy(slot, data.data(), field.size);
            break;
        }
        case Field::Role::Output: {
            void* p = outputs.buffers.at(outputIndex++).get();
            std::memcpy(slot, &p, sizeof p);
            break;
        }
        case Field::Role::Axis: {
            const std::int64_t v = call.axes.at(field.name);
            std::memcpy(slot, &v, sizeof v);
            break;
        }
        }
    }
    return set;
}

void poison(const Outputs& out, Backend& backend)
{
    for (std::size_t i = 0; i < out.buffers.size(); ++i)
        backend.copyWithin(out.buffers[i].get(), out.noise[i].get(), out.buffers[i].bytes());
    if (out.workspace)
        backend.copyWithin(out.workspace->get(), out.workspaceNoise->get(), out.workspace->bytes());
}

void saveOutputs(const BufferSet& shared, const Outputs& out, Backend& backend)
{
    for (std::size_t i = 0; i < out.buffers.size(); ++i) {
        const Buffer& spec = shared.at(out.names[i]);
        if (spec.bytes != out.buffers[i].bytes())
            throw std::runtime_error("output " + out.names[i] + ": shared buffer size differs from the output");
        SharedView view(spec, true, "output " + out.names[i]);
        backend.download(view.writableData(), out.buffers[i].get(), view.size());
    }
}

struct Stats {
    double mean = 0, stdev = 0, median = 0, p25 = 0, p75 = 0, min = 0, max = 0;
};

Stats statistics(std::vector<double> v)
{
    Stats s;
    if (v.empty())
        return s;
    for (const double x : v)
        s.mean += x;
    s.mean /= static_cast<double>(v.size());
    for (const double x : v)
        s.stdev += (x - s.mean) * (x - s.mean);
    s.stdev = v.size() > 1 ? std::sqrt(s.stdev / static_cast<double>(v.size() - 1)) : 0.0;
    std::sort(v.begin(), v.end());
    auto q = [&](double f) { return v[static_cast<std::size_t>(f * static_cast<double>(v.size() - 1) + 0.5)]; };
    s.median = q(0.5);
    s.p25 = q(0.25);
    s.p75 = q(0.75);
    s.min = v.front();
    s.max = v.back();
    return s;
}

// Why a call failed, or empty: its return code, or a launch its CUDA runtime refused.
std::string callFailure(int rc, const Candidate& candidate)
{
    if (candidate.launchError)
        if (const char* err = candidate.launchError())
            return "a kernel launch failed: " + std::string(err)
                + (rc != 0 ? " (ks_run returned " + std::to_string(rc) + ")" : std::string());
    return rc != 0 ? "ks_run returned " + std::to_string(rc) : std::string();
}

double secondsSince(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Whether the set's device buffers hold the source set's pristine inputs (its own, or those it
// was refilled with), compared where they live.
bool holdsInputsOf(const InputSet& set, const InputSet& source, Backend& backend)
{
    for (std::size_t i = 0; i < set.buffers.size(); ++i)
        if (!backend.sameBytes(set.buffers[i].get(), source.pristine[i], set.buffers[i].bytes()))
            return false;
    return true;
}

bool inputsUnchanged(const InputSet& set, Backend& backend)
{
    return holdsInputsOf(set, set, backend);
}

// Times one call per sample on rotating input sets. A sample's latency is the event time on the
// given stream, unless the device's own record (CUPTI spans of work on any stream) or the loop's
// host clock shows it busy for noticeably longer: then work went to another
// stream, and that figure counts (samplerule.h). The last round refills each set's buffers with
// the first call's inputs before calling: a kernel that replays what it computed for a pointer it
// has seen then returns stale results.
BenchReport benchmark(const Job& job, const Call& call, Backend& backend, const Candidate& candidate, Outputs& outputs,
    std::vector<InputSet>& sets, const InputSet& reference)
{
    const KsRunFn fn = candidate.run;
    const BenchSettings& b = job.bench;
    const double overhead = backend.launchOverheadMicros();
    BenchReport result;
    result.launchOverheadMicros = overhead;
    // The harness's own rounds, before any timed call: a device error here is named as theirs, not
    // as the first warm-up call's. It may still be the candidate's (a side stream of an earlier call
    // that failed late); either way nothing is timed.
    if (!backend.deviceError().empty()) {
        result.error = "while calibrating the launch overhead, before the warm-up";
        return result;
    }

    const auto warmStart = std::chrono::steady_clock::now();
    int warmupCalls = 0;
    while (warmupCalls < 3 || secondsSince(warmStart) < b.warmupSeconds) {
        poison(outputs, backend);
        const InputSet& set = sets[static_cast<std::size_t>(warmupCalls) % sets.size()];
        const int rc = backend.run(
            fn, set.args.data(), outputs.workspace ? outputs.workspace->get() : nullptr, call.workspaceBytes);
        ++warmupCalls;
        if (const std::string why = callFailure(rc, candidate); !why.empty() || !backend.deviceError().empty()) {
            result.error = "warm-up call " + std::to_string(warmupCalls) + ": " + (why.empty() ? "device error" : why);
            return result;
        }
        if (warmupCalls > 10000)
            break;
    }
    result.warmupCalls = warmupCalls;
    result.warmupSeconds = secondsSince(warmStart);

    std::vector<double> samples, deviceSamples, hostSamples, leadInSamples;
    backend.beginSpans();
    if (!backend.deviceError().empty()) {
        result.error = "while calibrating the span offset, before the timed calls";
        return result;
    }
    std::string stop = "max_samples";
    const auto loopStart = std::chrono::steady_clock::now();
    // After the stop rule fires, a final round whose outputs the parent verifies: one sample per
    // set on its own inputs (results produced inside the timing loop are checked, not only the
    // first call's), then one per set with its buffers refilled with the next set's inputs (the
    // first call's when there is one set): a result cached by pointer or replayed does not match.
    const std::size_t count = sets.size();
    const std::size_t finalTotal =
        call.swappedOutputs.size() == count ? 2 * count : count; // a job may ask for one pass
    std::size_t finalCalls = 0;
    bool stopping = false;
    bool unchanged = true;
    for (int i = 0;; ++i) {
        const std::size_t which = static_cast<std::size_t>(i) % count;
        if (stopping && finalCalls == finalTotal)
            break;
        const bool swapped = stopping && finalCalls >= count;
        if (swapped) {
            // From the pristine copy: the next set's own buffers may be refilled already.
            const InputSet& source = count > 1 ? sets[(which + 1) % count] : reference;
            for (std::size_t t = 0; t < sets[which].buffers.size(); ++t)
                backend.copyWithin(sets[which].buffers[t].get(), source.pristine[t], sets[which].buffers[t].bytes());
        }
        poison(outputs, backend);
        backend.flushCaches();
        const TimedCall t = backend.timedRun(
            fn, sets[which].args.data(), outputs.workspace ? outputs.workspace->get() : nullptr, call.workspaceBytes);
        if (const std::string why = callFailure(t.returnCode, candidate);
            !why.empty() || !backend.deviceError().empty()) {
            result.error = "timed call " + std::to_string(i) + ": " + (why.empty() ? "device error" : why);
            return result;
        }
        // Judged after the loop (chargeSamples); the stop rule reads the events meanwhile.
        samples.push_back(t.deviceMicros);
        deviceSamples.push_back(t.deviceMicros);
        hostSamples.push_back(t.wallMicros - t.leadInCreditMicros - overhead);
        leadInSamples.push_back(t.leadInMicros);
        result.stretchedLeadIns += t.leadInCreditMicros < t.leadInMicros ? 1 : 0;
        if (stopping) {
            saveOutputs(swapped ? call.swappedOutputs.at(which) : call.timingOutputs.at(which), outputs, backend);
            if (swapped) { // the refilled inputs must come back untouched too
                const InputSet& source = count > 1 ? sets[(which + 1) % count] : reference;
                unchanged = unchanged && holdsInputsOf(sets[which], source, backend);
            }
            ++finalCalls;
            continue;
        }
        const int n = static_cast<int>(samples.size());
        if (n >= b.minSamples) {
            const Stats s = statistics(samples);
            const double relErr = s.mean > 0 ? s.stdev / s.mean / std::sqrt(static_cast<double>(n)) : 0.0;
            if (relErr < b.maxNoise)
                stop = "noise";
            else if (secondsSince(loopStart) > b.maxSeconds)
                stop = "time";
            else if (n >= b.maxSamples)
                stop = "max_samples";
            else
                continue;
            stopping = true;
            for (const auto& set : sets)
                unchanged = unchanged && inputsUnchanged(set, backend);
            // Align the final round so that set k is the k-th of each pass.
            while (static_cast<std::size_t>(i + 1) % count != 0) {
                ++i;
                poison(outputs, backend);
                const int rc = backend.run(fn, sets[static_cast<std::size_t>(i) % count].args.data(),
                    outputs.workspace ? outputs.workspace->get() : nullptr, call.workspaceBytes);
                if (const std::string why = callFailure(rc, candidate);
                    !why.empty() || !backend.deviceError().empty()) {
                    result.error = "call " + std::to_string(i) + ": " + (why.empty() ? "device error" : why);
                    return result;
                }
            }
        }
    }
    // Work on any stream, as the device (CUPTI spans) or else the host clock saw it.
    const std::vector<double> spans = backend.spans();
    const ChargedSamples charged = chargeSamples({deviceSamples, hostSamples, spans, backend.spanOffsetMicros()});
    samples = charged.micros;
    result.sideWorkSamples = static_cast<int>(std::count(charged.side.begin(), charged.side.end(), true));
    const Stats s = statistics(samples);
    result.deviceSpans = !spans.empty();
    if (result.deviceSpans) {
        result.spanMedianMicros = statistics(spans).median;
        result.spanOffsetMicros = backend.spanOffsetMicros();
    }
    result.samplesMicros = samples;
    result.deviceSamplesMicros = deviceSamples;
    result.hostSamplesMicros = hostSamples;
    result.leadInSamplesMicros = leadInSamples;
    result.spanSamplesMicros = spans;
    result.medianMicros = s.median;
    result.meanMicros = s.mean;
    result.stdevMicros = s.stdev;
    result.p25Micros = s.p25;
    result.p75Micros = s.p75;
    result.minMicros = s.min;
    result.stop = stop;
    result.loopSeconds = secondsSince(loopStart);
    result.inputsUnchanged = unchanged;
    return result;
}

// Device bytes a call holds at its peak: each input set twice (the buffers and their pristine
// copies), the correctness set plus the timing loop's resident sets, outputs and workspace
// twice (the buffers and their noise), and the outputs once more with a second correctness call.
std::size_t deviceBytesNeeded(const Job& job, const Call& call, bool withTimingSets = true)
{
    const auto tensorBytes = [&](const BufferSet& set, Field::Role role) {
        std::size_t sum = 0;
        for (const auto& field : job.fields)
            if (field.role == role && set.count(field.name))
                sum += set.at(field.name).bytes;
        return sum;
    };
    std::size_t inputs = tensorBytes(call.inputs, Field::Role::Input);
    if (job.bench.enabled && withTimingSets)
        for (const auto& set : call.timingInputs)
            inputs += tensorBytes(set, Field::Role::Input);
    const std::size_t outputs = tensorBytes(call.outputs, Field::Role::Output);
    return 2 * inputs + (call.repeatOutputs.empty() ? 2 : 3) * outputs + 2 * call.workspaceBytes;
}

// What a call may have on the device beyond deviceBytesNeeded: cudaMalloc's rounding of each
// buffer to its 2 MiB pages, the module code and static data of the candidate, loaded on its
// first launch, and the context of the next candidate's runner, which may start while this one
// runs (about 0.5 GiB on an H200).
constexpr std::size_t kDeviceSlackBytes = std::size_t {1} << 30;
constexpr std::uint64_t kDefaultGpuMemoryBudgetBytes = std::uint64_t {1} << 30;

std::string gib(std::size_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

} // namespace

std::uint64_t gpuMemoryBudget(const Job& job)
{
    if (job.backend != "cuda" || !job.confine || job.underSanitizer)
        return 0;
    return job.gpuMemoryBudgetBytes ? job.gpuMemoryBudgetBytes : kDefaultGpuMemoryBudgetBytes;
}

CallLine executeCall(const Job& job, const Call& call, Backend& backend, const Candidate& candidate)
{
    const KsRunFn fn = candidate.run;
    const auto callStart = std::chrono::steady_clock::now();
    CallLine result;
    result.id = call.id;
    // Checked before anything is allocated: a workload that cannot fit is named with its need,
    // where a failed cudaMalloc halfway through would say nothing about why.
    // What the runner holds for the GPU-memory budget is the call's to use.
    const auto free = backend.freeBytes();
    const std::size_t available = free ? *free + backend.heldDeviceBytes() : 0;
    if (free && deviceBytesNeeded(job, call) > available) {
        result.status = status::kError;
        result.message = "does not fit in GPU memory: this workload needs " + gib(deviceBytesNeeded(job, call))
            + " on the device (inputs and their pristine copies, outputs, workspace and their poison), and "
            + gib(available) + " is free; run it on a larger GPU, or leave it out with --workloads";
        return result;
    }
    // Each part of the untimed work, for the overhead breakdown (docs/perf.md).
    auto lapStart = std::chrono::steady_clock::now();
    const auto lap = [&](const char* part) {
        const auto now = std::chrono::steady_clock::now();
        result.untimedSeconds[part] += std::chrono::duration<double>(now - lapStart).count();
        lapStart = now;
    };
    // The device's memory held but what the call is still to allocate, a slack and the budget
    // for the candidate's own allocations; held anew once the timing sets are uploaded, so that
    // the correctness calls cannot use the memory those sets take later.
    const std::uint64_t budget = gpuMemoryBudget(job);
    const auto hold = [&](std::size_t stillToAllocate) {
        if (budget > 0) {
            backend.holdDeviceMemoryBut(stillToAllocate + kDeviceSlackBytes + budget);
            lap("memory_hold");
        }
    };
    hold(deviceBytesNeeded(job, call, false));
    Outputs outputs = allocateOutputs(job, call, backend);
    lap("allocate");
    std::vector<InputSet> sets;
    sets.push_back(uploadInputs(job, call, call.inputs, outputs, backend));
    lap("upload");

    poison(outputs, backend);
    lap("poison");
    const auto start = std::chrono::steady_clock::now();
    const int rc = backend.run(
        fn, sets[0].args.data(), outputs.workspace ? outputs.workspace->get() : nullptr, call.workspaceBytes);
    result.returnCode = rc;
    result.wallMicros = secondsSince(start) * 1e6;
    lap("correctness_call");
    if (const std::string err = backend.deviceError(); !err.empty()) {
        result.status = status::kDeviceError;
        result.message = err;
        return result;
    }
    if (const std::string why = callFailure(rc, candidate); !why.empty()) {
        result.status = status::kError;
        result.message = why;
        return result;
    }
    saveOutputs(call.outputs, outputs, backend);
    lap("download");
    result.inputsUnchanged = inputsUnchanged(sets[0], backend);
    lap("input_check");
    if (!call.repeatOutputs.empty()) {
        // The same inputs again, with other noise in the outputs and workspace (the timing loop
        // below keeps it): results the same bit for bit stay on the device; others go to the
        // parent, which judges them.
        for (std::size_t i = 0; i < outputs.buffers.size(); ++i)
            backend.copyWithin(outputs.first[i].get(), outputs.buffers[i].get(), outputs.buffers[i].bytes());
        makePoison(outputs, backend, repeatSeed(call.poisonSeed));
        poison(outputs, backend);
        const int again = backend.run(
            fn, sets[0].args.data(), outputs.workspace ? outputs.workspace->get() : nullptr, call.workspaceBytes);
        if (const std::string err = backend.deviceError(); !err.empty()) {
            result.status = status::kDeviceError;
            result.message = err + " (in the second correctness call)";
            return result;
        }
        if (const std::string why = callFailure(again, candidate); !why.empty()) {
            result.status = status::kError;
            result.message = why + " in the second correctness call";
            return result;
        }
        bool identical = true;
        for (std::size_t i = 0; i < outputs.buffers.size() && identical; ++i)
            identical = backend.sameBytes(outputs.first[i].get(), outputs.buffers[i].get(), outputs.buffers[i].bytes());
        result.repeatIdentical = identical;
        if (!identical)
            saveOutputs(call.repeatOutputs, outputs, backend);
        result.inputsUnchanged = result.inputsUnchanged && inputsUnchanged(sets[0], backend);
        lap("repeat_call");
    }
    result.status = status::kOk;

    if (job.bench.enabled && !call.timingInputs.empty()) {
        hold(deviceBytesNeeded(job, call) - deviceBytesNeeded(job, call, false));
        std::vector<InputSet> timing;
        for (const auto& set : call.timingInputs)
            timing.push_back(uploadInputs(job, call, set, outputs, backend));
        lap("upload");
        hold(0);
        BenchReport bench = benchmark(job, call, backend, candidate, outputs, timing, sets[0]);
        lap("bench_setup");
        result.untimedSeconds["bench_setup"] =
            std::max(0.0, result.untimedSeconds["bench_setup"] - bench.warmupSeconds - bench.loopSeconds);
        if (const std::string err = backend.deviceError(); !err.empty()) {
            result.status = status::kDeviceError;
            result.message = err + " (" + (bench.error.empty() ? "during the benchmark" : bench.error) + ")";
        } else if (!bench.error.empty()) {
            result.status = status::kError;
            result.message = bench.error;
        }
        result.bench = std::move(bench);
    }
    result.totalSeconds = secondsSince(callStart); // inputs, correctness call, outputs, warm-up and timing loop
    return result;
}

} // namespace ksr
