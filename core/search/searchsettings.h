#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ks {

enum class StrategyKind { KSearch, Evolve, Greedy };
std::string_view strategyName(StrategyKind s);
std::optional<StrategyKind> parseStrategy(std::string_view s);

// The parameters of one search. Budget and K may change while it runs (a human's command).
struct SearchSettings {
    StrategyKind strategy = StrategyKind::KSearch;
    int budget = 120; // B: evaluator calls, compile failures included
    int stagnation = 7; // K: attempts without improvement that end an action
    double minImprovement = 0.01; // a new best must beat the old by this fraction (timing noise is not progress)
    double targetScore = 0.0; // stop once the best J reaches it; 0: none
    double maxSeconds = 0.0; // stop after this much running time; 0: none
    double maxDollars = 0.0; // the LLM dollar cap; 0: none
    int maxNewNodes = 3; // per world-model edit
    bool frozenValues = false; // ablation: V never changes after insertion
    bool flat = false; // ablation: every intent under the root, each starting from the best program
    std::size_t treeBudget = 6000; // bytes of tree rendering in planner prompts
    int maxAnswersWithoutProgram = 5; // coder answers in a row without code before the run stops
    // evolve
    int islands = 3;
    int migrationInterval = 10; // evaluations between migrations of the best program
    int inspirations = 2;
    std::uint64_t randomSeed = 1;

    nlohmann::json toJson() const;
    // An error names the field ("settings.budget: ...").
    static std::optional<SearchSettings> fromJson(const nlohmann::json& j, std::string& error);
    std::string describe() const; // "ksearch, B = 120, K = 7"
};

} // namespace ks
