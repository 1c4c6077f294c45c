#pragma once

// The small host task the evaluator's tests provoke verdicts on, y = alpha * x with two
// workloads (each candidate is judged in well under a second): the task, an evaluator of it,
// candidates' files, and the runner's record of how it ran a job.
#include "testsupport.h"

#include <chrono>
#include <cstdlib>
#include <evaluator.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <runner/protocol.h>
#include <string>

namespace ks::test {

inline void writeTwoWorkloadScaleTask(const std::filesystem::path& root)
{
    writeText(root / "definition.json", scaleDefinition());
    writeText(root / "workloads.jsonl",
        R"({"definition": "scale", "workload": {"uuid": "small-1000", "axes": {"n": 1000}, "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": 1.5}}}}
{"definition": "scale", "workload": {"uuid": "large-65536", "axes": {"n": 65536}, "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": -0.5}}}}
)");
    const std::string honest =
        "#include \"ks_task.h\"\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
        "    for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i];\n    return 0;\n}\n";
    writeText(root / "reference.cpp", honest);
    writeText(root / "baseline.cpp", honest);
}

// The honest computation, for candidates that misbehave first and then do the work.
inline constexpr const char* kScaleLoop = "for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i];";

// The environment line of the runner of `job` in `workDir` (the first line of its result.jsonl):
// what it could confine and limit.
inline std::optional<ksr::EnvironmentLine> runnerEnvironment(
    const std::filesystem::path& workDir, const std::string& job)
{
    std::ifstream in(workDir / job / "result.jsonl");
    std::string line;
    if (!std::getline(in, line))
        return std::nullopt;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != ksr::status::kEnvironment)
        return std::nullopt;
    return ksr::environmentFromJson(j);
}

// An evaluator of the task in root/"scale" on the host backend, with a short timing loop, its
// runner jobs in `workDir`; `adjust` changes its settings last.
inline std::unique_ptr<Evaluator> makeScaleEvaluator(const std::filesystem::path& root,
    const std::filesystem::path& workDir, std::chrono::milliseconds runTimeout,
    const std::function<void(EvaluatorSettings&)>& adjust = {})
{
    auto loaded = loadTask(root / "scale");
    if (!loaded.task)
        qFatal("%s", loaded.diagnostics.formatAll().c_str());
    EvaluatorSettings s;
    s.backend = Backend::Host;
    s.workDir = workDir;
    s.cacheDir = root / "cache";
    s.bench.maxSeconds = 0.05;
    s.runTimeout = runTimeout;
    if (adjust)
        adjust(s);
    return std::make_unique<Evaluator>(std::move(*loaded.task), s);
}

// root/candidates/NAME.cpp: the headers a misbehaving candidate reaches for, then `body`.
inline std::filesystem::path writeScaleCandidate(
    const std::filesystem::path& root, const std::string& name, const std::string& body)
{
    const std::filesystem::path p = root / "candidates" / (name + ".cpp");
    writeText(p,
        "#include \"ks_task.h\"\n#include <cmath>\n#include <cstdlib>\n#include <cstring>\n#include <dirent.h>\n"
        "#include <fcntl.h>\n#include <string>\n#include <unistd.h>\n"
            + body + "\n");
    return p;
}

} // namespace ks::test
