#pragma once

#include "llmtypes.h"

#include <QObject>

namespace ks {

// One request in flight. Emits textDelta for every streamed piece of the answer, then exactly
// one finished (with the error set when it failed or was cancelled). Lives in the thread of the
// provider that made it.
class LlmCall : public QObject
{
    Q_OBJECT
public:
    using QObject::QObject;
    virtual void cancel() = 0;

signals:
    void textDelta(const QString& text);
    void finished(const ks::LlmResult& result);
};

struct ProviderSettings {
    QString baseUrl; // e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1
    QString apiKey; // never logged or written anywhere
    int connectTimeoutMs = 15000; // until the response headers
    int idleTimeoutMs = 120000; // longest silence inside a streamed answer
    int totalTimeoutMs = 900000;
    int maxRetries = 4; // on 429, 5xx and network errors
    int backoffBaseMs = 1000; // doubles each retry, plus up to the same again as jitter
    int maxRetryAfterMs = 120000; // a server's Retry-After is honoured up to this
};

class LlmProvider
{
public:
    virtual ~LlmProvider() = default;
    virtual QString name() const = 0;
    // The caller owns the returned call (parent it or deleteLater it after finished).
    virtual LlmCall* send(const LlmRequest& request) = 0;
};

} // namespace ks
