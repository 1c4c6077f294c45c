#pragma once

#include "evaluator.h"
#include "workerprotocol.h"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace ks::worker {

// The evaluation side of `ksearch worker`: one request line in, one reply line out. It keeps one
// Evaluator per (task, settings), so the inputs, reference outputs and baseline timings of a
// search are made once, on the first candidate, as in a local search.
class Worker
{
public:
    using TaskLoader = std::function<std::optional<Task>(const std::string& nameOrPath, std::string& error)>;

    Worker(std::string ksearchVersion, std::filesystem::path scratchDir, TaskLoader loadTask);
    ~Worker();

    struct Reply {
        nlohmann::json line;
        bool quit = false; // the conversation is over (bye, or a refused hello)
        int exitCode = 0;
    };
    Reply handle(const std::string& line);
    // The interpreter for python and triton candidates and reference.py (default: $KSEARCH_PYTHON,
    // else python3): the worker's machine's, never the caller's.
    void setPython(std::string interpreter) { m_python = std::move(interpreter); }

private:
    Reply evaluate(const nlohmann::json& request, const std::string& id);

    std::string m_version;
    std::filesystem::path m_scratch;
    TaskLoader m_loadTask;
    bool m_greeted = false;
    std::map<std::string, std::unique_ptr<Evaluator>> m_evaluators; // by task, digest and settings
    int m_candidates = 0;
    std::string m_python;
};

} // namespace ks::worker
