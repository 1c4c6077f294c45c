#include "enginefixture.h"
#include "testmain.h"
#include "testsupport.h"

#include <search/journalevent.h>

#include <QTemporaryDir>

#include <fstream>
#include <set>

using namespace ks;
using test::EngineFixture;
namespace fs = std::filesystem;
using json = nlohmann::json;

// The typed journal vocabulary converts every line exactly: journals of real searches (each
// strategy, a rejected plan, answers without a program) come back field for field, fields a
// newer version wrote survive, and a line that is not an event is refused with the field named.
class TestJournalEvent : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void roundTripsRealJournals_data();
    void roundTripsRealJournals();
    void everyTypeWasSeen();
    void readsAJournalOfAnEarlierBuild();
    void keepsFieldsItDoesNotKnow();
    void typedFieldsAreRead();
    void refusesWhatIsNotAnEvent_data();
    void refusesWhatIsNotAnEvent();

private:
    QTemporaryDir m_tmp;
    std::unique_ptr<EngineFixture> m_fixture;
    std::set<std::string> m_seen;
};

void TestJournalEvent::initTestCase()
{
    qRegisterMetaType<ks::LlmResult>();
    m_fixture = std::make_unique<EngineFixture>(fs::path(m_tmp.path().toStdString()));
}

void TestJournalEvent::roundTripsRealJournals_data()
{
    QTest::addColumn<int>("strategy");
    QTest::addColumn<QString>("mode"); // the scripted LLM's misbehaviour
    QTest::newRow("ksearch") << static_cast<int>(StrategyKind::KSearch) << "";
    QTest::newRow("ksearch, malformed first plan") << static_cast<int>(StrategyKind::KSearch) << "malformed_init";
    QTest::newRow("ksearch, an answer without code") << static_cast<int>(StrategyKind::KSearch) << "nocode_broken";
    QTest::newRow("evolve (islands)") << static_cast<int>(StrategyKind::Evolve) << "";
    QTest::newRow("greedy") << static_cast<int>(StrategyKind::Greedy) << "";
}

void TestJournalEvent::roundTripsRealJournals()
{
    QFETCH(int, strategy);
    QFETCH(QString, mode);
    static int run = 0;
    const auto o = m_fixture->run(fs::path(m_tmp.path().toStdString()) / ("run" + std::to_string(++run)),
        EngineFixture::settings(5, 1, static_cast<StrategyKind>(strategy)), mode.toStdString());
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QVERIFY(o.events.size() > 10);
    for (const json& line : o.events) {
        std::string error;
        const auto e = journalEventFromJson(line, error);
        QVERIFY2(e, (error + ": " + line.dump()).c_str());
        QCOMPARE(eventTypeName(e->body), line.at("type").get<std::string>());
        QVERIFY2(e->extra.empty(), line.dump().c_str()); // the engine writes only fields this version models
        QVERIFY2(toJson(*e) == line, line.dump().c_str());
        m_seen.insert(std::string(eventTypeName(e->body)));
    }
}

void TestJournalEvent::everyTypeWasSeen()
{
    // human, paused and note come from people and tools, not from these runs: the next test.
    for (const char* type : {"run_started", "exchange", "tree_edit", "edit_rejected", "action_started", "candidate",
             "evaluation", "action_finished", "run_finished"})
        QVERIFY2(m_seen.count(type), type);
}

// tests/data/journal-before-typed-events.jsonl was written by the build before this vocabulary
// (bfdc20c: events built as JSON in the engine): a host search of rmsnorm from its baseline as
// the seed, the scripted LLM, budget 3. It must read, convert back unchanged and replay.
void TestJournalEvent::readsAJournalOfAnEarlierBuild()
{
    std::ifstream in(test::sourceDir() / "tests" / "data" / "journal-before-typed-events.jsonl");
    QVERIFY(in);
    SearchState state;
    int lines = 0;
    for (std::string text; std::getline(in, text); ++lines) {
        const json line = json::parse(text);
        std::string error;
        const auto e = journalEventFromJson(line, error);
        QVERIFY2(e, error.c_str());
        QVERIFY2(e->extra.empty(), text.c_str());
        QVERIFY2(toJson(*e) == line, text.c_str());
        state.apply(*e);
    }
    QCOMPARE(lines, 18);
    QCOMPARE(state.evaluations, 3);
    QVERIFY(!state.finishedReason.empty());
    QVERIFY(state.bestAttempt()); // the seed passed
    QCOMPARE(state.exchangeCount, 4); // init, action, too_hard, action
}

void TestJournalEvent::keepsFieldsItDoesNotKnow()
{
    const json lines[] = {
        json::parse(R"({"type": "human", "seq": 7, "t": "2026-12-03T10:00:00.000Z", "elapsed_s": 1.5, "round": 2,
            "command": {"kind": "pause"}, "description": "pause the search"})"),
        json::parse(R"({"type": "paused", "seq": 8, "reason": "one step done"})"),
        json::parse(R"({"type": "note", "seq": 9, "text": "written by a tool"})"),
        json::parse(R"({"type": "action_started", "seq": 10, "node": "n3", "reason": "best V",
            "worker": {"host": "gpu-7", "gpu": 2}})"),
        json::parse(R"({"type": "exchange", "id": "x3", "role": "coder", "purpose": "action", "node": "n2",
            "messages": [], "text": "", "model": "m", "usage": {"prompt": 1, "completion": 2, "reasoning": 0,
            "cached": 5}, "cost": 0.0, "priced": false, "latency_s": 0.25})"),
    };
    for (const json& line : lines) {
        std::string error;
        const auto e = journalEventFromJson(line, error);
        QVERIFY2(e, error.c_str());
        QVERIFY2(toJson(*e) == line, toJson(*e).dump().c_str());
    }
    std::string error;
    const auto started = journalEventFromJson(lines[3], error);
    QCOMPARE(started->extra.at("worker").at("host").get<std::string>(), std::string("gpu-7"));
    const auto call = journalEventFromJson(lines[4], error); // a usage field of a newer version
    QCOMPARE(std::get<ev::Exchange>(call->body).completionTokens, std::int64_t {2});
}

void TestJournalEvent::typedFieldsAreRead()
{
    std::string error;
    const auto e = journalEventFromJson(json::parse(R"({"type": "candidate", "seq": 12, "node": "n4",
        "exchange": "x9", "prompt": "debug", "author": "code_policy", "problem": "no fenced code block"})"),
        error);
    QVERIFY2(e, error.c_str());
    QCOMPARE(e->seq.value_or(0), 12);
    const auto& c = std::get<ev::Candidate>(e->body);
    QCOMPARE(c.node, std::string("n4"));
    QCOMPARE(c.exchange.value_or(""), std::string("x9"));
    QVERIFY(!c.program);
    QCOMPARE(c.problem.value_or(""), std::string("no fenced code block"));
    QCOMPARE(c.prompt, Purpose::Debug);
    const auto f = journalEventFromJson(
        json::parse(R"({"type": "tree_edit", "author": "system", "purpose": "propose", "edit": {}, "rules": {},
            "inserted": ["n5"], "island": 2})"),
        error);
    QVERIFY2(f, error.c_str());
    QCOMPARE(std::get<ev::TreeEdit>(f->body).island.value_or(-1), 2);
    QCOMPARE(std::get<ev::TreeEdit>(f->body).purpose, Purpose::Propose);
    // Every purpose reads back as itself by its journal name; "" is none where a purpose may be missing.
    for (const Purpose p : {Purpose::Init, Purpose::Update, Purpose::TooHard, Purpose::Fill, Purpose::Action,
             Purpose::Debug, Purpose::Improve, Purpose::Evolve, Purpose::Greedy, Purpose::Human, Purpose::Seed,
             Purpose::Propose, Purpose::Fallback}) {
        const json line {{"type", "action_finished"}, {"node", "n1"}, {"best_attempt", nullptr}, {"outcome", "passed"},
            {"next_planner", purposeName(p)}};
        const auto g = journalEventFromJson(line, error);
        QVERIFY2(g, error.c_str());
        QVERIFY(std::get<ev::ActionFinished>(g->body).nextPlanner == std::optional(p));
        QVERIFY2(toJson(*g) == line, toJson(*g).dump().c_str());
    }
    const json none {
        {"type", "action_finished"}, {"node", "n1"}, {"best_attempt", 0}, {"outcome", "passed"}, {"next_planner", ""}};
    const auto h = journalEventFromJson(none, error);
    QVERIFY2(h, error.c_str());
    QVERIFY(!std::get<ev::ActionFinished>(h->body).nextPlanner);
    QVERIFY2(toJson(*h) == none, toJson(*h).dump().c_str());
    QVERIFY(!std::get<ev::TreeEdit>(f->body).exchange);
}

void TestJournalEvent::refusesWhatIsNotAnEvent_data()
{
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("not an object") << "[1, 2]"
                                   << "must be a JSON object";
    QTest::newRow("no type") << R"({"seq": 1})"
                             << "field 'type' is missing";
    QTest::newRow("unknown type") << R"({"type": "teleport"})"
                                  << "unknown event type 'teleport'";
    QTest::newRow("seq of the wrong type") << R"({"type": "paused", "seq": "7"})"
                                           << "paused: field 'seq' has the wrong type";
    QTest::newRow("inserted not strings") << R"({"type": "tree_edit", "purpose": "init", "inserted": [1]})"
                                          << "tree_edit: field 'inserted' must be a list of strings";
    QTest::newRow("resumed not a bool") << R"({"type": "run_started", "resumed": 1})"
                                        << "run_started: field 'resumed' has the wrong type";
    QTest::newRow("unknown purpose") << R"({"type": "exchange", "role": "planner", "purpose": "daydream"})"
                                     << "exchange: field 'purpose' names no known purpose";
    QTest::newRow("unknown prompt") << R"({"type": "candidate", "node": "n1", "prompt": "hope"})"
                                    << "candidate: field 'prompt' names no known purpose";
    QTest::newRow("purpose missing") << R"({"type": "edit_rejected", "node": "n1"})"
                                     << "edit_rejected: field 'purpose' is missing";
    QTest::newRow("purpose not a string") << R"({"type": "tree_edit", "purpose": 3})"
                                          << "tree_edit: field 'purpose' has the wrong type";
}

void TestJournalEvent::refusesWhatIsNotAnEvent()
{
    QFETCH(QString, line);
    QFETCH(QString, fragment);
    std::string error;
    QVERIFY(!journalEventFromJson(json::parse(line.toStdString()), error));
    QVERIFY2(QString::fromStdString(error).contains(fragment), error.c_str());
}

KS_TEST_MAIN_CORE(TestJournalEvent)
#include "tst_journalevent.moc"
