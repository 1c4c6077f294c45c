#include "anthropicprovider.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace ks {

namespace {

constexpr int kDefaultMaxTokens = 16384; // the Messages API requires max_tokens

class AnthropicCall final : public HttpLlmCall
{
public:
    using HttpLlmCall::HttpLlmCall;

private:
    QNetworkRequest networkRequest() const override
    {
        QNetworkRequest req(QUrl(settings().baseUrl + QStringLiteral("/messages")));
        req.setRawHeader("x-api-key", settings().apiKey.toUtf8());
        req.setRawHeader("anthropic-version", "2023-06-01");
        return req;
    }

    QByteArray requestBody() const override { return anthropicRequestBody(request()); }

    std::optional<LlmError> onStreamEvent(const SseStreamParser::Event& event) override
    {
        QJsonParseError perr {};
        const QJsonObject e = QJsonDocument::fromJson(event.data, &perr).object();
        if (perr.error != QJsonParseError::NoError)
            return malformed(
                QStringLiteral("unreadable stream event: %1").arg(QString::fromUtf8(event.data.left(200))));
        const QString type = e.value(u"type").toString();
        if (type == u"message_start") {
            const QJsonObject message = e.value(u"message").toObject();
            result().model = message.value(u"model").toString();
            result().usage.promptTokens = message.value(u"usage").toObject().value(u"input_tokens").toInteger();
        } else if (type == u"content_block_delta") {
            const QJsonObject delta = e.value(u"delta").toObject();
            if (delta.value(u"type").toString() == u"text_delta")
                appendText(delta.value(u"text").toString());
        } else if (type == u"message_delta") {
            result().usage.completionTokens = e.value(u"usage").toObject().value(u"output_tokens").toInteger();
        } else if (type == u"message_stop") {
            markStreamComplete();
        } else if (type == u"error") {
            return classifyHttpError(
                e.value(u"error").toObject().value(u"type").toString() == u"overloaded_error" ? 529 : 500, event.data);
        }
        return std::nullopt;
    }

    std::optional<LlmError> onBody(const QByteArray& body) override
    {
        QJsonParseError perr {};
        const QJsonObject doc = QJsonDocument::fromJson(body, &perr).object();
        if (perr.error != QJsonParseError::NoError || !doc.value(u"content").isArray())
            return malformed(QStringLiteral("the answer is not a message: %1").arg(QString::fromUtf8(body.left(200))));
        QString text;
        for (const auto& block : doc.value(u"content").toArray())
            if (block.toObject().value(u"type").toString() == u"text")
                text += block.toObject().value(u"text").toString();
        result().text = text;
        result().model = doc.value(u"model").toString();
        const QJsonObject usage = doc.value(u"usage").toObject();
        result().usage.promptTokens = usage.value(u"input_tokens").toInteger();
        result().usage.completionTokens = usage.value(u"output_tokens").toInteger();
        return std::nullopt;
    }
};

} // namespace

QByteArray anthropicRequestBody(const LlmRequest& request)
{
    QJsonArray messages;
    QString system;
    for (const auto& m : request.messages) {
        if (m.role == u"system")
            system += (system.isEmpty() ? QString() : QStringLiteral("\n\n")) + m.content;
        else
            messages.append(QJsonObject {{u"role"_qs, m.role}, {u"content"_qs, m.content}});
    }
    QJsonObject body {{u"model"_qs, request.model}, {u"messages"_qs, messages},
        {u"max_tokens"_qs, request.maxTokens > 0 ? request.maxTokens : kDefaultMaxTokens},
        {u"stream"_qs, request.stream}};
    if (!system.isEmpty())
        body.insert(u"system"_qs, system);
    if (request.temperature)
        body.insert(u"temperature"_qs, *request.temperature);
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

LlmCall* AnthropicProvider::send(const LlmRequest& request)
{
    return new AnthropicCall(network(), settings(), request);
}

} // namespace ks
