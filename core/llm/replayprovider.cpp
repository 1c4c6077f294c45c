#include "replayprovider.h"

#include "failedcall.h"

#include <util/secrets.h>

#include <QCryptographicHash>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTimer>

namespace ks {

namespace {

QJsonArray messagesJson(const QList<ChatMessage>& messages)
{
    QJsonArray a;
    for (const auto& m : messages)
        a.append(QJsonObject {{u"role"_qs, m.role}, {u"content"_qs, m.content}});
    return a;
}

// Finishes with a recorded answer on the next turn of the event loop.
class ReplayCall final : public LlmCall
{
public:
    explicit ReplayCall(const RecordedExchange& exchange)
    {
        QTimer::singleShot(0, this, [this, exchange] {
            if (m_cancelled)
                return;
            LlmResult r;
            r.text = exchange.text;
            r.usage = exchange.usage;
            r.model = exchange.model;
            r.latencySeconds = 0.0;
            emit textDelta(r.text);
            emit finished(r);
        });
    }
    void cancel() override
    {
        if (m_cancelled)
            return;
        m_cancelled = true;
        LlmResult r;
        r.error = LlmError {LlmErrorKind::Cancelled, 0, QStringLiteral("cancelled")};
        emit finished(r);
    }

private:
    bool m_cancelled = false;
};

// Forwards an inner call and appends its exchange to the replay file when it succeeds.
class RecordingCall final : public LlmCall
{
public:
    RecordingCall(LlmCall* inner, const LlmRequest& request, const QString& path)
        : m_inner(inner)
    {
        m_inner->setParent(this);
        connect(m_inner, &LlmCall::textDelta, this, &LlmCall::textDelta);
        connect(m_inner, &LlmCall::finished, this, [this, request, path](const LlmResult& r) {
            if (!r.error) {
                RecordedExchange e {requestFingerprint(request), request.role, r.model, request.messages, r.text,
                    r.usage, r.latencySeconds};
                QFile f(path);
                if (f.open(QIODevice::Append))
                    f.write(replayLine(e));
            }
            emit finished(r);
        });
    }
    void cancel() override { m_inner->cancel(); }

private:
    LlmCall* m_inner;
};

} // namespace

QString requestFingerprint(const LlmRequest& request)
{
    const QJsonObject key {{u"role"_qs, request.role}, {u"messages"_qs, messagesJson(request.messages)}};
    return QString::fromLatin1(
        QCryptographicHash::hash(QJsonDocument(key).toJson(QJsonDocument::Compact), QCryptographicHash::Sha256)
            .toHex());
}

QByteArray replayLine(const RecordedExchange& e)
{
    const QJsonObject usage {{u"prompt_tokens"_qs, e.usage.promptTokens},
        {u"completion_tokens"_qs, e.usage.completionTokens}, {u"reasoning_tokens"_qs, e.usage.reasoningTokens}};
    const QJsonObject line {{u"fingerprint"_qs, e.fingerprint}, {u"role"_qs, e.role}, {u"model"_qs, e.model},
        {u"messages"_qs, messagesJson(e.messages)}, {u"text"_qs, e.text}, {u"usage"_qs, usage},
        {u"latency_s"_qs, e.latencySeconds}};
    return redactSecrets(QString::fromUtf8(QJsonDocument(line).toJson(QJsonDocument::Compact))).toUtf8() + '\n';
}

std::optional<QList<RecordedExchange>> loadReplayFile(const QString& path, QString* error)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("%1: cannot read: %2").arg(path, f.errorString());
        return std::nullopt;
    }
    QList<RecordedExchange> out;
    int lineNo = 0;
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        ++lineNo;
        if (line.isEmpty())
            continue;
        QJsonParseError perr {};
        const QJsonObject o = QJsonDocument::fromJson(line, &perr).object();
        if (perr.error != QJsonParseError::NoError) {
            *error = QStringLiteral("%1:%2: not a JSON object: %3").arg(path).arg(lineNo).arg(perr.errorString());
            return std::nullopt;
        }
        if (!o.value(u"text").isString() || !o.value(u"role").isString()) {
            *error = QStringLiteral("%1:%2: field 'text' or 'role' is missing or not a string").arg(path).arg(lineNo);
            return std::nullopt;
        }
        RecordedExchange e;
        e.role = o.value(u"role").toString();
        e.model = o.value(u"model").toString();
        e.text = o.value(u"text").toString();
        for (const auto& m : o.value(u"messages").toArray())
            e.messages.append({m.toObject().value(u"role").toString(), m.toObject().value(u"content").toString()});
        e.fingerprint = o.value(u"fingerprint").toString();
        if (e.fingerprint.isEmpty() && !e.messages.isEmpty())
            e.fingerprint = requestFingerprint(LlmRequest {e.role, e.messages, {}, {}, 0, {}, true});
        const QJsonObject u = o.value(u"usage").toObject();
        e.usage = {u.value(u"prompt_tokens").toInteger(), u.value(u"completion_tokens").toInteger(),
            u.value(u"reasoning_tokens").toInteger()};
        e.latencySeconds = o.value(u"latency_s").toDouble();
        out.append(e);
    }
    return out;
}

ReplayProvider::ReplayProvider(QList<RecordedExchange> exchanges, bool fallbackInOrder, QObject* parent)
    : QObject(parent)
    , m_exchanges(std::move(exchanges))
    , m_fallbackInOrder(fallbackInOrder)
{
}

LlmCall* ReplayProvider::send(const LlmRequest& request)
{
    const QString fp = requestFingerprint(request);
    int match = -1;
    for (int i = 0; i < m_exchanges.size() && match < 0; ++i)
        if (!m_used.contains(i) && m_exchanges[i].fingerprint == fp)
            match = i;
    for (int i = 0; i < m_exchanges.size() && match < 0 && m_fallbackInOrder; ++i)
        if (!m_used.contains(i) && m_exchanges[i].role == request.role)
            match = i;
    if (match < 0)
        return new FailedCall({LlmErrorKind::NoAnswer, 0,
            QStringLiteral("the replay file has no unused answer for this %1 request (fingerprint %2)")
                .arg(request.role, fp.left(12))});
    m_used.insert(match);
    return new ReplayCall(m_exchanges[match]);
}

RecordingProvider::RecordingProvider(std::unique_ptr<LlmProvider> inner, QString path, QObject* parent)
    : QObject(parent)
    , m_inner(std::move(inner))
    , m_path(std::move(path))
{
}

LlmCall* RecordingProvider::send(const LlmRequest& request)
{
    return new RecordingCall(m_inner->send(request), request, m_path);
}

} // namespace ks
