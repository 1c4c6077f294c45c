#include "fakehttpserver.h"
#include "testmain.h"
#include "testsupport.h"

#include <QDirIterator>
#include <QTemporaryDir>

using namespace ks;
using test::FakeHttpServer;

// `ksearch llm ping` against loopback servers speaking each provider's wire format, and the
// promise that a key set in the environment never reaches a file the program writes.
class TestLlmPing : public QObject
{
    Q_OBJECT
private slots:
    void pingEachHttpProvider_data();
    void pingEachHttpProvider();
    void pingCommandAndUnpricedModel();
    void endpointFailuresExit3_data();
    void endpointFailuresExit3();
    void usageErrorsExit2_data();
    void usageErrorsExit2();
    void keyNeverWrittenAnywhere();

private:
    QTemporaryDir m_dir;
};

static constexpr char kKey[] = "sk-live-SECRET-4f7c2a9e1b";

void TestLlmPing::pingEachHttpProvider_data()
{
    QTest::addColumn<QString>("provider");
    QTest::addColumn<QString>("model");
    QTest::addColumn<QByteArray>("response");
    QTest::addColumn<QString>("cost"); // 12 prompt + 3 completion tokens at the built-in price
    QTest::newRow("openai")
        << u"openai"_qs << u"gpt-5.2"_qs
        << FakeHttpServer::sse({R"({"model":"gpt-5.2-2025-12-11","choices":[{"index":0,"delta":{"content":"pong"}}]})",
               R"({"model":"gpt-5.2-2025-12-11","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}})"})
        << u"$0.000063"_qs; // 12 * 1.75e-6 + 3 * 14e-6
    QTest::newRow("anthropic")
        << u"anthropic"_qs << u"claude-sonnet-4-5"_qs
        << FakeHttpServer::sse(
               {R"({"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":12,"output_tokens":1}}})",
                   R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"pong"}})",
                   R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}})",
                   R"({"type":"message_stop"})"},
               false)
        << u"$0.000081"_qs; // 12 * 3e-6 + 3 * 15e-6
    QTest::newRow("gemini")
        << u"gemini"_qs << u"gemini-2.5-pro"_qs
        << FakeHttpServer::sse(
               {R"({"candidates":[{"content":{"parts":[{"text":"pong"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":3},"modelVersion":"gemini-2.5-pro"})"},
               false)
        << u"$0.000045"_qs; // 12 * 1.25e-6 + 3 * 10e-6
}

void TestLlmPing::pingEachHttpProvider()
{
    QFETCH(QString, provider);
    QFETCH(QString, model);
    QFETCH(QByteArray, response);
    QFETCH(QString, cost);
    FakeHttpServer server;
    server.enqueue({response});
    const QString variable = provider == u"openai" ? u"OPENAI_API_KEY"_qs
        : provider == u"anthropic"                 ? u"ANTHROPIC_API_KEY"_qs
                                                   : u"GEMINI_API_KEY"_qs;
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"llm"_qs, u"ping"_qs, u"--provider"_qs, provider, u"--model"_qs, model, u"--base-url"_qs, server.baseUrl()},
        60000, {variable + u'=' + QLatin1String(kKey)});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(u"answer:   pong"), qPrintable(r.out));
    QVERIFY2(r.out.contains(u"tokens:   12 prompt, 3 completion"), qPrintable(r.out));
    QVERIFY2(r.out.contains(u"cost:     " + cost), qPrintable(r.out));
    QVERIFY2(r.out.contains(u"(key from " + variable + u')'), qPrintable(r.out));
    QVERIFY(!r.out.contains(QLatin1String(kKey)));
    QCOMPARE(server.requests().size(), 1);
    QVERIFY(server.requests().at(0).head.contains(kKey)); // it was used, in a header, and nowhere else
}

void TestLlmPing::pingCommandAndUnpricedModel()
{
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"llm"_qs, u"ping"_qs, u"--provider"_qs, u"command"_qs, u"--model"_qs, u"my-local-model"_qs, u"--command"_qs,
            uR"(cat >/dev/null; echo '{"text":"pong","usage":{"prompt_tokens":7,"completion_tokens":1}}')"_qs});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(r.out.contains(u"answer:   pong"));
    QVERIFY(r.out.contains(u"tokens:   7 prompt, 1 completion"));
    QVERIFY2(r.out.contains(u"cost:     unknown: the model is not in the price table"), qPrintable(r.out));
}

void TestLlmPing::endpointFailuresExit3_data()
{
    QTest::addColumn<QByteArray>("response"); // empty: nothing listens
    QTest::addColumn<QString>("mentions");
    QTest::newRow("wrong key") << FakeHttpServer::http(
        401, R"({"error":{"message":"Incorrect API key","type":"invalid_request_error"}})")
                               << u"authentication: the endpoint refused the API key (HTTP 401)"_qs;
    QTest::newRow("bad model") << FakeHttpServer::http(404, R"({"error":{"message":"The model does not exist"}})")
                               << u"bad request"_qs;
    QTest::newRow("unreachable") << QByteArray() << u"network: cannot reach"_qs;
}

void TestLlmPing::endpointFailuresExit3()
{
    QFETCH(QByteArray, response);
    QFETCH(QString, mentions);
    QString url = u"http://127.0.0.1:9/v1"_qs; // discard port: nobody listens
    FakeHttpServer server;
    if (!response.isEmpty()) {
        server.enqueue({response});
        url = server.baseUrl();
    }
    const auto r = test::runProgram(u"ksearch"_qs,
        {u"llm"_qs, u"ping"_qs, u"--provider"_qs, u"openai"_qs, u"--model"_qs, u"gpt-5.2"_qs, u"--base-url"_qs, url,
            u"--timeout"_qs, u"20"_qs},
        90000, {u"OPENAI_API_KEY=k-test-123456"_qs});
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
}

void TestLlmPing::usageErrorsExit2_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("no provider") << QStringList {u"--model"_qs, u"x"_qs} << u"--provider: is required"_qs;
    QTest::newRow("unknown provider") << QStringList {u"--provider"_qs, u"bard"_qs} << u"--provider: 'bard'"_qs;
    QTest::newRow("no model") << QStringList {u"--provider"_qs, u"openai"_qs} << u"--model: is required"_qs;
    QTest::newRow("bad url") << QStringList {u"--provider"_qs, u"openai"_qs, u"--model"_qs, u"m"_qs, u"--base-url"_qs,
        u"localhost:8000"_qs} << u"--base-url: 'localhost:8000'"_qs;
    QTest::newRow("no command") << QStringList {u"--provider"_qs, u"command"_qs} << u"--command: is required"_qs;
    QTest::newRow("bad temperature") << QStringList {u"--provider"_qs, u"command"_qs, u"--command"_qs, u"cat"_qs,
        u"--temperature"_qs, u"hot"_qs}
                                     << u"--temperature: 'hot'"_qs;
    QTest::newRow("missing replay file") << QStringList {u"--provider"_qs, u"replay"_qs, u"--replay"_qs,
        u"/nonexistent.jsonl"_qs} << u"--replay: '/nonexistent.jsonl' is not a file"_qs;
}

void TestLlmPing::usageErrorsExit2()
{
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    const auto r = test::runProgram(u"ksearch"_qs, QStringList {u"llm"_qs, u"ping"_qs} + args);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
}

void TestLlmPing::keyNeverWrittenAnywhere()
{
    // The server echoes the key in its error body, as some do; the message, the console, the log
    // file and the replay file must all show it redacted.
    FakeHttpServer server;
    server.enqueue({FakeHttpServer::http(401,
        QByteArray(R"({"error":{"message":"Incorrect API key provided: )") + kKey
            + R"(","type":"invalid_request_error"}})")});
    server.enqueue(
        {FakeHttpServer::sse({R"({"model":"gpt-5.2","choices":[{"index":0,"delta":{"content":"pong"}}]})"})});
    const QString home = m_dir.filePath(u"home"_qs);
    const QString log = home + u"/ping.log";
    const QString record = home + u"/exchanges.jsonl";
    QDir().mkpath(home);
    const QStringList env {u"OPENAI_API_KEY="_qs + QLatin1String(kKey), u"HOME="_qs + home,
        u"XDG_DATA_HOME="_qs + home + u"/data", u"XDG_CONFIG_HOME="_qs + home + u"/config",
        u"XDG_CACHE_HOME="_qs + home + u"/cache"};
    const QStringList common {u"--verbose"_qs, u"--log-file"_qs, log, u"llm"_qs, u"ping"_qs, u"--provider"_qs,
        u"openai"_qs, u"--model"_qs, u"gpt-5.2"_qs, u"--base-url"_qs, server.baseUrl(), u"--record"_qs, record};
    const auto refused = test::runProgram(u"ksearch"_qs, common, 60000, env);
    QCOMPARE(refused.exitCode, 3);
    QVERIFY2(refused.err.contains(u"Incorrect API key provided: [redacted]"), qPrintable(refused.err));
    const auto answered = test::runProgram(u"ksearch"_qs, common, 60000, env);
    QCOMPARE(answered.exitCode, 0);

    int files = 0;
    for (QDirIterator it(home, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories); it.hasNext();) {
        const QString path = it.next();
        ++files;
        const QByteArray content = QByteArray::fromStdString(test::readText(path.toStdString()));
        QVERIFY2(!content.contains(kKey), qPrintable(path));
    }
    QVERIFY2(QFileInfo(log).size() > 0 && QFileInfo(record).size() > 0, "the log and the replay file were written");
    QVERIFY(files >= 2);
    QVERIFY(!refused.out.contains(QLatin1String(kKey)) && !answered.out.contains(QLatin1String(kKey))
        && !answered.err.contains(QLatin1String(kKey)));
}

KS_TEST_MAIN_CORE(TestLlmPing)
#include "tst_llmping.moc"
