#pragma once

#include "searchstate.h"

#include <llm/llmtypes.h>
#include <task/language.h>
#include <task/task.h>

#include <QList>

#include <functional>
#include <string>

namespace ks {

// Where the code runs, for prompts.
struct TargetInfo {
    std::string description; // "NVIDIA H200 (sm_90a)" or "the host CPU"
    std::string compiler; // "nvcc -O3 -arch=sm_90a" or "g++ -O3 -march=native -fopenmp"
    bool cuda = true;
    Language language = Language::Cuda; // of the candidates the coder writes
};

// Builds every prompt of the search from the state: the world model's (init, update, too_hard,
// fill, and the repair turn after a refused answer) and the code policy's (action, debug,
// improve, evolve, greedy). Pure: the same state gives the same messages.
class PromptBuilder
{
public:
    using ProgramSource = std::function<std::string(const std::string& hash)>;
    PromptBuilder(const Task& task, TargetInfo target, ProgramSource programs);

    QList<ChatMessage> planner(const SearchState& state, const PlannerTask& task) const;
    QList<ChatMessage> coder(const SearchState& state, Purpose kind, const std::string& node) const;

private:
    std::string plannerPrompt(const SearchState& state, const PlannerTask& task) const;
    std::string outcome(const SearchState& state, const SearchNode& node, bool passed) const;
    std::string programBlock(const std::string& title, const Attempt& a) const;

    const Task& m_task;
    TargetInfo m_target;
    ProgramSource m_programs;
    std::string m_taskFull, m_taskShort;
};

} // namespace ks
