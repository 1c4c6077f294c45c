#pragma once

#include <llm/llmconfig.h>
#include <search/searchsettings.h>
#include <task/language.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace ks {

// session.json: what a search was started with. Holds no secret (keys are looked up again when
// a run resumes), so the folder can be shared as it is.
struct SessionConfig {
    std::string taskName;
    std::filesystem::path taskDir;
    std::string backend = "cuda"; // cuda | host
    // Of the candidates (cuda, cpp, triton, python); unset in sessions made before languages
    // existed, which use the backend's compiled language.
    std::optional<Language> language;
    SearchSettings settings;
    LlmRoleConfig planner;
    LlmRoleConfig coder;
    std::string seedProgram; // program hash, if the run started from a seed
    std::string created; // ISO 8601
    std::string version; // ksearch version that created it
    std::string label; // free text: how and why the run was made

    nlohmann::json toJson() const;
    static std::optional<SessionConfig> fromJson(const nlohmann::json& j, std::string& error);
    Language candidateLanguage() const { return language.value_or(defaultLanguage(backend)); }
    std::string programSuffix() const { return languageSuffix(candidateLanguage()); }
};

} // namespace ks
