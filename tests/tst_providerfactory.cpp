#include "fakehttpserver.h"
#include "testmain.h"
#include "testsupport.h"

#include <llm/apikeys.h>
#include <llm/providerfactory.h>

#include <QJsonDocument>
#include <QTemporaryDir>

using namespace ks;

// Role configuration (what session files hold) and how a provider is made from it.
class TestProviderFactory : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void configRoundTrip();
    void badConfig_data();
    void badConfig();
    void publicEndpointNeedsAKey_data();
    void publicEndpointNeedsAKey();
    void keyFromTheEnvironment();
    void noKeychainOnAHeadlessMachine();
    void replayAndRecordWrap();

private:
    QTemporaryDir m_dir;
};

void TestProviderFactory::initTestCase()
{
    qRegisterMetaType<ks::LlmResult>();
    for (const char* v : {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"})
        qunsetenv(v);
    qunsetenv("DBUS_SESSION_BUS_ADDRESS"); // no keychain: the test must not read the developer's
}

void TestProviderFactory::configRoundTrip()
{
    LlmRoleConfig c;
    c.provider = u"openai"_qs;
    c.model = u"gpt-5.2"_qs;
    c.baseUrl = u"http://127.0.0.1:8000/v1"_qs;
    c.temperature = 0.3;
    c.maxTokens = 8000;
    c.reasoningEffort = u"high"_qs;
    c.recordFile = u"/tmp/x.jsonl"_qs;
    c.timeoutSeconds = 120;
    c.maxRetries = 2;
    QString error;
    const auto back = LlmRoleConfig::fromJson(c.toJson(), u"session.json: llm.planner"_qs, &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(QJsonDocument(back->toJson()).toJson(), QJsonDocument(c.toJson()).toJson());
    QCOMPARE(back->temperature, std::optional<double>(0.3));
    QVERIFY(!QJsonDocument(c.toJson()).toJson().contains("key"));
}

void TestProviderFactory::badConfig_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("no provider") << QByteArray(R"({"model":"m"})") << u"llm.coder.provider: missing"_qs;
    QTest::newRow("unknown provider") << QByteArray(R"({"provider":"bard"})") << u"llm.coder.provider: 'bard'"_qs;
    QTest::newRow("temperature text") << QByteArray(R"({"provider":"openai","temperature":"hot"})")
                                      << u"llm.coder.temperature: not a number"_qs;
    QTest::newRow("timeout") << QByteArray(R"({"provider":"openai","timeout_s":0})") << u"llm.coder.timeout_s"_qs;
}

void TestProviderFactory::badConfig()
{
    QFETCH(QByteArray, json);
    QFETCH(QString, mentions);
    QString error;
    QVERIFY(!LlmRoleConfig::fromJson(QJsonDocument::fromJson(json).object(), u"llm.coder"_qs, &error));
    QVERIFY2(error.contains(mentions), qPrintable(error));
}

void TestProviderFactory::publicEndpointNeedsAKey_data()
{
    QTest::addColumn<QString>("provider");
    QTest::addColumn<QString>("variable");
    QTest::newRow("openai") << u"openai"_qs << u"OPENAI_API_KEY"_qs;
    QTest::newRow("anthropic") << u"anthropic"_qs << u"ANTHROPIC_API_KEY"_qs;
    QTest::newRow("gemini") << u"gemini"_qs << u"GEMINI_API_KEY"_qs;
}

void TestProviderFactory::publicEndpointNeedsAKey()
{
    QFETCH(QString, provider);
    QFETCH(QString, variable);
    LlmRoleConfig c;
    c.provider = provider;
    c.model = u"m"_qs;
    const ProviderBuild b = makeProvider(c);
    QVERIFY(!b.provider);
    QVERIFY2(b.error.contains(u"no API key for " + provider) && b.error.contains(variable), qPrintable(b.error));
    // A local server or a proxy may take no key.
    c.baseUrl = u"http://127.0.0.1:8000/v1"_qs;
    QVERIFY(makeProvider(c).provider);
}

void TestProviderFactory::keyFromTheEnvironment()
{
    qputenv("GOOGLE_API_KEY", "g-from-google-variable");
    test::FakeHttpServer server;
    server.enqueue({test::FakeHttpServer::http(
        200, R"({"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]})")});
    LlmRoleConfig c;
    c.provider = u"gemini"_qs;
    c.model = u"gemini-test"_qs;
    c.baseUrl = server.baseUrl();
    const ProviderBuild b = makeProvider(c);
    QVERIFY2(b.provider, qPrintable(b.error));
    QCOMPARE(b.keySource, u"GOOGLE_API_KEY"_qs);
    LlmRequest r = makeRequest(c, u"planner"_qs, {{u"user"_qs, u"hi"_qs}});
    r.stream = false;
    QCOMPARE(test::runCall(*b.provider, r).text, u"hi"_qs);
    QVERIFY(server.requests().at(0).head.contains("x-goog-api-key: g-from-google-variable"));
    qunsetenv("GOOGLE_API_KEY");
}

void TestProviderFactory::noKeychainOnAHeadlessMachine()
{
    QString error;
    QVERIFY(!readKeychainKey(u"openai"_qs, &error));
    QVERIFY2(error.contains(u"no keychain"), qPrintable(error));
    QVERIFY(!writeKeychainKey(u"openai"_qs, u"sk-should-not-be-stored"_qs, &error));
    QVERIFY(!findApiKey(u"openai"_qs));
}

void TestProviderFactory::replayAndRecordWrap()
{
    LlmRoleConfig c;
    c.provider = u"replay"_qs;
    c.replayFile = m_dir.filePath(u"missing.jsonl"_qs);
    ProviderBuild b = makeProvider(c);
    QVERIFY(!b.provider);
    QVERIFY2(b.error.contains(c.replayFile), qPrintable(b.error));

    c = {};
    c.provider = u"command"_qs;
    c.command = u"cat >/dev/null; echo recorded"_qs;
    c.recordFile = m_dir.filePath(u"rec.jsonl"_qs);
    b = makeProvider(c);
    QVERIFY2(b.provider, qPrintable(b.error));
    QCOMPARE(b.provider->name(), u"command"_qs);
    QVERIFY(!test::runCall(*b.provider, makeRequest(c, u"coder"_qs, {{u"user"_qs, u"x"_qs}})).error);
    c.provider = u"replay"_qs;
    c.replayFile = c.recordFile;
    c.recordFile.clear();
    b = makeProvider(c);
    QVERIFY2(b.provider, qPrintable(b.error));
    QCOMPARE(test::runCall(*b.provider, makeRequest(c, u"coder"_qs, {{u"user"_qs, u"x"_qs}})).text.trimmed(),
        u"recorded"_qs);
}

KS_TEST_MAIN_CORE(TestProviderFactory)
#include "tst_providerfactory.moc"
