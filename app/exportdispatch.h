#pragma once

#include <search/searchstate.h>
#include <session/session.h>
#include <task/task.h>

#include <QTextStream>

#include <filesystem>
#include <string>

namespace ks::cli {

struct DispatchOptions {
    double benchSeconds = 1.0; // the timing loop's cap per workload
    std::string python; // for a task whose reference is reference.py; empty: the default
    bool confine = true; // false: --unconfined
};

// Writes dispatch.<ext>, dispatch.json and a section of report.md into `outDir` when the
// dispatching kernel passes; says both J on `out`. 0, or 1 when there is nothing to dispatch or
// the kernel failed (said on `err`), 3 when the backend is missing here.
int exportDispatch(const Session& session, const SearchState& state, const Task& task,
    const std::filesystem::path& outDir, const DispatchOptions& options, QTextStream& out, QTextStream& err);

} // namespace ks::cli
