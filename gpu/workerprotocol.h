#pragma once

// The line protocol of `ksearch worker`, the trusted evaluation worker (issue #14): a caller
// (another ksearch, over a pipe, ssh or a SLURM step) sends one JSON object per line on the
// worker's stdin and reads one JSON reply per line on its stdout. Only the candidate's source and
// the small result travel: the worker makes the inputs from the search's secret seed, the
// reference outputs and the baseline's timings where it runs, and judges there. Qt-free.
//
//   -> {"type": "hello", "version": 1, "ksearch": "0.1.0"}
//   <- {"type": "hello", "version": 1, "ksearch": "0.1.0"}
//   -> {"type": "evaluate", "id": "e7", "task": "NAME|PATH", "task_digest": "...",
//       "source": "...", "settings": {"backend": "host", "seed": 42, "max_seconds": 1.0,
//       "workloads": [], "timeout_s": 0}}
//   <- {"type": "evaluation", "id": "e7", "evaluation": {...as core/task/evaluation.h writes it}}
//   <- {"type": "error", "id": "e7", "message": "..."}   (a request that could not be served)
//   -> {"type": "bye"}                                     (or end of input: the worker exits 0)
//
// A hello must come first; a version other than the worker's is refused (error, then exit 2).

#include <task/task.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks::worker {

inline constexpr int kProtocolVersion = 1;

struct Settings {
    std::string backend = "host"; // host | cuda
    std::uint64_t seed = 0; // the search's secret: inputs are drawn from it where the worker runs
    double maxSeconds = 1.0; // timing-loop cap per workload
    std::vector<std::string> workloads; // empty: all of the task's
    double timeoutSeconds = 0; // the candidate's runner; 0: derived from the workloads
    std::string language; // of the candidate (cuda, cpp, triton, python); empty: the backend's compiled one
};

struct EvaluateRequest {
    std::string id;
    std::string task; // a name on the worker's task path, or a folder
    std::string taskDigest; // taskDigest() of the caller's copy; empty: not checked
    std::string source;
    Settings settings;
};

nlohmann::json toJson(const Settings& s);
nlohmann::json toJson(const EvaluateRequest& r);
// Throws std::runtime_error naming the field.
Settings settingsFromJson(const nlohmann::json& j);
EvaluateRequest evaluateRequestFromJson(const nlohmann::json& j);

nlohmann::json helloLine(const std::string& ksearchVersion);
nlohmann::json errorLine(const std::string& id, const std::string& message);

// A digest of everything that decides a task's verdicts and timings: definition.json,
// workloads.jsonl and the reference and baseline sources. Two machines with the same digest judge
// a candidate by the same rules.
std::string taskDigest(const Task& task);

} // namespace ks::worker
