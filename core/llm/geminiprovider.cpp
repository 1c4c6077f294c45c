#include "geminiprovider.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace ks {

namespace {

QJsonObject textParts(const QString& text)
{
    return QJsonObject {{u"parts"_qs, QJsonArray {QJsonObject {{u"text"_qs, text}}}}};
}

class GeminiCall final : public HttpLlmCall
{
public:
    using HttpLlmCall::HttpLlmCall;

private:
    QNetworkRequest networkRequest() const override
    {
        const QString method = request().stream ? u"streamGenerateContent"_qs : u"generateContent"_qs;
        QUrl url(settings().baseUrl + u"/models/"_qs + request().model + u':' + method);
        if (request().stream)
            url.setQuery(u"alt=sse"_qs);
        QNetworkRequest req(url);
        if (!settings().apiKey.isEmpty())
            req.setRawHeader("x-goog-api-key", settings().apiKey.toUtf8());
        return req;
    }

    QByteArray requestBody() const override { return geminiRequestBody(request()); }

    // Each streamed event is a whole GenerateContentResponse carrying the next piece; the last
    // one names a finishReason (there is no [DONE] marker).
    std::optional<LlmError> onStreamEvent(const SseStreamParser::Event& event) override
    {
        QJsonParseError perr {};
        const QJsonObject chunk = QJsonDocument::fromJson(event.data, &perr).object();
        if (perr.error != QJsonParseError::NoError)
            return malformed(
                QStringLiteral("unreadable stream event: %1").arg(QString::fromUtf8(event.data.left(200))));
        if (chunk.contains(u"error"))
            return classifyHttpError(chunk.value(u"error").toObject().value(u"code").toInt(500), event.data);
        if (const auto refused = readResponse(chunk, true))
            return refused;
        return std::nullopt;
    }

    std::optional<LlmError> onBody(const QByteArray& body) override
    {
        QJsonParseError perr {};
        const QJsonObject doc = QJsonDocument::fromJson(body, &perr).object();
        if (perr.error != QJsonParseError::NoError
            || (!doc.value(u"candidates").isArray() && !doc.value(u"promptFeedback").isObject()))
            return malformed(QStringLiteral("the answer is not a generateContent response: %1")
                                 .arg(QString::fromUtf8(body.left(200))));
        return readResponse(doc, false);
    }

    std::optional<LlmError> readResponse(const QJsonObject& doc, bool streamed)
    {
        const QString blocked = doc.value(u"promptFeedback").toObject().value(u"blockReason").toString();
        if (!blocked.isEmpty())
            return LlmError {LlmErrorKind::BadRequest, 200,
                QStringLiteral("the model refused the prompt (blockReason %1); rephrase it or change the safety "
                               "settings of the endpoint")
                    .arg(blocked)};
        if (doc.contains(u"modelVersion"))
            result().model = doc.value(u"modelVersion").toString();
        if (doc.value(u"usageMetadata").isObject()) {
            const QJsonObject u = doc.value(u"usageMetadata").toObject();
            result().usage.promptTokens = u.value(u"promptTokenCount").toInteger();
            result().usage.reasoningTokens = u.value(u"thoughtsTokenCount").toInteger();
            // Gemini counts thoughts apart from the answer; both are billed as output.
            result().usage.completionTokens =
                u.value(u"candidatesTokenCount").toInteger() + result().usage.reasoningTokens;
        }
        const QJsonObject candidate = doc.value(u"candidates").toArray().at(0).toObject();
        QString text;
        for (const auto& part : candidate.value(u"content").toObject().value(u"parts").toArray())
            if (!part.toObject().value(u"thought").toBool())
                text += part.toObject().value(u"text").toString();
        if (streamed)
            appendText(text);
        else
            result().text = text;
        const QString finish = candidate.value(u"finishReason").toString();
        if (!finish.isEmpty() && streamed)
            markStreamComplete();
        if (finish == u"SAFETY" || finish == u"RECITATION" || finish == u"PROHIBITED_CONTENT")
            return LlmError {LlmErrorKind::BadRequest, 200,
                QStringLiteral("the model stopped its answer (finishReason %1)").arg(finish)};
        return std::nullopt;
    }
};

} // namespace

QByteArray geminiRequestBody(const LlmRequest& request)
{
    QJsonArray contents;
    QString system;
    for (const auto& m : request.messages) {
        if (m.role == u"system") {
            system += (system.isEmpty() ? QString() : QStringLiteral("\n\n")) + m.content;
            continue;
        }
        QJsonObject turn = textParts(m.content);
        turn.insert(u"role"_qs, m.role == u"assistant" ? u"model"_qs : u"user"_qs);
        contents.append(turn);
    }
    QJsonObject body {{u"contents"_qs, contents}};
    if (!system.isEmpty())
        body.insert(u"systemInstruction"_qs, textParts(system));
    QJsonObject generation;
    if (request.temperature)
        generation.insert(u"temperature"_qs, *request.temperature);
    if (request.maxTokens > 0)
        generation.insert(u"maxOutputTokens"_qs, request.maxTokens);
    if (!request.reasoningEffort.isEmpty()) {
        // A number is a Gemini 2.5 thinking budget in tokens; a word is a Gemini 3 thinking level.
        bool isBudget = false;
        const int budget = request.reasoningEffort.toInt(&isBudget);
        generation.insert(u"thinkingConfig"_qs,
            isBudget ? QJsonObject {{u"thinkingBudget"_qs, budget}}
                     : QJsonObject {{u"thinkingLevel"_qs, request.reasoningEffort}});
    }
    if (!generation.isEmpty())
        body.insert(u"generationConfig"_qs, generation);
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

LlmCall* GeminiProvider::send(const LlmRequest& request)
{
    return new GeminiCall(network(), settings(), request);
}

} // namespace ks
