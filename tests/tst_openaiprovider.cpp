#include "fakehttpserver.h"
#include "testmain.h"

#include <llm/openaiprovider.h>

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>

#include <memory>

using namespace ks;
using test::FakeHttpServer;

// The OpenAI-compatible provider against a real HTTP server on loopback, speaking the wire
// format of the chat-completions documentation.
class TestOpenAiProvider : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { qRegisterMetaType<ks::LlmResult>(); }
    void nonStreamedAnswer();
    void streamedAnswer();
    void errors_data();
    void errors();
    void retryAfterIsHonoured();
    void serverErrorThenSuccess();
    void idleStreamTimesOut();
    void cancelWhileWaiting();

private:
    LlmResult call(FakeHttpServer& server, bool stream, QStringList* deltas = nullptr, ProviderSettings settings = {});
};

static LlmRequest request(bool stream)
{
    LlmRequest r;
    r.role = QStringLiteral("coder");
    r.model = QStringLiteral("test-model");
    r.messages = {{u"system"_qs, u"You write CUDA."_qs}, {u"user"_qs, u"Say hi."_qs}};
    r.stream = stream;
    r.temperature = 0.2;
    r.maxTokens = 64;
    r.reasoningEffort = QStringLiteral("high");
    return r;
}

LlmResult TestOpenAiProvider::call(FakeHttpServer& server, bool stream, QStringList* deltas, ProviderSettings settings)
{
    settings.baseUrl = server.baseUrl();
    settings.apiKey = QStringLiteral("sk-test-123");
    if (settings.backoffBaseMs == ProviderSettings {}.backoffBaseMs)
        settings.backoffBaseMs = 10;
    OpenAiProvider provider(settings);
    return test::runCall(provider, request(stream), deltas);
}

void TestOpenAiProvider::nonStreamedAnswer()
{
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::http(200, R"J({"id":"c1","object":"chat.completion","model":"test-model-2026",
        "choices":[{"index":0,"message":{"role":"assistant","content":"Hi there."},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":21,"completion_tokens":5,"total_tokens":26,"completion_tokens_details":{"reasoning_tokens":3}}})J")});
    const LlmResult r = call(server, false);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(r.text, u"Hi there."_qs);
    QCOMPARE(r.model, u"test-model-2026"_qs);
    QCOMPARE(r.usage.promptTokens, 21);
    QCOMPARE(r.usage.completionTokens, 5);
    QCOMPARE(r.usage.reasoningTokens, 3);
    QVERIFY(r.latencySeconds > 0);
    // What went over the wire.
    QCOMPARE(server.requests().size(), 1);
    const auto& req = server.requests()[0];
    QVERIFY(req.head.startsWith("POST /v1/chat/completions HTTP/1.1"));
    QVERIFY(req.head.contains("Authorization: Bearer sk-test-123"));
    const QJsonObject body = QJsonDocument::fromJson(req.body).object();
    QCOMPARE(body.value(u"model").toString(), u"test-model"_qs);
    QCOMPARE(body.value(u"messages").toArray().size(), 2);
    QCOMPARE(body.value(u"stream").toBool(), false);
    QCOMPARE(body.value(u"max_completion_tokens").toInt(), 64);
    QCOMPARE(body.value(u"reasoning_effort").toString(), u"high"_qs);
    QCOMPARE(body.value(u"temperature").toDouble(), 0.2);
}

void TestOpenAiProvider::streamedAnswer()
{
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::sse(
        {R"J({"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})J",
            R"J({"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"__global__ "}}]})J",
            R"J({"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"void k()"}}]})J",
            R"J({"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})J",
            R"J({"id":"c2","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":7}})J"})});
    QStringList deltas;
    const LlmResult r = call(server, true, &deltas);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(deltas, (QStringList {u"__global__ "_qs, u"void k()"_qs}));
    QCOMPARE(r.text, u"__global__ void k()"_qs);
    QCOMPARE(r.usage.promptTokens, 40);
    QCOMPARE(r.usage.completionTokens, 7);
    const QJsonObject body = QJsonDocument::fromJson(server.requests()[0].body).object();
    QVERIFY(body.value(u"stream_options").toObject().value(u"include_usage").toBool());
}

void TestOpenAiProvider::errors_data()
{
    QTest::addColumn<QByteArray>("response");
    QTest::addColumn<bool>("stream");
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("fragment");
    QTest::addColumn<int>("requests");
    QTest::newRow("wrong key") << FakeHttpServer::http(401,
        R"J({"error":{"message":"Incorrect API key provided: sk-te***23.","type":"invalid_request_error","code":"invalid_api_key"}})J")
                               << false << "authentication"
                               << "Incorrect API key provided" << 1;
    QTest::newRow("quota") << FakeHttpServer::http(429,
        R"J({"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}})J")
                           << false << "quota"
                           << "exceeded your current quota" << 1;
    QTest::newRow("bad request") << FakeHttpServer::http(400, R"J({"error":{"message":"Unknown model: test-model"}})J")
                                 << false << "bad request"
                                 << "Unknown model" << 1;
    QTest::newRow("malformed JSON") << FakeHttpServer::http(200, "this is not json") << false << "malformed response"
                                    << "not a chat completion" << 1;
    QTest::newRow("truncated stream") << FakeHttpServer::sse({R"J({"choices":[{"delta":{"content":"half an ans"}}]})J"},
        false) << true << "malformed response"
                                      << "truncated" << 1;
    QTest::newRow("garbage in the stream") << FakeHttpServer::sse({"{not json"}) << true << "malformed response"
                                           << "unreadable stream event" << 1;
    QTest::newRow("overloaded after retries")
        << FakeHttpServer::http(503, R"J({"error":{"message":"Service Unavailable"}})J") << false << "overloaded"
        << "after 2 retries" << 3;
}

void TestOpenAiProvider::errors()
{
    QFETCH(QByteArray, response);
    QFETCH(bool, stream);
    QFETCH(QString, kind);
    QFETCH(QString, fragment);
    QFETCH(int, requests);
    FakeHttpServer server;
    for (int i = 0; i < requests; ++i)
        server.enqueue({response});
    ProviderSettings settings;
    settings.maxRetries = 2;
    const LlmResult r = call(server, stream, nullptr, settings);
    QVERIFY(r.error.has_value());
    QCOMPARE(errorKindName(r.error->kind), kind);
    QVERIFY2(r.error->message.contains(fragment), qPrintable(r.error->message));
    QVERIFY2(!r.error->message.contains(u"sk-test-123"), "the key must never appear in a message");
    QCOMPARE(server.requests().size(), requests);
}

void TestOpenAiProvider::retryAfterIsHonoured()
{
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::http(
        429, R"J({"error":{"message":"Rate limit reached","type":"requests"}})J", "Retry-After: 1\r\n")});
    server.enqueue({FakeHttpServer::http(
        200, R"J({"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}})J")});
    QElapsedTimer clock;
    clock.start();
    const LlmResult r = call(server, false);
    QVERIFY(!r.error);
    QCOMPARE(r.text, u"ok"_qs);
    QCOMPARE(server.requests().size(), 2);
    QVERIFY2(
        clock.elapsed() >= 1000, qPrintable(QString::number(clock.elapsed()))); // waited as told, not the 10 ms backoff
}

void TestOpenAiProvider::serverErrorThenSuccess()
{
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::http(500, R"J({"error":{"message":"internal error"}})J")});
    server.enqueue({FakeHttpServer::sse({R"J({"choices":[{"delta":{"content":"fine"}}]})J"})});
    const LlmResult r = call(server, true);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(r.text, u"fine"_qs);
    QCOMPARE(server.requests().size(), 2);
}

void TestOpenAiProvider::idleStreamTimesOut()
{
    FakeHttpServer server;
    QByteArray partial = FakeHttpServer::sse({R"J({"choices":[{"delta":{"content":"thinking"}}]})J"}, false);
    server.enqueue({partial, false});
    ProviderSettings settings;
    settings.idleTimeoutMs = 300;
    QElapsedTimer clock;
    clock.start();
    const LlmResult r = call(server, true, nullptr, settings);
    QVERIFY(r.error.has_value());
    QCOMPARE(r.error->kind, LlmErrorKind::Timeout);
    QVERIFY2(r.error->message.contains(u"silent"), qPrintable(r.error->message));
    QVERIFY(clock.elapsed() < 5000);
}

void TestOpenAiProvider::cancelWhileWaiting()
{
    FakeHttpServer server;
    server.enqueue({{}, true, true}); // never answers
    ProviderSettings settings;
    settings.baseUrl = server.baseUrl();
    OpenAiProvider provider(settings);
    std::unique_ptr<LlmCall> c(provider.send(request(true)));
    QSignalSpy finished(c.get(), &LlmCall::finished);
    QTRY_COMPARE_WITH_TIMEOUT(server.requests().size(), 1, 5000);
    c->cancel();
    QCOMPARE(finished.size(), 1); // at once, not after a timeout
    QCOMPARE(finished.at(0).at(0).value<LlmResult>().error->kind, LlmErrorKind::Cancelled);
    c->cancel(); // a second cancel is harmless and emits nothing
    QCOMPARE(finished.size(), 1);
}

KS_TEST_MAIN_CORE(TestOpenAiProvider)
#include "tst_openaiprovider.moc"
