#pragma once

#include "httpllmcall.h"

namespace ks {

// Chat completions on any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp
// server, Gemini's OpenAI endpoint): streamed over server-sent events or not, with usage,
// reasoning-model parameters, timeouts, retries that honour Retry-After, and classified errors.
class OpenAiProvider final : public HttpProvider
{
public:
    using HttpProvider::HttpProvider;
    QString name() const override { return QStringLiteral("openai"); }
    LlmCall* send(const LlmRequest& request) override;
};

// The JSON body of a chat-completions request.
QByteArray openAiRequestBody(const LlmRequest& request);

} // namespace ks
