#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ks {

// Parses JSON keeping key order (inputs and outputs are positional in the ABI) and refusing
// duplicate keys, which plain parsers silently collapse. On failure `error` says where.
std::optional<nlohmann::ordered_json> parseStrictJson(const std::string& text, std::string& error);

// Reads a whole file; nullopt when it cannot be opened.
std::optional<std::string> readTextFile(const std::string& path);

} // namespace ks
