#include "evaluator.h"

#include "cudausernamespace.h"
#include "devicequeue.h"
#include "subprocess.h"

#include <task/abiheader.h>
#include <task/comparison.h>
#include <task/inputgenerator.h>
#include <task/kernellibraries.h>
#include <util/elapsed.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <sys/prctl.h>

namespace ks {

namespace fs = std::filesystem;

namespace {

// The device's queue. The host backend has one (its candidates use every core). An empty device
// is the default GPU, which is "0" unless CUDA_VISIBLE_DEVICES says more.
DeviceQueue& deviceQueue(const RunnerJob& job)
{
    return DeviceQueue::of(job.backend == Backend::Cuda ? "cuda:" + job.cudaVisibleDevices : "host");
}

// Generous upper bound of a Hopper GPU's dense arithmetic rate (fp8 tensor cores): only a
// compute floor that no kernel of any precision can beat.
constexpr double kPeakFlopsCuda = 2.0e15;

bool isPythonFile(const fs::path& file)
{
    return file.extension() == ".py";
}

// Runs a job when its device is free; `waited` grows by the time spent queueing for it (another
// evaluator of the same device was timing), `exitWait` by the time the runners of earlier jobs
// took to end. The runner of this job, once it has reported, is left exiting on the queue.
RunnerJobResult runOnDevice(
    const RunnerJob& job, double& waited, double& exitWait, std::unique_ptr<PrestartedRunner> runner = nullptr)
{
    DeviceQueue& queue = deviceQueue(job);
    const DeviceQueue::Turn turn = queue.take();
    waited += turn.queuedSeconds;
    exitWait += turn.exitSeconds;
    RunnerJobResult result = runRunnerJob(job, std::move(runner));
    queue.leaveExiting(std::move(result.exiting));
    return result;
}

std::string shortId(const std::string& id)
{
    return id.substr(0, 8);
}

std::string fmt(double v, int precision = 3)
{
    std::ostringstream s;
    s.precision(precision);
    s << std::fixed << v;
    return s.str();
}

// The verdict of a runner outcome that did not complete normally, or nullopt when it did.
std::optional<std::pair<Verdict, std::string>> failureOf(const RunnerCallOutcome& o)
{
    using S = RunnerCallOutcome::Status;
    switch (o.status) {
    case S::Ok:
        return std::nullopt;
    case S::TimedOut:
        return std::pair {Verdict::Timeout, o.message};
    case S::KernelError:
        return std::pair {
            Verdict::RuntimeError, o.message.empty() ? "ks_run returned " + std::to_string(o.returnCode) : o.message};
    case S::DeviceError:
        return std::pair {Verdict::RuntimeError, "CUDA error: " + o.message};
    case S::Crashed:
        return std::pair {Verdict::RuntimeError, o.message};
    case S::HarnessError:
        return std::pair {Verdict::RuntimeError, "harness: " + o.message};
    case S::NotRun:
        return std::pair {Verdict::RuntimeError, "not run: the runner stopped at an earlier workload"};
    }
    return std::nullopt;
}

// What the runner reported of the candidate's confinement, as the evaluation keeps it.
Confinement confinementOf(const RunnerEnvironment& env, Backend backend)
{
    return {env.confinementOff, env.networkIsolated, env.processesContained, env.filesystemConfined, env.fileLimitBytes,
        env.memoryLimitBytes, env.processLimit,
        backend == Backend::Cuda ? std::optional(env.gpuMemoryBudgetBytes) : std::nullopt,
        std::nullopt}; // the compiler's: the caller knows it
}

// Says once per process and subject what it runs without: `who` ("candidates of the
// ksearch-runner on the cuda backend", "compilers"). The same gaps are in every evaluation's
// record; the log need not repeat them for each.
void warnOnceAboutGaps(const std::string& who, const std::vector<std::string>& gaps)
{
    if (gaps.empty())
        return;
    std::string text;
    for (const auto& g : gaps)
        text += (text.empty() ? "" : "; ") + g;
    static std::mutex mutex;
    static std::set<std::string> said;
    const std::lock_guard lock(mutex);
    if (said.insert(who + text).second)
        spdlog::warn("{} run without full confinement: {} (docs/security.md)", who, text);
}

void warnOnceAboutConfinement(const Confinement& c, Backend backend, bool python)
{
    warnOnceAboutGaps(std::string("candidates of the ") + (python ? "Python" : "ksearch-runner") + " on the "
            + std::string(backendName(backend)) + " backend",
        confinementGaps(c));
}

} // namespace

double geometricMean(const std::vector<double>& values)
{
    if (values.empty())
        return 0.0;
    double logSum = 0.0;
    for (const double v : values) {
        if (!(v > 0.0))
            return 0.0;
        logSum += std::log(v);
    }
    return std::exp(logSum / static_cast<double>(values.size()));
}

struct Evaluator::WorkloadData {
    const Workload* workload = nullptr;
    std::vector<std::vector<SharedTensor>> inputSets; // [0]: correctness; [1..]: timing rotation
    // Per input set: the reference runner's outputs, in shared memory no later job writes.
    std::vector<std::vector<SharedTensor>> expected;
    std::vector<HostTensor> outputTemplate; // names, dtypes and shapes; no data
    std::int64_t workspaceBytes = 0;
    double bytes = 0, flops = 0;
    bool gpuReference = false;
    double baselineMicros = 0.0;
};

class SharedPreparation
{
public:
    std::mutex mutex; // held by the evaluator that prepares, so that the others wait for it
    bool ready = false;
    Task task; // the copy the shared workloads point into
    std::vector<std::shared_ptr<Evaluator::WorkloadData>> workloads;
    double inputSeconds = 0.0, referenceSeconds = 0.0, baselineSeconds = 0.0, copyBandwidthGBs = 0.0;
    std::string device;
};

std::shared_ptr<SharedPreparation> makeSharedPreparation()
{
    return std::make_shared<SharedPreparation>();
}

bool Evaluator::adoptPreparation()
{
    SharedPreparation& p = *m_settings.preparation;
    if (!p.ready)
        return false;
    m_workloads = p.workloads;
    m_inputSeconds = p.inputSeconds;
    m_referenceSeconds = p.referenceSeconds;
    m_baselineSeconds = p.baselineSeconds;
    m_copyBandwidthGBs = p.copyBandwidthGBs;
    m_device = p.device;
    m_prepared = true;
    return true;
}

void Evaluator::publishPreparation()
{
    SharedPreparation& p = *m_settings.preparation;
    p.task = m_task;
    for (const auto& w : m_workloads) // point into the share's own copy, which outlives this evaluator
        w->workload = &p.task.workloads[static_cast<std::size_t>(w->workload - m_task.workloads.data())];
    p.workloads = m_workloads;
    p.inputSeconds = m_inputSeconds;
    p.referenceSeconds = m_referenceSeconds;
    p.baselineSeconds = m_baselineSeconds;
    p.copyBandwidthGBs = m_copyBandwidthGBs;
    p.device = m_device;
    p.ready = true;
}

Evaluator::Evaluator(Task task, EvaluatorSettings settings)
    : m_task(std::move(task))
    , m_settings(std::move(settings))
    , m_language(m_settings.language.value_or(defaultLanguage(backendName(m_settings.backend))))
    , m_cache(m_settings.cacheDir.empty() ? defaultCompileCacheDir() : m_settings.cacheDir)
{
    // This process holds the expected outputs (memfds) and the secret seed. A process of the same
    // user may open another's descriptors through /proc/PID/fd unless it is not dumpable; a
    // candidate in a runner this process started would otherwise read the answers from there.
    // Runners, being exec'd, are dumpable again; on the host backend they drop their
    // capabilities before loading the kernel, so that one started by root cannot use
    // CAP_SYS_PTRACE for the same (docs/security.md: not yet on CUDA).
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (m_settings.seed == 0)
        m_settings.seed = (static_cast<std::uint64_t>(std::random_device {}()) << 32) ^ std::random_device {}();
    std::error_code ec;
    fs::create_directories(m_settings.workDir, ec);
    m_python.interpreter = m_settings.python;
}

Evaluator::~Evaluator() = default;

std::string Evaluator::targetDescription() const
{
    if (m_settings.backend == Backend::Host)
        return isPythonLanguage(m_language) ? "the host CPU (PyTorch on the CPU)"
                                            : "the host CPU (one process; OpenMP threads allowed)";
    return (m_device.empty() ? std::string("an NVIDIA GPU") : m_device) + " (sm_" + m_settings.cudaArch + ")";
}

std::string Evaluator::compilerDescription() const
{
    if (isPythonLanguage(m_language))
        return m_settings.python + (m_pythonVersions.empty() ? "" : " (" + m_pythonVersions + ")");
    if (m_settings.backend == Backend::Host)
        return hostCompiler() + " -std=c++17 -O3 -march=native -fopenmp";
    return "nvcc -std=c++17 -O3 -gencode=arch=compute_" + m_settings.cudaArch + ",code=sm_" + m_settings.cudaArch;
}

std::optional<std::string> Evaluator::environmentProblem()
{
    if (const std::string p = languageBackendProblem(m_language, backendName(m_settings.backend)); !p.empty())
        return p;
    if (needsPython())
        if (auto problem = preparePython())
            return problem;
    SubprocessRequest req;
    req.environment = scrubbedEnvironment();
    req.timeout = std::chrono::seconds(60);
    if (m_settings.backend == Backend::Cuda) {
        if (!fs::exists(nvccPath()) && nvccPath().find('/') != std::string::npos)
            return "nvcc not found at " + nvccPath() + " (install the CUDA toolkit or set KSEARCH_NVCC)";
        req.argv = {runnerPath().string(), "--probe"};
        if (!m_settings.cudaVisibleDevices.empty())
            req.environment["CUDA_VISIBLE_DEVICES"] = m_settings.cudaVisibleDevices;
        const auto r = runSubprocess(req);
        if (!r.succeeded())
            return "cannot run " + runnerPath().string() + ": " + r.describeExit();
        try {
            const auto probe = nlohmann::json::parse(r.out);
            if (probe.value("devices", nlohmann::json::array()).empty())
                return "no CUDA device: " + probe.value("error", std::string("none visible"));
            m_device = probe["devices"][0].value("name", std::string());
            // cudaComputeModeExclusive (1) or cudaComputeModeExclusiveProcess (3)
            const int mode = probe["devices"][0].value("compute_mode", 0);
            m_exclusiveDevice = mode == 1 || mode == 3;
        } catch (const nlohmann::json::exception& e) {
            return std::string("unreadable device probe: ") + e.what();
        }
        if (m_settings.confineCandidates)
            cudaUserNamespace(); // asked here, once per process, rather than by the first runner started
    } else {
        req.argv = {hostCompiler(), "--version"};
        if (!runSubprocess(req).succeeded())
            return "host compiler '" + hostCompiler() + "' not found (set KSEARCH_CXX)";
    }
    return std::nullopt;
}

RunnerJob Evaluator::makeJob(const fs::path& library, const std::string& name, bool bench, bool python) const
{
    RunnerJob job;
    if (python)
        job.python = m_python;
    job.backend = m_settings.backend;
    job.library = library;
    job.layout = computeAbiLayout(m_task.definition);
    job.jobDir = m_settings.workDir / name;
    job.outputBuffers = m_outputBuffers;
    job.writeInputFiles = m_settings.writeInputFiles;
    job.bench = m_settings.bench;
    job.cudaVisibleDevices = m_settings.cudaVisibleDevices;
    job.allowTf32 = m_task.definition.precision.tf32;
    job.fileLimitBytes = m_settings.runnerFileLimitBytes;
    job.memoryLimitBytes = m_settings.runnerMemoryLimitBytes;
    job.processLimit = m_settings.runnerProcessLimit;
    job.gpuMemoryBudgetBytes = m_settings.gpuMemoryBudgetBytes;
    if (!m_task.dir.empty()) // its workloads.jsonl names the held-out shapes
        job.hiddenPaths = {m_task.dir};
    job.confine = m_settings.confineCandidates;
    job.bench.enabled = bench;
    for (const auto& w : m_workloads) {
        RunnerCall call;
        call.id = w->workload->uuid;
        call.inputs = w->inputSets[0];
        if (bench)
            call.timingInputs.assign(w->inputSets.begin() + 1, w->inputSets.end());
        call.outputs = w->outputTemplate;
        call.axes = w->workload->axes;
        call.workspaceBytes = w->workspaceBytes;
        call.poisonSeed = m_settings.seed ^ std::hash<std::string> {}(name + call.id);
        job.calls.push_back(std::move(call));
    }
    const auto perWorkload =
        std::chrono::milliseconds(static_cast<long>((m_settings.bench.maxSeconds * 3 + 10) * 1000));
    job.timeout = m_settings.runTimeout.count() > 0
        ? m_settings.runTimeout
        : std::chrono::milliseconds(30000) + perWorkload * static_cast<long>(m_workloads.size());
    return job;
}

bool Evaluator::prepare(Evaluation& e, const CompileCache::Result* reference, const CompileCache::Result* gpuReference,
    const CompileCache::Result* baseline)
{
    const Definition& def = m_task.definition;
    m_workloads.clear(); // an earlier attempt may have failed half-way
    std::vector<const Workload*> chosen;
    if (m_settings.workloadIds.empty()) {
        for (const auto& w : m_task.workloads)
            chosen.push_back(&w);
    } else {
        for (const auto& id : m_settings.workloadIds) {
            const Workload* w = m_task.workload(id);
            if (!w) {
                m_prepareError = "no workload '" + id + "' in " + def.name + " (or the prefix is ambiguous)";
                return false;
            }
            chosen.push_back(w);
        }
    }
    // Held-out workloads run last: nothing a candidate keeps from one of them (a size it printed
    // or stored) can reach the messages of a shown workload, which the code policy reads.
    std::stable_partition(chosen.begin(), chosen.end(), [&](const Workload* w) { return !def.holdsOut(w->uuid); });
    const auto inputStart = std::chrono::steady_clock::now();
    SharedPools pools; // KV pools: made once per trial for all workloads, held by their input sets
    for (const Workload* w : chosen) {
        auto data = std::make_shared<WorkloadData>();
        data->workload = w;
        InputGenerator gen(def, *w, m_settings.seed);
        // Each input set is generated once, in place, into sealed shared memory; every runner
        // of the search maps it.
        std::size_t setBytes = 0;
        try {
            data->inputSets.push_back(generateSharedInputs(gen, 0, &pools));
            for (const auto& t : data->inputSets.front())
                setBytes += t.memory ? t.memory->size() : 0;
            const int sets = std::max(1,
                setBytes * static_cast<std::size_t>(m_settings.timingSets) > m_settings.maxTimingBytes
                    ? 1
                    : m_settings.timingSets);
            for (int k = 1; k <= sets; ++k)
                data->inputSets.push_back(generateSharedInputs(gen, static_cast<std::uint32_t>(k), &pools));
        } catch (const std::exception& ex) {
            m_prepareError = "inputs of workload " + w->uuid + ": " + ex.what();
            return false;
        }
        data->outputTemplate = gen.describeOutputs();
        data->workspaceBytes = gen.workspaceBytes();
        if (def.costModel) {
            data->bytes = gen.evaluate(def.costModel->bytes).value_or(0);
            data->flops = gen.evaluate(def.costModel->flops).value_or(0);
        }
        data->gpuReference =
            gpuReference && m_settings.backend == Backend::Cuda && setBytes > m_settings.gpuReferenceBytes;
        data->expected.resize(data->inputSets.size());
        m_workloads.push_back(std::move(data));
    }

    // Expected outputs: one call per (workload, input set), in a runner of their own.
    m_inputSeconds = secondsSince(inputStart);
    spdlog::debug("inputs of {} workloads generated and shared in {:.2f} s", m_workloads.size(), m_inputSeconds);
    const auto refStart = std::chrono::steady_clock::now();
    for (const bool onGpu : {false, true}) {
        const CompileCache::Result* lib = onGpu ? gpuReference : reference;
        const bool python = lib && isPythonFile(lib->compile.library);
        if (python)
            if (const auto problem = preparePython()) {
                m_prepareError = *problem;
                return false;
            }
        RunnerJob job =
            makeJob(lib ? lib->compile.library : fs::path(), onGpu ? "reference-gpu" : "reference", false, python);
        // reference.py runs where the candidates do (PyTorch on the GPU or the CPU).
        job.backend = onGpu ? Backend::Cuda : python ? m_settings.backend : Backend::Host;
        job.calls.clear();
        std::vector<std::pair<WorkloadData*, std::size_t>> where;
        for (auto& w : m_workloads) {
            if (w->gpuReference != onGpu)
                continue;
            for (std::size_t k = 0; k < w->inputSets.size(); ++k) {
                RunnerCall call;
                call.id = w->workload->uuid + "#" + std::to_string(k);
                call.inputs = w->inputSets[k];
                call.outputs = w->outputTemplate;
                call.axes = w->workload->axes;
                call.workspaceBytes = w->workspaceBytes;
                call.poisonSeed = m_settings.seed + k;
                job.calls.push_back(std::move(call));
                where.emplace_back(w.get(), k);
            }
        }
        if (job.calls.empty())
            continue;
        job.timeout = std::chrono::minutes(10);
        double waited = 0.0, exitWait = 0.0;
        const RunnerJobResult r = runOnDevice(job, waited, exitWait);
        const std::string label = onGpu ? "reference.cu" : python ? "reference.py" : "reference.cpp";
        if (!r.harnessFailure.empty()) {
            m_prepareError = label + ": " + r.harnessFailure;
            return false;
        }
        if (!r.loadError.empty()) {
            m_prepareError = label + ": " + r.loadError;
            return false;
        }
        for (std::size_t i = 0; i < where.size(); ++i) {
            if (const auto failure = failureOf(r.calls[i])) {
                m_prepareError =
                    label + " failed on workload " + where[i].first->workload->uuid + ": " + failure->second;
                return false;
            }
            where[i].first->expected[where[i].second] = std::move(r.calls[i].outputs);
        }
    }
    m_referenceSeconds = secondsSince(refStart);

    // The baseline is timed once, in the same way as every candidate after it.
    const auto baseStart = std::chrono::steady_clock::now();
    if (baseline) {
        RunnerJob job = makeJob(baseline->compile.library, "baseline", true, isPythonFile(baseline->compile.library));
        job.measureDevice = true; // once per search: the floor of every later candidate uses it
        double waited = 0.0, exitWait = 0.0;
        const RunnerJobResult r = runOnDevice(job, waited, exitWait);
        if (!r.harnessFailure.empty()) { // without the baseline's times there is no J
            m_prepareError = "the baseline: " + r.harnessFailure;
            return false;
        }
        m_copyBandwidthGBs = r.environment.copyBandwidthGBs;
        if (!r.environment.device.empty())
            m_device = r.environment.device;
        for (std::size_t i = 0; i < m_workloads.size(); ++i) {
            auto& w = *m_workloads[i];
            const auto& o = r.calls[i];
            // The log reaches the code policy: a held-out workload is not named there.
            const bool heldOut = def.holdsOut(w.workload->uuid);
            const std::string which =
                heldOut ? std::string("a held-out workload") : "workload " + shortId(w.workload->uuid);
            if (const auto failure = failureOf(o)) {
                e.log += "baseline failed on " + which + ": "
                    + (heldOut ? std::string("(details not shown)") : failure->second) + "\n";
                continue;
            }
            const auto c = compareOutput(o.outputs.at(0).view(), w.expected[0].at(0).view(), def.tolerance);
            if (!c.passed)
                e.log += "baseline disagrees with the reference on " + which + ": "
                    + (heldOut ? std::string("(details not shown)") : describeComparison(c)) + "\n";
            w.baselineMicros = o.bench.medianMicros;
        }
    }
    m_baselineSeconds = secondsSince(baseStart);
    m_prepared = true;
    return true;
}

Evaluation Evaluator::evaluate(const fs::path& source)
{
    const auto start = std::chrono::steady_clock::now();
    Evaluation e;
    // Another evaluator of this device may be preparing the task: wait for it and adopt its work,
    // or prepare it here (holding the share) and publish it.
    std::unique_lock<std::mutex> sharing;
    if (!m_prepared && m_settings.preparation) {
        sharing = std::unique_lock(m_settings.preparation->mutex);
        if (adoptPreparation())
            sharing.unlock();
    }
    const std::string header = generateAbiHeader(m_task.definition);
    auto request = [&](const fs::path& src, Backend b, std::vector<std::string> flags) {
        CompileRequest r;
        r.backend = b;
        r.source = src;
        r.abiHeader = header;
        r.cudaArch = m_settings.cudaArch;
        r.extraFlags = std::move(flags);
        r.timeout = m_settings.compileTimeout;
        r.confine = m_settings.confineCandidates;
        if (!m_task.dir.empty()) // its workloads.jsonl names the held-out shapes
            r.hiddenPaths = {m_task.dir};
        return r;
    };
    // The candidate and, the first time, the reference(s) and baseline compile side by side.
    std::vector<CompileRequest> requests {request(source, m_settings.backend, m_settings.extraFlags)};
    int refIndex = -1, gpuRefIndex = -1, baseIndex = -1;
    // reference.py runs as it is, in the Python runner: nothing to compile.
    std::optional<CompileCache::Result> pyReference, pyBaseline;
    const auto asIs = [](const fs::path& file) {
        CompileCache::Result r;
        r.compile.ok = true;
        r.compile.library = file;
        return r;
    };
    if (!m_prepared) {
        m_prepareError.clear(); // a harness failure of an earlier attempt is tried again
        if (m_task.files.referenceCpp) {
            refIndex = static_cast<int>(requests.size());
            requests.push_back(request(*m_task.files.referenceCpp, Backend::Host, {}));
        } else if (m_task.files.referencePy) {
            pyReference = asIs(*m_task.files.referencePy);
        }
        if (m_settings.backend == Backend::Cuda && m_task.files.referenceCu) {
            gpuRefIndex = static_cast<int>(requests.size());
            requests.push_back(request(*m_task.files.referenceCu, Backend::Cuda, {}));
        }
        const auto& baselineFile =
            m_settings.backend == Backend::Cuda ? m_task.files.baselineCu : m_task.files.baselineCpp;
        if (const auto timed = baselineSource(); timed && isPythonFile(*timed)) {
            pyBaseline = asIs(*timed);
            e.log += "no baseline for this backend: the PyTorch reference (reference.py) is timed as the baseline\n";
        } else if (timed) {
            baseIndex = static_cast<int>(requests.size());
            requests.push_back(request(*timed, m_settings.backend, {}));
            if (!baselineFile)
                e.log += "no baseline for this backend: the reference is timed as the baseline\n";
        }
    }
    startNextRunner(); // comes up while the candidate compiles
    const auto compileStart = std::chrono::steady_clock::now();
    const bool python = isPythonLanguage(m_language);
    std::vector<CompileCache::Result> compiled;
    if (python) { // the candidate is parsed, not compiled: never cached (it takes a fraction of a second)
        compiled.reserve(requests.size());
        compiled.push_back(checkPython(requests[0]));
        startNextRunner(); // the first time, the Python runtime is ready only now
        for (auto& r : m_cache.compileAll({requests.begin() + 1, requests.end()}))
            compiled.push_back(std::move(r));
    } else {
        compiled = m_cache.compileAll(requests);
    }
    e.compileSeconds = secondsSince(compileStart);
    const CompileCache::Result& candidate = compiled[0];
    e.compileCached = candidate.cached;
    for (const auto& c : compiled)
        warnOnceAboutGaps("compilers", c.compile.confinementGaps); // they run the untrusted source
    for (const auto& k : candidate.compile.resources)
        e.resources.push_back(
            {k.kernel, k.registers, k.sharedBytes, k.spillStoreBytes + k.spillLoadBytes, k.stackBytes});

    if (!m_prepared) {
        for (const int i : {refIndex, gpuRefIndex, baseIndex})
            if (i >= 0 && !compiled[static_cast<std::size_t>(i)].compile.ok)
                m_prepareError = requests[static_cast<std::size_t>(i)].source.string() + ": does not compile:\n"
                    + compiled[static_cast<std::size_t>(i)].compile.log;
        auto at = [&](int i) { return i >= 0 ? &compiled[static_cast<std::size_t>(i)] : nullptr; };
        if (m_prepareError.empty())
            prepare(e, pyReference ? &*pyReference : at(refIndex), at(gpuRefIndex),
                pyBaseline ? &*pyBaseline : at(baseIndex));
        if (m_prepared && sharing.owns_lock())
            publishPreparation();
    }
    if (sharing.owns_lock())
        sharing.unlock();
    e.inputSeconds = m_inputSeconds;
    e.referenceSeconds = m_referenceSeconds;
    e.baselineSeconds = m_baselineSeconds;
    e.device = m_device;
    e.copyBandwidthGBs = m_copyBandwidthGBs;
    auto endsHere = [&](Verdict v, const std::string& log) { // nothing of the candidate's ran
        e.status = v;
        e.log += log;
        e.totalSeconds = secondsSince(start);
        return e;
    };
    if (!m_prepared)
        return endsHere(Verdict::HarnessError, "the task could not be prepared: " + m_prepareError + "\n");
    if (python && m_pythonProblem) // no interpreter, torch or triton: not the candidate's doing
        return endsHere(Verdict::HarnessError, *m_pythonProblem + "\n");
    if (!candidate.compile.ok)
        return endsHere(Verdict::CompileError, candidate.compile.log);
    if (m_sanitizeWith) {
        runSanitized(candidate.compile.library);
        return endsHere(Verdict::RuntimeError, "run under compute-sanitizer: not judged\n");
    }
    const auto runStart = std::chrono::steady_clock::now();
    RunnerJob job = makeJob(candidate.compile.library, "candidate-" + std::to_string(++m_jobCounter), true, python);
    for (auto& call : job.calls)
        call.repeat = true;
    double waited = 0.0, exitWait = 0.0;
    const RunnerJobResult run = runOnDevice(job, waited, exitWait, std::move(m_nextRunner));
    m_runsStartedAhead += run.startedAhead ? 1 : 0;
    e.candidateSeconds = secondsSince(runStart);
    startNextRunner(); // comes up while this one is judged and the next is written
    if (run.environment.copyBandwidthGBs > 0)
        e.copyBandwidthGBs = run.environment.copyBandwidthGBs;
    if (!run.environment.device.empty())
        e.device = run.environment.device;
    if (run.harnessFailure.empty()) {
        e.confinement = confinementOf(run.environment, m_settings.backend);
        if (!python) // a Python candidate is not compiled (Triton compiles in its runner)
            e.confinement->compilerConfined = candidate.compile.confinementGaps.empty();
        warnOnceAboutConfinement(*e.confinement, m_settings.backend, python);
    }
    const auto judgeStart = std::chrono::steady_clock::now();
    if (!run.harnessFailure.empty()) {
        e.status = Verdict::HarnessError;
        e.log += "harness: " + run.harnessFailure + "\n";
    } else {
        judge(e, run);
    }
    double callsWall = 0.0, warmup = 0.0, loops = 0.0; // as the runner reported them, verdicts aside
    for (const auto& c : run.calls) {
        callsWall += c.totalSeconds;
        warmup += c.bench.warmupSeconds;
        loops += c.bench.loopSeconds;
    }
    e.phases = {{"write_job", run.writeSeconds}, {"runner_startup", run.startupSeconds},
        {"calls_untimed", std::max(0.0, callsWall - loops - warmup)}, {"warmup", warmup}, {"timing_loops", loops},
        {"previous_runner_exit", exitWait},
        {"runner_exit", std::max(0.0, run.processSeconds - run.startupSeconds - callsWall)},
        {"read_results", run.readSeconds}, {"compare", secondsSince(judgeStart)},
        {"device_wait", waited}}; // queueing behind other evaluators of the device: not device time
    for (const auto& c : run.calls) // calls_untimed in parts, where the runner reports them
        for (const auto& [part, seconds] : c.untimedSeconds)
            e.phases["untimed." + part] += seconds;
    if (m_settings.sanitizeFailures && !m_sanitizeWith
        && (e.status == Verdict::RuntimeError || e.status == Verdict::IncorrectNumerical))
        sanitizeFailure(source, e);
    e.totalSeconds = secondsSince(start);
    spdlog::debug("evaluated {}: {} J={:.1f} in {:.2f} s (compile {:.2f} s, run {:.2f} s)", source.string(),
        verdictName(e.status), e.score, e.totalSeconds, e.compileSeconds, e.candidateSeconds);
    return e;
}

std::optional<fs::path> Evaluator::baselineSource() const
{
    const auto& f = m_task.files;
    const bool cuda = m_settings.backend == Backend::Cuda;
    // The backend's baseline, else its compiled reference, else FlashInfer-Bench's own yardstick.
    for (const auto& file : {cuda ? f.baselineCu : f.baselineCpp, cuda ? f.referenceCu : f.referenceCpp, f.referencePy})
        if (file)
            return file;
    return std::nullopt;
}

void Evaluator::startNextRunner()
{
    const bool python = isPythonLanguage(m_language);
    // Not before the task is prepared: a runner coming up (a device context, torch's import)
    // must not hold the device or the CPU while the reference runs and the baseline is timed.
    // Not on a GPU in an exclusive compute mode: there one context at a time is all it allows.
    if (m_nextRunner || !m_settings.prestartRunners || !m_prepared || m_exclusiveDevice
        || (python && m_python.script.empty()))
        return;
    RunnerKind kind;
    kind.backend = m_settings.backend;
    kind.cudaVisibleDevices = m_settings.cudaVisibleDevices;
    kind.confined = m_settings.confineCandidates;
    if (python)
        kind.python = m_python;
    m_nextRunner = std::make_unique<PrestartedRunner>(std::move(kind));
}

bool Evaluator::needsPython() const
{
    const auto timed = baselineSource();
    return isPythonLanguage(m_language) || !m_task.files.referenceCpp || (timed && isPythonFile(*timed));
}

std::optional<std::string> Evaluator::preparePython()
{
    if (!m_python.script.empty())
        return std::nullopt;
    const PythonProbe probe = startPythonRuntime(
        m_python, m_settings.workDir, m_language == Language::Triton, m_settings.backend == Backend::Cuda);
    if (!probe.problem.empty()) {
        const bool forReference = !isPythonLanguage(m_language);
        return forReference ? "the task's PyTorch reference (reference.py) needs Python: " + probe.problem
                            : probe.problem;
    }
    m_pythonVersions = "Python " + probe.python + ", torch " + probe.torch
        + (probe.triton.empty() ? std::string() : ", triton " + probe.triton);
    return std::nullopt;
}

CompileCache::Result Evaluator::checkPython(const CompileRequest& request)
{
    CompileCache::Result r;
    m_pythonProblem = preparePython(); // evaluate() without environmentProblem() first
    if (m_pythonProblem) {
        r.compile.log = *m_pythonProblem;
        return r;
    }
    CompileRequest req = request;
    req.workDir = m_settings.workDir / ("python-candidate-" + std::to_string(m_jobCounter + 1));
    r.compile = checkPythonSource(m_python, req);
    return r;
}

namespace {

// The second correctness call, made with other noise in the outputs and workspace. Results the
// same bit for bit are the rule; different ones must still pass the whole comparison (atomics
// may reorder a sum), else the kernel read memory it never wrote and was right by the poison.
void checkRepeat(
    WorkloadEvaluation& r, const RunnerCallOutcome& o, const std::vector<SharedTensor>& expected, const Tolerance& tol)
{
    for (std::size_t k = 0; k < o.repeatOutputs.size() && k < o.outputs.size() && r.status == Verdict::Passed; ++k) {
        const auto first = o.outputs[k].view().data;
        const auto again = o.repeatOutputs[k].view().data;
        if (first.size() == again.size() && std::memcmp(first.data(), again.data(), first.size()) == 0)
            continue;
        r.bitwiseRepeatable = false;
        const auto c = compareOutput(o.repeatOutputs[k].view(), expected[k].view(), tol);
        if (c.passed)
            continue;
        r.status = Verdict::IncorrectNumerical;
        r.message = "correct on the first call but wrong on a second call with the same inputs and other noise in "
                    "its outputs and workspace: "
            + describeComparison(c)
            + " -- results must not depend on memory the kernel did not write (uninitialised output, workspace or "
              "shared memory), nor be skipped after the first call";
    }
}

} // namespace

void Evaluator::judge(Evaluation& e, const RunnerJobResult& run) const
{
    const Tolerance& tol = m_task.definition.tolerance;
    if (!run.loadError.empty()) {
        e.status = Verdict::RuntimeError;
        e.log += "cannot load the kernel: " + run.loadError + "\n";
        return;
    }
    std::vector<double> latencies, baselines;
    bool allPassed = true;
    const std::vector<std::string>& scoredIds = m_task.definition.scoredWorkloads;
    const auto listed = [&](const WorkloadData& w) {
        return std::find(scoredIds.begin(), scoredIds.end(), w.workload->uuid) != scoredIds.end();
    };
    const auto heldOut = [&](const WorkloadData& w) { return m_task.definition.holdsOut(w.workload->uuid); };
    // A run of unscored workloads only (--workloads picked test shapes) is scored over them all.
    const bool anyListed =
        std::any_of(m_workloads.begin(), m_workloads.end(), [&](const auto& w) { return listed(*w); });
    const bool anyShown =
        std::any_of(m_workloads.begin(), m_workloads.end(), [&](const auto& w) { return !heldOut(*w); });
    for (std::size_t i = 0; i < m_workloads.size(); ++i) {
        const WorkloadData& w = *m_workloads[i];
        const RunnerCallOutcome& o = run.calls[i];
        WorkloadEvaluation r;
        r.id = w.workload->uuid;
        r.heldOut = heldOut(w);
        r.scored = (!anyListed || listed(w)) && (!r.heldOut || !anyShown);
        r.baselineLatencyMicros = w.baselineMicros;
        const double bandwidth =
            run.environment.copyBandwidthGBs > 0 ? run.environment.copyBandwidthGBs : m_copyBandwidthGBs;
        if (m_settings.backend == Backend::Cuda && bandwidth > 0)
            r.floorMicros = std::max(w.bytes / (bandwidth * 1e9), w.flops / kPeakFlopsCuda) * 1e6;
        auto fail = [&](Verdict v, const std::string& why) {
            r.status = v;
            r.message = why;
        };
        if (const auto failure = failureOf(o)) {
            fail(failure->first, failure->second);
        } else if (!o.inputsUnchanged || !o.bench.inputsUnchanged) {
            fail(Verdict::Rejected, "modified its inputs (inputs are read-only)");
        } else if (const auto library = kernelLibraryAmong(o.loadedLibraries)) {
            fail(Verdict::Rejected,
                "loaded " + *library + ", a kernel library: the candidate's own code must do the work");
        } else {
            r.status = Verdict::Passed;
            for (std::size_t k = 0; k < o.outputs.size(); ++k) {
                const auto c = compareOutput(o.outputs[k].view(), w.expected[0][k].view(), tol);
                r.maxAbsError = std::max(r.maxAbsError, c.maxAbsError);
                r.maxRelError = std::max(r.maxRelError, c.maxRelError);
                if (c.total)
                    r.matchedRatio =
                        std::min(r.matchedRatio, static_cast<double>(c.matched) / static_cast<double>(c.total));
                if (!c.passed && r.status == Verdict::Passed)
                    fail(
                        c.shapeMismatch ? Verdict::IncorrectShape : Verdict::IncorrectNumerical, describeComparison(c));
            }
            checkRepeat(r, o, w.expected[0], tol);
            // The timing loop's final round, checked: each timing set on its own inputs (results
            // produced inside the loop), then each set's buffers refilled with the next set's inputs
            // (the first call's when there is one set): cached, replayed or deferred results fail.
            // These outputs are sampled (an eighth of the elements of large outputs, blocks drawn
            // now, after the run): the first call's were compared whole, and a result that is
            // cached, replayed or skipped inside the loop is wrong on a large part of the output.
            const std::size_t sets = o.timingOutputs.size();
            const Sampling sampling {8, (std::uint64_t {std::random_device {}()} << 32) ^ std::random_device {}()};
            auto verify = [&](const std::vector<SharedTensor>& got, const std::vector<SharedTensor>& want,
                              const std::string& where) {
                for (std::size_t k = 0; k < got.size() && r.status == Verdict::Passed; ++k) {
                    const auto c = compareOutput(got[k].view(), want[k].view(), tol, sampling);
                    if (!c.passed)
                        fail(Verdict::IncorrectNumerical,
                            "correct on the first call but wrong inside the timing loop (" + where + "): "
                                + describeComparison(c) + " -- results must not be cached, replayed or deferred");
                }
            };
            for (std::size_t s = 0; s < sets; ++s)
                verify(o.timingOutputs[s], w.expected[s + 1], "input set " + std::to_string(s + 1));
            for (std::size_t s = 0; s < o.swappedOutputs.size(); ++s)
                verify(o.swappedOutputs[s], sets > 1 ? w.expected[(s + 1) % sets + 1] : w.expected[0],
                    "input set " + std::to_string(s + 1) + " refilled with other inputs");
            r.latencyMicros = o.bench.medianMicros;
            r.p25Micros = o.bench.p25Micros;
            r.p75Micros = o.bench.p75Micros;
            r.samples = static_cast<int>(o.bench.samplesMicros.size());
            r.sideWorkSamples = o.bench.sideWorkSamples;
            r.deviceSpanMicros = o.bench.spanMedianMicros;
            e.timedGpuSeconds += o.bench.loopSeconds + o.bench.warmupSeconds;
            if (r.status == Verdict::Passed && r.floorMicros > 0
                && r.latencyMicros < m_settings.floorSlack * r.floorMicros)
                fail(Verdict::Rejected,
                    "median " + fmt(r.latencyMicros) + " us is below the physical floor of " + fmt(r.floorMicros)
                        + " us (cost model at the measured bandwidth): a measurement error or a cheat");
            if (r.latencyMicros > 0) {
                r.speedup = r.baselineLatencyMicros > 0 ? r.baselineLatencyMicros / r.latencyMicros : 0.0;
                r.rooflineFraction = r.floorMicros > 0 ? r.floorMicros / r.latencyMicros : 0.0;
            }
        }
        if (r.status != Verdict::Passed && allPassed) {
            e.status = r.status;
            allPassed = false;
        }
        if (r.scored) {
            latencies.push_back(r.latencyMicros);
            baselines.push_back(r.baselineLatencyMicros);
        }
        e.workloads.push_back(std::move(r));
    }
    e.latencyMicros = allPassed ? geometricMean(latencies) : 0.0;
    e.baselineLatencyMicros = geometricMean(baselines);
    if (allPassed) {
        e.status = Verdict::Passed;
        e.score = e.latencyMicros > 0 && e.baselineLatencyMicros > 0 ? 100.0 * e.baselineLatencyMicros / e.latencyMicros
                                                                     : 0.0;
    }
    // The log is what the code policy reads next: failures first, then the per-workload numbers.
    std::string failures, table;
    for (const auto& r : e.workloads) {
        // The code policy reads the log: a held-out workload's id, figures and messages (which may
        // name sizes) would show its shape. A person sees them in the workload table.
        if (r.heldOut) {
            if (r.status != Verdict::Passed)
                failures += "a held-out workload: " + std::string(verdictName(r.status))
                    + " (its shape is not shown: the program must hold for shapes other than those listed)\n";
            continue;
        }
        if (r.status != Verdict::Passed)
            failures += "workload " + shortId(r.id) + ": " + std::string(verdictName(r.status)) + ": "
                + r.message.substr(0, 600) + "\n";
        else
            table += "workload " + shortId(r.id) + ": " + fmt(r.latencyMicros) + " us (baseline "
                + fmt(r.baselineLatencyMicros) + " us, speedup " + fmt(r.speedup, 2) + "x"
                + (r.floorMicros > 0 ? ", " + fmt(100 * r.rooflineFraction, 1) + "% of roofline" : "")
                + (r.scored ? "" : ", checked only: not in J")
                + (r.bitwiseRepeatable ? "" : ", results differ bit for bit between two calls") + ")\n";
    }
    e.log += failures + table;
    for (const auto& k : e.resources)
        e.log += "kernel " + kernelDisplayName(k.kernel).substr(0, 60) + ": " + std::to_string(k.registers)
            + " registers, " + std::to_string(k.sharedBytes) + " B shared, " + std::to_string(k.stackBytes)
            + " B stack, " + std::to_string(k.spillBytes) + " B spilled\n";
}

} // namespace ks
