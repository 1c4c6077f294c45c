#include "gpulist.h"

#include "runnerclient.h"
#include "subprocess.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace ks {

namespace {

std::vector<std::string> split(const std::string& text)
{
    std::vector<std::string> out;
    for (const QString& part : QString::fromStdString(text).split(u',', Qt::SkipEmptyParts))
        out.push_back(part.trimmed().toStdString());
    return out;
}

// Devices the runner sees with this process's environment: their indices.
std::optional<std::vector<std::string>> probedDevices(std::string& error)
{
    SubprocessRequest req;
    req.argv = {runnerPath().string(), "--probe"};
    req.environment = scrubbedEnvironment();
    req.timeout = std::chrono::seconds(60);
    const auto r = runSubprocess(req);
    if (!r.succeeded()) {
        error = "all: cannot run " + runnerPath().string() + " --probe: " + r.describeExit();
        return std::nullopt;
    }
    try {
        const auto devices = nlohmann::json::parse(r.out).value("devices", nlohmann::json::array());
        if (devices.empty()) {
            error = "all: no CUDA device is visible here";
            return std::nullopt;
        }
        std::vector<std::string> out;
        for (std::size_t i = 0; i < devices.size(); ++i)
            out.push_back(std::to_string(i));
        return out;
    } catch (const nlohmann::json::exception& e) {
        error = std::string("all: unreadable device probe: ") + e.what();
        return std::nullopt;
    }
}

} // namespace

std::optional<std::vector<std::string>> parseGpuList(const std::string& text, std::string& error)
{
    if (text == "all") {
        const QByteArray visible = qgetenv("CUDA_VISIBLE_DEVICES");
        if (!visible.isEmpty())
            return split(visible.toStdString());
        return probedDevices(error);
    }
    const std::vector<std::string> list = split(text);
    if (list.empty()) {
        error = "'" + text + "' names no GPU (all, or indices such as 0,2,5)";
        return std::nullopt;
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string& d = list[i];
        const bool index = std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!index && d.rfind("GPU-", 0) != 0 && d.rfind("MIG-", 0) != 0) {
            error = "'" + d + "' is not a GPU index or UUID";
            return std::nullopt;
        }
        if (std::find(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(i), d)
            != list.begin() + static_cast<std::ptrdiff_t>(i)) {
            error = "GPU " + d + " is listed twice";
            return std::nullopt;
        }
    }
    return list;
}

} // namespace ks
