#include "purpose.h"

#include <array>
#include <utility>

namespace ks {

namespace {

constexpr std::array<std::pair<Purpose, std::string_view>, 13> kNames {
    {{Purpose::Init, "init"}, {Purpose::Update, "update"}, {Purpose::TooHard, "too_hard"}, {Purpose::Fill, "fill"},
        {Purpose::Action, "action"}, {Purpose::Debug, "debug"}, {Purpose::Improve, "improve"},
        {Purpose::Evolve, "evolve"}, {Purpose::Greedy, "greedy"}, {Purpose::Human, "human"}, {Purpose::Seed, "seed"},
        {Purpose::Propose, "propose"}, {Purpose::Fallback, "fallback"}}};

} // namespace

std::string_view purposeName(Purpose p)
{
    for (const auto& [purpose, name] : kNames)
        if (purpose == p)
            return name;
    return "?";
}

std::optional<Purpose> parsePurpose(std::string_view name)
{
    for (const auto& [purpose, known] : kNames)
        if (known == name)
            return purpose;
    return std::nullopt;
}

} // namespace ks
