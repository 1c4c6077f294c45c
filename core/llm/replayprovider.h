#pragma once

#include "llmprovider.h"

#include <QHash>
#include <QObject>
#include <QSet>

#include <memory>
#include <optional>

namespace ks {

// One recorded exchange, a line of a replay file (JSON Lines).
struct RecordedExchange {
    QString fingerprint;
    QString role;
    QString model;
    QList<ChatMessage> messages; // kept so that a person can read the file
    QString text;
    LlmUsage usage;
    double latencySeconds = 0.0;
};

// Identifies a request by what decides its answer: the role and the messages (sha-256, hex).
// The model name is left out so that a recorded run replays under any model setting.
QString requestFingerprint(const LlmRequest& request);

// Reads a replay file; on failure returns nullopt and says which line is wrong and why.
std::optional<QList<RecordedExchange>> loadReplayFile(const QString& path, QString* error);

// Serves recorded answers. A request is matched by fingerprint; with `fallbackInOrder`, a
// request whose fingerprint was not recorded gets the next unused exchange of its role in file
// order (prompts that quote measured latencies never repeat exactly, so demos replay by order).
// Without a match the call fails with NoAnswer.
class ReplayProvider : public QObject, public LlmProvider
{
    Q_OBJECT
public:
    ReplayProvider(QList<RecordedExchange> exchanges, bool fallbackInOrder, QObject* parent = nullptr);
    QString name() const override { return QStringLiteral("replay"); }
    LlmCall* send(const LlmRequest& request) override;
    int served() const { return static_cast<int>(m_used.size()); }

private:
    QList<RecordedExchange> m_exchanges;
    QSet<int> m_used;
    bool m_fallbackInOrder;
};

// Wraps a provider and appends every successful exchange to a replay file, one flushed line
// each. API keys never reach it: a request holds none.
class RecordingProvider : public QObject, public LlmProvider
{
    Q_OBJECT
public:
    RecordingProvider(std::unique_ptr<LlmProvider> inner, QString path, QObject* parent = nullptr);
    QString name() const override { return m_inner->name(); }
    LlmCall* send(const LlmRequest& request) override;

private:
    std::unique_ptr<LlmProvider> m_inner;
    QString m_path;
};

QByteArray replayLine(const RecordedExchange& exchange);

} // namespace ks
