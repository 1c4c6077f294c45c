#pragma once

#include "humancommand.h"
#include "searchstate.h"

#include <optional>
#include <string>

namespace ks {

// Why a person's command cannot be applied to the search as it is now, or nullopt when it can.
std::optional<std::string> checkCommand(const SearchState& state, const HumanCommand& command);

} // namespace ks
