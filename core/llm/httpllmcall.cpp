#include "httpllmcall.h"

#include <util/elapsed.h>
#include <util/secrets.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QRandomGenerator>

#include <spdlog/spdlog.h>

namespace ks {

LlmError malformed(const QString& what)
{
    return {LlmErrorKind::MalformedResponse, 200, what};
}

ProviderSettings prepared(ProviderSettings settings)
{
    while (settings.baseUrl.endsWith(u'/'))
        settings.baseUrl.chop(1);
    registerSecret(settings.apiKey);
    return settings;
}

HttpProvider::HttpProvider(ProviderSettings settings, QObject* parent)
    : QObject(parent)
    , m_settings(prepared(std::move(settings)))
    , m_network(this) // a child, so that moveToThread takes it along
{
}

LlmError classifyHttpError(int status, const QByteArray& body)
{
    const QJsonObject error = QJsonDocument::fromJson(body).object().value(u"error").toObject();
    QString detail = error.value(u"message").toString();
    const QString code = error.value(u"code").toVariant().toString() + u' ' + error.value(u"type").toString() + u' '
        + error.value(u"status").toString();
    if (detail.isEmpty())
        detail = QString::fromUtf8(body.left(300)).trimmed();
    // Gemini names a retry delay in the body (details[].retryDelay "13s") instead of a header.
    int retryAfterMs = -1;
    for (const auto& d : error.value(u"details").toArray()) {
        const QString delay = d.toObject().value(u"retryDelay").toString();
        if (delay.endsWith(u's'))
            retryAfterMs = static_cast<int>(delay.chopped(1).toDouble() * 1000);
    }
    LlmError e;
    e.httpStatus = status;
    e.retryAfterMs = retryAfterMs;
    const bool keyRejected = body.contains("API_KEY_INVALID") || detail.contains(u"API key not valid");
    if (status == 401 || status == 403 || keyRejected) {
        e.kind = LlmErrorKind::Authentication;
        e.message = QStringLiteral("the endpoint refused the API key (HTTP %1): %2; check the key for this provider")
                        .arg(status)
                        .arg(detail);
    } else if (status == 429
        && (code.contains(u"insufficient_quota")
            || (retryAfterMs < 0 && detail.contains(u"quota", Qt::CaseInsensitive)))) {
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

HttpLlmCall::HttpLlmCall(QNetworkAccessManager& network, const ProviderSettings& settings, LlmRequest request)
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
    QTimer::singleShot(0, this, &HttpLlmCall::start); // after the caller has connected its slots
}

void HttpLlmCall::cancel()
{
    abortWith({LlmErrorKind::Cancelled, 0, QStringLiteral("cancelled")});
}

void HttpLlmCall::appendText(const QString& piece)
{
    if (piece.isEmpty())
        return;
    m_result.text += piece;
    emit textDelta(piece);
}

void HttpLlmCall::start()
{
    if (m_done)
        return;
    QNetworkRequest req = networkRequest();
    req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    req.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    m_parser = SseStreamParser();
    m_body.clear();
    m_gotHeaders = false;
    m_streamComplete = false;
    m_reply = m_network.post(req, requestBody());
    m_idle.start(m_settings.connectTimeoutMs);
    connect(m_reply, &QNetworkReply::metaDataChanged, this, [this] {
        m_gotHeaders = true;
        m_idle.start(m_settings.idleTimeoutMs);
    });
    connect(m_reply, &QNetworkReply::readyRead, this, &HttpLlmCall::onReadyRead);
    connect(m_reply, &QNetworkReply::finished, this, &HttpLlmCall::onFinished);
}

void HttpLlmCall::onReadyRead()
{
    m_idle.start(m_settings.idleTimeoutMs);
    const QByteArray bytes = m_reply->readAll();
    if (!m_request.stream || m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt() != 200) {
        m_body += bytes;
        return;
    }
    for (const auto& event : m_parser.feed(bytes)) {
        if (const auto error = onStreamEvent(event)) {
            abortWith(*error);
            return;
        }
        if (m_done)
            return;
    }
}

void HttpLlmCall::onFinished()
{
    QNetworkReply* reply = std::exchange(m_reply, nullptr);
    if (!reply)
        return;
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
        retryOrFail(classifyHttpError(http, m_body), reply);
        return;
    }
    if (m_request.stream) {
        if (!m_streamComplete) {
            const LlmError e = malformed(QStringLiteral("the stream ended before its end marker (truncated answer)"));
            if (m_result.text.isEmpty())
                retryOrFail(e, reply);
            else
                finish(e);
            return;
        }
        finish(std::nullopt);
        return;
    }
    finish(onBody(m_body));
}

void HttpLlmCall::retryOrFail(const LlmError& error, QNetworkReply* reply)
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
    else if (error.retryAfterMs >= 0)
        delay = std::min(error.retryAfterMs, m_settings.maxRetryAfterMs);
    ++m_attempt;
    spdlog::warn("{} call: {}; retry {} of {} in {:.1f} s", m_request.role.toStdString(), error.message.toStdString(),
        m_attempt, m_settings.maxRetries, delay / 1000.0);
    // Precise: a coarse timer (Qt's choice from 2 s on) may fire 5% early, before the server's
    // Retry-After has passed.
    QTimer::singleShot(delay, Qt::PreciseTimer, this, &HttpLlmCall::start);
}

void HttpLlmCall::abortWith(const LlmError& error)
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

void HttpLlmCall::finish(const std::optional<LlmError>& error)
{
    if (m_done)
        return;
    m_done = true;
    m_total.stop();
    m_idle.stop();
    m_result.error = error;
    if (m_result.error) // servers echo keys in their error bodies
        m_result.error->message = redactSecrets(m_result.error->message);
    m_result.latencySeconds = secondsElapsed(m_clock);
    emit finished(m_result);
}

} // namespace ks
