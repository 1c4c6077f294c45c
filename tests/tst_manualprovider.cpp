#include "testmain.h"

#include <llm/manualprovider.h>

#include <QSignalSpy>
#include <QThread>

#include <memory>

using namespace ks;

// The manual provider: a person (here, the test, also from another thread) answers.
class TestManualProvider : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { qRegisterMetaType<ks::LlmResult>(); }
    void answeredFromAnotherThread();
    void emptyAnswerAndCancel();
};

static LlmRequest request()
{
    LlmRequest r;
    r.role = QStringLiteral("planner");
    r.messages = {{u"user"_qs, u"Which intent first?"_qs}};
    return r;
}

void TestManualProvider::answeredFromAnotherThread()
{
    ManualProvider provider;
    QSignalSpy asked(&provider, &ManualProvider::questionAsked);
    std::unique_ptr<LlmCall> call(provider.send(request()));
    QSignalSpy finished(call.get(), &LlmCall::finished);
    QVERIFY(asked.wait(5000));
    auto* question = asked.at(0).at(0).value<ManualCall*>();
    QCOMPARE(question, call.get());
    QCOMPARE(question->request().messages.at(0).content, u"Which intent first?"_qs);
    std::unique_ptr<QThread> person(QThread::create([question] { question->answer(u"Fuse the heads."_qs); }));
    person->start();
    QVERIFY(finished.wait(5000));
    person->wait();
    const LlmResult r = finished.at(0).at(0).value<LlmResult>();
    QVERIFY(!r.error);
    QCOMPARE(r.text, u"Fuse the heads."_qs);
    question->answer(u"a second answer is ignored"_qs);
    QTest::qWait(0);
    QCOMPARE(finished.size(), 1);
}

void TestManualProvider::emptyAnswerAndCancel()
{
    ManualProvider provider;
    std::unique_ptr<LlmCall> empty(provider.send(request()));
    QSignalSpy emptyDone(empty.get(), &LlmCall::finished);
    static_cast<ManualCall*>(empty.get())->answer(u"   "_qs);
    QVERIFY(emptyDone.wait(5000));
    QCOMPARE(emptyDone.at(0).at(0).value<LlmResult>().error->kind, LlmErrorKind::MalformedResponse);

    std::unique_ptr<LlmCall> cancelled(provider.send(request()));
    QSignalSpy cancelDone(cancelled.get(), &LlmCall::finished);
    cancelled->cancel();
    QVERIFY(cancelDone.wait(5000));
    QCOMPARE(cancelDone.at(0).at(0).value<LlmResult>().error->kind, LlmErrorKind::Cancelled);
}

KS_TEST_MAIN_CORE(TestManualProvider)
#include "tst_manualprovider.moc"
