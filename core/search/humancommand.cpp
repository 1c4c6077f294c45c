#include "humancommand.h"

#include <util/numberformat.h>

#include <array>
#include <utility>

namespace ks {

namespace {

using Kind = HumanCommand::Kind;

constexpr std::array<std::pair<Kind, std::string_view>, 13> kKinds {{{Kind::SetValue, "set_value"},
    {Kind::Prune, "prune"}, {Kind::Restore, "restore"}, {Kind::Inject, "inject"}, {Kind::EditIntent, "edit_intent"},
    {Kind::Pin, "pin"}, {Kind::Evaluate, "evaluate"}, {Kind::SetBudget, "set_budget"}, {Kind::SetK, "set_k"},
    {Kind::Pause, "pause"}, {Kind::Resume, "resume"}, {Kind::Step, "step"}, {Kind::Stop, "stop"}}};

} // namespace

std::string_view commandKindName(Kind k)
{
    for (const auto& [kind, name] : kKinds)
        if (kind == k)
            return name;
    return "?";
}

nlohmann::json HumanCommand::toJson() const
{
    nlohmann::json j {{"kind", commandKindName(kind)}, {"reason", reason}};
    if (!node.empty())
        j["node"] = node;
    if (kind == Kind::SetValue || kind == Kind::Inject)
        j["value"] = value;
    if (kind == Kind::Inject || kind == Kind::EditIntent)
        j["text"] = text;
    if (kind == Kind::SetBudget || kind == Kind::SetK)
        j["number"] = number;
    return j;
}

std::optional<HumanCommand> HumanCommand::fromJson(const nlohmann::json& j)
{
    if (!j.is_object())
        return std::nullopt;
    HumanCommand c;
    const std::string kind = j.value("kind", std::string());
    bool known = false;
    for (const auto& [k, name] : kKinds)
        if (name == kind) {
            c.kind = k;
            known = true;
        }
    if (!known)
        return std::nullopt;
    c.node = j.value("node", std::string());
    c.value = j.value("value", 0.0);
    c.text = j.value("text", std::string());
    c.number = j.value("number", 0);
    c.reason = j.value("reason", std::string());
    return c;
}

std::string HumanCommand::describe() const
{
    const std::string v = formatPriority(value);
    switch (kind) {
    case Kind::SetValue:
        return "set V of " + node + " to " + v;
    case Kind::Prune:
        return "prune " + node;
    case Kind::Restore:
        return "restore " + node;
    case Kind::Inject:
        return "inject an intent under " + node + " (V " + v + ")";
    case Kind::EditIntent:
        return "edit the intent of " + node;
    case Kind::Pin:
        return node.empty() ? std::string("unpin") : "pin " + node + " as the next action";
    case Kind::Evaluate:
        return "evaluate a hand-written program under " + node;
    case Kind::SetBudget:
        return "set the budget to " + std::to_string(number);
    case Kind::SetK:
        return "set K to " + std::to_string(number);
    case Kind::Pause:
        return "pause";
    case Kind::Resume:
        return "resume";
    case Kind::Step:
        return "step";
    case Kind::Stop:
        return "stop";
    }
    return "?";
}

} // namespace ks
