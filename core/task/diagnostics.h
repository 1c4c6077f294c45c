#pragma once

#include <string>
#include <vector>

namespace ks {

// One problem found in a task: which file, which field inside it, and what is wrong.
struct TaskIssue {
    enum class Severity { Error, Warning };
    Severity severity = Severity::Error;
    std::string file; // path as given by the user (or relative to the task folder)
    std::string field; // dotted path inside the file, e.g. "inputs.weight.dtype"; empty for the file itself
    std::string message;

    std::string format() const; // "file: field: message" (the form every front end prints)
};

class Diagnostics
{
public:
    void error(std::string file, std::string field, std::string message);
    void warning(std::string file, std::string field, std::string message);

    bool hasErrors() const;
    const std::vector<TaskIssue>& issues() const { return m_issues; }
    std::vector<TaskIssue> errors() const;
    std::string formatAll() const; // one issue per line

private:
    std::vector<TaskIssue> m_issues;
};

} // namespace ks
