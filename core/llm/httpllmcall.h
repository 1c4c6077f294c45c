#pragma once

#include "llmprovider.h"
#include "ssestreamparser.h"

#include <QElapsedTimer>
#include <QNetworkAccessManager>
#include <QNetworkRequest>
#include <QPointer>
#include <QTimer>

class QNetworkReply;

namespace ks {

// The machinery every HTTP provider shares: one POST per attempt, server-sent events or a plain
// body, connect / idle / total timeouts, retries with exponential backoff and jitter that honour
// Retry-After (only while nothing was streamed yet), cancellation, and error classification.
// A provider supplies the request and reads its own wire format.
class HttpLlmCall : public LlmCall
{
    Q_OBJECT
public:
    HttpLlmCall(QNetworkAccessManager& network, const ProviderSettings& settings, LlmRequest request);
    void cancel() override;

protected:
    virtual QNetworkRequest networkRequest() const = 0;
    virtual QByteArray requestBody() const = 0;
    // One streamed event; return an error to end the call with it.
    virtual std::optional<LlmError> onStreamEvent(const SseStreamParser::Event& event) = 0;
    // The whole body of a non-streamed answer; return an error when it is not an answer.
    virtual std::optional<LlmError> onBody(const QByteArray& body) = 0;

    // For the hooks above.
    void appendText(const QString& piece);
    void markStreamComplete() { m_streamComplete = true; }
    LlmResult& result() { return m_result; }
    const LlmRequest& request() const { return m_request; }
    const ProviderSettings& settings() const { return m_settings; }

private:
    void start();
    void onReadyRead();
    void onFinished();
    void retryOrFail(const LlmError& error, QNetworkReply* reply);
    void abortWith(const LlmError& error);
    void finish(const std::optional<LlmError>& error);

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
    bool m_gotHeaders = false, m_streamComplete = false, m_done = false;
};

// What the HTTP providers share: their settings (the key registered as a secret, the base URL
// without trailing slashes) and one network manager for all their calls.
class HttpProvider : public QObject, public LlmProvider
{
    Q_OBJECT
public:
    explicit HttpProvider(ProviderSettings settings, QObject* parent = nullptr);
    const ProviderSettings& settings() const { return m_settings; }

protected:
    QNetworkAccessManager& network() { return m_network; }

private:
    ProviderSettings m_settings;
    QNetworkAccessManager m_network;
};

// Reads the error bodies of OpenAI, Anthropic and Gemini ({"error": {"message", "type" | "code" |
// "status"}}) into an error a user can act on.
LlmError classifyHttpError(int status, const QByteArray& body);
LlmError malformed(const QString& what);
// The settings with the base URL's trailing slashes removed ("…/v1/" and "…/v1" are the same),
// and the API key registered as a secret so that nothing the process writes can contain it.
ProviderSettings prepared(ProviderSettings settings);

} // namespace ks
