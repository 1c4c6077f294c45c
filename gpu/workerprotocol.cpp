#include "workerprotocol.h"

#include <session/session.h>
#include <task/language.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ks::worker {

namespace {

std::string fileText(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

template<class T> T field(const nlohmann::json& j, const char* key, const std::string& where)
{
    if (!j.contains(key))
        throw std::runtime_error(where + key + ": missing");
    try {
        return j.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
        throw std::runtime_error(where + key + ": wrong type");
    }
}

template<class T> T optionalField(const nlohmann::json& j, const char* key, T fallback, const std::string& where)
{
    return j.contains(key) ? field<T>(j, key, where) : fallback;
}

} // namespace

nlohmann::json toJson(const Settings& s)
{
    nlohmann::json j {{"backend", s.backend}, {"seed", s.seed}, {"max_seconds", s.maxSeconds},
        {"workloads", s.workloads}, {"timeout_s", s.timeoutSeconds}};
    if (!s.language.empty())
        j["language"] = s.language;
    return j;
}

nlohmann::json toJson(const EvaluateRequest& r)
{
    return {{"type", "evaluate"}, {"id", r.id}, {"task", r.task}, {"task_digest", r.taskDigest}, {"source", r.source},
        {"settings", toJson(r.settings)}};
}

Settings settingsFromJson(const nlohmann::json& j)
{
    if (!j.is_object())
        throw std::runtime_error("settings: must be an object");
    Settings s;
    s.backend = optionalField<std::string>(j, "backend", s.backend, "settings.");
    if (s.backend != "host" && s.backend != "cuda")
        throw std::runtime_error("settings.backend: '" + s.backend + "' is not host or cuda");
    s.seed = optionalField<std::uint64_t>(j, "seed", 0, "settings.");
    s.maxSeconds = optionalField<double>(j, "max_seconds", s.maxSeconds, "settings.");
    if (!(s.maxSeconds > 0))
        throw std::runtime_error("settings.max_seconds: must be positive");
    s.workloads = optionalField<std::vector<std::string>>(j, "workloads", {}, "settings.");
    s.timeoutSeconds = optionalField<double>(j, "timeout_s", 0.0, "settings.");
    s.language = optionalField<std::string>(j, "language", "", "settings.");
    if (!s.language.empty()) {
        const auto language = parseLanguage(s.language);
        if (!language)
            throw std::runtime_error("settings.language: '" + s.language + "' is not one of " + languageNameList());
        if (const std::string p = languageBackendProblem(*language, s.backend); !p.empty())
            throw std::runtime_error("settings.language: " + p);
    }
    return s;
}

EvaluateRequest evaluateRequestFromJson(const nlohmann::json& j)
{
    EvaluateRequest r;
    r.id = field<std::string>(j, "id", "");
    r.task = field<std::string>(j, "task", "");
    r.taskDigest = optionalField<std::string>(j, "task_digest", "", "");
    r.source = field<std::string>(j, "source", "");
    r.settings = settingsFromJson(j.value("settings", nlohmann::json::object()));
    return r;
}

nlohmann::json helloLine(const std::string& ksearchVersion)
{
    return {{"type", "hello"}, {"version", kProtocolVersion}, {"ksearch", ksearchVersion}};
}

nlohmann::json errorLine(const std::string& id, const std::string& message)
{
    return {{"type", "error"}, {"id", id}, {"message", message}};
}

std::string taskDigest(const Task& task)
{
    std::string all;
    const auto add = [&](const char* label, const std::optional<std::filesystem::path>& path) {
        all += std::string("\n--") + label + "\n" + (path ? fileText(*path) : std::string("(none)"));
    };
    add("definition", task.files.definition);
    add("workloads", task.files.workloads);
    add("reference.cpp", task.files.referenceCpp);
    add("reference.py", task.files.referencePy);
    add("reference.cu", task.files.referenceCu);
    add("baseline.cu", task.files.baselineCu);
    add("baseline.cpp", task.files.baselineCpp);
    return programHash(all);
}

} // namespace ks::worker
