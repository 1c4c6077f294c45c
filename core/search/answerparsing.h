#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ks {

// The world model's JSON object out of an answer that may wrap it in a fenced block and in prose.
// Tries fenced blocks first, then every balanced {...} in the text (strings and escapes
// respected), and prefers an object with the edit's keys. `error` says why nothing was found.
std::optional<nlohmann::json> extractJsonObject(const std::string& answer, std::string& error);

// The program out of a code-policy answer: the fenced block that defines ks_run (the longest if
// several do), else the only fenced block, else the whole answer when it is bare source code.
// `problem` says why nothing was found.
std::optional<std::string> extractProgram(const std::string& answer, std::string& problem);

} // namespace ks
