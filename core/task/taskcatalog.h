#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// Folders searched for tasks by name, in order: $KSEARCH_TASKS_PATH (colon-separated),
// ./tasks, the installed share/ksearch/tasks next to the executable, and the source tree's tasks/.
std::vector<std::filesystem::path> taskSearchPath();

// A task given as a path (any folder holding definition.json) or as a name found on the search path.
std::optional<std::filesystem::path> resolveTask(const std::string& nameOrPath, std::string& error);

struct TaskEntry {
    std::string name;
    std::filesystem::path dir;
};
// Every task folder on the search path; a name found twice is listed once (the first wins).
std::vector<TaskEntry> listTasks();

} // namespace ks
