#include "sanitizerrun.h"

#include <task/taskcatalog.h>

#include <QDir>
#include <QTemporaryDir>
#include <QThread>

#include <evaluator.h>
#include <fstream>

namespace ks::ui {

namespace fs = std::filesystem;

SanitizerRun::SanitizerRun(QObject* parent)
    : QObject(parent)
{
}

SanitizerRun::~SanitizerRun()
{
    if (m_thread) {
        m_thread->wait();
        delete m_thread;
    }
}

SanitizerReport SanitizerRun::run(const Request& request, const fs::path& workDir)
{
    SanitizerReport report;
    report.tool = request.tool;
    auto loaded = loadTask(request.taskDir);
    if (!loaded.task) {
        report.problem = request.taskDir.string() + ": the task cannot be loaded: " + loaded.diagnostics.formatAll();
        return report;
    }
    const fs::path program =
        workDir / ("attempt-" + std::to_string(request.attempt) + languageSuffix(request.language));
    {
        std::ofstream out(program, std::ios::trunc);
        out << request.source;
        if (!out) {
            report.problem = program.string() + ": cannot write the program";
            return report;
        }
    }
    EvaluatorSettings settings;
    settings.backend = request.backend == "host" ? Backend::Host : Backend::Cuda;
    settings.language = request.language;
    settings.workDir = workDir / "jobs";
    settings.prestartRunners = false; // one call: nothing to start ahead of
    Evaluator evaluator(std::move(*loaded.task), settings);
    return evaluator.sanitize(program, request.tool);
}

bool SanitizerRun::start(const Request& request)
{
    if (m_thread)
        return false;
    m_scratch = std::make_unique<QTemporaryDir>(QDir::tempPath() + QStringLiteral("/ksearch-sanitize-XXXXXX"));
    const fs::path workDir = m_scratch->path().toStdString();
    m_thread = QThread::create([this, request, workDir] {
        const SanitizerReport report = run(request, workDir);
        QMetaObject::invokeMethod(
            this,
            [this, attempt = request.attempt, report] {
                m_thread->wait();
                delete m_thread;
                m_thread = nullptr;
                emit finished(attempt, report);
            },
            Qt::QueuedConnection);
    });
    m_thread->start();
    return true;
}

} // namespace ks::ui
