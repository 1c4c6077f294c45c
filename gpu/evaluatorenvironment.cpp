// What an Evaluator runs on: the device and compilers it finds (environmentProblem, the
// descriptions a report prints), what is timed as the baseline, and the Python runtime that
// Python candidates and PyTorch references need.
#include "evaluator.h"

#include "cudausernamespace.h"
#include "evaluatorinternal.h"
#include "subprocess.h"

#include <nlohmann/json.hpp>

namespace ks {

namespace fs = std::filesystem;
using evaluatordetail::isPythonFile;

std::string Evaluator::targetDescription() const
{
    if (m_settings.backend == Backend::Host)
        return isPythonLanguage(m_language) ? "the host CPU (PyTorch on the CPU)"
                                            : "the host CPU (one process; OpenMP threads allowed)";
    return (m_device.empty() ? std::string("an NVIDIA GPU") : m_device) + " (sm_" + m_settings.cudaArch + ")";
}

std::string Evaluator::compilerDescription() const
{
    if (isPythonLanguage(m_language))
        return m_settings.python + (m_pythonVersions.empty() ? "" : " (" + m_pythonVersions + ")");
    if (m_settings.backend == Backend::Host)
        return hostCompiler() + " -std=c++17 -O3 -march=native -fopenmp";
    return "nvcc -std=c++17 -O3 -gencode=arch=compute_" + m_settings.cudaArch + ",code=sm_" + m_settings.cudaArch;
}

std::optional<std::string> Evaluator::environmentProblem()
{
    if (const std::string p = languageBackendProblem(m_language, backendName(m_settings.backend)); !p.empty())
        return p;
    if (needsPython())
        if (auto problem = preparePython())
            return problem;
    SubprocessRequest req;
    req.environment = scrubbedEnvironment();
    req.timeout = std::chrono::seconds(60);
    if (m_settings.backend == Backend::Cuda) {
        if (!fs::exists(nvccPath()) && nvccPath().find('/') != std::string::npos)
            return "nvcc not found at " + nvccPath() + " (install the CUDA toolkit or set KSEARCH_NVCC)";
        req.argv = {runnerPath().string(), "--probe"};
        if (!m_settings.cudaVisibleDevices.empty())
            req.environment["CUDA_VISIBLE_DEVICES"] = m_settings.cudaVisibleDevices;
        const auto r = runSubprocess(req);
        if (!r.succeeded())
            return "cannot run " + runnerPath().string() + ": " + r.describeExit();
        try {
            const auto probe = nlohmann::json::parse(r.out);
            if (probe.value("devices", nlohmann::json::array()).empty())
                return "no CUDA device: " + probe.value("error", std::string("none visible"));
            m_device = probe["devices"][0].value("name", std::string());
            // cudaComputeModeExclusive (1) or cudaComputeModeExclusiveProcess (3)
            const int mode = probe["devices"][0].value("compute_mode", 0);
            m_exclusiveDevice = mode == 1 || mode == 3;
        } catch (const nlohmann::json::exception& e) {
            return std::string("unreadable device probe: ") + e.what();
        }
        if (m_settings.confineCandidates)
            cudaUserNamespace(); // asked here, once per process, rather than by the first runner started
    } else {
        req.argv = {hostCompiler(), "--version"};
        if (!runSubprocess(req).succeeded())
            return "host compiler '" + hostCompiler() + "' not found (set KSEARCH_CXX)";
    }
    return std::nullopt;
}

std::optional<fs::path> Evaluator::baselineSource() const
{
    const auto& f = m_task.files;
    const bool cuda = m_settings.backend == Backend::Cuda;
    // The backend's baseline, else its compiled reference, else FlashInfer-Bench's own yardstick.
    for (const auto& file : {cuda ? f.baselineCu : f.baselineCpp, cuda ? f.referenceCu : f.referenceCpp, f.referencePy})
        if (file)
            return file;
    return std::nullopt;
}

bool Evaluator::needsPython() const
{
    const auto timed = baselineSource();
    return isPythonLanguage(m_language) || !m_task.files.referenceCpp || (timed && isPythonFile(*timed));
}

std::optional<std::string> Evaluator::preparePython()
{
    if (!m_python.script.empty())
        return std::nullopt;
    const PythonProbe probe = startPythonRuntime(
        m_python, m_settings.workDir, m_language == Language::Triton, m_settings.backend == Backend::Cuda);
    if (!probe.problem.empty()) {
        const bool forReference = !isPythonLanguage(m_language);
        return forReference ? "the task's PyTorch reference (reference.py) needs Python: " + probe.problem
                            : probe.problem;
    }
    m_pythonVersions = "Python " + probe.python + ", torch " + probe.torch
        + (probe.triton.empty() ? std::string() : ", triton " + probe.triton);
    return std::nullopt;
}

CompileCache::Result Evaluator::checkPython(const CompileRequest& request)
{
    CompileCache::Result r;
    m_pythonProblem = preparePython(); // evaluate() without environmentProblem() first
    if (m_pythonProblem) {
        r.compile.log = *m_pythonProblem;
        return r;
    }
    CompileRequest req = request;
    req.workDir = m_settings.workDir / ("python-candidate-" + std::to_string(m_jobCounter + 1));
    r.compile = checkPythonSource(m_python, req);
    return r;
}

} // namespace ks
