#pragma once

#include <search/searchstate.h>
#include <session/session.h>
#include <task/task.h>

#include <filesystem>
#include <string>
#include <vector>

namespace ks {

// What `ksearch export --dispatch` and File > Export Dispatching Kernel did.
struct DispatchExportResult {
    enum class Outcome {
        Written, // the dispatching kernel passed and was written
        NotWritten, // nothing to dispatch, or the dispatching kernel failed: `error` says which
        NoBackend, // the session's backend is not available here to measure it
    };
    Outcome outcome = Outcome::NotWritten;
    std::string error;
    int variants = 0, routedShapes = 0;
    int bestAttempt = -1;
    std::string bestNode;
    double singleScore = 0.0; // the best single kernel, measured now
    double sessionScore = 0.0; // the same kernel's J in the session
    std::string verdict; // of the dispatching kernel
    double dispatchedScore = 0.0;
    std::string log; // the dispatching kernel's evaluation log, when it failed
    std::vector<std::filesystem::path> files; // written
};

// Plans the dispatching kernel of `state` (core/session/dispatchkernel.h), evaluates it and the
// best single kernel one after the other in one evaluator of the session's backend, and, when it
// passes, writes dispatch.<ext>, dispatch.json and a section of report.md into `outDir`.
// Blocking (seconds to minutes): call it off the window's thread.
// confine: false measures both kernels without confinement (EvaluatorSettings::confineCandidates,
// to debug); the evaluation kept in dispatch.json records it.
DispatchExportResult exportDispatchingKernel(const Session& session, const SearchState& state, const Task& task,
    const std::filesystem::path& outDir, double benchSeconds, const std::string& python = {}, bool confine = true);

} // namespace ks
