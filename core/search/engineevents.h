#pragma once

#include "searchstate.h"

#include <llm/llmtypes.h>
#include <tree/treeedit.h>

#include <QList>

#include <nlohmann/json.hpp>

#include <string>

namespace ks {

// Pieces of the events the engine writes, shared by its two halves (steps and answers).
nlohmann::json messagesJson(const QList<ChatMessage>& messages);
EditRules editRulesFor(const SearchState& state, const std::string& solvedNode);
nlohmann::json editRulesJson(const EditRules& rules);
// A tree edit that inserts one node: the engine's fallbacks and proposals, a person's program.
nlohmann::json singleInsert(
    const std::string& parent, const std::string& intent, double priority, const std::string& why);
// An answer as it was journaled, for a run resumed between the answer and its consequence.
LlmResult resultFromExchange(const nlohmann::json& exchange);

} // namespace ks
