#include "taskcatalog.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

namespace ks {

namespace fs = std::filesystem;

std::vector<fs::path> taskSearchPath()
{
    std::vector<fs::path> out;
    if (const char* env = std::getenv("KSEARCH_TASKS_PATH")) {
        std::istringstream in(env);
        std::string item;
        while (std::getline(in, item, ':'))
            if (!item.empty())
                out.emplace_back(item);
    }
    std::error_code ec;
    out.push_back(fs::current_path(ec) / "tasks");
    const auto exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec)
        out.push_back(exe.parent_path().parent_path() / "share" / "ksearch" / "tasks");
#ifdef KSEARCH_SOURCE_DIR
    out.push_back(fs::path(KSEARCH_SOURCE_DIR) / "tasks");
#endif
    std::vector<fs::path> unique;
    for (auto& p : out) {
        auto canonical = fs::weakly_canonical(p, ec);
        if (ec)
            canonical = p;
        if (std::find(unique.begin(), unique.end(), canonical) == unique.end())
            unique.push_back(canonical);
    }
    return unique;
}

std::optional<fs::path> resolveTask(const std::string& nameOrPath, std::string& error)
{
    std::error_code ec;
    const fs::path asPath(nameOrPath);
    const bool looksLikePath = nameOrPath.find('/') != std::string::npos || nameOrPath == "." || nameOrPath == "..";
    if (fs::is_directory(asPath, ec) && (looksLikePath || fs::exists(asPath / "definition.json", ec)))
        return asPath;
    if (looksLikePath) {
        error = nameOrPath + ": no such task folder";
        return std::nullopt;
    }
    for (const auto& dir : taskSearchPath())
        if (fs::exists(dir / nameOrPath / "definition.json", ec))
            return dir / nameOrPath;
    std::string searched;
    for (const auto& dir : taskSearchPath())
        searched += "\n  " + dir.string();
    error = "no task named '" + nameOrPath + "' (searched:" + searched + ")";
    return std::nullopt;
}

std::vector<TaskEntry> listTasks()
{
    std::vector<TaskEntry> out;
    std::set<std::string> seen;
    std::error_code ec;
    for (const auto& dir : taskSearchPath()) {
        if (!fs::is_directory(dir, ec))
            continue;
        std::vector<fs::path> folders;
        for (const auto& entry : fs::directory_iterator(dir, ec))
            if (entry.is_directory() && fs::exists(entry.path() / "definition.json", ec))
                folders.push_back(entry.path());
        std::sort(folders.begin(), folders.end());
        for (const auto& f : folders)
            if (seen.insert(f.filename().string()).second)
                out.push_back({f.filename().string(), f});
    }
    return out;
}

} // namespace ks
