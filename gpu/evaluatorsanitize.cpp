// Evaluator::sanitize: a candidate's call under compute-sanitizer (issue #15 point 7), beside
// evaluate() because it shares its compilation and preparation but none of its judging.

#include "evaluator.h"
#include "evaluatorinternal.h"
#include "sanitizer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace ks {

namespace fs = std::filesystem;

SanitizerReport Evaluator::sanitize(const fs::path& source, SanitizerTool tool)
{
    struct Reset { // however it ends, the next evaluation or sanitizer run is an ordinary one
        Evaluator* self;
        ~Reset()
        {
            self->m_sanitizeWith.reset();
            self->m_sanitizeConfined = false;
            self->m_sanitizeWorkload.clear();
        }
    } reset {this};
    SanitizerReport report;
    report.tool = tool;
    if (m_settings.backend != Backend::Cuda || m_language != Language::Cuda) {
        report.problem = "compute-sanitizer checks CUDA kernels on the cuda backend; this is a "
            + std::string(languageName(m_language)) + " candidate on the "
            + std::string(backendName(m_settings.backend)) + " backend";
        return report;
    }
    m_sanitizerProgram = computeSanitizerPath();
    if (m_sanitizerProgram.empty()) {
        report.problem = "compute-sanitizer was not found (it ships with the CUDA toolkit: beside nvcc, in "
                         "/usr/local/cuda/bin, or on PATH; KSEARCH_COMPUTE_SANITIZER names it)";
        return report;
    }
    m_sanitizeWith = tool;
    m_sanitized.reset();
    const Evaluation e = evaluate(source);
    if (m_sanitized)
        return *m_sanitized;
    // Nothing ran: the candidate did not compile, or the task could not be prepared.
    report.problem = std::string(verdictName(e.status)) + ": " + e.log.substr(0, 2000);
    return report;
}

void Evaluator::sanitizeFailure(const fs::path& source, Evaluation& e)
{
    if (m_settings.backend != Backend::Cuda || m_language != Language::Cuda)
        return; // the tools check CUDA kernels only
    const auto start = std::chrono::steady_clock::now();
    // No person asked for this run of model-written code: confined as every other run (but for
    // the network, which the tool needs), on the first workload it failed that the code policy
    // may be shown.
    m_sanitizeConfined = true;
    for (const WorkloadEvaluation& w : e.workloads)
        if (w.status != Verdict::Passed && !w.heldOut) {
            m_sanitizeWorkload = w.id;
            break;
        }
    SanitizerReport report = sanitize(source, *m_settings.sanitizeFailures);
    e.phases["sanitizer"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report.complete && report.findings.empty()) {
        if (!m_sanitizerMissingSaid) {
            spdlog::warn("failed candidates are not run under compute-sanitizer: {}", report.problem);
            m_sanitizerMissingSaid = true;
        }
        return;
    }
    e.log += "compute-sanitizer --tool " + std::string(sanitizerToolName(report.tool)) + ": "
        + (report.complete ? std::to_string(report.errors) + " error(s)" : std::string("no complete report"))
        + " (the evaluation's sanitizer report)\n";
    e.sanitizer = std::move(report);
}

void Evaluator::runSanitized(const fs::path& library)
{
    RunnerJob job = makeJob(library, "sanitize-" + std::to_string(++m_jobCounter), false);
    // One call: of the workload asked for, else the first the code policy may be shown.
    auto pick = std::find_if(job.calls.begin(), job.calls.end(), [&](const RunnerCall& c) {
        return m_sanitizeWorkload.empty() ? !m_task.definition.holdsOut(c.id) : c.id == m_sanitizeWorkload;
    });
    if (pick == job.calls.end()) {
        if (m_sanitizeConfined) { // only held-out workloads: nothing of them may reach the code policy
            SanitizerReport none;
            none.tool = *m_sanitizeWith;
            none.problem = "every workload of the run is held out from the code policy";
            m_sanitized = std::move(none);
            return;
        }
        pick = job.calls.begin();
    }
    std::rotate(job.calls.begin(), pick, pick + 1);
    job.calls.resize(1);
    job.wrapper = sanitizerCommand(m_sanitizerProgram, *m_sanitizeWith);
    job.wrapperConfined = m_sanitizeConfined;
    // The tools slow kernels by one to two orders of magnitude, and start slowly themselves; a
    // run for the code policy gets at most 3 minutes of a search's time.
    job.timeout = m_settings.runTimeout.count() > 0 ? m_settings.runTimeout : std::chrono::minutes(10);
    if (m_sanitizeConfined)
        job.timeout = std::min<std::chrono::milliseconds>(job.timeout, std::chrono::minutes(3));
    double queued = 0.0; // a sanitizer run's phases are its own: not reported
    double exitWait = 0.0;
    const RunnerJobResult run = evaluatordetail::runOnDevice(job, queued, exitWait);
    SanitizerReport report = readSanitizerOutput(*m_sanitizeWith, run.process);
    report.workload = job.calls[0].id;
    const RunnerCallOutcome& call = run.calls[0];
    if (!run.harnessFailure.empty()) {
        report.complete = false;
        report.problem = "harness: " + run.harnessFailure;
    } else if (!run.loadError.empty()) {
        report.verdict = "cannot load the kernel: " + run.loadError;
    } else {
        report.verdict =
            runnerStatusName(call.status) + (call.message.empty() ? "" : ": " + call.message.substr(0, 600));
    }
    m_sanitized = std::move(report);
}

} // namespace ks
