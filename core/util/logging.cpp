#include "logging.h"

#include "secrets.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace ks {

namespace {

// Passes every message, with the process's secrets redacted, to the sinks behind it.
class RedactingSink final : public spdlog::sinks::base_sink<std::mutex>
{
public:
    explicit RedactingSink(std::vector<spdlog::sink_ptr> sinks)
        : m_sinks(std::move(sinks))
    {
    }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override
    {
        const std::string text = redactSecrets(std::string(msg.payload.data(), msg.payload.size()));
        spdlog::details::log_msg copy = msg;
        copy.payload = text;
        for (const auto& s : m_sinks)
            if (s->should_log(copy.level))
                s->log(copy);
    }
    void flush_() override
    {
        for (const auto& s : m_sinks)
            s->flush();
    }

private:
    std::vector<spdlog::sink_ptr> m_sinks;
};

} // namespace

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
    auto logger = std::make_shared<spdlog::logger>("ksearch", std::make_shared<RedactingSink>(std::move(sinks)));
    logger->set_level(spdlog::level::debug);
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
    return path;
}

} // namespace ks
