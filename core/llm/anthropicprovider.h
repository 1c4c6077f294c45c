#pragma once

#include "httpllmcall.h"

namespace ks {

// Anthropic's Messages API (POST {base}/messages, x-api-key, anthropic-version), streamed as
// message_start / content_block_delta / message_delta / message_stop events, or not.
class AnthropicProvider final : public HttpProvider
{
public:
    using HttpProvider::HttpProvider;
    QString name() const override { return QStringLiteral("anthropic"); }
    LlmCall* send(const LlmRequest& request) override;
};

// The JSON body of a Messages request: system messages go to the top-level "system" field.
QByteArray anthropicRequestBody(const LlmRequest& request);

} // namespace ks
