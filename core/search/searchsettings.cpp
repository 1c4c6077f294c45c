#include "searchsettings.h"

namespace ks {

std::string_view strategyName(StrategyKind s)
{
    switch (s) {
    case StrategyKind::KSearch:
        return "ksearch";
    case StrategyKind::Evolve:
        return "evolve";
    case StrategyKind::Greedy:
        return "greedy";
    }
    return "?";
}

std::optional<StrategyKind> parseStrategy(std::string_view s)
{
    for (StrategyKind k : {StrategyKind::KSearch, StrategyKind::Evolve, StrategyKind::Greedy})
        if (strategyName(k) == s)
            return k;
    return std::nullopt;
}

nlohmann::json SearchSettings::toJson() const
{
    return {{"strategy", strategyName(strategy)}, {"budget", budget}, {"k", stagnation},
        {"min_improvement", minImprovement}, {"target_score", targetScore}, {"max_seconds", maxSeconds},
        {"max_dollars", maxDollars}, {"max_new_nodes", maxNewNodes}, {"frozen_values", frozenValues}, {"flat", flat},
        {"tree_budget", treeBudget}, {"max_answers_without_program", maxAnswersWithoutProgram}, {"islands", islands},
        {"migration_interval", migrationInterval}, {"inspirations", inspirations}, {"random_seed", randomSeed}};
}

std::optional<SearchSettings> SearchSettings::fromJson(const nlohmann::json& j, std::string& error)
{
    SearchSettings s;
    const auto fail = [&](const std::string& field, const std::string& what) {
        error = "settings." + field + ": " + what;
        return std::nullopt;
    };
    if (!j.is_object())
        return fail("", "must be an object");
    const auto strategy = parseStrategy(j.value("strategy", std::string("ksearch")));
    if (!strategy)
        return fail("strategy", "must be ksearch, evolve or greedy");
    s.strategy = *strategy;
    try {
        s.budget = j.value("budget", s.budget);
        s.stagnation = j.value("k", s.stagnation);
        s.minImprovement = j.value("min_improvement", s.minImprovement);
        s.targetScore = j.value("target_score", s.targetScore);
        s.maxSeconds = j.value("max_seconds", s.maxSeconds);
        s.maxDollars = j.value("max_dollars", s.maxDollars);
        s.maxNewNodes = j.value("max_new_nodes", s.maxNewNodes);
        s.frozenValues = j.value("frozen_values", s.frozenValues);
        s.flat = j.value("flat", s.flat);
        s.treeBudget = j.value("tree_budget", s.treeBudget);
        s.maxAnswersWithoutProgram = j.value("max_answers_without_program", s.maxAnswersWithoutProgram);
        s.islands = j.value("islands", s.islands);
        s.migrationInterval = j.value("migration_interval", s.migrationInterval);
        s.inspirations = j.value("inspirations", s.inspirations);
        s.randomSeed = j.value("random_seed", s.randomSeed);
    } catch (const nlohmann::json::exception& e) {
        return fail("", std::string("a field has the wrong type: ") + e.what());
    }
    if (s.budget < 1)
        return fail("budget", "must be at least 1");
    if (s.stagnation < 1)
        return fail("k", "must be at least 1");
    if (s.maxNewNodes < 1)
        return fail("max_new_nodes", "must be at least 1");
    if (s.islands < 1)
        return fail("islands", "must be at least 1");
    if (s.treeBudget < 500)
        return fail("tree_budget", "must be at least 500 bytes");
    return s;
}

std::string SearchSettings::describe() const
{
    std::string d = std::string(strategyName(strategy)) + ", B = " + std::to_string(budget);
    if (strategy == StrategyKind::KSearch)
        d += ", K = " + std::to_string(stagnation);
    if (frozenValues)
        d += ", frozen V";
    if (flat)
        d += ", flat frontier";
    if (strategy == StrategyKind::Evolve)
        d += ", " + std::to_string(islands) + " islands";
    return d;
}

} // namespace ks
