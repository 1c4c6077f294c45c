#pragma once

#include <search/searchstate.h>
#include <task/language.h>
#include <task/task.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// One kernel that runs, for each shape a task's workloads have, the attempt fastest on it
// (issue #16 point 5). A known shape is the values of the definition's var axes of one workload;
// a call runs the variant of the nearest known shape, by distance over log(1 + axis) (an exact
// shape gets its own; one between two known shapes the nearer one's, so that a batch of 48
// between 16 and 64 runs what was fastest at 64). Variant 0 is the best single kernel.
struct DispatchPlan {
    struct Variant {
        int attempt = -1;
        std::string program; // its hash in the session
    };
    struct Case {
        std::string workload;
        std::vector<std::pair<std::string, std::int64_t>> axes; // var axes, in the definition's order
        int variant = 0;
    };
    std::vector<Variant> variants; // distinct programs; [0] is the best single kernel
    std::vector<Case> cases; // one per known shape (the first workload of each), with its variant

    // Known shapes that another variant than the best single kernel runs.
    [[nodiscard]] int routedShapes() const;
};

// The plan from the passing attempts of `state`; nullopt with `error` when nothing passed, the
// task has no var axes to tell shapes apart (for Python candidates: none that a tensor's shape
// shows), or no attempt other than the best single kernel is fastest on any workload beyond the
// timing spread ("nothing to dispatch").
std::optional<DispatchPlan> planDispatch(
    const SearchState& state, const Task& task, Language language, std::string& error);

// The dispatching program: every variant's own source in a namespace of its own (its #include
// lines hoisted to the top, its ks_run renamed, its macros undefined after it) and a ks_run that
// picks a variant by the axes. `source` gives a program's text by hash.
std::string dispatchSource(const DispatchPlan& plan, const std::function<std::string(const std::string&)>& source);

// Where a Python program reads a var axis: dimension `dim` of the `parameter`-th tensor of run()
// (the inputs, then the outputs), the first whose shape names it. Axes no tensor shows are left
// out: a Python dispatcher tells shapes apart by the others.
struct PythonAxisSource {
    std::string axis;
    int parameter = 0;
    int dim = 0;
};
std::vector<PythonAxisSource> pythonAxisSources(const Definition& definition);

// The dispatching program of Python candidates (PyTorch or Triton; core/session/pythondispatch.cpp):
// a module that keeps every variant's source, loads each as a module of its own, and whose
// destination-passing run(inputs..., outputs...) picks a variant by the tensors' sizes, once per
// shape. A variant that returns its outputs is copied into the outputs given.
std::string pythonDispatchSource(const DispatchPlan& plan, const Definition& definition,
    const std::function<std::string(const std::string&)>& source);

} // namespace ks
