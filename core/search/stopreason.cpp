#include "stopreason.h"

#include <array>
#include <utility>

namespace ks {

namespace {

using Kind = StopReason::Kind;

// How each kind's sentence begins: the part of it that carries no figure.
constexpr std::array<std::pair<Kind, std::string_view>, 6> kOpenings {
    {{Kind::TargetReached, "target J "}, {Kind::BudgetUsed, "budget of "},
        {Kind::NoProgram, "the code policy gave no program"}, {Kind::TimeLimit, "time limit of "},
        {Kind::DollarCap, "dollar cap reached"}, {Kind::StoppedByPerson, "stopped by a person"}}};

std::string opening(Kind k)
{
    for (const auto& [kind, text] : kOpenings)
        if (kind == k)
            return std::string(text);
    return {};
}

} // namespace

StopReason StopReason::targetReached(const std::string& target)
{
    return {Kind::TargetReached, opening(Kind::TargetReached) + target + " reached"};
}

StopReason StopReason::budgetUsed(int budget)
{
    return {Kind::BudgetUsed, opening(Kind::BudgetUsed) + std::to_string(budget) + " evaluations used"};
}

StopReason StopReason::noProgram(int answers)
{
    return {Kind::NoProgram, opening(Kind::NoProgram) + " in " + std::to_string(answers) + " answers in a row"};
}

StopReason StopReason::timeLimit(int seconds)
{
    return {Kind::TimeLimit, opening(Kind::TimeLimit) + std::to_string(seconds) + " s reached"};
}

StopReason StopReason::dollarCap(const std::string& detail)
{
    return {Kind::DollarCap, opening(Kind::DollarCap) + (detail.empty() ? std::string() : ": " + detail)};
}

StopReason StopReason::stoppedByPerson(const std::string& why)
{
    return {Kind::StoppedByPerson, opening(Kind::StoppedByPerson) + (why.empty() ? std::string() : ": " + why)};
}

std::optional<StopReason::Kind> stopKindOf(std::string_view text)
{
    for (const auto& [kind, start] : kOpenings)
        if (text.substr(0, start.size()) == start)
            return kind;
    return std::nullopt;
}

} // namespace ks
