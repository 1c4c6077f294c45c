#include "taskbrief.h"

#include <task/abiheader.h>
#include <tree/treerender.h>
#include <util/numberformat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace ks {

namespace {

std::string shapeText(const TensorSpec& t)
{
    if (t.isScalar())
        return "scalar";
    std::string s = "[";
    for (std::size_t i = 0; i < t.shape->size(); ++i)
        s += (i ? ", " : "") + (*t.shape)[i];
    return s + "]";
}

std::string readFile(const std::filesystem::path& p)
{
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

std::string workloadLabel(const Task& task, const std::string& uuid)
{
    const Workload* w = task.workload(uuid);
    if (!w)
        return uuid.substr(0, 8);
    std::string label;
    for (const Axis* a : task.definition.varAxes())
        if (const auto it = w->axes.find(a->name); it != w->axes.end())
            label += (label.empty() ? "" : ", ") + a->name + "=" + std::to_string(it->second);
    return label.empty() ? uuid.substr(0, 8) : label;
}

std::string abiForPrompt(const Task& task)
{
    const std::string header = generateAbiHeader(task.definition);
    const std::size_t marker = header.find("end of prelude");
    std::string rest = marker == std::string::npos ? header : header.substr(header.find('\n', marker) + 1);
    std::string out =
        "// ks_task.h (generated). Element types: float; ks_bf16_t / ks_f16_t (__nv_bfloat16 / __half under nvcc);\n"
        "// ks_f8e4m3_t / ks_f8e5m2_t (__nv_fp8_*); ks_to_float(x), ks_from_float_bf16(f) and friends convert on\n"
        "// both backends. ks_stream_t is cudaStream_t under nvcc and void* (always null) on the host.\n";
    std::istringstream lines(rest);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("static_assert", 0) != 0)
            out += line + "\n";
    return out;
}

std::string pythonEntryForPrompt(const Task& task)
{
    const Definition& d = task.definition;
    std::string params;
    for (const auto* list : {&d.inputs, &d.outputs})
        for (const TensorSpec& t : *list)
            params += (params.empty() ? "" : ", ") + t.name;
    std::string s = "def run(" + params + "):\n";
    const auto describe = [&](const TensorSpec& t, const char* what) {
        s += "    # " + t.name + ": "
            + (t.isScalar() ? std::string("Python ") + (isFloating(t.dtype) ? "float" : "int")
                            : "torch.Tensor " + shapeText(t) + " torch." + std::string(dtypeName(t.dtype)))
            + " (" + what + ")\n";
    };
    for (const TensorSpec& t : d.inputs)
        describe(t, "input, read-only");
    for (const TensorSpec& t : d.outputs)
        describe(t, "output: fill it in place");
    s += "    # Axis values are the tensors' sizes. Or: def run(inputs...) returning the outputs.\n";
    return s;
}

std::string describeTask(const Task& task, bool withReference, Language language)
{
    const Definition& d = task.definition;
    std::string s = "Task: " + d.name + " (" + d.opType + ")\n";
    if (!d.description.empty())
        s += d.description + "\n";
    s += "Axes:";
    for (const Axis& a : d.axes)
        s += " " + a.name + (a.isConst ? " = " + std::to_string(a.value) : std::string(" (varies)")) + ";";
    s += "\nInputs:\n";
    for (const TensorSpec& t : d.inputs)
        s += "  " + t.name + " " + shapeText(t) + " " + std::string(dtypeName(t.dtype))
            + (t.description.empty() ? "" : " - " + t.description) + "\n";
    s += "Outputs:\n";
    for (const TensorSpec& t : d.outputs)
        s += "  " + t.name + " " + shapeText(t) + " " + std::string(dtypeName(t.dtype))
            + (t.description.empty() ? "" : " - " + t.description) + "\n";
    for (const std::string& c : d.constraints)
        s += "Constraint: " + c + "\n";
    char tolerance[96];
    std::snprintf(tolerance, sizeof tolerance, "within atol %g or rtol %g", d.tolerance.atol, d.tolerance.rtol);
    s += std::string("Correctness: every output element ") + tolerance + " of the reference";
    if (d.tolerance.requiredMatchedRatio < 1.0)
        s += " (" + formatFixed(100 * d.tolerance.requiredMatchedRatio, 1) + " % of elements)";
    s += "; NaN and Inf fail.\n";
    if (!d.precision.text.empty())
        s += "Precision rule: " + d.precision.text + " (the baseline is held to it too)\n";
    s += std::string("TF32 for fp32 matrix products: ") + (d.precision.tf32 ? "allowed" : "not allowed")
        + " (PyTorch's allow_tf32 switches are set so for the baseline and for you alike)\n";
    const auto& scored = d.scoredWorkloads;
    const auto& heldOut = d.heldOutWorkloads;
    std::vector<const Workload*> shown;
    for (const Workload& w : task.workloads)
        if (!d.holdsOut(w.uuid))
            shown.push_back(&w);
    s += "Workloads (" + std::to_string(shown.size()) + ", score = baseline / latency, geometric mean"
        + (scored.empty() ? std::string()
                          : " over the " + std::to_string(scored.size()) + " marked *; the others are checked only")
        + "):\n";
    for (std::size_t i = 0; i < shown.size() && i < 16; ++i) {
        const std::string& id = shown[i]->uuid;
        const bool mark = std::find(scored.begin(), scored.end(), id) != scored.end();
        s += "  " + id.substr(0, 8) + (mark ? "*" : "") + ": " + workloadLabel(task, id) + "\n";
    }
    if (shown.size() > 16)
        s += "  ... and " + std::to_string(shown.size() - 16) + " more\n";
    if (!heldOut.empty())
        s += "  and " + std::to_string(heldOut.size())
            + " held-out workloads, not listed: the program is also checked (not scored) on shapes you are not "
              "shown, so it must hold for any shape the definition allows\n";
    if (isPythonLanguage(language))
        s += "\nThe entry point:\n```python\n" + pythonEntryForPrompt(task) + "```\n";
    else
        s += "\nThe kernel interface:\n```c\n" + abiForPrompt(task) + "```\n";
    // The reference in the coder's language where the task has both.
    const bool python = task.files.referencePy && (!task.files.referenceCpp || isPythonLanguage(language));
    if (withReference && (python || task.files.referenceCpp)) {
        std::string reference = readFile(python ? *task.files.referencePy : *task.files.referenceCpp);
        s += python ? "\nThe reference implementation (PyTorch, for meaning, not speed):\n```python\n"
                    : "\nThe reference implementation (plain C++, for meaning, not speed):\n```cpp\n";
        s += truncateUtf8(reference, 12000) + (reference.size() > 12000 ? "\n" : "") + "```\n";
    }
    return s;
}

std::string baselineTargets(const Task& task, const SearchState& state)
{
    const auto& attempts = state.tree.attempts();
    for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
        const Evaluation& e = it->evaluation;
        if (!it->evaluated || e.baselineLatencyMicros <= 0)
            continue;
        std::string s = "Baseline to beat (J = 100 matches it), per workload:";
        for (const auto& w : e.workloads)
            if (w.baselineLatencyMicros > 0 && w.scored && !w.heldOut)
                s += "\n  " + w.id.substr(0, 8) + " (" + workloadLabel(task, w.id)
                    + "): " + formatFixed(w.baselineLatencyMicros, 2) + " us"
                    + (w.floorMicros > 0 ? " (physical floor " + formatFixed(w.floorMicros, 2) + " us)" : "");
        return s + "\n  geometric mean: " + formatFixed(e.baselineLatencyMicros, 2) + " us";
    }
    return {};
}

std::string describeAttempt(const Task& task, const Attempt& a, std::size_t logChars)
{
    if (!a.evaluated)
        return "Not evaluated: " + a.problem;
    const Evaluation& e = a.evaluation;
    std::string s = std::string(verdictName(e.status));
    if (e.status == Verdict::Passed)
        s += ": J = " + formatFixed(e.score, 1) + " (latency " + formatFixed(e.latencyMicros, 2)
            + " us geometric mean, baseline " + formatFixed(e.baselineLatencyMicros, 2) + " us)";
    s += "\n";
    for (const auto& w : e.workloads) {
        if (w.heldOut) { // its verdict alone: the shape stays unseen
            s += "  a held-out workload: " + std::string(verdictName(w.status)) + "\n";
            continue;
        }
        s += "  " + w.id.substr(0, 8) + " (" + workloadLabel(task, w.id) + "): " + std::string(verdictName(w.status));
        if (w.latencyMicros > 0)
            s += ", " + formatFixed(w.latencyMicros, 2) + " us vs baseline " + formatFixed(w.baselineLatencyMicros, 2)
                + " us (" + formatFixed(w.speedup, 2) + "x)"
                + (w.rooflineFraction > 0 ? ", " + formatFixed(100 * w.rooflineFraction, 0) + " % of the floor" : "");
        if (w.status != Verdict::Passed && !w.message.empty())
            s += ": " + truncateUtf8(w.message, 300);
        s += "\n";
    }
    for (const auto& r : e.resources)
        s += "  kernel " + kernelDisplayName(r.kernel) + ": " + std::to_string(r.registers) + " registers, "
            + std::to_string(r.sharedBytes) + " B shared memory, " + std::to_string(r.stackBytes) + " B stack, "
            + std::to_string(r.spillBytes) + " B spilled\n";
    if (e.status != Verdict::Passed && !e.log.empty())
        s += "Log:\n" + truncateUtf8(e.log, logChars) + "\n";
    if (e.sanitizer) // the failure run again under the tool: where the kernel went wrong
        s += "Run again under " + truncateUtf8(formatSanitizerReport(*e.sanitizer), 2500);
    return s;
}

} // namespace ks
