#pragma once

// The small host task the evaluator's tests provoke verdicts on, y = alpha * x with two
// workloads (each candidate is judged in well under a second): the task, an evaluator of it,
// candidates' files, and the runner's record of how it ran a job.
#include "testsupport.h"

#include <search/engineevents.h>
#include <search/journalevent.h>
#include <session/session.h>

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
#include <vector>

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

// A scale kernel whose speed depends on the shape: one pass over the data, or many (the result
// is the same) on the workloads where `slowWhen` (a C++ condition over `a`) holds: 4,000 on a
// large workload (about 10 ms on the 2-core CI machine), 100,000 on a small one (about 2 ms).
// The penalty must dwarf how the one-pass call's time moves from one runner process to the next
// there: up to 4x (n 65536: 6.4 or 26 us, cold after the flush; n 1000: 0.26 or 1 us), which,
// with 200 passes (about 45x on the large workload), hid most of a dispatcher's gain. Every such kernel
// defines the same helper, macro and static variable, so that a program combining two of them
// must keep them apart.
inline std::string shapedScaleKernel(const char* slowWhen)
{
    return std::string("#include \"ks_task.h\"\n#include <cstdint>\n#define PASSES 4000\n"
                       "static int calls;\n"
                       "static void scaleInto(const KsArgs* a) {\n"
                       "    for (int64_t i = 0; i < a->n; ++i) a->y[i] = a->alpha * a->x[i]; }\n"
                       "extern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
                       "    ++calls;\n"
                       "    const int passes = (")
        + slowWhen
        + ") ? (a->n > 10000 ? PASSES : 25 * PASSES) : 1;\n"
          "    for (int p = 0; p < passes; ++p) scaleInto(a);\n"
          "    return 0;\n}\n";
}

// A session of the task in root/"scale" (host backend, no model) in root/NAME whose attempts are
// `programs`, each a person's program under the root, evaluated for real on this machine; in
// `language` (Python: with pythonWithTorch()).
inline std::filesystem::path writeScaleSession(const std::filesystem::path& root, const std::string& name,
    const std::vector<std::string>& programs, Language language = Language::Cpp)
{
    const std::filesystem::path dir = root / name;
    SessionConfig c;
    c.taskName = "scale";
    c.taskDir = root / "scale";
    c.backend = "host";
    c.settings.budget = 10;
    c.created = "2026-12-05T00:00:00Z";
    c.version = "test";
    c.planner.provider = QStringLiteral("manual"); // no model: every attempt is a person's program
    c.coder = c.planner;
    if (language != Language::Cpp)
        c.language = language;
    std::string error;
    auto session = Session::create(dir, c, error);
    if (!session)
        qFatal("%s", error.c_str());
    auto evaluator = makeScaleEvaluator(root, dir / "work", std::chrono::seconds(60), [&](EvaluatorSettings& s) {
        s.language = language;
        if (isPythonLanguage(language))
            s.python = pythonWithTorch();
    });
    int seq = 0;
    auto append = [&](EventBody body) {
        JournalEvent e;
        e.body = std::move(body);
        e.seq = ++seq;
        e.time = "2026-12-05T00:00:00.000Z";
        e.elapsedSeconds = seq;
        if (!session->append(toJson(e), error))
            qFatal("%s", error.c_str());
    };
    append(ev::RunStarted {false, c.settings.toJson(), std::nullopt});
    for (std::size_t i = 0; i < programs.size(); ++i) {
        const std::string node = "n" + std::to_string(i + 1);
        append(ev::TreeEdit {.author = "human",
            .purpose = Purpose::Human,
            .edit = singleInsert("root", "variant " + std::to_string(i + 1), 0.5, "a test's program"),
            .rules = editRulesJson(EditRules {}),
            .inserted = {node}});
        const std::string hash = session->storeProgram(programs[i], error);
        append(ev::Candidate {.node = node, .prompt = Purpose::Human, .author = "human", .program = hash});
        const Evaluation e = evaluator->evaluate(session->programPath(hash));
        if (e.status != Verdict::Passed)
            qFatal("%s", e.log.c_str());
        append(ev::Evaluation {node, hash, "", Purpose::Human, "human", toJson(e)});
    }
    return dir;
}

} // namespace ks::test
