#pragma once

#include "confinement.h"
#include "sanitizerreport.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

// FlashInfer-Bench's status names, plus REJECTED (a cheat or a physically impossible timing) and
// HARNESS_ERROR: the evaluator failed before the candidate's code was loaded (no GPU, a runner
// that could not start or died before loading it, a task that could not be prepared, a full
// disk), so the result says nothing about the candidate. A search never records or scores one:
// it evaluates the candidate again once, then pauses with the reason (docs/evaluation.md).
enum class Verdict {
    Passed,
    IncorrectNumerical,
    IncorrectShape,
    RuntimeError,
    CompileError,
    Timeout,
    Rejected,
    HarnessError
};

std::string_view verdictName(Verdict v);
std::optional<Verdict> parseVerdict(std::string_view name);

struct WorkloadEvaluation {
    std::string id;
    Verdict status = Verdict::RuntimeError;
    std::string message; // why it did not pass, short enough for an LLM prompt
    double maxAbsError = 0.0, maxRelError = 0.0;
    double matchedRatio = 1.0; // lowest share of elements within tolerance over the outputs
    double latencyMicros = 0.0; // median of the timed samples
    double p25Micros = 0.0, p75Micros = 0.0;
    int samples = 0;
    int sideWorkSamples = 0;
    double deviceSpanMicros = 0.0; // median CUPTI span of the timed calls' device work; 0 when not traced
    double baselineLatencyMicros = 0.0;
    double speedup = 0.0; // baseline / candidate
    double floorMicros = 0.0; // roofline floor from the cost model; 0 when unknown
    double rooflineFraction = 0.0; // floor / latency
    bool scored = true; // counted in J (definition.json's scored_workloads); verified either way
    bool heldOut = false; // never shown to the code policy (held_out_workloads); not in J
    // Whether the second correctness call (same inputs, other poison in the outputs and workspace)
    // gave the first call's results bit for bit. False and still PASSED: both within tolerance,
    // as with floating-point atomics; false and failed: it read memory it never wrote.
    bool bitwiseRepeatable = true;
};

// What ptxas reported for one kernel of a CUDA candidate (`-Xptxas -v`).
struct KernelResourceUsage {
    std::string kernel; // as ptxas names it: mangled for C++ kernels
    int registers = 0;
    long sharedBytes = 0, spillBytes = 0; // static shared memory; spill stores plus loads
    long stackBytes = 0; // the stack frame (local arrays, spills, ABI calls)
};

// A kernel's name as a person reads it: demangled, without its parameter list, its return type
// or the anonymous namespace ("(anonymous namespace)::scale<4>(float*, int)" -> "scale<4>");
// a name that is not mangled comes back as it is.
std::string kernelDisplayName(const std::string& mangled);

// The observation o = (s, p, m) of one candidate.
struct Evaluation {
    Verdict status = Verdict::CompileError;
    double score = 0.0; // J = s * p_ref / p * 100
    double latencyMicros = 0.0; // geometric mean over the scored workloads
    double baselineLatencyMicros = 0.0; // geometric mean over the same workloads
    std::string log; // compile errors, mismatch details, resource usage
    std::vector<WorkloadEvaluation> workloads;
    std::vector<KernelResourceUsage> resources;
    std::string device;
    double copyBandwidthGBs = 0.0;
    bool compileCached = false;
    // Where the time went, in seconds.
    double compileSeconds = 0.0, inputSeconds = 0.0, referenceSeconds = 0.0, baselineSeconds = 0.0,
           candidateSeconds = 0.0;
    double timedGpuSeconds = 0.0; // the candidate's timing loops and warm-up calls
    double totalSeconds = 0.0;
    // The candidate's run, phase by phase (seconds): write_job, runner_startup, calls_untimed
    // (inputs, correctness calls and outputs inside the runner), warmup, timing_loops, runner_exit
    // (the rest of the process's life), read_results, compare; and device_wait, the time it queued
    // behind other evaluators of the same device before its runner started.
    std::map<std::string, double> phases;
    // How the candidate's process was confined; nullopt where nothing of it ran (a compile
    // error) or the evaluation predates the record.
    std::optional<Confinement> confinement;
    // compute-sanitizer on one call of a CUDA candidate that crashed or computed wrong results,
    // when the search asked for it (EvaluatorSettings::sanitizeFailures): shown to the code
    // policy in its debug prompt and to a person in the inspector.
    std::optional<SanitizerReport> sanitizer;
};

nlohmann::json toJson(const Evaluation& e);
Evaluation evaluationFromJson(const nlohmann::json& j); // reads what toJson wrote

} // namespace ks
