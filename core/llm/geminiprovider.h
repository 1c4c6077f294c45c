#pragma once

#include "httpllmcall.h"

namespace ks {

// Google's Gemini API (POST {base}/models/{model}:generateContent, or :streamGenerateContent
// with ?alt=sse; the key in x-goog-api-key). Thought parts are not part of the answer; their
// tokens count as reasoning tokens and are billed as output.
class GeminiProvider final : public HttpProvider
{
public:
    using HttpProvider::HttpProvider;
    QString name() const override { return QStringLiteral("gemini"); }
    LlmCall* send(const LlmRequest& request) override;
};

// The JSON body of a generateContent request: system messages become systemInstruction,
// assistant turns have the role "model", reasoning effort becomes thinkingConfig.
QByteArray geminiRequestBody(const LlmRequest& request);

} // namespace ks
