#include "logging.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace ks {

std::string defaultLogFile()
{
    const QString dir =
        QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) + QStringLiteral("/logs");
    return QString(dir + QStringLiteral("/ksearch.log")).toStdString();
}

std::string setupLogging(const LoggingOptions& options)
{
    auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    console->set_level(options.verbose ? spdlog::level::debug : spdlog::level::warn);
    console->set_pattern("ksearch: %^%l%$: %v");
    std::vector<spdlog::sink_ptr> sinks {console};

    std::string path = options.logFile.empty() ? defaultLogFile() : options.logFile;
    if (path == "-")
        path.clear();
    if (!path.empty()) {
        try {
            QDir().mkpath(QFileInfo(QString::fromStdString(path)).absolutePath());
            auto file = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(path, 5 * 1024 * 1024, 3);
            file->set_level(spdlog::level::debug);
            file->set_pattern("%Y-%m-%d %H:%M:%S.%e [%l] [%t] %v");
            sinks.push_back(file);
        } catch (const spdlog::spdlog_ex& e) {
            console->log(spdlog::details::log_msg(
                "ksearch", spdlog::level::warn, std::string("cannot open log file ") + path + ": " + e.what()));
            path.clear();
        }
    }
    auto logger = std::make_shared<spdlog::logger>("ksearch", sinks.begin(), sinks.end());
    logger->set_level(spdlog::level::debug);
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
    return path;
}

} // namespace ks
