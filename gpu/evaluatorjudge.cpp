// Evaluator::judge: a candidate's run against the reference's outputs, its timing against the
// baseline's and the floor; the verdict, J, and the log the code policy reads next.

#include "evaluatorinternal.h"

#include <task/comparison.h>
#include <task/kernellibraries.h>
#include <util/numberformat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace ks {

using evaluatordetail::failureOf;
using evaluatordetail::shortId;

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

namespace {

// Generous upper bound of a Hopper GPU's dense arithmetic rate (fp8 tensor cores): only a
// compute floor that no kernel of any precision can beat.
constexpr double kPeakFlopsCuda = 2.0e15;

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
    std::vector<double> latencies;
    std::vector<double> baselines;
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
                    "median " + formatFixed(r.latencyMicros, 3) + " us is below the physical floor of "
                        + formatFixed(r.floorMicros, 3)
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
    std::string failures;
    std::string table;
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
            table += "workload " + shortId(r.id) + ": " + formatFixed(r.latencyMicros, 3) + " us (baseline "
                + formatFixed(r.baselineLatencyMicros, 3) + " us, speedup " + formatFixed(r.speedup, 2) + "x"
                + (r.floorMicros > 0 ? ", " + formatFixed(100 * r.rooflineFraction, 1) + "% of roofline" : "")
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
