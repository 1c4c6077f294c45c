#pragma once

#include "searchtree.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ks {

nlohmann::json toJson(const ValueChange& v);
nlohmann::json toJson(const Attempt& a);
nlohmann::json toJson(const SearchNode& n);
// The whole tree: {"id_counter", "nodes": [...], "attempts": [...]}.
nlohmann::json toJson(const SearchTree& tree);

// Reads what toJson wrote; on a malformed document returns nullopt and says where.
std::optional<SearchTree> treeFromJson(const nlohmann::json& j, std::string& error);
Attempt attemptFromJson(const nlohmann::json& j);

} // namespace ks
