#pragma once

#include "llmprovider.h"

#include <QNetworkAccessManager>

namespace ks {

// Chat completions on any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp
// server, Gemini's OpenAI endpoint): streamed over server-sent events or not, with usage,
// reasoning-model parameters, timeouts, retries that honour Retry-After, and classified errors.
class OpenAiProvider : public QObject, public LlmProvider
{
    Q_OBJECT
public:
    explicit OpenAiProvider(ProviderSettings settings, QObject* parent = nullptr);

    QString name() const override { return QStringLiteral("openai"); }
    LlmCall* send(const LlmRequest& request) override;
    const ProviderSettings& settings() const { return m_settings; }

private:
    ProviderSettings m_settings;
    QNetworkAccessManager m_network;
};

// The JSON body of a chat-completions request.
QByteArray openAiRequestBody(const LlmRequest& request);

} // namespace ks
