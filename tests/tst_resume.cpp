#include "enginefixture.h"
#include "testmain.h"
#include "testsupport.h"

#include <QTemporaryDir>

#include <fstream>

using namespace ks;
using test::EngineFixture;
namespace fs = std::filesystem;
using json = nlohmann::json;

// A run killed at any moment resumes with nothing lost but the call in flight: for every prefix
// of a finished run's journal (a crash right after that event), with a torn line after it or not,
// with a stale, a matching or no checkpoint, the resumed run must end exactly where the
// uninterrupted one did, spending exactly the budget.
class TestResume : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void resumeAfterEveryEvent_data();
    void resumeAfterEveryEvent();
    void corruptJournalIsAnError();
    void journalNamingUnknownNodesIsAnError_data();
    void journalNamingUnknownNodesIsAnError();
    void finishedRunResumesWithMoreBudget();
    void repeatedProgramIsNotProgress();
    void stoppedDuringACallResumes_data();
    void stoppedDuringACallResumes();

private:
    QTemporaryDir m_tmp;
    fs::path m_root;
    std::unique_ptr<EngineFixture> m_fixture;
    std::vector<json> m_reference;
};

void TestResume::initTestCase()
{
    qRegisterMetaType<ks::LlmResult>();
    m_root = m_tmp.path().toStdString();
    m_fixture = std::make_unique<EngineFixture>(m_root);
    const auto o = m_fixture->run(m_root / "reference", EngineFixture::settings(5, 1));
    QVERIFY2(o.ok(), qPrintable(o.halted));
    m_reference = o.events;
    QVERIFY(m_reference.size() > 20);
}

void TestResume::resumeAfterEveryEvent_data()
{
    QTest::addColumn<int>("cut"); // events that reached the journal before the crash
    QTest::addColumn<QString>("checkpoint"); // none | stale | matching
    QTest::addColumn<bool>("torn"); // the next event was half written
    const char* checkpoints[] = {"none", "stale", "matching"};
    for (int k = 1; k < static_cast<int>(m_reference.size()); ++k)
        QTest::addRow("after event %d (%s)", k, m_reference[k - 1].value("type", std::string()).c_str())
            << k << QString::fromLatin1(checkpoints[k % 3]) << (k % 2 == 0);
}

void TestResume::resumeAfterEveryEvent()
{
    QFETCH(int, cut);
    QFETCH(QString, checkpoint);
    QFETCH(bool, torn);
    const fs::path dir = m_root / ("cut-" + std::to_string(cut));
    fs::create_directories(dir);
    fs::copy(m_root / "reference", dir, fs::copy_options::recursive);
    {
        std::ofstream journal(dir / "journal.jsonl", std::ios::trunc);
        for (int i = 0; i < cut; ++i)
            journal << m_reference[i].dump() << "\n";
        if (torn)
            journal << m_reference[cut].dump().substr(0, 40);
    }
    if (checkpoint == u"none") {
        fs::remove(dir / "tree.json");
    } else if (checkpoint == u"matching") {
        SearchState state;
        for (int i = 0; i < cut; ++i)
            state.apply(m_reference[i]);
        test::writeText(dir / "tree.json", state.toJson().dump());
    } // stale: the reference run's last checkpoint, ahead of this journal

    const auto o = m_fixture->resume(dir);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QCOMPARE(o.state.evaluations, 5);
    const auto evaluations =
        std::count_if(o.events.begin(), o.events.end(), [](const json& e) { return e["type"] == "evaluation"; });
    QCOMPARE(evaluations, 5);
    for (std::size_t i = 0; i < o.events.size(); ++i)
        QCOMPARE(o.events[i]["seq"].get<std::size_t>(), i + 1);
    const auto expected = test::eventSignature(m_reference), actual = test::eventSignature(o.events);
    for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i)
        QVERIFY2(expected[i] == actual[i],
            ("event " + std::to_string(i) + ": " + actual[i] + ", expected " + expected[i]).c_str());
    QCOMPARE(actual.size(), expected.size());
}

void TestResume::corruptJournalIsAnError()
{
    const fs::path dir = m_root / "corrupt";
    fs::create_directories(dir);
    fs::copy(m_root / "reference", dir, fs::copy_options::recursive);
    fs::remove(dir / "tree.json");
    {
        std::ofstream journal(dir / "journal.jsonl", std::ios::trunc);
        for (std::size_t i = 0; i < m_reference.size(); ++i)
            journal << (i == 3 ? std::string("{not json") : m_reference[i].dump()) << "\n";
    }
    const auto o = m_fixture->resume(dir);
    QVERIFY(!o.ok());
    QVERIFY2(o.halted.contains(u"journal.jsonl:4: not a JSON event"), qPrintable(o.halted));
}

// Lines found by fuzz/fuzz_journal (a journal line of a real run applied to a state that lacks its
// nodes crashed the reducer): a journal whose events name nodes the tree does not have is an error
// naming the event, never a crash. The line is appended after the reference run's last event.
void TestResume::journalNamingUnknownNodesIsAnError_data()
{
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("expected");
    QTest::newRow("edit updates an unknown node")
        << uR"({"type":"tree_edit","author":"world_model","purpose":"update","node":"n1","rules":{},)"
           uR"("edit":{"insert":[],"update":[{"node":"n99","priority":0.2,"rationale":"x"}],"prune":[]}})"_qs
        << u"the edit names node n99"_qs;
    QTest::newRow("edit prunes an unknown node")
        << uR"({"type":"tree_edit","author":"world_model","purpose":"update","node":"n1","rules":{},)"
           uR"("edit":{"insert":[],"update":[],"prune":[{"node":"n98","rationale":"x"}]}})"_qs
        << u"the edit names node n98"_qs;
    QTest::newRow("edit inserts under an unknown node")
        << uR"({"type":"tree_edit","author":"world_model","purpose":"update","node":"n1","rules":{},)"
           uR"("edit":{"insert":[{"parent":"n97","intent":"x","priority":0.5}],"update":[],"prune":[]}})"_qs
        << u"an insert's parent is neither"_qs;
    QTest::newRow("person sets V on an unknown node")
        << uR"({"type":"human","command":{"kind":"set_value","node":"n96","value":0.5,"reason":"x"}})"_qs
        << u"the command names node n96"_qs;
}

void TestResume::journalNamingUnknownNodesIsAnError()
{
    QFETCH(QString, line);
    QFETCH(QString, expected);
    const fs::path dir =
        m_root / ("unknown-node-" + std::to_string(std::hash<std::string> {}(QTest::currentDataTag())));
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy(m_root / "reference", dir, fs::copy_options::recursive);
    fs::remove(dir / "tree.json");
    {
        std::ofstream journal(dir / "journal.jsonl", std::ios::trunc);
        for (std::size_t i = 0; i + 1 < m_reference.size(); ++i) // all but run_finished
            journal << m_reference[i].dump() << "\n";
        nlohmann::json event = nlohmann::json::parse(line.toStdString());
        event["seq"] = m_reference.size();
        event["elapsed_s"] = 1.0;
        journal << event.dump() << "\n";
    }
    const auto o = m_fixture->resume(dir);
    QVERIFY(!o.ok());
    QVERIFY2(o.halted.contains(expected), qPrintable(o.halted));
}

void TestResume::finishedRunResumesWithMoreBudget()
{
    const fs::path dir = m_root / "more-budget";
    fs::create_directories(dir);
    fs::copy(m_root / "reference", dir, fs::copy_options::recursive);
    std::string error;
    auto run = SearchRun::resume(dir, m_fixture->options(), error);
    QVERIFY2(run, error.c_str());
    HumanCommand raise;
    raise.kind = HumanCommand::Kind::SetBudget;
    raise.number = 7;
    raise.reason = "two more";
    run->engine().submit(raise);
    const auto o = m_fixture->drive(*run);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QCOMPARE(o.state.evaluations, 7);
    QCOMPARE(o.state.settings.budget, 7);
}

// The state rebuilt from events: a program evaluated before is never an improvement, even when
// its second timing is three times the first (noise on a loaded machine restarted the K count
// in tst_engine once); a new program that is better is.
void TestResume::repeatedProgramIsNotProgress()
{
    SearchState s;
    int seq = 0;
    auto apply = [&](json e) {
        e["seq"] = ++seq;
        s.apply(e);
    };
    auto evaluation = [&](const std::string& program, double score) {
        apply({{"type", "candidate"}, {"node", "n1"}, {"program", program}, {"author", "code_policy"},
            {"prompt", "action"}});
        apply({{"type", "evaluation"}, {"node", "n1"}, {"program", program}, {"author", "code_policy"},
            {"evaluation", {{"status", "PASSED"}, {"score", score}}}});
    };
    apply({{"type", "run_started"}, {"resumed", false},
        {"settings", {{"strategy", "ksearch"}, {"budget", 10}, {"k", 3}, {"min_improvement", 0.05}}}});
    apply({{"type", "tree_edit"}, {"author", "world_model"}, {"purpose", "init"},
        {"edit", {{"insert", {{{"parent", "root"}, {"intent", "x"}, {"priority", 0.9}, {"rationale", "y"}}}}}}});
    apply({{"type", "action_started"}, {"node", "n1"}, {"reason", "highest V"}});
    evaluation("a", 100.0);
    QCOMPARE(s.actionOn("n1")->stagnation, 0);
    evaluation("a", 300.0); // the same code, timed three times faster
    QCOMPARE(s.actionOn("n1")->stagnation, 1);
    evaluation("b", 100.0); // new, not better
    QCOMPARE(s.actionOn("n1")->stagnation, 2);
    evaluation("c", 400.0); // new and better than the best so far by over 5 %
    QCOMPARE(s.actionOn("n1")->stagnation, 0);
}

void TestResume::stoppedDuringACallResumes_data()
{
    QTest::addColumn<QString>("role");
    QTest::newRow("the world model's first call") << u"planner"_qs;
    QTest::newRow("a code policy call") << u"coder"_qs;
}

// A person stopped the run while a call was out: the call was journaled as cancelled, then the
// stop. Resumed, the run asks that question again and goes on to its budget (it used to replay
// the cancelled answer and wait for ever).
void TestResume::stoppedDuringACallResumes()
{
    QFETCH(QString, role);
    const fs::path dir = m_root / ("stopped-" + role.toStdString());
    fs::create_directories(dir);
    fs::copy(m_root / "reference", dir, fs::copy_options::recursive);
    fs::remove(dir / "tree.json");
    const auto call = std::find_if(m_reference.begin(), m_reference.end(),
        [&](const json& e) { return e["type"] == "exchange" && e["role"] == role.toStdString(); });
    QVERIFY(call != m_reference.end());
    {
        std::ofstream journal(dir / "journal.jsonl", std::ios::trunc);
        for (auto e = m_reference.begin(); e != call; ++e)
            journal << e->dump() << "\n";
        json cancelled = *call;
        cancelled["text"] = "";
        cancelled["error"] = {{"kind", "cancelled"}, {"message", "cancelled"}};
        const int seq = cancelled["seq"].get<int>();
        const json stop {{"type", "human"}, {"seq", seq + 1}, {"round", cancelled["round"]},
            {"command", {{"kind", "stop"}, {"reason", "from the window"}}}, {"description", "stop"}};
        journal << cancelled.dump() << "\n" << stop.dump() << "\n";
    }
    const auto o = m_fixture->resume(dir);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QCOMPARE(o.state.evaluations, 5);
    QVERIFY(o.state.finishedReason.find("budget") != std::string::npos);
}

KS_TEST_MAIN_CORE(TestResume)
#include "tst_resume.moc"
