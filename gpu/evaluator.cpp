#include "evaluator.h"

#include "devicequeue.h"
#include "evaluatorinternal.h"
#include "subprocess.h"

#include <task/abiheader.h>
#include <task/comparison.h>
#include <task/inputgenerator.h>
#include <task/kernellibraries.h>
#include <util/elapsed.h>

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

namespace evaluatordetail {

namespace {

// The device's queue. The host backend has one (its candidates use every core). An empty device
// is the default GPU, which is "0" unless CUDA_VISIBLE_DEVICES says more.
DeviceQueue& deviceQueue(const RunnerJob& job)
{
    return DeviceQueue::of(job.backend == Backend::Cuda ? "cuda:" + job.cudaVisibleDevices : "host");
}

} // namespace

RunnerJobResult runOnDevice(
    const RunnerJob& job, double& waited, double& exitWait, std::unique_ptr<PrestartedRunner> runner)
{
    DeviceQueue& queue = deviceQueue(job);
    const DeviceQueue::Turn turn = queue.take();
    waited += turn.queuedSeconds;
    exitWait += turn.exitSeconds;
    RunnerJobResult result = runRunnerJob(job, std::move(runner));
    queue.leaveExiting(std::move(result.exiting));
    return result;
}

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

bool isPythonFile(const fs::path& file)
{
    return file.extension() == ".py";
}

std::string shortId(const std::string& id)
{
    return id.substr(0, 8);
}

} // namespace evaluatordetail

using evaluatordetail::isPythonFile;
using evaluatordetail::runOnDevice;

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
    int refIndex = -1;
    int gpuRefIndex = -1;
    int baseIndex = -1;
    // reference.py runs as it is, in the Python runner: nothing to compile.
    std::optional<CompileCache::Result> pyReference;
    std::optional<CompileCache::Result> pyBaseline;
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
    double waited = 0.0;
    double exitWait = 0.0;
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
    double callsWall = 0.0;
    double warmup = 0.0;
    double loops = 0.0; // as the runner reported them, verdicts aside
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

} // namespace ks
