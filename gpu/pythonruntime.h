#pragma once

#include "compiler.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace ks {

// Where Python candidates (languages python and triton) run: the user's interpreter with torch
// (and triton), and the Python runner that replaces ksearch-runner for them. The runner script
// is built into ksearch and written into the search's scratch folder, so the one that runs is
// always the one this ksearch was built with.
struct PythonRuntime {
    std::string interpreter = "python3"; // a name on PATH or a path
    std::filesystem::path script; // the runner, as written by writePythonRunner
    std::filesystem::path tritonCache; // TRITON_CACHE_DIR of every runner: inside the scratch folder

    bool operator==(const PythonRuntime&) const = default;
};

// $KSEARCH_PYTHON, else python3.
std::string defaultPythonInterpreter();

// Writes the runner into dir (created) and returns its path; throws std::runtime_error.
std::filesystem::path writePythonRunner(const std::filesystem::path& dir);

// What the interpreter offers. `problem` is set when it cannot run candidates of the kind asked
// for, naming what is missing and how to point ksearch at another interpreter.
struct PythonProbe {
    std::string python, torch, triton, device;
    bool cuda = false;
    std::string problem;
};
PythonProbe probePython(const PythonRuntime& runtime, bool needTriton, bool needCuda);

// Readies `runtime` (its interpreter already chosen) in a scratch folder: the runner written to
// scratch/python, Triton's cache at scratch/triton-cache, then the interpreter probed. On a
// problem (the runner cannot be written, or the probe's) runtime.script stays empty.
PythonProbe startPythonRuntime(
    PythonRuntime& runtime, const std::filesystem::path& scratch, bool needTriton, bool needCuda);

// The "compile" step of a Python candidate: the file is copied into request.workDir and parsed
// by the interpreter (nothing of it runs); a syntax error, or no top-level `symbol`, fails with
// the traceback's last lines as the log. The result's library is the copied file.
CompileResult checkPythonSource(
    const PythonRuntime& runtime, const CompileRequest& request, const std::string& symbol = "run");

} // namespace ks
