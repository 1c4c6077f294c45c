#include "openaiprovider.h"

#include "ssestreamparser.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QPointer>
#include <QRandomGenerator>
#include <QTimer>

#include <spdlog/spdlog.h>

namespace ks {

namespace {

LlmUsage parseUsage(const QJsonObject& usage)
{
    LlmUsage u;
    u.promptTokens = usage.value(u"prompt_tokens").toInteger();
    u.completionTokens = usage.value(u"completion_tokens").toInteger();
    u.reasoningTokens = usage.value(u"completion_tokens_details").toObject().value(u"reasoning_tokens").toInteger();
    return u;
}

// What went wrong, from the HTTP status and the error body the server sent.
LlmError classify(int status, const QByteArray& body)
{
    const QJsonObject error = QJsonDocument::fromJson(body).object().value(u"error").toObject();
    QString detail = error.value(u"message").toString();
    const QString code = error.value(u"code").toString() + u' ' + error.value(u"type").toString();
    if (detail.isEmpty())
        detail = QString::fromUtf8(body.left(300)).trimmed();
    LlmError e;
    e.httpStatus = status;
    if (status == 401 || status == 403) {
        e.kind = LlmErrorKind::Authentication;
        e.message = QStringLiteral("the endpoint refused the API key (HTTP %1): %2; check the key for this provider")
                        .arg(status)
                        .arg(detail);
    } else if (status == 429 && code.contains(u"insufficient_quota")) {
        e.kind = LlmErrorKind::Quota;
        e.message = QStringLiteral("the account's quota is used up (HTTP 429): %1").arg(detail);
    } else if (status == 429) {
        e.kind = LlmErrorKind::RateLimited;
        e.message = QStringLiteral("rate limited (HTTP 429): %1").arg(detail);
    } else if (status >= 500) {
        e.kind = LlmErrorKind::Overloaded;
        e.message = QStringLiteral("the endpoint failed or is overloaded (HTTP %1): %2").arg(status).arg(detail);
    } else {
        e.kind = LlmErrorKind::BadRequest;
        e.message = QStringLiteral("the endpoint rejected the request (HTTP %1): %2").arg(status).arg(detail);
    }
    return e;
}

class OpenAiCall final : public LlmCall
{
public:
    OpenAiCall(QNetworkAccessManager& network, const ProviderSettings& settings, LlmRequest request)
        : m_network(network)
        , m_settings(settings)
        , m_request(std::move(request))
    {
        m_total.setSingleShot(true);
        m_idle.setSingleShot(true);
        connect(&m_total, &QTimer::timeout, this, [this] {
            abortWith({LlmErrorKind::Timeout, 0,
                QStringLiteral("no complete answer within %1 s").arg(m_settings.totalTimeoutMs / 1000.0)});
        });
        connect(&m_idle, &QTimer::timeout, this, [this] {
            abortWith({LlmErrorKind::Timeout, 0,
                m_gotHeaders ? QStringLiteral("the stream went silent for %1 s").arg(m_settings.idleTimeoutMs / 1000.0)
                             : QStringLiteral("no response within %1 s").arg(m_settings.connectTimeoutMs / 1000.0)});
        });
        m_clock.start();
        m_total.start(m_settings.totalTimeoutMs);
        QTimer::singleShot(0, this, &OpenAiCall::start);
    }

    void cancel() override { abortWith({LlmErrorKind::Cancelled, 0, QStringLiteral("cancelled")}); }

private:
    void start()
    {
        if (m_done)
            return;
        QNetworkRequest req(QUrl(m_settings.baseUrl + QStringLiteral("/chat/completions")));
        req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
        if (!m_settings.apiKey.isEmpty())
            req.setRawHeader("Authorization", "Bearer " + m_settings.apiKey.toUtf8());
        req.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
        m_parser = SseStreamParser();
        m_body.clear();
        m_gotHeaders = false;
        m_sawDone = false;
        m_reply = m_network.post(req, openAiRequestBody(m_request));
        m_idle.start(m_settings.connectTimeoutMs);
        connect(m_reply, &QNetworkReply::metaDataChanged, this, [this] {
            m_gotHeaders = true;
            m_idle.start(m_settings.idleTimeoutMs);
        });
        connect(m_reply, &QNetworkReply::readyRead, this, &OpenAiCall::onReadyRead);
        connect(m_reply, &QNetworkReply::finished, this, &OpenAiCall::onFinished);
    }

    int status() const { return m_reply ? m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt() : 0; }

    void onReadyRead()
    {
        m_idle.start(m_settings.idleTimeoutMs);
        const QByteArray bytes = m_reply->readAll();
        if (!m_request.stream || status() != 200) {
            m_body += bytes;
            return;
        }
        for (const auto& event : m_parser.feed(bytes)) {
            if (event.data.trimmed() == "[DONE]") {
                m_sawDone = true;
                continue;
            }
            QJsonParseError perr {};
            const QJsonObject chunk = QJsonDocument::fromJson(event.data, &perr).object();
            if (perr.error != QJsonParseError::NoError) {
                abortWith({LlmErrorKind::MalformedResponse, 200,
                    QStringLiteral("unreadable stream event: %1").arg(QString::fromUtf8(event.data.left(200)))});
                return;
            }
            if (chunk.contains(u"error")) {
                abortWith(classify(500, event.data));
                return;
            }
            if (chunk.contains(u"model"))
                m_result.model = chunk.value(u"model").toString();
            if (chunk.value(u"usage").isObject())
                m_result.usage = parseUsage(chunk.value(u"usage").toObject());
            const QString piece = chunk.value(u"choices")
                                      .toArray()
                                      .at(0)
                                      .toObject()
                                      .value(u"delta")
                                      .toObject()
                                      .value(u"content")
                                      .toString();
            if (!piece.isEmpty()) {
                m_result.text += piece;
                emit textDelta(piece);
            }
        }
    }

    void onFinished()
    {
        QNetworkReply* reply = std::exchange(m_reply, nullptr);
        reply->deleteLater();
        if (m_done)
            return;
        m_idle.stop();
        const int http = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        m_body += reply->readAll();
        if (http == 0) {
            retryOrFail({LlmErrorKind::Network, 0,
                            QStringLiteral("cannot reach %1: %2").arg(m_settings.baseUrl, reply->errorString())},
                reply);
            return;
        }
        if (http != 200) {
            retryOrFail(classify(http, m_body), reply);
            return;
        }
        if (m_request.stream) {
            if (!m_sawDone) {
                const LlmError e {LlmErrorKind::MalformedResponse, 200,
                    QStringLiteral("the stream ended before its end marker (truncated answer)")};
                if (m_result.text.isEmpty())
                    retryOrFail(e, reply);
                else
                    finish(e);
                return;
            }
            finish(std::nullopt);
            return;
        }
        QJsonParseError perr {};
        const QJsonObject doc = QJsonDocument::fromJson(m_body, &perr).object();
        const QJsonValue message = doc.value(u"choices").toArray().at(0).toObject().value(u"message");
        if (perr.error != QJsonParseError::NoError || !message.isObject()) {
            finish(LlmError {LlmErrorKind::MalformedResponse, 200,
                QStringLiteral("the answer is not a chat completion: %1").arg(QString::fromUtf8(m_body.left(200)))});
            return;
        }
        m_result.text = message.toObject().value(u"content").toString();
        m_result.model = doc.value(u"model").toString();
        m_result.usage = parseUsage(doc.value(u"usage").toObject());
        finish(std::nullopt);
    }

    void retryOrFail(const LlmError& error, QNetworkReply* reply)
    {
        if (!error.retryable() || m_attempt >= m_settings.maxRetries) {
            LlmError e = error;
            if (m_attempt > 0)
                e.message += QStringLiteral(" (after %1 retries)").arg(m_attempt);
            finish(e);
            return;
        }
        int delay = m_settings.backoffBaseMs << std::min(m_attempt, 10);
        delay += static_cast<int>(QRandomGenerator::global()->bounded(std::max(1, m_settings.backoffBaseMs)));
        bool ok = false;
        const int retryAfter = reply->rawHeader("Retry-After").trimmed().toInt(&ok);
        if (ok && retryAfter >= 0)
            delay = std::min(retryAfter * 1000, m_settings.maxRetryAfterMs);
        ++m_attempt;
        spdlog::warn("{} call: {}; retry {} of {} in {:.1f} s", m_request.role.toStdString(),
            error.message.toStdString(), m_attempt, m_settings.maxRetries, delay / 1000.0);
        QTimer::singleShot(delay, this, &OpenAiCall::start);
    }

    void abortWith(const LlmError& error)
    {
        if (m_done)
            return;
        if (QNetworkReply* reply = std::exchange(m_reply, nullptr)) {
            disconnect(reply, nullptr, this, nullptr);
            reply->abort();
            reply->deleteLater();
        }
        finish(error);
    }

    void finish(const std::optional<LlmError>& error)
    {
        if (m_done)
            return;
        m_done = true;
        m_total.stop();
        m_idle.stop();
        m_result.error = error;
        m_result.latencySeconds = static_cast<double>(m_clock.elapsed()) / 1000.0;
        emit finished(m_result);
    }

    QNetworkAccessManager& m_network;
    ProviderSettings m_settings;
    LlmRequest m_request;
    QPointer<QNetworkReply> m_reply;
    SseStreamParser m_parser;
    QByteArray m_body;
    LlmResult m_result;
    QTimer m_total, m_idle;
    QElapsedTimer m_clock;
    int m_attempt = 0;
    bool m_gotHeaders = false, m_sawDone = false, m_done = false;
};

} // namespace

QByteArray openAiRequestBody(const LlmRequest& request)
{
    QJsonArray messages;
    for (const auto& m : request.messages)
        messages.append(QJsonObject {{u"role"_qs, m.role}, {u"content"_qs, m.content}});
    QJsonObject body {{u"model"_qs, request.model}, {u"messages"_qs, messages}, {u"stream"_qs, request.stream}};
    if (request.stream)
        body.insert(u"stream_options"_qs, QJsonObject {{u"include_usage"_qs, true}});
    if (request.temperature)
        body.insert(u"temperature"_qs, *request.temperature);
    if (request.maxTokens > 0) // reasoning models take max_completion_tokens; others accept it too
        body.insert(u"max_completion_tokens"_qs, request.maxTokens);
    if (!request.reasoningEffort.isEmpty())
        body.insert(u"reasoning_effort"_qs, request.reasoningEffort);
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

OpenAiProvider::OpenAiProvider(ProviderSettings settings, QObject* parent)
    : QObject(parent)
    , m_settings(std::move(settings))
{
    while (m_settings.baseUrl.endsWith(u'/'))
        m_settings.baseUrl.chop(1);
}

LlmCall* OpenAiProvider::send(const LlmRequest& request)
{
    return new OpenAiCall(m_network, m_settings, request);
}

} // namespace ks
