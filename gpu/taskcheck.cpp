#include "taskcheck.h"

#include "compiler.h"
#include "runnerclient.h"

#include <task/abiheader.h>
#include <task/comparison.h>
#include <task/inputgenerator.h>

#include <algorithm>

namespace ks {

namespace fs = std::filesystem;

namespace {

std::size_t inputBytes(const Task& task, const Workload& w)
{
    InputGenerator gen(task.definition, w, 0);
    std::size_t total = 0;
    for (const auto& spec : task.definition.inputs) {
        std::size_t n = dtypeSize(spec.dtype);
        for (const auto d : gen.shapeOf(spec))
            n *= static_cast<std::size_t>(d);
        total += n;
    }
    return total;
}

std::vector<RunnerCall> buildCalls(const Task& task, const std::vector<const Workload*>& workloads, std::uint64_t seed)
{
    std::vector<RunnerCall> calls;
    SharedPools pools;
    for (const auto* w : workloads) {
        InputGenerator gen(task.definition, *w, seed);
        RunnerCall call;
        call.id = w->uuid;
        call.inputs = generateSharedInputs(gen, 0, &pools);
        call.outputs = gen.describeOutputs();
        call.axes = w->axes;
        call.workspaceBytes = gen.workspaceBytes();
        call.poisonSeed = seed ^ std::hash<std::string> {}(w->uuid);
        calls.push_back(std::move(call));
    }
    return calls;
}

} // namespace

TaskCheckReport checkTask(const Task& task, const TaskCheckOptions& options)
{
    TaskCheckReport report;
    auto say = [&](const std::string& line) {
        report.lines.push_back(line);
        if (options.progress)
            options.progress(line);
    };
    auto fail = [&](TaskCheckReport::Outcome o, const std::string& line) {
        report.outcome = o;
        say(line);
        return report;
    };

    std::vector<const Workload*> order;
    if (!options.workloadIds.empty()) {
        for (const auto& id : options.workloadIds) {
            const Workload* w = task.workload(id);
            if (!w)
                return fail(
                    TaskCheckReport::Outcome::TaskInvalid, "no workload '" + id + "' (or the prefix is ambiguous)");
            order.push_back(w);
        }
    } else {
        for (const auto& w : task.workloads)
            order.push_back(&w);
        std::stable_sort(order.begin(), order.end(),
            [&](const Workload* a, const Workload* b) { return inputBytes(task, *a) < inputBytes(task, *b); });
        order.resize(std::min<std::size_t>(order.size(), static_cast<std::size_t>(std::max(1, options.maxWorkloads))));
    }

    const std::string header = generateAbiHeader(task.definition);
    const AbiLayout layout = computeAbiLayout(task.definition);
    struct Side {
        std::string label;
        fs::path source;
        Backend backend;
        bool python = false;
        RunnerJobResult result;
    };
    // The first side is the ground truth: reference.cpp, or reference.py where there is none
    // (then on the CPU; where both exist, reference.py is checked against reference.cpp).
    std::vector<Side> sides;
    if (task.files.referenceCpp)
        sides.push_back({"reference.cpp", *task.files.referenceCpp, Backend::Host, false, {}});
    if (task.files.referencePy)
        sides.push_back({"reference.py", *task.files.referencePy, Backend::Host, true, {}});
    if (sides.empty())
        return fail(TaskCheckReport::Outcome::TaskInvalid, "no reference.cpp or reference.py");
    std::optional<PythonRuntime> python;
    if (task.files.referencePy) {
        python.emplace();
        python->interpreter = options.python.empty() ? defaultPythonInterpreter() : options.python;
        const PythonProbe probe = startPythonRuntime(*python, options.workDir, false, false);
        if (!probe.problem.empty())
            return fail(TaskCheckReport::Outcome::EnvironmentProblem, "reference.py needs Python: " + probe.problem);
    }
    if (task.files.baselineCpp)
        sides.push_back({"baseline.cpp", *task.files.baselineCpp, Backend::Host, false, {}});
    else
        say("no baseline.cpp: the host baseline is not checked");
    if (options.cuda) {
        for (const auto& [label, file] :
            {std::pair {"reference.cu", task.files.referenceCu}, std::pair {"baseline.cu", task.files.baselineCu}}) {
            if (file)
                sides.push_back({label, *file, Backend::Cuda, false, {}});
            else
                say(std::string("no ") + label + ": not checked");
        }
    }

    for (auto& side : sides) {
        const std::string stem = fs::path(side.label).stem().string() + "-" + backendName(side.backend);
        CompileRequest req;
        req.backend = side.backend;
        req.source = side.source;
        req.abiHeader = header;
        req.workDir = options.workDir / stem;
        const CompileResult compiled = side.python ? checkPythonSource(*python, req) : compileKernel(req);
        if (!compiled.ok) {
            if (compiled.log.find("cannot run the compiler") != std::string::npos)
                return fail(TaskCheckReport::Outcome::EnvironmentProblem, compiled.log);
            return fail(
                TaskCheckReport::Outcome::TaskInvalid, side.source.string() + ": does not compile:\n" + compiled.log);
        }
        std::string resources;
        for (const auto& k : compiled.resources)
            resources += "; " + k.kernel.substr(0, 40) + ": " + std::to_string(k.registers) + " registers, "
                + std::to_string(k.spillStoreBytes) + " B spilled";
        say(std::string(side.python ? "parsed " : "compiled ") + side.label + " (" + backendName(side.backend) + ") in "
            + std::to_string(compiled.seconds).substr(0, 4) + " s" + resources);

        RunnerJob job;
        job.backend = side.backend;
        job.library = compiled.library;
        if (side.python)
            job.python = python;
        job.layout = layout;
        job.calls = buildCalls(task, order, options.seed);
        job.jobDir = options.workDir / (stem + "-job");
        job.timeout = std::chrono::minutes(5);
        side.result = runRunnerJob(job);
        if (!side.result.process.started)
            return fail(TaskCheckReport::Outcome::EnvironmentProblem,
                "cannot start ksearch-runner (" + runnerPath().string() + "): " + side.result.process.error);
        if (side.backend == Backend::Cuda && side.result.process.exitCode == 3)
            return fail(
                TaskCheckReport::Outcome::EnvironmentProblem, "no usable CUDA device: " + side.result.process.err);
        if (!side.result.loadError.empty())
            return fail(TaskCheckReport::Outcome::TaskInvalid, side.source.string() + ": " + side.result.loadError);
        for (std::size_t i = 0; i < order.size(); ++i) {
            const auto& outcome = side.result.calls[i];
            if (outcome.status != RunnerCallOutcome::Status::Ok)
                return fail(TaskCheckReport::Outcome::TaskInvalid,
                    side.source.string() + ": workload " + order[i]->uuid + ": " + runnerStatusName(outcome.status)
                        + (outcome.message.empty() ? "" : ": " + outcome.message));
            if (!outcome.inputsUnchanged)
                return fail(TaskCheckReport::Outcome::TaskInvalid,
                    side.source.string() + ": workload " + order[i]->uuid + ": modified its inputs");
        }
    }
    for (std::size_t s = 1; s < sides.size(); ++s) {
        bool sidePassed = true;
        for (std::size_t i = 0; i < order.size(); ++i) {
            const auto& ref = sides[0].result.calls[i].outputs;
            const auto& got = sides[s].result.calls[i].outputs;
            for (std::size_t o = 0; o < ref.size() && o < got.size(); ++o) {
                const auto c = compareOutput(got[o].view(), ref[o].view(), task.definition.tolerance);
                sidePassed = sidePassed && c.passed;
                say("workload " + order[i]->uuid + ": " + sides[s].label + " vs " + sides[0].label + ": "
                    + describeComparison(c));
            }
        }
        if (!sidePassed) {
            report.outcome = TaskCheckReport::Outcome::TaskInvalid;
            say(sides[s].source.string() + ": disagrees with " + sides[0].label + " beyond the tolerance");
        }
    }
    return report;
}

} // namespace ks
