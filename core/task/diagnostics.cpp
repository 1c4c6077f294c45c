#include "diagnostics.h"

#include <algorithm>

namespace ks {

std::string TaskIssue::format() const
{
    std::string out = file;
    if (!field.empty())
        out += ": " + field;
    out += severity == Severity::Warning ? ": warning: " : ": ";
    out += message;
    return out;
}

void Diagnostics::error(std::string file, std::string field, std::string message)
{
    m_issues.push_back({TaskIssue::Severity::Error, std::move(file), std::move(field), std::move(message)});
}

void Diagnostics::warning(std::string file, std::string field, std::string message)
{
    m_issues.push_back({TaskIssue::Severity::Warning, std::move(file), std::move(field), std::move(message)});
}

bool Diagnostics::hasErrors() const
{
    return std::any_of(
        m_issues.begin(), m_issues.end(), [](const TaskIssue& i) { return i.severity == TaskIssue::Severity::Error; });
}

std::vector<TaskIssue> Diagnostics::errors() const
{
    std::vector<TaskIssue> out;
    std::copy_if(m_issues.begin(), m_issues.end(), std::back_inserter(out),
        [](const TaskIssue& i) { return i.severity == TaskIssue::Severity::Error; });
    return out;
}

std::string Diagnostics::formatAll() const
{
    std::string out;
    for (const auto& issue : m_issues)
        out += issue.format() + "\n";
    return out;
}

} // namespace ks
