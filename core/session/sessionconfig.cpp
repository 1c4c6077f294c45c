#include "sessionconfig.h"

#include <QJsonDocument>

namespace ks {

namespace {

nlohmann::json fromQt(const QJsonObject& o)
{
    return nlohmann::json::parse(QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
}

QJsonObject toQt(const nlohmann::json& j)
{
    return QJsonDocument::fromJson(QByteArray::fromStdString(j.dump())).object();
}

} // namespace

nlohmann::json SessionConfig::toJson() const
{
    nlohmann::json j {{"format", "ksearch-session/1"}, {"task", {{"name", taskName}, {"dir", taskDir.string()}}},
        {"backend", backend}, {"settings", settings.toJson()},
        {"llm", {{"planner", fromQt(planner.toJson())}, {"coder", fromQt(coder.toJson())}}},
        {"seed_program", seedProgram}, {"created", created}, {"version", version}, {"label", label}};
    if (language)
        j["language"] = std::string(languageName(*language));
    return j;
}

std::optional<SessionConfig> SessionConfig::fromJson(const nlohmann::json& j, std::string& error)
{
    SessionConfig c;
    if (!j.is_object() || j.value("format", std::string()) != "ksearch-session/1") {
        error = "format: not a ksearch-session/1 file";
        return std::nullopt;
    }
    const nlohmann::json task = j.value("task", nlohmann::json::object());
    c.taskName = task.value("name", std::string());
    c.taskDir = task.value("dir", std::string());
    if (c.taskName.empty()) {
        error = "task.name: missing";
        return std::nullopt;
    }
    c.backend = j.value("backend", std::string("cuda"));
    if (c.backend != "cuda" && c.backend != "host") {
        error = "backend: must be cuda or host";
        return std::nullopt;
    }
    if (j.contains("language")) {
        c.language = j["language"].is_string() ? parseLanguage(j["language"].get<std::string>()) : std::nullopt;
        if (!c.language) {
            error = "language: must be one of " + languageNameList();
            return std::nullopt;
        }
        if (const std::string p = languageBackendProblem(*c.language, c.backend); !p.empty()) {
            error = "language: " + p;
            return std::nullopt;
        }
    }
    auto settings = SearchSettings::fromJson(j.value("settings", nlohmann::json::object()), error);
    if (!settings)
        return std::nullopt;
    c.settings = *settings;
    const nlohmann::json llm = j.value("llm", nlohmann::json::object());
    QString qerror;
    for (const auto& [role, target] : {std::pair {"planner", &c.planner}, std::pair {"coder", &c.coder}}) {
        auto r = LlmRoleConfig::fromJson(toQt(llm.value(role, nlohmann::json::object())),
            QStringLiteral("llm.%1").arg(QLatin1String(role)), &qerror);
        if (!r) {
            error = qerror.toStdString();
            return std::nullopt;
        }
        *target = *r;
    }
    c.seedProgram = j.value("seed_program", std::string());
    c.created = j.value("created", std::string());
    c.version = j.value("version", std::string());
    c.label = j.value("label", std::string());
    return c;
}

} // namespace ks
