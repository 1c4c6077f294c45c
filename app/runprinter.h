#pragma once

#include <search/searchstate.h>
#include <task/task.h>

#include <QTextStream>

#include <filesystem>

namespace ks::cli {

// What `ksearch run` prints: one line per evaluation (round, node, attempt, verdict, J, best J,
// tokens, dollars), a line for each change of the tree, and the summary table at the end.
class RunPrinter
{
public:
    RunPrinter(const Task& task, QTextStream& out, bool quiet);
    void onEvent(const SearchState& state, const JournalEvent& event);
    void printSummary(const SearchState& state, const std::filesystem::path& sessionDir);

private:
    const Task& m_task;
    QTextStream& m_out;
    bool m_quiet;
};

} // namespace ks::cli
