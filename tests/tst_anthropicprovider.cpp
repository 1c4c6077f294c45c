#include "fakehttpserver.h"
#include "testmain.h"

#include <llm/anthropicprovider.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>

#include <memory>

using namespace ks;
using test::FakeHttpServer;

// The Anthropic Messages provider against a loopback server speaking the Messages wire format.
class TestAnthropicProvider : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { qRegisterMetaType<ks::LlmResult>(); }
    void nonStreamedAnswer();
    void streamedAnswer();
    void overloadedThenSuccess();
    void errorEventInTheStream();
    void wrongKey();

private:
    LlmResult call(FakeHttpServer& server, bool stream, QStringList* deltas = nullptr);
};

LlmResult TestAnthropicProvider::call(FakeHttpServer& server, bool stream, QStringList* deltas)
{
    ProviderSettings settings;
    settings.baseUrl = server.baseUrl();
    settings.apiKey = QStringLiteral("sk-ant-test");
    settings.backoffBaseMs = 10;
    settings.maxRetries = 2;
    AnthropicProvider provider(settings);
    LlmRequest r;
    r.role = QStringLiteral("planner");
    r.model = QStringLiteral("claude-test");
    r.messages = {{u"system"_qs, u"You plan kernel optimizations."_qs}, {u"user"_qs, u"Propose intents."_qs}};
    r.stream = stream;
    return test::runCall(provider, r, deltas);
}

void TestAnthropicProvider::nonStreamedAnswer()
{
    FakeHttpServer server;
    server.enqueue(
        {FakeHttpServer::http(200, R"J({"id":"msg_1","type":"message","role":"assistant","model":"claude-test-1",
        "content":[{"type":"text","text":"Fuse the heads."}],"stop_reason":"end_turn",
        "usage":{"input_tokens":30,"output_tokens":6}})J")});
    const LlmResult r = call(server, false);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(r.text, u"Fuse the heads."_qs);
    QCOMPARE(r.model, u"claude-test-1"_qs);
    QCOMPARE(r.usage.promptTokens, 30);
    QCOMPARE(r.usage.completionTokens, 6);
    const auto& req = server.requests()[0];
    QVERIFY(req.head.startsWith("POST /v1/messages HTTP/1.1"));
    QVERIFY(req.head.contains("x-api-key: sk-ant-test"));
    QVERIFY(req.head.contains("anthropic-version: 2023-06-01"));
    const QJsonObject body = QJsonDocument::fromJson(req.body).object();
    QCOMPARE(body.value(u"system").toString(), u"You plan kernel optimizations."_qs);
    QCOMPARE(body.value(u"messages").toArray().size(), 1); // the system message is not a turn
    QVERIFY(body.value(u"max_tokens").toInt() > 0);
}

void TestAnthropicProvider::streamedAnswer()
{
    FakeHttpServer server;
    QByteArray stream = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    for (const QByteArray& e : QList<QByteArray> {
             R"J(event: message_start
data: {"type":"message_start","message":{"id":"msg_2","model":"claude-test-2","usage":{"input_tokens":44,"output_tokens":1}}})J",
             R"J(event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})J",
             "event: ping\ndata: {\"type\": \"ping\"}",
             R"J(event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Split "}})J",
             R"J(event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the KV."}})J",
             R"J(event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}})J",
             R"J(event: message_stop
data: {"type":"message_stop"})J"})
        stream += e + "\n\n";
    server.enqueue({stream});
    QStringList deltas;
    const LlmResult r = call(server, true, &deltas);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(deltas, (QStringList {u"Split "_qs, u"the KV."_qs}));
    QCOMPARE(r.text, u"Split the KV."_qs);
    QCOMPARE(r.usage.promptTokens, 44);
    QCOMPARE(r.usage.completionTokens, 9);
    QCOMPARE(r.model, u"claude-test-2"_qs);
}

void TestAnthropicProvider::overloadedThenSuccess()
{
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::http(
        529, R"J({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})J")});
    server.enqueue({FakeHttpServer::http(
        200, R"J({"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1,"output_tokens":1}})J")});
    const LlmResult r = call(server, false);
    QVERIFY(!r.error);
    QCOMPARE(r.text, u"ok"_qs);
    QCOMPARE(server.requests().size(), 2);
}

void TestAnthropicProvider::errorEventInTheStream()
{
    FakeHttpServer server;
    server.enqueue({"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                    "event: error\ndata: "
                    "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"});
    const LlmResult r = call(server, true);
    QVERIFY(r.error.has_value());
    QCOMPARE(r.error->kind, LlmErrorKind::Overloaded);
    QVERIFY2(r.error->message.contains(u"Overloaded"), qPrintable(r.error->message));
}

void TestAnthropicProvider::wrongKey()
{
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::http(
        401, R"J({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})J")});
    const LlmResult r = call(server, false);
    QVERIFY(r.error.has_value());
    QCOMPARE(r.error->kind, LlmErrorKind::Authentication);
    QVERIFY(r.error->message.contains(u"invalid x-api-key"));
    QVERIFY(!r.error->message.contains(u"sk-ant-test"));
    QCOMPARE(server.requests().size(), 1); // an authentication error is not retried
}

KS_TEST_MAIN_CORE(TestAnthropicProvider)
#include "tst_anthropicprovider.moc"
