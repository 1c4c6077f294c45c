#include "dispatchkernel.h"

#include <search/workloadbest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>
#include <sstream>

namespace ks {

int DispatchPlan::routedShapes() const
{
    return static_cast<int>(std::count_if(cases.begin(), cases.end(), [](const Case& c) { return c.variant != 0; }));
}

std::optional<DispatchPlan> planDispatch(
    const SearchState& state, const Task& task, Language language, std::string& error)
{
    if (isPythonLanguage(language) && pythonAxisSources(task.definition).empty()) {
        error = "no var axis of the task shows in a tensor's shape: a Python dispatcher could not tell the "
                "shapes apart";
        return std::nullopt;
    }
    const WorkloadBestTable best = bestPerWorkload(state);
    if (!best.overall) {
        error = "no attempt has passed: nothing to dispatch to";
        return std::nullopt;
    }
    DispatchPlan plan;
    auto variantOf = [&](int attempt) {
        const std::string& program = state.tree.attempt(attempt)->program;
        for (std::size_t i = 0; i < plan.variants.size(); ++i)
            if (plan.variants[i].program == program)
                return static_cast<int>(i);
        plan.variants.push_back({attempt, program});
        return static_cast<int>(plan.variants.size()) - 1;
    };
    variantOf(*best.overall);
    for (const WorkloadBest& w : best.rows) {
        const Workload* workload = task.workload(w.workload);
        if (!workload) {
            error = "workload " + w.workload + " is not in the task any more";
            return std::nullopt;
        }
        DispatchPlan::Case c {w.workload, {}, 0};
        for (const Axis& axis : task.definition.axes)
            if (!axis.isConst)
                c.axes.emplace_back(axis.name, workload->axes.at(axis.name));
        // No better attempt, or one better only within the timing noise: the best single kernel.
        if (w.attempt >= 0 && !w.withinSpread)
            c.variant = variantOf(w.attempt);
        const bool known = std::any_of(
            plan.cases.begin(), plan.cases.end(), [&](const DispatchPlan::Case& k) { return k.axes == c.axes; });
        if (!known)
            plan.cases.push_back(std::move(c));
    }
    if (plan.cases.empty() || plan.cases.front().axes.empty()) {
        error = "the task has no var axes: every workload has the same shape, nothing to dispatch on";
        return std::nullopt;
    }
    if (plan.routedShapes() == 0) {
        error = "the best single kernel is the fastest on every workload (beyond the timing spread): nothing to "
                "dispatch";
        return std::nullopt;
    }
    return plan;
}

namespace {

struct SplitSource {
    std::vector<std::string> includes;
    std::string body;
    std::vector<std::string> macros; // names the body #defines
};

// Lines that must stay at file scope: #include lines, and whole top-level #if ... #endif blocks
// that hold one (an include for one backend only keeps its condition).
SplitSource split(const std::string& text)
{
    static const std::regex include(R"(^\s*#\s*include\b.*)");
    static const std::regex pragmaOnce(R"(^\s*#\s*pragma\s+once\b.*)");
    static const std::regex define(R"(^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*).*)");
    static const std::regex opens(R"(^\s*#\s*if(n?def)?\b.*)");
    static const std::regex closes(R"(^\s*#\s*endif\b.*)");
    SplitSource s;
    std::istringstream in(text);
    int depth = 0;
    std::string block; // the top-level conditional block being read
    bool blockIncludes = false;
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_match(line, m, define))
            s.macros.push_back(m[1]);
        if (std::regex_match(line, opens))
            ++depth;
        if (depth > 0) {
            block += line + "\n";
            blockIncludes = blockIncludes || std::regex_match(line, include);
            if (std::regex_match(line, closes) && --depth == 0) {
                if (blockIncludes)
                    s.includes.push_back(block.substr(0, block.size() - 1));
                else
                    s.body += block;
                block.clear();
                blockIncludes = false;
            }
            continue;
        }
        if (std::regex_match(line, include))
            s.includes.push_back(line);
        else if (!std::regex_match(line, pragmaOnce))
            s.body += line + "\n";
    }
    s.body += block; // an #if left open: the compiler will say so
    return s;
}

} // namespace

std::string dispatchSource(const DispatchPlan& plan, const std::function<std::string(const std::string&)>& source)
{
    std::vector<SplitSource> parts;
    std::vector<std::string> includes;
    for (const DispatchPlan::Variant& v : plan.variants) {
        parts.push_back(split(source(v.program)));
        for (const std::string& line : parts.back().includes)
            if (std::find(includes.begin(), includes.end(), line) == includes.end())
                includes.push_back(line);
    }
    if (std::find(includes.begin(), includes.end(), "#include <cmath>") == includes.end())
        includes.emplace_back("#include <cmath>"); // std::log1p of the shape
    std::ostringstream out;
    out << "// A dispatching kernel made by `ksearch export --dispatch`: each call runs the attempt\n"
           "// fastest on the nearest known shape (variant 0: the best single kernel).\n";
    for (const std::string& line : includes)
        out << line << "\n";
    for (std::size_t i = 0; i < parts.size(); ++i) {
        out << "\n// ---- variant " << i << ": attempt " << plan.variants[i].attempt << ", program "
            << plan.variants[i].program << "\n#define ks_run ks_dispatch_variant_" << i << "\nnamespace ks_dispatch_"
            << i << " {\n"
            << parts[i].body << "} // namespace ks_dispatch_" << i << "\n#undef ks_run\n";
        for (const std::string& macro : parts[i].macros)
            out << "#undef " << macro << "\n";
    }
    // The known shapes' log(1 + axis) as literals; a call's shape is compared with each.
    const std::size_t n = plan.cases.front().axes.size();
    out << "\nnamespace {\nstruct KsDispatchShape {\n    double axes[" << n
        << "];\n    int variant;\n};\nconst KsDispatchShape ks_dispatch_shapes[] = {\n";
    char literal[40];
    for (const DispatchPlan::Case& c : plan.cases) {
        out << "    {{";
        for (std::size_t k = 0; k < n; ++k) {
            std::snprintf(literal, sizeof literal, "%.17g", std::log1p(static_cast<double>(c.axes[k].second)));
            out << (k ? ", " : "") << literal;
        }
        out << "}, " << c.variant << "}, // workload " << c.workload << ":";
        for (const auto& [axis, value] : c.axes)
            out << " " << axis << " " << value;
        out << "\n";
    }
    out << "};\n} // namespace\n";
    out << "\nextern \"C\" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t "
           "stream)\n"
           "{\n"
           "    const double shape[] = {";
    for (std::size_t k = 0; k < n; ++k)
        out << (k ? ", " : "") << "std::log1p(static_cast<double>(args->" << plan.cases.front().axes[k].first << "))";
    out << "};\n"
           "    int variant = 0;\n"
           "    double nearest = 1e300;\n"
           "    for (const KsDispatchShape& known : ks_dispatch_shapes) {\n"
           "        double d = 0.0;\n"
           "        for (int k = 0; k < "
        << n
        << "; ++k)\n"
           "            d += (shape[k] - known.axes[k]) * (shape[k] - known.axes[k]);\n"
           "        if (d < nearest) {\n"
           "            nearest = d;\n"
           "            variant = known.variant;\n"
           "        }\n"
           "    }\n"
           "    switch (variant) {\n";
    for (std::size_t i = 1; i < plan.variants.size(); ++i)
        out << "    case " << i << ":\n        return ks_dispatch_" << i << "::ks_dispatch_variant_" << i
            << "(args, workspace, workspace_bytes, stream);\n";
    out << "    default:\n        return ks_dispatch_0::ks_dispatch_variant_0(args, workspace, workspace_bytes, "
           "stream);\n"
           "    }\n}\n";
    return out.str();
}

} // namespace ks
