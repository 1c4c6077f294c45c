// Why a run ended: each kind's sentence is the one earlier builds wrote into their journals, word
// for word, and every recorded sentence, of this build or an earlier one, reads back as its kind.

#include "testmain.h"

#include <search/stopreason.h>

using namespace ks;
using Kind = StopReason::Kind;

class TestStopReason : public QObject
{
    Q_OBJECT
private slots:
    void sentencesAreTheJournals_data();
    void sentencesAreTheJournals();
    void recordedSentencesTellTheirKind_data();
    void recordedSentencesTellTheirKind();
};

void TestStopReason::sentencesAreTheJournals_data()
{
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("made");
    QTest::addColumn<QString>("recorded"); // as builds before the enum wrote it
    const auto row = [](const char* name, const StopReason& r, const char* recorded) {
        QTest::newRow(name) << static_cast<int>(r.kind) << QString::fromStdString(r.text)
                            << QString::fromUtf8(recorded);
    };
    row("target", StopReason::targetReached("150.0"), "target J 150.0 reached");
    row("budget", StopReason::budgetUsed(40), "budget of 40 evaluations used");
    row("no program", StopReason::noProgram(3), "the code policy gave no program in 3 answers in a row");
    row("time", StopReason::timeLimit(600), "time limit of 600 s reached");
    row("dollar cap", StopReason::dollarCap(), "dollar cap reached");
    row("dollar cap, the provider's words", StopReason::dollarCap("$2.00 spent of $2.00"),
        "dollar cap reached: $2.00 spent of $2.00");
    row("a person", StopReason::stoppedByPerson(), "stopped by a person");
    row("a person, with a reason", StopReason::stoppedByPerson("enough"), "stopped by a person: enough");
}

void TestStopReason::sentencesAreTheJournals()
{
    QFETCH(int, kind);
    QFETCH(QString, made);
    QFETCH(QString, recorded);
    QCOMPARE(made, recorded);
    QCOMPARE(stopKindOf(recorded.toStdString()), std::optional(static_cast<Kind>(kind)));
}

void TestStopReason::recordedSentencesTellTheirKind_data()
{
    QTest::addColumn<QString>("sentence");
    QTest::addColumn<int>("kind"); // -1: none
    QTest::newRow("budget of a long run") << "budget of 1200 evaluations used" << static_cast<int>(Kind::BudgetUsed);
    QTest::newRow("target with decimals") << "target J 99.5 reached" << static_cast<int>(Kind::TargetReached);
    QTest::newRow("a person's long reason")
        << "stopped by a person: the GPU is needed for a demo" << static_cast<int>(Kind::StoppedByPerson);
    QTest::newRow("not a build's") << "the moon is full" << -1;
    QTest::newRow("empty (a run that goes on)") << "" << -1;
    QTest::newRow("a kind's words later in the sentence") << "no budget of 3 evaluations used" << -1;
}

void TestStopReason::recordedSentencesTellTheirKind()
{
    QFETCH(QString, sentence);
    QFETCH(int, kind);
    const auto found = stopKindOf(sentence.toStdString());
    QCOMPARE(found.has_value(), kind >= 0);
    if (found)
        QCOMPARE(static_cast<int>(*found), kind);
}

KS_TEST_MAIN_CORE(TestStopReason)
#include "tst_stopreason.moc"
