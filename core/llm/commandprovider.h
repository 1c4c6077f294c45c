#pragma once

#include "llmprovider.h"

#include <QObject>

namespace ks {

// Runs a user's command for every request: {"role", "model", "messages": [{"role", "content"}]}
// as JSON on its stdin, the answer text on its stdout (streamed to textDelta as it arrives).
// When stdout is a JSON object with a string "text" and an object "usage" ({"prompt_tokens",
// "completion_tokens", "reasoning_tokens"}, optional "model"), those are used instead, so a
// wrapper around another client can report tokens. The command runs through /bin/sh in its own
// process group, inherits the environment (it is the user's own client), and is killed with its
// children on cancel or after the total timeout.
class CommandProvider : public QObject, public LlmProvider
{
    Q_OBJECT
public:
    explicit CommandProvider(QString command, int totalTimeoutMs = 900000, QObject* parent = nullptr);

    QString name() const override { return QStringLiteral("command"); }
    LlmCall* send(const LlmRequest& request) override;

private:
    QString m_command;
    int m_totalTimeoutMs;
};

// What the command reads on stdin.
QByteArray commandRequestJson(const LlmRequest& request);

} // namespace ks
