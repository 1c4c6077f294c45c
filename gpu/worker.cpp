#include "worker.h"

#include <spdlog/spdlog.h>

#include <fstream>

namespace ks::worker {

namespace fs = std::filesystem;

Worker::Worker(std::string ksearchVersion, fs::path scratchDir, TaskLoader loadTask)
    : m_version(std::move(ksearchVersion))
    , m_scratch(std::move(scratchDir))
    , m_loadTask(std::move(loadTask))
{
}

Worker::~Worker() = default;

Worker::Reply Worker::handle(const std::string& line)
{
    nlohmann::json request;
    try {
        request = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
        return {errorLine("", std::string("not a JSON line: ") + e.what())};
    }
    if (!request.is_object() || !request.contains("type") || !request["type"].is_string())
        return {errorLine("", "a request needs \"type\": hello, evaluate or bye")};
    const std::string type = request["type"].get<std::string>();
    // The id is echoed in errors only when it is a string: a reply must never fail to be made.
    const std::string id = request.contains("id") && request["id"].is_string() ? request["id"].get<std::string>() : "";
    if (type == "hello") {
        const int version = request.value("version", 0);
        if (version != kProtocolVersion)
            return {errorLine(id,
                        "protocol version " + std::to_string(version) + " is not this worker's ("
                            + std::to_string(kProtocolVersion) + ", ksearch " + m_version
                            + "): install the same ksearch version on both sides"),
                true, 2};
        m_greeted = true;
        return {helloLine(m_version)};
    }
    if (type == "bye")
        return {{{"type", "bye"}}, true, 0};
    if (!m_greeted)
        return {errorLine(id, "say hello first (with the protocol version)")};
    if (type == "evaluate")
        return evaluate(request, id);
    return {errorLine(id, "unknown request type '" + type + "'")};
}

Worker::Reply Worker::evaluate(const nlohmann::json& requestJson, const std::string& id)
{
    EvaluateRequest r;
    try {
        r = evaluateRequestFromJson(requestJson);
    } catch (const std::exception& e) {
        return {errorLine(id, e.what())};
    }
    std::string error;
    auto task = m_loadTask(r.task, error);
    if (!task)
        return {errorLine(r.id, "task '" + r.task + "': " + error)};
    const std::string digest = taskDigest(*task);
    if (!r.taskDigest.empty() && r.taskDigest != digest)
        return {errorLine(r.id,
            "task '" + r.task + "' differs on this worker (digest " + digest + ", the caller's " + r.taskDigest
                + "): copy the caller's task folder here")};
    const std::string key = r.task + "|" + digest + "|" + toJson(r.settings).dump();
    auto& evaluator = m_evaluators[key];
    if (!evaluator) {
        EvaluatorSettings s;
        s.backend = r.settings.backend == "cuda" ? Backend::Cuda : Backend::Host;
        s.seed = r.settings.seed;
        s.workDir = m_scratch / ("evaluator-" + std::to_string(m_evaluators.size()));
        s.workloadIds = r.settings.workloads;
        s.bench.maxSeconds = r.settings.maxSeconds;
        s.runTimeout = std::chrono::milliseconds(static_cast<long>(r.settings.timeoutSeconds * 1000));
        if (!r.settings.language.empty())
            s.language = parseLanguage(r.settings.language);
        if (!m_python.empty())
            s.python = m_python;
        evaluator = std::make_unique<Evaluator>(std::move(*task), s);
        if (const auto problem = evaluator->environmentProblem()) {
            const std::string message = "this worker cannot evaluate on " + r.settings.backend + ": " + *problem;
            m_evaluators.erase(key);
            return {errorLine(r.id, message)};
        }
    }
    const fs::path source =
        m_scratch / "candidates" / ("candidate-" + std::to_string(++m_candidates) + evaluator->sourceSuffix());
    fs::create_directories(source.parent_path());
    {
        std::ofstream out(source, std::ios::binary | std::ios::trunc);
        out << r.source;
        if (!out)
            return {errorLine(r.id, source.string() + ": cannot write the candidate")};
    }
    const Evaluation e = evaluator->evaluate(source);
    spdlog::debug("worker: {} on {}: {} J={:.1f}", r.id, r.task, verdictName(e.status), e.score);
    return {{{"type", "evaluation"}, {"id", r.id}, {"evaluation", toJson(e)}}};
}

} // namespace ks::worker
