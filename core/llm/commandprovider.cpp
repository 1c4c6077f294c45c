#include "commandprovider.h"

#include <util/elapsed.h>
#include <util/secrets.h>

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTimer>

#include <csignal>
#include <unistd.h>

namespace ks {

namespace {

constexpr qsizetype kStderrTail = 800;

class CommandCall final : public LlmCall
{
public:
    CommandCall(const QString& command, int totalTimeoutMs, const LlmRequest& request)
        : m_request(request)
    {
        m_process.setChildProcessModifier([] { ::setsid(); }); // its own group, killed as a whole
        m_process.setProgram(QStringLiteral("/bin/sh"));
        m_process.setArguments({QStringLiteral("-c"), command});
        connect(&m_process, &QProcess::readyReadStandardOutput, this, [this] {
            const QString piece = QString::fromUtf8(m_process.readAllStandardOutput());
            m_stdout += piece;
            if (!m_stdout.startsWith(u'{')) // a structured answer is only known when complete
                emit textDelta(piece);
        });
        connect(&m_process, &QProcess::readyReadStandardError, this, [this] {
            m_stderr = QString(m_stderr + QString::fromUtf8(m_process.readAllStandardError())).right(kStderrTail);
        });
        connect(&m_process, &QProcess::finished, this, &CommandCall::onExit);
        connect(&m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
            if (e == QProcess::FailedToStart)
                finish(LlmError {LlmErrorKind::CommandFailed, 0,
                    QStringLiteral("cannot start /bin/sh: %1").arg(m_process.errorString())});
        });
        m_timeout.setSingleShot(true);
        connect(&m_timeout, &QTimer::timeout, this, [this, totalTimeoutMs] {
            killGroup();
            finish(LlmError {LlmErrorKind::Timeout, 0,
                QStringLiteral("the command gave no complete answer within %1 s").arg(totalTimeoutMs / 1000.0)});
        });
        m_clock.start();
        m_timeout.start(totalTimeoutMs);
        QTimer::singleShot(0, this, [this] {
            if (m_done)
                return;
            m_process.start();
            m_process.write(commandRequestJson(m_request));
            m_process.closeWriteChannel();
        });
    }

    ~CommandCall() override
    {
        killGroup();
        m_process.waitForFinished(1000);
    }

    void cancel() override
    {
        killGroup();
        finish(LlmError {LlmErrorKind::Cancelled, 0, QStringLiteral("cancelled")});
    }

private:
    void killGroup()
    {
        if (m_process.state() != QProcess::NotRunning && m_process.processId() > 0)
            ::kill(-static_cast<pid_t>(m_process.processId()), SIGKILL);
    }

    void onExit(int code, QProcess::ExitStatus status)
    {
        if (m_done)
            return;
        m_stdout += QString::fromUtf8(m_process.readAllStandardOutput());
        if (status != QProcess::NormalExit || code != 0) {
            const QString how = status != QProcess::NormalExit ? QStringLiteral("crashed")
                : code == 127                                  ? QStringLiteral("exited with 127 (command not found?)")
                                                               : QStringLiteral("exited with %1").arg(code);
            finish(LlmError {LlmErrorKind::CommandFailed, 0,
                QStringLiteral("the command %1: %2")
                    .arg(how, m_stderr.trimmed().isEmpty() ? u"(no stderr)"_qs : m_stderr.trimmed())});
            return;
        }
        const QJsonObject structured = QJsonDocument::fromJson(m_stdout.toUtf8()).object();
        if (structured.value(u"text").isString() && structured.value(u"usage").isObject()) {
            m_result.text = structured.value(u"text").toString();
            const QJsonObject u = structured.value(u"usage").toObject();
            m_result.usage.promptTokens = u.value(u"prompt_tokens").toInteger();
            m_result.usage.completionTokens = u.value(u"completion_tokens").toInteger();
            m_result.usage.reasoningTokens = u.value(u"reasoning_tokens").toInteger();
            m_result.model = structured.value(u"model").toString(m_request.model);
            if (m_stdout.startsWith(u'{'))
                emit textDelta(m_result.text);
        } else {
            m_result.text = m_stdout;
            m_result.model = m_request.model;
            if (m_stdout.startsWith(u'{')) // held back above, in case it was structured
                emit textDelta(m_stdout);
        }
        if (m_result.text.trimmed().isEmpty()) {
            finish(LlmError {LlmErrorKind::MalformedResponse, 0, QStringLiteral("the command printed no answer")});
            return;
        }
        finish(std::nullopt);
    }

    void finish(const std::optional<LlmError>& error)
    {
        if (m_done)
            return;
        m_done = true;
        m_timeout.stop();
        m_result.error = error;
        if (m_result.error)
            m_result.error->message = redactSecrets(m_result.error->message);
        m_result.latencySeconds = secondsElapsed(m_clock);
        emit finished(m_result);
    }

    LlmRequest m_request;
    QProcess m_process;
    QTimer m_timeout;
    QElapsedTimer m_clock;
    QString m_stdout, m_stderr;
    LlmResult m_result;
    bool m_done = false;
};

} // namespace

QByteArray commandRequestJson(const LlmRequest& request)
{
    QJsonArray messages;
    for (const auto& m : request.messages)
        messages.append(QJsonObject {{u"role"_qs, m.role}, {u"content"_qs, m.content}});
    return QJsonDocument(
        QJsonObject {{u"role"_qs, request.role}, {u"model"_qs, request.model}, {u"messages"_qs, messages}})
        .toJson(QJsonDocument::Compact);
}

CommandProvider::CommandProvider(QString command, int totalTimeoutMs, QObject* parent)
    : QObject(parent)
    , m_command(std::move(command))
    , m_totalTimeoutMs(totalTimeoutMs)
{
}

LlmCall* CommandProvider::send(const LlmRequest& request)
{
    return new CommandCall(m_command, m_totalTimeoutMs, request);
}

} // namespace ks
