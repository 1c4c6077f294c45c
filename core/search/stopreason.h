#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ks {

// Why a run ended, and the sentence its journal keeps for it (RunFinished's `reason`,
// SearchState::finishedReason): the sentence is the record, read by people in the log, the
// report and the CLI, and the kind is read back from it (stopKindOf), so journals of every build
// tell their kind alike. Made only by the functions below.
struct StopReason {
    enum class Kind {
        TargetReached, // the best J reached the run's target (--target)
        BudgetUsed, // every evaluation of the budget B spent
        NoProgram, // the code policy answered without a program too many times in a row
        TimeLimit, // the run's time cap (--max-seconds)
        DollarCap, // the LLM spending cap
        StoppedByPerson, // Stop in the window, or the CLI's interrupt
    };
    Kind kind;
    std::string text;

    static StopReason targetReached(const std::string& target); // the target as J is shown
    static StopReason budgetUsed(int budget);
    static StopReason noProgram(int answers);
    static StopReason timeLimit(int seconds);
    static StopReason dollarCap(const std::string& detail = {}); // the provider's words, if any
    static StopReason stoppedByPerson(const std::string& why = {});
};

// The kind of a recorded sentence; nullopt for one no build writes.
std::optional<StopReason::Kind> stopKindOf(std::string_view text);

} // namespace ks
