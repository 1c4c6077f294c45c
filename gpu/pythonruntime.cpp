#include "pythonruntime.h"

#include "subprocess.h"

#include <util/lastlines.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ks {

extern const char* const kPythonRunnerScript; // generated from resources/python/ksearch_pyrunner.py

namespace fs = std::filesystem;

namespace {

// Parses the file without running it, and looks for the entry point among the top-level names.
constexpr const char* kCheckSource = R"PY(
import ast, sys, traceback
path, name, symbol = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    tree = ast.parse(open(path, encoding="utf-8").read(), name)
except (SyntaxError, ValueError) as e:  # the error alone: the parser's own frames say nothing
    sys.exit("".join(traceback.format_exception_only(type(e), e)).rstrip())
names = set()
for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(node.name)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
            names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        names.update((a.asname or a.name).split(".")[0] for a in node.names)
if symbol not in names:
    sys.exit(name + ": defines no top-level " + symbol + "(...): the harness calls " + symbol + " with the inputs")
)PY";

std::string howToPoint()
{
    return "point ksearch at a python3 that has it with --python PATH (or KSEARCH_PYTHON, or the Python setting "
           "in the window)";
}

} // namespace

std::string defaultPythonInterpreter()
{
    const char* env = std::getenv("KSEARCH_PYTHON");
    return env && *env ? env : "python3";
}

fs::path writePythonRunner(const fs::path& dir)
{
    std::error_code ec;
    fs::create_directories(dir, ec);
    fs::path path = dir / "ksearch_pyrunner.py";
    std::ofstream out(path, std::ios::trunc);
    out << kPythonRunnerScript;
    if (!out.flush())
        throw std::runtime_error(path.string() + ": cannot write the Python runner");
    return path;
}

PythonProbe probePython(const PythonRuntime& runtime, bool needTriton, bool needCuda)
{
    PythonProbe probe;
    SubprocessRequest req;
    req.argv = {runtime.interpreter, runtime.script.string(), "--probe"};
    if (needTriton)
        req.argv.emplace_back("--triton");
    req.environment = scrubbedEnvironment();
    req.timeout = std::chrono::seconds(120); // importing torch cold can take tens of seconds
    const SubprocessResult r = runSubprocess(req);
    if (!r.started || r.exitCode == 127) {
        probe.problem = "cannot run the Python interpreter '" + runtime.interpreter + "' (" + r.describeExit()
            + "): install python3 with torch, or " + howToPoint();
        return probe;
    }
    if (!r.succeeded()) {
        probe.problem =
            runtime.interpreter + " failed to report what it has (" + r.describeExit() + "): " + lastLines(r.err, 6);
        return probe;
    }
    try {
        const auto j = nlohmann::json::parse(r.out);
        probe.python = j.value("python", std::string());
        probe.torch = j.value("torch", std::string());
        probe.triton = j.value("triton", std::string());
        probe.device = j.value("device", std::string());
        probe.cuda = j.value("cuda", false);
        if (j.contains("missing")) {
            const std::string what = j["missing"].get<std::string>();
            probe.problem = runtime.interpreter + " (" + j.value("executable", std::string()) + ", Python "
                + probe.python + ") cannot import " + what + ": install " + what + " for it, or " + howToPoint();
            return probe;
        }
    } catch (const nlohmann::json::exception& e) {
        probe.problem = runtime.interpreter + ": unreadable probe answer: " + e.what();
        return probe;
    }
    // The runner takes its job's descriptors with socket.recv_fds, new in Python 3.9.
    int major = 0, minor = 0;
    if (std::sscanf(probe.python.c_str(), "%d.%d", &major, &minor) == 2 && (major < 3 || (major == 3 && minor < 9))) {
        probe.problem = runtime.interpreter + " is Python " + probe.python
            + "; the Python runner needs 3.9 or newer: " + howToPoint();
        return probe;
    }
    if (needCuda && !probe.cuda)
        probe.problem = runtime.interpreter + " has torch " + probe.torch
            + " without a usable CUDA device (a CPU-only build, or no GPU visible): install a CUDA build of torch, or "
            + howToPoint();
    return probe;
}

PythonProbe startPythonRuntime(PythonRuntime& runtime, const fs::path& scratch, bool needTriton, bool needCuda)
{
    runtime.tritonCache = scratch / "triton-cache";
    try {
        runtime.script = writePythonRunner(scratch / "python");
    } catch (const std::exception& e) {
        PythonProbe failed;
        failed.problem = e.what();
        return failed;
    }
    PythonProbe probe = probePython(runtime, needTriton, needCuda);
    if (!probe.problem.empty())
        runtime.script.clear();
    return probe;
}

CompileResult checkPythonSource(const PythonRuntime& runtime, const CompileRequest& request, const std::string& symbol)
{
    CompileResult result;
    std::error_code ec;
    fs::create_directories(request.workDir, ec);
    result.library = request.workDir / request.source.filename();
    fs::copy_file(request.source, result.library, fs::copy_options::overwrite_existing, ec);
    if (ec) {
        result.log = request.source.string() + ": cannot read (" + ec.message() + ")";
        return result;
    }
    SubprocessRequest sub;
    sub.argv = {runtime.interpreter, "-I", "-c", kCheckSource, result.library.string(),
        request.source.filename().string(), symbol};
    result.command = runtime.interpreter + " -I -c <parse " + request.source.filename().string() + ">";
    sub.environment = scrubbedEnvironment();
    sub.timeout = request.timeout;
    const SubprocessResult run = runSubprocess(sub);
    result.seconds = run.seconds;
    result.timedOut = run.timedOut;
    if (!run.started || run.exitCode == 127)
        result.log = "cannot run the Python interpreter '" + runtime.interpreter + "': " + run.describeExit();
    else if (!run.succeeded())
        result.log = lastLines(run.err, 12);
    result.ok = run.succeeded();
    return result;
}

} // namespace ks
