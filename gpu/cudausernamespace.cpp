#include "cudausernamespace.h"

#include "runnerclient.h"
#include "subprocess.h"

#include <QDir>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cctype>
#include <mutex>
#include <unistd.h>

namespace ks {

namespace {

CudaUserNamespace probe()
{
    if (::geteuid() == 0)
        return {false, "root makes the namespaces without one"};
    QTemporaryDir scratch(QDir::tempPath() + QStringLiteral("/ksearch-probe-XXXXXX"));
    if (!scratch.isValid())
        return {false, "no scratch folder for the probe: " + scratch.errorString().toStdString()};
    SubprocessRequest req;
    req.argv = {runnerPath().string(), "--probe-confined", scratch.path().toStdString()};
    req.environment = scrubbedEnvironment();
    req.timeout = std::chrono::seconds(60);
    const SubprocessResult r = runSubprocess(req);
    if (!r.succeeded()) {
        std::string err = r.err;
        while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back())))
            err.pop_back();
        return {false, "ksearch-runner --probe-confined: " + r.describeExit() + (err.empty() ? "" : ": " + err)};
    }
    const auto answer = nlohmann::json::parse(r.out, nullptr, false);
    if (answer.is_discarded() || !answer.is_object())
        return {false, "ksearch-runner --probe-confined answered no JSON: " + r.out};
    return {true, {}};
}

} // namespace

const CudaUserNamespace& cudaUserNamespace()
{
    static std::once_flag once;
    static CudaUserNamespace answer;
    std::call_once(once, [] {
        answer = probe();
        if (!answer.use && ::geteuid() != 0)
            spdlog::warn("CUDA candidates run without the namespaces: {}", answer.why);
    });
    return answer;
}

} // namespace ks
