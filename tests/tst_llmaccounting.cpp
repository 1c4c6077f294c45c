#include "fakehttpserver.h"
#include "testmain.h"
#include "testsupport.h"

#include <llm/commandprovider.h>
#include <llm/meteredprovider.h>
#include <llm/pricetable.h>
#include <llm/usageledger.h>

#include <QTemporaryDir>

using namespace ks;

// Prices, tokens and dollars per role, and the dollar cap.
class TestLlmAccounting : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { qRegisterMetaType<ks::LlmResult>(); }
    void builtInTableMatches_data();
    void builtInTableMatches();
    void overrideFile();
    void badOverrideFiles_data();
    void badOverrideFiles();
    void meteredCallsAreCountedPerRole();
    void capStopsNewCalls();

private:
    QTemporaryDir m_dir;
};

void TestLlmAccounting::builtInTableMatches_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("pattern"); // empty: not priced
    QTest::newRow("dated snapshot") << u"claude-sonnet-4-5-20250929"_qs << u"claude-sonnet-4-5*"_qs;
    QTest::newRow("longest prefix wins") << u"gpt-5-mini-2025-08-07"_qs << u"gpt-5-mini*"_qs;
    QTest::newRow("shorter family") << u"gpt-5-2025-08-07"_qs << u"gpt-5*"_qs;
    QTest::newRow("gemini") << u"gemini-2.5-flash-lite"_qs << u"gemini-2.5-flash-lite*"_qs;
    QTest::newRow("unknown local model") << u"qwen3-coder-30b"_qs << QString();
}

void TestLlmAccounting::builtInTableMatches()
{
    QFETCH(QString, model);
    QFETCH(QString, pattern);
    const auto price = PriceTable::builtIn().find(model);
    QCOMPARE(price ? price->pattern : QString(), pattern);
}

void TestLlmAccounting::overrideFile()
{
    const QString path = m_dir.filePath(u"prices.json"_qs);
    test::writeText(path.toStdString(),
        R"({"models": {"qwen3-coder-30b": {"input": 0.5, "output": 1.5}, "gpt-5*": {"input": 2, "output": 20}}})");
    PriceTable t = PriceTable::builtIn();
    QString error;
    QVERIFY2(t.merge(path, &error), qPrintable(error));
    const auto local = t.find(u"qwen3-coder-30b"_qs);
    QVERIFY(local);
    // 2 M prompt tokens at $0.5 and 1 M completion tokens at $1.5.
    QCOMPARE(PriceTable::cost(*local, {2'000'000, 1'000'000, 0}), 2.5);
    QCOMPARE(t.find(u"gpt-5-2025-08-07"_qs)->outputPerMTok, 20.0); // replaced, not duplicated
    QCOMPARE(t.find(u"gpt-5-mini"_qs)->pattern, u"gpt-5-mini*"_qs); // untouched entries stay
}

void TestLlmAccounting::badOverrideFiles_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("not JSON") << QByteArray("{models:") << u"not a JSON object"_qs;
    QTest::newRow("no models") << QByteArray(R"({"prices": {}})") << u"field 'models'"_qs;
    QTest::newRow("negative price") << QByteArray(R"({"models": {"m": {"input": -1, "output": 1}}})")
                                    << u"models.m: 'input' and 'output'"_qs;
    QTest::newRow("price as text") << QByteArray(R"({"models": {"m": {"input": "1", "output": 1}}})") << u"models.m"_qs;
}

void TestLlmAccounting::badOverrideFiles()
{
    QFETCH(QByteArray, content);
    QFETCH(QString, mentions);
    const QString path = m_dir.filePath(u"bad.json"_qs);
    test::writeText(path.toStdString(), content.toStdString());
    PriceTable t = PriceTable::builtIn();
    const auto before = t.entries().size();
    QString error;
    QVERIFY(!t.merge(path, &error));
    QVERIFY2(error.startsWith(path) && error.contains(mentions), qPrintable(error));
    QCOMPARE(t.entries().size(), before);
}

// A command that reports usage, so the whole path (provider -> meter -> ledger) is real.
static CommandProvider usageReporter(int prompt, int completion, const QString& model)
{
    return CommandProvider(QStringLiteral(
        R"(cat >/dev/null; echo '{"text":"ok","model":"%1","usage":{"prompt_tokens":%2,"completion_tokens":%3}}')")
                               .arg(model)
                               .arg(prompt)
                               .arg(completion));
}

static LlmRequest ask(const QString& role, const QString& model)
{
    LlmRequest r;
    r.role = role;
    r.model = model;
    r.messages = {{u"user"_qs, u"hi"_qs}};
    return r;
}

void TestLlmAccounting::meteredCallsAreCountedPerRole()
{
    const PriceTable prices = PriceTable::builtIn();
    UsageLedger ledger;
    CommandProvider planner = usageReporter(1'000'000, 100'000, u"gpt-5.2"_qs); // $1.75 + $1.40
    CommandProvider coder = usageReporter(200'000, 50'000, u"local-coder"_qs); // not priced
    MeteredProvider meteredPlanner(planner, prices, ledger);
    MeteredProvider meteredCoder(coder, prices, ledger);
    const LlmResult p = test::runCall(meteredPlanner, ask(u"planner"_qs, u"gpt-5.2"_qs));
    QVERIFY(p.priced);
    QCOMPARE(qRound(p.costDollars * 100), 315);
    test::runCall(meteredPlanner, ask(u"planner"_qs, u"gpt-5.2"_qs));
    const LlmResult c = test::runCall(meteredCoder, ask(u"coder"_qs, u"local-coder"_qs));
    QVERIFY(!c.priced);
    QCOMPARE(c.costDollars, 0.0);
    const auto roles = ledger.byRole();
    QCOMPARE(roles.value(u"planner"_qs).calls, 2);
    QCOMPARE(roles.value(u"planner"_qs).tokens.promptTokens, 2'000'000);
    QCOMPARE(qRound(roles.value(u"planner"_qs).dollars * 100), 630);
    QCOMPARE(roles.value(u"coder"_qs).calls, 1);
    QCOMPARE(roles.value(u"coder"_qs).unpricedCalls, 1);
    QCOMPARE(roles.value(u"coder"_qs).tokens.completionTokens, 50'000);
    QCOMPARE(ledger.total().calls, 3);
}

void TestLlmAccounting::capStopsNewCalls()
{
    const PriceTable prices = PriceTable::builtIn();
    UsageLedger ledger;
    ledger.setCapDollars(5.0);
    CommandProvider planner = usageReporter(1'000'000, 100'000, u"gpt-5.2"_qs); // $3.15 a call
    MeteredProvider metered(planner, prices, ledger);
    QVERIFY(!test::runCall(metered, ask(u"planner"_qs, u"gpt-5.2"_qs)).error);
    QVERIFY(!ledger.capReached());
    QVERIFY(!test::runCall(metered, ask(u"planner"_qs, u"gpt-5.2"_qs)).error); // passes the cap: in flight
    QVERIFY(ledger.capReached());
    const LlmResult refused = test::runCall(metered, ask(u"coder"_qs, u"gpt-5.2"_qs));
    QVERIFY(refused.error);
    QCOMPARE(refused.error->kind, LlmErrorKind::CostCap);
    QVERIFY2(refused.error->message.contains(u"$5.00") && refused.error->message.contains(u"$6.30"),
        qPrintable(refused.error->message));
    QCOMPARE(ledger.total().calls, 2); // the refused call was never made
    ledger.setCapDollars(10.0);
    QVERIFY(!test::runCall(metered, ask(u"coder"_qs, u"gpt-5.2"_qs)).error);
}

KS_TEST_MAIN_CORE(TestLlmAccounting)
#include "tst_llmaccounting.moc"
