#pragma once

#include <task/task.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ks {

struct TaskCheckOptions {
    int maxWorkloads = 3; // the smallest workloads by input size
    std::vector<std::string> workloadIds; // instead of the smallest: these (uuids or unique prefixes)
    bool cuda = false; // also run reference.cu and baseline.cu on the GPU
    std::uint64_t seed = 0x5eed;
    std::filesystem::path workDir; // scratch: compiled libraries and runner jobs
    std::string python; // the interpreter for reference.py; empty: $KSEARCH_PYTHON, else python3
    std::function<void(const std::string&)> progress;
};

struct TaskCheckReport {
    enum class Outcome { Passed, TaskInvalid, EnvironmentProblem };
    Outcome outcome = Outcome::Passed;
    std::vector<std::string> lines; // what was checked and what was found, one line each
};

// Compiles reference.cpp and baseline.cpp with the host compiler (and, with options.cuda,
// reference.cu and baseline.cu with nvcc), runs each in its own ksearch-runner on the chosen
// workloads and compares every output element with reference.cpp's under the task's tolerance.
TaskCheckReport checkTask(const Task& task, const TaskCheckOptions& options);

} // namespace ks
