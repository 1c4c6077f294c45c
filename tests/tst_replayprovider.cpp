#include "fakehttpserver.h"
#include "testmain.h"
#include "testsupport.h"

#include <llm/commandprovider.h>
#include <llm/replayprovider.h>

#include <QTemporaryDir>

using namespace ks;

// Recording real exchanges (through the command provider) and serving them back.
class TestReplayProvider : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { qRegisterMetaType<ks::LlmResult>(); }
    void recordThenReplayByFingerprint();
    void unmatchedRequests_data();
    void unmatchedRequests();
    void malformedFiles_data();
    void malformedFiles();
    void fingerprintIgnoresTheModel();

private:
    QString recordTwo(); // a replay file with a planner and a coder exchange
    QTemporaryDir m_dir;
};

static LlmRequest ask(const QString& role, const QString& text, const QString& model = u"m"_qs)
{
    LlmRequest r;
    r.role = role;
    r.model = model;
    r.messages = {{u"user"_qs, text}};
    return r;
}

QString TestReplayProvider::recordTwo()
{
    static int n = 0;
    const QString path = m_dir.filePath(QStringLiteral("rec%1.jsonl").arg(++n));
    // The command answers with the role it was asked for, so each recorded answer is traceable.
    RecordingProvider recorder(
        std::make_unique<CommandProvider>(u"sed -n 's/.*\"role\":\"\\(planner\\|coder\\)\".*/answer for \\1/p'"_qs),
        path);
    for (const auto& [role, text] :
        {std::pair {u"planner"_qs, u"plan it"_qs}, std::pair {u"coder"_qs, u"code it"_qs}}) {
        const LlmResult r = test::runCall(recorder, ask(role, text));
        if (r.error)
            qWarning() << r.error->message;
    }
    return path;
}

void TestReplayProvider::recordThenReplayByFingerprint()
{
    const QString path = recordTwo();
    QString error;
    const auto exchanges = loadReplayFile(path, &error);
    QVERIFY2(exchanges, qPrintable(error));
    QCOMPARE(exchanges->size(), 2);
    QCOMPARE(exchanges->at(0).text.trimmed(), u"answer for planner"_qs);
    QCOMPARE(exchanges->at(1).messages.at(0).content, u"code it"_qs);
    ReplayProvider replay(*exchanges, false);
    // Out of order: matched by fingerprint, not by position.
    QCOMPARE(test::runCall(replay, ask(u"coder"_qs, u"code it"_qs)).text.trimmed(), u"answer for coder"_qs);
    QCOMPARE(test::runCall(replay, ask(u"planner"_qs, u"plan it"_qs)).text.trimmed(), u"answer for planner"_qs);
    QCOMPARE(replay.served(), 2);
}

void TestReplayProvider::unmatchedRequests_data()
{
    QTest::addColumn<bool>("inOrder");
    QTest::addColumn<QString>("expected"); // empty: NoAnswer
    QTest::newRow("strict: no answer") << false << QString();
    QTest::newRow("in order: the next answer of the role") << true << u"answer for coder"_qs;
}

void TestReplayProvider::unmatchedRequests()
{
    QFETCH(bool, inOrder);
    QFETCH(QString, expected);
    QString error;
    ReplayProvider replay(*loadReplayFile(recordTwo(), &error), inOrder);
    const LlmResult r = test::runCall(replay, ask(u"coder"_qs, u"a prompt that quotes other latencies"_qs));
    if (expected.isEmpty()) {
        QVERIFY(r.error);
        QCOMPARE(r.error->kind, LlmErrorKind::NoAnswer);
        QVERIFY2(r.error->message.contains(u"coder"), qPrintable(r.error->message));
    } else {
        QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
        QCOMPARE(r.text.trimmed(), expected);
        // Used up: a second unmatched coder request finds nothing more.
        QCOMPARE(test::runCall(replay, ask(u"coder"_qs, u"again"_qs)).error->kind, LlmErrorKind::NoAnswer);
    }
}

void TestReplayProvider::malformedFiles_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("not JSON") << QByteArray("{\"role\":\"coder\",\"text\":\"x\"}\n{oops\n")
                              << u":2: not a JSON object"_qs;
    QTest::newRow("no text") << QByteArray("{\"role\":\"coder\"}\n") << u":1: field 'text'"_qs;
}

void TestReplayProvider::malformedFiles()
{
    QFETCH(QByteArray, content);
    QFETCH(QString, mentions);
    const QString path =
        m_dir.filePath(QStringLiteral("bad-%1.jsonl").arg(QLatin1String(QTest::currentDataTag())).replace(u' ', u'_'));
    test::writeText(path.toStdString(), content.toStdString());
    QString error;
    QVERIFY(!loadReplayFile(path, &error));
    QVERIFY2(error.contains(path) && error.contains(mentions), qPrintable(error));
}

void TestReplayProvider::fingerprintIgnoresTheModel()
{
    QCOMPARE(
        requestFingerprint(ask(u"coder"_qs, u"x"_qs, u"a"_qs)), requestFingerprint(ask(u"coder"_qs, u"x"_qs, u"b"_qs)));
    QVERIFY(requestFingerprint(ask(u"coder"_qs, u"x"_qs)) != requestFingerprint(ask(u"planner"_qs, u"x"_qs)));
    QVERIFY(requestFingerprint(ask(u"coder"_qs, u"x"_qs)) != requestFingerprint(ask(u"coder"_qs, u"y"_qs)));
}

KS_TEST_MAIN_CORE(TestReplayProvider)
#include "tst_replayprovider.moc"
