#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace ks {

// A person's steering command. Each is checked against the state, recorded in the journal as
// the human's, with the reason given, and applied between two steps of the engine.
struct HumanCommand {
    enum class Kind {
        SetValue, // node, value
        Prune, // node
        Restore, // node
        Inject, // node = parent, text = intent, value
        EditIntent, // node, text
        Pin, // node: the next action (an empty node: no pin)
        Evaluate, // node = parent, text = source code
        SetBudget, // number
        SetK, // number
        Pause,
        Resume,
        Step, // one step, then pause
        Stop
    };
    Kind kind = Kind::Pause;
    std::string node;
    double value = 0.0;
    std::string text;
    int number = 0;
    std::string reason;

    nlohmann::json toJson() const; // an Evaluate's source is not in it: the journal holds its hash
    static std::optional<HumanCommand> fromJson(const nlohmann::json& j);
    std::string describe() const; // "set V of n3 to 0.90"
};

std::string_view commandKindName(HumanCommand::Kind k);

} // namespace ks
