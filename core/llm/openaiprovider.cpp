#include "openaiprovider.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace ks {

namespace {

LlmUsage parseUsage(const QJsonObject& usage)
{
    LlmUsage u;
    u.promptTokens = usage.value(u"prompt_tokens").toInteger();
    u.completionTokens = usage.value(u"completion_tokens").toInteger();
    u.reasoningTokens = usage.value(u"completion_tokens_details").toObject().value(u"reasoning_tokens").toInteger();
    return u;
}

class OpenAiCall final : public HttpLlmCall
{
public:
    using HttpLlmCall::HttpLlmCall;

private:
    QNetworkRequest networkRequest() const override
    {
        QNetworkRequest req(QUrl(settings().baseUrl + QStringLiteral("/chat/completions")));
        if (!settings().apiKey.isEmpty())
            req.setRawHeader("Authorization", "Bearer " + settings().apiKey.toUtf8());
        return req;
    }

    QByteArray requestBody() const override { return openAiRequestBody(request()); }

    std::optional<LlmError> onStreamEvent(const SseStreamParser::Event& event) override
    {
        if (event.data.trimmed() == "[DONE]") {
            markStreamComplete();
            return std::nullopt;
        }
        QJsonParseError perr {};
        const QJsonObject chunk = QJsonDocument::fromJson(event.data, &perr).object();
        if (perr.error != QJsonParseError::NoError)
            return malformed(
                QStringLiteral("unreadable stream event: %1").arg(QString::fromUtf8(event.data.left(200))));
        if (chunk.contains(u"error"))
            return classifyHttpError(500, event.data);
        if (chunk.contains(u"model"))
            result().model = chunk.value(u"model").toString();
        if (chunk.value(u"usage").isObject())
            result().usage = parseUsage(chunk.value(u"usage").toObject());
        appendText(
            chunk.value(u"choices").toArray().at(0).toObject().value(u"delta").toObject().value(u"content").toString());
        return std::nullopt;
    }

    std::optional<LlmError> onBody(const QByteArray& body) override
    {
        QJsonParseError perr {};
        const QJsonObject doc = QJsonDocument::fromJson(body, &perr).object();
        const QJsonValue message = doc.value(u"choices").toArray().at(0).toObject().value(u"message");
        if (perr.error != QJsonParseError::NoError || !message.isObject())
            return malformed(
                QStringLiteral("the answer is not a chat completion: %1").arg(QString::fromUtf8(body.left(200))));
        result().text = message.toObject().value(u"content").toString();
        result().model = doc.value(u"model").toString();
        result().usage = parseUsage(doc.value(u"usage").toObject());
        return std::nullopt;
    }
};

} // namespace

QByteArray openAiRequestBody(const LlmRequest& request)
{
    QJsonArray messages;
    for (const auto& m : request.messages)
        messages.append(QJsonObject {{u"role"_qs, m.role}, {u"content"_qs, m.content}});
    QJsonObject body {{u"model"_qs, request.model}, {u"messages"_qs, messages}, {u"stream"_qs, request.stream}};
    if (request.stream)
        body.insert(u"stream_options"_qs, QJsonObject {{u"include_usage"_qs, true}});
    if (request.temperature)
        body.insert(u"temperature"_qs, *request.temperature);
    if (request.maxTokens > 0) // reasoning models take max_completion_tokens; others accept it too
        body.insert(u"max_completion_tokens"_qs, request.maxTokens);
    if (!request.reasoningEffort.isEmpty())
        body.insert(u"reasoning_effort"_qs, request.reasoningEffort);
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

LlmCall* OpenAiProvider::send(const LlmRequest& request)
{
    return new OpenAiCall(network(), settings(), request);
}

} // namespace ks
