#pragma once

#include "definition.h"
#include "diagnostics.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ks {

// Validates a definition.json document. Every problem is reported to `diag` with `file` and the
// field's dotted path; the definition is returned only when there were no errors.
std::optional<Definition> parseDefinition(
    const nlohmann::ordered_json& doc, const std::string& file, Diagnostics& diag);

// True for names usable as C identifiers (they become KsArgs fields and macros).
bool isCIdentifier(const std::string& name);

} // namespace ks
