#include "confinement.h"

namespace ks {

std::vector<std::string> isolationGaps(bool network, bool processes, bool filesystem)
{
    std::vector<std::string> gaps;
    const std::pair<bool, const char*> parts[] = {{network, "no network namespace"},
        {processes, "forked processes may outlive the run"}, {filesystem, "the filesystem is writable"}};
    for (const auto& [had, gap] : parts)
        if (!had)
            gaps.emplace_back(gap);
    return gaps;
}

std::vector<std::string> confinementGaps(const Confinement& c)
{
    if (c.off)
        return {"confinement turned off in the settings"};
    std::vector<std::string> gaps = isolationGaps(c.network, c.processes, c.filesystem);
    const std::pair<bool, const char*> parts[] = {{c.fileLimitBytes > 0, "no file size limit"},
        {c.memoryLimitBytes > 0, "no memory limit"}, {c.processLimit > 0, "no process limit"},
        {c.gpuMemoryBudgetBytes.value_or(1) > 0, "no GPU memory budget"},
        {c.compilerConfined.value_or(true), "the compiler ran without full confinement"}};
    for (const auto& [had, gap] : parts)
        if (!had)
            gaps.emplace_back(gap);
    return gaps;
}

nlohmann::json toJson(const Confinement& c)
{
    nlohmann::json j {{"off", c.off}, {"network", c.network}, {"processes", c.processes}, {"filesystem", c.filesystem},
        {"file_limit_bytes", c.fileLimitBytes}, {"memory_limit_bytes", c.memoryLimitBytes},
        {"process_limit", c.processLimit}};
    if (c.gpuMemoryBudgetBytes)
        j["gpu_memory_budget_bytes"] = *c.gpuMemoryBudgetBytes;
    if (c.compilerConfined)
        j["compiler_confined"] = *c.compilerConfined;
    return j;
}

std::optional<Confinement> confinementFromJson(const nlohmann::json& j)
{
    if (!j.is_object())
        return std::nullopt;
    auto flag = [&](const char* key) {
        const auto it = j.find(key);
        return it != j.end() && it->is_boolean() && it->get<bool>();
    };
    auto count = [&](const char* key) {
        const auto it = j.find(key);
        return it != j.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : std::uint64_t {0};
    };
    Confinement c;
    c.off = flag("off");
    c.network = flag("network");
    c.processes = flag("processes");
    c.filesystem = flag("filesystem");
    c.fileLimitBytes = count("file_limit_bytes");
    c.memoryLimitBytes = count("memory_limit_bytes");
    c.processLimit = count("process_limit");
    if (j.contains("gpu_memory_budget_bytes"))
        c.gpuMemoryBudgetBytes = count("gpu_memory_budget_bytes");
    if (j.contains("compiler_confined"))
        c.compilerConfined = flag("compiler_confined");
    return c;
}

} // namespace ks
