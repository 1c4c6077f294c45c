#include "fakehttpserver.h"
#include "testmain.h"
#include "testsupport.h"

#include <llm/commandprovider.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <memory>

using namespace ks;

// The command provider with small shell scripts standing in for a user's LLM client.
class TestCommandProvider : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { qRegisterMetaType<ks::LlmResult>(); }
    void answerOnStdoutRequestOnStdin();
    void structuredAnswerReportsUsage();
    void streamsAsItPrints();
    void failures_data();
    void failures();
    void timeoutKillsTheWholeGroup();
    void cancelKillsTheCommand();

private:
    QTemporaryDir m_dir;
};

// Running, not a zombie waiting for its parent to reap it.
static bool processAlive(pid_t pid)
{
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly))
        return false;
    const QByteArray line = stat.readAll();
    const qsizetype close = line.lastIndexOf(')');
    return close > 0 && line.size() > close + 2 && line[close + 2] != 'Z';
}

static LlmRequest request()
{
    LlmRequest r;
    r.role = QStringLiteral("coder");
    r.model = QStringLiteral("local-model");
    r.messages = {{u"system"_qs, u"You write CUDA."_qs}, {u"user"_qs, u"Write \"ks_run\".\nThanks."_qs}};
    return r;
}

void TestCommandProvider::answerOnStdoutRequestOnStdin()
{
    const QString input = m_dir.filePath(u"stdin.json"_qs);
    CommandProvider provider(QStringLiteral("cat > '%1'; printf 'extern \"C\" int ks_run();\\n'").arg(input));
    const LlmResult r = test::runCall(provider, request());
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(r.text, u"extern \"C\" int ks_run();\n"_qs);
    QCOMPARE(r.model, u"local-model"_qs);
    const QJsonObject sent =
        QJsonDocument::fromJson(QByteArray::fromStdString(test::readText(input.toStdString()))).object();
    QCOMPARE(sent.value(u"role").toString(), u"coder"_qs);
    QCOMPARE(sent.value(u"model").toString(), u"local-model"_qs);
    const QJsonArray messages = sent.value(u"messages").toArray();
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages.at(1).toObject().value(u"content").toString(), request().messages.at(1).content);
}

void TestCommandProvider::structuredAnswerReportsUsage()
{
    CommandProvider provider(QStringLiteral(
        R"(cat >/dev/null; echo '{"text": "fuse the heads", "model": "wrapped-1", "usage": {"prompt_tokens": 120, "completion_tokens": 30, "reasoning_tokens": 10}}')"));
    QStringList deltas;
    const LlmResult r = test::runCall(provider, request(), &deltas);
    QVERIFY2(!r.error, r.error ? qPrintable(r.error->message) : "");
    QCOMPARE(r.text, u"fuse the heads"_qs);
    QCOMPARE(deltas, QStringList {u"fuse the heads"_qs});
    QCOMPARE(r.model, u"wrapped-1"_qs);
    QCOMPARE(r.usage.promptTokens, 120);
    QCOMPARE(r.usage.completionTokens, 30);
    QCOMPARE(r.usage.reasoningTokens, 10);
}

void TestCommandProvider::streamsAsItPrints()
{
    // The second piece is printed only after the first one was read back through a FIFO, so the
    // pieces arrive as two deltas without relying on timing.
    const QString fifo = m_dir.filePath(u"ack"_qs);
    QVERIFY(test::runProgram(u"/usr/bin/mkfifo"_qs, {fifo}).exitCode == 0);
    CommandProvider provider(
        QStringLiteral("cat >/dev/null; printf 'first '; read x < '%1'; printf 'second'").arg(fifo));
    std::unique_ptr<LlmCall> call(provider.send(request()));
    QSignalSpy finished(call.get(), &LlmCall::finished);
    QSignalSpy deltas(call.get(), &LlmCall::textDelta);
    QVERIFY(deltas.wait(10000));
    QCOMPARE(deltas.at(0).at(0).toString(), u"first "_qs);
    QFile ack(fifo);
    QVERIFY(ack.open(QIODevice::WriteOnly));
    ack.write("go\n");
    ack.close();
    QVERIFY(finished.wait(10000));
    QCOMPARE(finished.at(0).at(0).value<LlmResult>().text, u"first second"_qs);
    QCOMPARE(deltas.size(), 2);
}

void TestCommandProvider::failures_data()
{
    QTest::addColumn<QString>("command");
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("non-zero exit with stderr")
        << u"cat >/dev/null; echo 'model overloaded' >&2; exit 4"_qs << int(LlmErrorKind::CommandFailed)
        << u"exited with 4: model overloaded"_qs;
    QTest::newRow("command not found") << u"no-such-llm-client-xyz"_qs << int(LlmErrorKind::CommandFailed)
                                       << u"command not found"_qs;
    QTest::newRow("empty answer") << u"cat >/dev/null; printf '  \\n'"_qs << int(LlmErrorKind::MalformedResponse)
                                  << u"printed no answer"_qs;
    QTest::newRow("killed by a signal") << u"cat >/dev/null; kill -SEGV $$"_qs << int(LlmErrorKind::CommandFailed)
                                        << u"the command"_qs;
}

void TestCommandProvider::failures()
{
    QFETCH(QString, command);
    QFETCH(int, kind);
    QFETCH(QString, mentions);
    CommandProvider provider(command);
    const LlmResult r = test::runCall(provider, request());
    QVERIFY(r.error);
    QCOMPARE(errorKindName(r.error->kind), errorKindName(LlmErrorKind(kind)));
    QVERIFY2(r.error->message.contains(mentions), qPrintable(r.error->message));
}

void TestCommandProvider::timeoutKillsTheWholeGroup()
{
    const QString pidFile = m_dir.filePath(u"child.pid"_qs);
    CommandProvider provider(QStringLiteral("cat >/dev/null; sleep 300 & echo $! > '%1'; wait").arg(pidFile), 1000);
    const LlmResult r = test::runCall(provider, request());
    QVERIFY(r.error);
    QCOMPARE(r.error->kind, LlmErrorKind::Timeout);
    const pid_t child = QByteArray::fromStdString(test::readText(pidFile.toStdString())).trimmed().toInt();
    QVERIFY(child > 0);
    // The grandchild was in the command's process group and got the SIGKILL too.
    QTRY_VERIFY_WITH_TIMEOUT(!processAlive(child), 5000);
}

void TestCommandProvider::cancelKillsTheCommand()
{
    const QString pidFile = m_dir.filePath(u"cancel.pid"_qs);
    CommandProvider provider(QStringLiteral("echo $$ > '%1'; exec sleep 300").arg(pidFile));
    std::unique_ptr<LlmCall> call(provider.send(request()));
    QSignalSpy finished(call.get(), &LlmCall::finished);
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(pidFile) && QFileInfo(pidFile).size() > 0, 10000);
    call->cancel();
    QVERIFY(finished.count() == 1 || finished.wait(5000));
    QCOMPARE(finished.at(0).at(0).value<LlmResult>().error->kind, LlmErrorKind::Cancelled);
    const pid_t pid = QByteArray::fromStdString(test::readText(pidFile.toStdString())).trimmed().toInt();
    QTRY_VERIFY_WITH_TIMEOUT(!processAlive(pid), 5000);
}

KS_TEST_MAIN_CORE(TestCommandProvider)
#include "tst_commandprovider.moc"
