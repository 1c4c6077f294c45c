// Evaluator::prepare: the task's inputs, the reference's outputs and the baseline's timing, made
// once per evaluator (or adopted from another evaluator of the same device: SharedPreparation).

#include "evaluatorinternal.h"

#include <task/comparison.h>
#include <task/inputgenerator.h>
#include <util/elapsed.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

namespace ks {

namespace fs = std::filesystem;
using evaluatordetail::failureOf;
using evaluatordetail::isPythonFile;
using evaluatordetail::runOnDevice;
using evaluatordetail::shortId;

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
        double waited = 0.0;
        double exitWait = 0.0;
        RunnerJobResult r = runOnDevice(job, waited, exitWait); // its outputs move into expected
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
        double waited = 0.0;
        double exitWait = 0.0;
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

} // namespace ks
