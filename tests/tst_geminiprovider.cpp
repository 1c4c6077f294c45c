#include "fakehttpserver.h"
#include "testmain.h"

#include <llm/geminiprovider.h>

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

using namespace ks;
using test::FakeHttpServer;

// The Gemini provider against a loopback server speaking generateContent and
// streamGenerateContent?alt=sse as the API reference describes them.
class TestGeminiProvider : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { qRegisterMetaType<ks::LlmResult>(); }
    void nonStreamedAnswer();
    void streamedAnswerSkipsThoughts();
    void errors_data();
    void errors();
    void retryDelayInTheBodyIsHonoured();
    void streamWithoutFinishReasonIsTruncated();
    void thinkingBudgetOrLevel();

private:
    LlmResult call(FakeHttpServer& server, bool stream, QStringList* deltas = nullptr, QString effort = {});
};

LlmResult TestGeminiProvider::call(FakeHttpServer& server, bool stream, QStringList* deltas, QString effort)
{
    ProviderSettings settings;
    settings.baseUrl = server.baseUrl();
    settings.apiKey = QStringLiteral("gm-test-key-42");
    settings.backoffBaseMs = 10;
    settings.maxRetries = 2;
    GeminiProvider provider(settings);
    LlmRequest r;
    r.role = QStringLiteral("planner");
    r.model = QStringLiteral("gemini-test");
    r.messages = {{u"system"_qs, u"You plan."_qs}, {u"user"_qs, u"Propose."_qs}, {u"assistant"_qs, u"Fuse."_qs},
        {u"user"_qs, u"More."_qs}};
    r.stream = stream;
    r.temperature = 0.5;
    r.maxTokens = 100;
    r.reasoningEffort = effort;
    return test::runCall(provider, r, deltas);
}

void TestGeminiProvider::nonStreamedAnswer()
{
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::http(200, R"J({"candidates":[{"content":{"parts":[{"text":"Split "},
        {"text":"the KV."}],"role":"model"},"finishReason":"STOP","index":0}],
        "usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":7,"thoughtsTokenCount":11,"totalTokenCount":58},
        "modelVersion":"gemini-test-001"})J")});
    const LlmResult r = call(server, false);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(r.text, u"Split the KV."_qs);
    QCOMPARE(r.model, u"gemini-test-001"_qs);
    QCOMPARE(r.usage.promptTokens, 40);
    QCOMPARE(r.usage.completionTokens, 18); // the answer's 7 and the thoughts' 11 are both billed as output
    QCOMPARE(r.usage.reasoningTokens, 11);
    const auto& req = server.requests().at(0);
    QVERIFY(req.head.startsWith("POST /v1/models/gemini-test:generateContent HTTP/1.1"));
    QVERIFY(req.head.contains("x-goog-api-key: gm-test-key-42"));
    const QJsonObject body = QJsonDocument::fromJson(req.body).object();
    QCOMPARE(body.value(u"systemInstruction").toObject().value(u"parts").toArray().at(0).toObject().value(u"text"),
        u"You plan."_qs);
    const QJsonArray contents = body.value(u"contents").toArray();
    QCOMPARE(contents.size(), 3);
    QCOMPARE(contents.at(1).toObject().value(u"role").toString(), u"model"_qs);
    QCOMPARE(body.value(u"generationConfig").toObject().value(u"maxOutputTokens").toInt(), 100);
    QCOMPARE(body.value(u"generationConfig").toObject().value(u"temperature").toDouble(), 0.5);
}

void TestGeminiProvider::streamedAnswerSkipsThoughts()
{
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::sse(
        {R"J({"candidates":[{"content":{"parts":[{"text":"weighing options","thought":true}],"role":"model"}}]})J",
            R"J({"candidates":[{"content":{"parts":[{"text":"Use "}],"role":"model"}}],"modelVersion":"g-1"})J",
            R"J({"candidates":[{"content":{"parts":[{"text":"wgmma."}],"role":"model"},"finishReason":"STOP"}],)J"
            R"J("usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":3,"thoughtsTokenCount":5}})J"},
        false)});
    QStringList deltas;
    const LlmResult r = call(server, true, &deltas);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(r.text, u"Use wgmma."_qs);
    QCOMPARE(deltas, (QStringList {u"Use "_qs, u"wgmma."_qs}));
    QCOMPARE(r.usage.completionTokens, 8);
    QCOMPARE(r.usage.reasoningTokens, 5);
    QVERIFY(
        server.requests().at(0).head.startsWith("POST /v1/models/gemini-test:streamGenerateContent?alt=sse HTTP/1.1"));
}

void TestGeminiProvider::errors_data()
{
    QTest::addColumn<QByteArray>("response");
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("wrong key (400 API_KEY_INVALID)") << FakeHttpServer::http(
        400, R"J({"error":{"code":400,"message":"API key not valid. Please pass a valid API key.",
            "status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}})J")
                                                     << int(LlmErrorKind::Authentication) << u"API key not valid"_qs;
    QTest::newRow("bad request") << FakeHttpServer::http(
        400, R"J({"error":{"code":400,"message":"models/gemini-test is not found","status":"NOT_FOUND"}})J")
                                 << int(LlmErrorKind::BadRequest) << u"is not found"_qs;
    QTest::newRow("quota without a retry delay") << FakeHttpServer::http(429,
        R"J({"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED"}})J")
                                                 << int(LlmErrorKind::Quota) << u"quota"_qs;
    QTest::newRow("blocked prompt") << FakeHttpServer::http(200, R"J({"promptFeedback":{"blockReason":"SAFETY"}})J")
                                    << int(LlmErrorKind::BadRequest) << u"blockReason SAFETY"_qs;
    QTest::newRow("malformed JSON") << FakeHttpServer::http(200, R"J({"candidates":[{"content":)J")
                                    << int(LlmErrorKind::MalformedResponse) << u"not a generateContent response"_qs;
}

void TestGeminiProvider::errors()
{
    QFETCH(QByteArray, response);
    QFETCH(int, kind);
    QFETCH(QString, mentions);
    FakeHttpServer server;
    server.enqueue({response});
    const LlmResult r = call(server, false);
    QVERIFY(r.error);
    QCOMPARE(errorKindName(r.error->kind), errorKindName(LlmErrorKind(kind)));
    QVERIFY2(r.error->message.contains(mentions), qPrintable(r.error->message));
    QVERIFY2(!r.error->message.contains(u"gm-test-key-42"), qPrintable(r.error->message));
    QCOMPARE(server.requests().size(), 1); // none of these is worth a retry
}

void TestGeminiProvider::retryDelayInTheBodyIsHonoured()
{
    FakeHttpServer server;
    server.enqueue(
        {FakeHttpServer::http(429, R"J({"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).",
        "status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1s"}]}})J")});
    server.enqueue({FakeHttpServer::http(
        200, R"J({"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"STOP"}]})J")});
    QElapsedTimer clock;
    clock.start();
    const LlmResult r = call(server, false);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(r.text, u"ok"_qs);
    QCOMPARE(server.requests().size(), 2);
    QVERIFY2(clock.elapsed() >= 1000, "the retry came before the server's retryDelay"); // backoff alone is 10-20 ms
}

void TestGeminiProvider::streamWithoutFinishReasonIsTruncated()
{
    FakeHttpServer server;
    server.enqueue(
        {FakeHttpServer::sse({R"J({"candidates":[{"content":{"parts":[{"text":"half an ans"}]}}]})J"}, false)});
    const LlmResult r = call(server, true);
    QVERIFY(r.error);
    QCOMPARE(r.error->kind, LlmErrorKind::MalformedResponse);
    QVERIFY2(r.error->message.contains(u"truncated"), qPrintable(r.error->message));
}

void TestGeminiProvider::thinkingBudgetOrLevel()
{
    LlmRequest r;
    r.model = QStringLiteral("g");
    r.reasoningEffort = QStringLiteral("2048");
    QJsonObject thinking = QJsonDocument::fromJson(geminiRequestBody(r))
                               .object()
                               .value(u"generationConfig")
                               .toObject()
                               .value(u"thinkingConfig")
                               .toObject();
    QCOMPARE(thinking.value(u"thinkingBudget").toInt(), 2048);
    QVERIFY(!thinking.contains(u"thinkingLevel"));
    r.reasoningEffort = QStringLiteral("high");
    thinking = QJsonDocument::fromJson(geminiRequestBody(r))
                   .object()
                   .value(u"generationConfig")
                   .toObject()
                   .value(u"thinkingConfig")
                   .toObject();
    QCOMPARE(thinking.value(u"thinkingLevel").toString(), u"high"_qs);
}

KS_TEST_MAIN_CORE(TestGeminiProvider)
#include "tst_geminiprovider.moc"
