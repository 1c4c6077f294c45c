#pragma once

#include "llmprovider.h"

#include <QNetworkAccessManager>

namespace ks {

// Anthropic's Messages API (POST {base}/messages, x-api-key, anthropic-version), streamed as
// message_start / content_block_delta / message_delta / message_stop events, or not.
class AnthropicProvider : public QObject, public LlmProvider
{
    Q_OBJECT
public:
    explicit AnthropicProvider(ProviderSettings settings, QObject* parent = nullptr);

    QString name() const override { return QStringLiteral("anthropic"); }
    LlmCall* send(const LlmRequest& request) override;

private:
    ProviderSettings m_settings;
    QNetworkAccessManager m_network;
};

// The JSON body of a Messages request: system messages go to the top-level "system" field.
QByteArray anthropicRequestBody(const LlmRequest& request);

} // namespace ks
