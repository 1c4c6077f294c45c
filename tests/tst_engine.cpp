#include "enginefixture.h"
#include "fakellm.h"
#include "testmain.h"
#include "testsupport.h"

#include <QSignalSpy>
#include <QTemporaryDir>

#include <set>

using namespace ks;
using test::EngineFixture;
namespace fs = std::filesystem;
using json = nlohmann::json;

// The engine end to end on the host backend: real compiles, real runner processes, the scripted
// LLM behind the command provider.
class TestEngine : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void ksearchFollowsAlgorithm1();
    void runsAreDeterministic();
    void stagnationAndBudget_data();
    void stagnationAndBudget();
    void misbehavingLlm_data();
    void misbehavingLlm();
    void strategiesAndAblations_data();
    void strategiesAndAblations();
    void humanSteering();
    void pauseStepResume();
    void stopConditions_data();
    void stopConditions();
    void harnessFailuresAreNeverScored_data();
    void harnessFailuresAreNeverScored();

private:
    fs::path dir(const std::string& name) const { return m_root / name; }
    QTemporaryDir m_tmp;
    fs::path m_root;
    std::unique_ptr<EngineFixture> m_fixture;
};

static int countType(const std::vector<json>& events, const std::string& type)
{
    return static_cast<int>(std::count_if(
        events.begin(), events.end(), [&](const json& e) { return e.value("type", std::string()) == type; }));
}

void TestEngine::initTestCase()
{
    qRegisterMetaType<ks::LlmResult>();
    m_root = m_tmp.path().toStdString();
    m_fixture = std::make_unique<EngineFixture>(m_root);
}

void TestEngine::ksearchFollowsAlgorithm1()
{
    const auto o = m_fixture->run(dir("algorithm1"), EngineFixture::settings(12, 2));
    QVERIFY2(o.ok(), qPrintable(o.halted));
    const SearchState& s = o.state;
    QCOMPARE(s.evaluations, 12);
    QCOMPARE(countType(o.events, "evaluation"), 12);
    QVERIFY2(o.finished.contains(u"budget"), qPrintable(o.finished));
    // init: three root intents, the plain one (V 0.9) implemented first.
    const SearchNode* n1 = s.tree.find("n1");
    QVERIFY(n1 && n1->intent.find("[[plain]]") != std::string::npos && n1->parent == "root");
    QVERIFY(n1->solved());
    // After a success the solved node got a child: the single-pass refinement, implemented next
    // because its V (0.8) beats the broken intent's (0.6).
    const SearchNode* n4 = s.tree.find("n4");
    QVERIFY(n4 && n4->parent == "n1" && n4->intent.find("[[fast]]") != std::string::npos);
    QVERIFY(n4->solved());
    std::vector<std::string> actions;
    for (const auto& e : o.events)
        if (e["type"] == "action_started")
            actions.push_back(e["node"]);
    QVERIFY(actions.size() >= 3);
    QCOMPARE(actions[0], std::string("n1"));
    QCOMPARE(actions[1], std::string("n4"));
    QCOMPARE(actions[2], std::string("n2")); // V 0.6 beats the tidy refinement's 0.5
    // The broken intent never compiled, and the world model was told it was too hard.
    const SearchNode* n2 = s.tree.find("n2");
    QVERIFY(!n2->solved() && n2->status == NodeStatus::Closed);
    for (int i : n2->attempts)
        QCOMPARE(s.tree.attempt(i)->evaluation.status, Verdict::CompileError);
    QVERIFY(std::any_of(o.events.begin(), o.events.end(),
        [](const json& e) { return e["type"] == "exchange" && e["purpose"] == "too_hard"; }));
    // The world model lowered the slow intent after the first success and pruned it after the second.
    const SearchNode* n3 = s.tree.find("n3");
    QCOMPARE(n3->values.size(), std::size_t {2});
    QCOMPARE(n3->values.back().value, 0.2);
    QCOMPARE(n3->status, NodeStatus::Pruned);
    // The best program makes one pass where the baseline makes eight.
    const Attempt& best = *s.tree.attempt(*s.bestAttempt());
    QVERIFY2(s.tree.find(best.node)->intent.find("[[fast]]") != std::string::npos, best.node.c_str());
    QVERIFY2(best.score() > 400.0, std::to_string(best.score()).c_str());
    // The prompts: action, then improve after a pass, debug while nothing passed.
    QCOMPARE(s.tree.attempt(n1->attempts[0])->promptKind, Purpose::Action);
    QCOMPARE(s.tree.attempt(n1->attempts[1])->promptKind, Purpose::Improve);
    QCOMPARE(s.tree.attempt(n2->attempts[1])->promptKind, Purpose::Debug);
    // Tokens and dollars were counted for both roles.
    QVERIFY(s.usage.at("planner").calls >= 3 && s.usage.at("coder").calls == 12);
    QVERIFY(s.usage.at("coder").dollars > 0.0);
}

void TestEngine::runsAreDeterministic()
{
    const auto a = m_fixture->run(dir("determinism-a"), EngineFixture::settings(9, 2));
    const auto b = m_fixture->run(dir("determinism-b"), EngineFixture::settings(9, 2));
    QVERIFY(a.ok() && b.ok());
    const auto sa = test::eventSignature(a.events), sb = test::eventSignature(b.events);
    for (std::size_t i = 0; i < std::min(sa.size(), sb.size()); ++i)
        QVERIFY2(sa[i] == sb[i], ("event " + std::to_string(i) + ": " + sa[i] + " vs " + sb[i]).c_str());
    QCOMPARE(sa.size(), sb.size());
}

void TestEngine::stagnationAndBudget_data()
{
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("budget");
    QTest::newRow("K=1, B=6") << 1 << 6;
    QTest::newRow("K=2, B=7") << 2 << 7;
    QTest::newRow("K=3, B=9") << 3 << 9;
}

void TestEngine::stagnationAndBudget()
{
    QFETCH(int, k);
    QFETCH(int, budget);
    const auto o = m_fixture->run(dir("stagnation-" + std::to_string(k)), EngineFixture::settings(budget, k));
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QCOMPARE(o.state.evaluations, budget);
    QCOMPARE(countType(o.events, "evaluation"), budget);
    // Every action ends after K attempts without improvement: the scripted coder repeats its
    // program, so a passing intent takes 1 + K attempts and a broken one K; only the last action
    // may be cut short by the budget.
    std::string node;
    int attempts = 0;
    for (const auto& e : o.events) {
        if (e["type"] == "action_started") {
            node = e["node"];
            attempts = 0;
        } else if (e["type"] == "evaluation" && e["node"] == node) {
            ++attempts;
        } else if (e["type"] == "action_finished") {
            const bool passed = e["outcome"] == "passed";
            const bool last = e["seq"].get<int>() >= static_cast<int>(o.events.size()) - 2;
            if (!last || o.state.evaluations < budget)
                QCOMPARE(attempts, passed ? k + 1 : k);
            else
                QVERIFY(attempts <= (passed ? k + 1 : k));
        }
    }
}

void TestEngine::misbehavingLlm_data()
{
    QTest::addColumn<QString>("mode");
    QTest::newRow("malformed init, repaired") << u"malformed_init"_qs;
    QTest::newRow("invalid update, repaired") << u"invalid_update"_qs;
    QTest::newRow("no code block") << u"nocode_broken"_qs;
    QTest::newRow("garbage planner") << u"garbage"_qs;
}

void TestEngine::misbehavingLlm()
{
    QFETCH(QString, mode);
    const auto o =
        m_fixture->run(dir("misbehaving-" + mode.toStdString()), EngineFixture::settings(8, 2), mode.toStdString());
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QCOMPARE(o.state.evaluations, 8); // budget counting stays exact whatever the LLM does
    std::vector<json> rejected;
    for (const auto& e : o.events)
        if (e["type"] == "edit_rejected")
            rejected.push_back(e);
    const auto editAfter = [&](const json& r) {
        for (const auto& e : o.events)
            if (e["seq"] > r["seq"] && e["type"] == "tree_edit" && e["purpose"] == r["purpose"])
                return true;
        return false;
    };
    if (mode == u"malformed_init") {
        QVERIFY(!rejected.empty());
        QVERIFY(rejected[0]["purpose"] == "init");
        QVERIFY(rejected[0]["repair"].get<bool>());
        QVERIFY(rejected[0]["errors"][0].get<std::string>().find("no JSON object") != std::string::npos);
        QVERIFY(editAfter(rejected[0])); // the repair request was answered with a valid edit
        QVERIFY(o.state.tree.find("n1"));
    } else if (mode == u"invalid_update") {
        QVERIFY(!rejected.empty());
        QVERIFY(rejected[0]["purpose"] == "update");
        const std::string errors = rejected[0]["errors"].dump();
        QVERIFY2(errors.find("outside [0, 1]") != std::string::npos, errors.c_str());
        QVERIFY2(errors.find("insert at least one child") != std::string::npos, errors.c_str());
        QVERIFY(editAfter(rejected[0]));
    } else if (mode == u"nocode_broken") {
        const auto noCode = std::count_if(o.events.begin(), o.events.end(),
            [](const json& e) { return e["type"] == "candidate" && e.contains("problem"); });
        QCOMPARE(noCode, 1);
        QCOMPARE(o.state.tree.attempts().size(), std::size_t {9}); // 8 evaluated, 1 without a program
    } else { // garbage: every planner answer refused twice, the engine goes on with its own intents
        QVERIFY(rejected.size() >= 4);
        QVERIFY(std::any_of(o.events.begin(), o.events.end(),
            [](const json& e) { return e["type"] == "tree_edit" && e["author"] == "system"; }));
        QVERIFY(o.state.bestAttempt());
    }
}

void TestEngine::strategiesAndAblations_data()
{
    QTest::addColumn<int>("strategy");
    QTest::addColumn<int>("k");
    QTest::addColumn<bool>("frozen");
    QTest::addColumn<bool>("flat");
    QTest::newRow("ksearch K=1") << int(StrategyKind::KSearch) << 1 << false << false;
    QTest::newRow("ksearch frozen V") << int(StrategyKind::KSearch) << 2 << true << false;
    QTest::newRow("ksearch flat frontier") << int(StrategyKind::KSearch) << 2 << false << true;
    QTest::newRow("evolve") << int(StrategyKind::Evolve) << 7 << false << false;
    QTest::newRow("greedy") << int(StrategyKind::Greedy) << 7 << false << false;
}

void TestEngine::strategiesAndAblations()
{
    QFETCH(int, strategy);
    QFETCH(int, k);
    QFETCH(bool, frozen);
    QFETCH(bool, flat);
    SearchSettings settings = EngineFixture::settings(7, k, StrategyKind(strategy));
    settings.frozenValues = frozen;
    settings.flat = flat;
    settings.islands = 2;
    const auto o = m_fixture->run(dir(std::string("strategy-") + QTest::currentDataTag()), settings);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    const SearchState& s = o.state;
    QCOMPARE(s.evaluations, 7);
    QCOMPARE(countType(o.events, "evaluation"), 7);
    QVERIFY(s.bestAttempt());
    if (frozen) // priorities stay what they were at insertion
        for (const auto& n : s.tree.nodes())
            QVERIFY2(n.values.size() == 1, n.id.c_str());
    if (flat)
        for (const auto& n : s.tree.nodes())
            QVERIFY2(n.id == "root" || n.parent == "root", n.id.c_str());
    if (strategy != int(StrategyKind::KSearch)) {
        QCOMPARE(s.usage.count("planner"), std::size_t {0}); // no world model
        QCOMPARE(s.usage.at("coder").calls, 7); // one LLM call per evaluation
        for (const auto& n : s.tree.nodes())
            QVERIFY(n.id == "root" || n.attempts.size() == 1);
        // Each program halves the passes of its parent until one pass: J climbs, then stays.
        QVERIFY2(s.bestScore() > 400.0, std::to_string(s.bestScore()).c_str());
    }
    if (strategy == int(StrategyKind::Evolve)) {
        QVERIFY(!s.islandOf.empty());
        std::set<int> islands;
        for (const auto& [node, island] : s.islandOf)
            islands.insert(island);
        QCOMPARE(islands.size(), std::size_t {2});
    }
    if (strategy == int(StrategyKind::Greedy)) { // each new node hangs under the best program so far
        std::string bestNode = "root";
        double best = 0.0;
        for (const auto& e : o.events) {
            if (e["type"] == "evaluation" && e["evaluation"]["status"] == "PASSED"
                && e["evaluation"]["score"].get<double>() > best) {
                best = e["evaluation"]["score"].get<double>();
                bestNode = e["node"];
            } else if (e["type"] == "tree_edit") {
                QCOMPARE(e["edit"]["insert"][0]["parent"].get<std::string>(), bestNode);
            }
        }
    }
}

void TestEngine::humanSteering()
{
    std::string error;
    auto run = SearchRun::create(
        dir("steering"), m_fixture->config(EngineFixture::settings(6, 2)), m_fixture->options(), error);
    QVERIFY2(run, error.c_str());
    SearchEngine& engine = run->engine();
    QStringList rejected;
    QObject::connect(&engine, &SearchEngine::commandRejected, &engine,
        [&](const QString& c, const QString& why) { rejected << c + u": " + why; });
    const auto command = [](HumanCommand::Kind kind, const std::string& node, double value = 0, std::string text = {},
                             int number = 0) {
        HumanCommand c;
        c.kind = kind;
        c.node = node;
        c.value = value;
        c.text = std::move(text);
        c.number = number;
        c.reason = "test";
        return c;
    };
    bool steered = false;
    QObject::connect(&engine, &SearchEngine::eventRecorded, &engine, [&](const SearchEvent& e) {
        const auto* edited = std::get_if<ev::TreeEdit>(&e->body);
        if (steered || !edited || edited->purpose != Purpose::Init)
            return;
        steered = true; // right after the world model's first edit
        using K = HumanCommand::Kind;
        engine.submit(command(K::SetValue, "n3", 0.95)); // the slow intent goes first
        engine.submit(command(K::Inject, "root", 0.1, "[[fast]] a person's idea"));
        engine.submit(command(K::EditIntent, "n2", 0, "[[plain]] rewritten by a person"));
        engine.submit(command(K::Prune, "n2"));
        engine.submit(command(K::Restore, "n2"));
        engine.submit(command(K::SetValue, "n1", 1.5)); // refused: V outside [0, 1]
        engine.submit(command(K::Pin, "n9")); // refused: no such node
        engine.submit(command(K::SetK, "", 0, {}, 1));
        engine.submit(command(K::SetBudget, "", 0, {}, 7));
        engine.submit(command(K::Evaluate, "root", 0, test::scaleKernel(1)));
    });
    const auto o = m_fixture->drive(*run);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QVERIFY(steered);
    const SearchState& s = o.state;
    QCOMPARE(rejected.size(), 2);
    QVERIFY2(rejected[0].contains(u"outside") || rejected[0].contains(u"[0, 1]"), qPrintable(rejected[0]));
    QCOMPARE(s.settings.budget, 7);
    QCOMPARE(s.settings.stagnation, 1);
    QCOMPARE(s.evaluations, 7);
    // The person's V decided the first action.
    std::vector<std::string> actions;
    for (const auto& e : o.events)
        if (e["type"] == "action_started")
            actions.push_back(e["node"]);
    QCOMPARE(actions.front(), std::string("n3"));
    QCOMPARE(s.tree.find("n3")->values.back().author, Author::Human);
    // Injected, rewritten, pruned and restored.
    const SearchNode* injected = s.tree.find("n4");
    QVERIFY(injected && injected->createdBy == Author::Human && injected->parent == "root");
    QCOMPARE(s.tree.find("n2")->intent, std::string("[[plain]] rewritten by a person"));
    QVERIFY(s.tree.find("n2")->status != NodeStatus::Pruned);
    // The hand-written program got a node of its own, evaluated with the person as its author.
    const SearchNode* hand = s.tree.find("n5");
    QVERIFY(hand && hand->intent.rfind("Hand-written program", 0) == 0 && hand->solved());
    QCOMPARE(s.tree.attempt(hand->attempts[0])->author, Author::Human);
    QCOMPARE(countType(o.events, "human"), 8); // the two refused commands are not recorded
}

void TestEngine::pauseStepResume()
{
    std::string error;
    auto run =
        SearchRun::create(dir("pause"), m_fixture->config(EngineFixture::settings(4, 1)), m_fixture->options(), error);
    QVERIFY2(run, error.c_str());
    SearchEngine& engine = run->engine();
    int events = 0;
    bool pausedOnce = false;
    QObject::connect(&engine, &SearchEngine::eventRecorded, &engine, [&](const SearchEvent& e) {
        ++events;
        if (!pausedOnce && std::holds_alternative<ev::ActionStarted>(e->body)) {
            pausedOnce = true;
            HumanCommand pause;
            pause.kind = HumanCommand::Kind::Pause;
            engine.submit(pause);
        }
    });
    QSignalSpy finished(&engine, &SearchEngine::finished);
    run->start(false);
    QTRY_VERIFY_WITH_TIMEOUT(engine.state().paused, 60000);
    // Paused: however often the event loop turns, nothing happens.
    const int atPause = events;
    for (int i = 0; i < 50; ++i)
        QCoreApplication::processEvents();
    QCOMPARE(events, atPause);
    QCOMPARE(engine.state().evaluations, 0);
    // One step: the coder's answer (an exchange and a candidate), then paused again.
    HumanCommand step;
    step.kind = HumanCommand::Kind::Step;
    engine.submit(step);
    QTRY_VERIFY_WITH_TIMEOUT(engine.state().paused && events > atPause + 1, 60000);
    const auto journal = run->session().readJournal(error);
    QVERIFY(journal);
    QVERIFY(journal->back()["type"] == "paused");
    QCOMPARE((*journal)[journal->size() - 2]["type"].get<std::string>(), std::string("candidate"));
    HumanCommand resume;
    resume.kind = HumanCommand::Kind::Resume;
    engine.submit(resume);
    QVERIFY(finished.wait(120000));
    QCOMPARE(engine.state().evaluations, 4);
}

void TestEngine::stopConditions_data()
{
    QTest::addColumn<QString>("condition");
    QTest::addColumn<QString>("reason");
    QTest::newRow("target J") << u"target"_qs << u"target J 300.0 reached"_qs;
    QTest::newRow("wall time") << u"time"_qs << u"time limit of 1 s reached"_qs;
    QTest::newRow("dollars") << u"dollars"_qs << u"dollar cap"_qs;
    QTest::newRow("a person") << u"stop"_qs << u"stopped by a person: enough"_qs;
}

void TestEngine::stopConditions()
{
    QFETCH(QString, condition);
    QFETCH(QString, reason);
    SearchSettings settings = EngineFixture::settings(30, 2);
    if (condition == u"target")
        settings.targetScore = 300.0; // the plain loop (J ~ 200) does not reach it, the single pass does
    else if (condition == u"time")
        settings.maxSeconds = 1.0;
    else if (condition == u"dollars")
        settings.maxDollars = 0.02; // a few calls at the gpt-5.2 price
    std::string error;
    auto run = SearchRun::create(
        dir("stop-" + condition.toStdString()), m_fixture->config(settings), m_fixture->options(), error);
    QVERIFY2(run, error.c_str());
    if (condition == u"stop")
        QObject::connect(&run->engine(), &SearchEngine::eventRecorded, &run->engine(), [&](const SearchEvent& e) {
            if (std::holds_alternative<ev::Evaluation>(e->body) && run->engine().state().evaluations == 2) {
                HumanCommand stop;
                stop.kind = HumanCommand::Kind::Stop;
                stop.reason = "enough";
                run->engine().submit(stop);
            }
        });
    const auto o = m_fixture->drive(*run);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QVERIFY2(o.finished.contains(reason), qPrintable(o.finished));
    QVERIFY(o.state.evaluations < 30);
    if (condition == u"target")
        QVERIFY(o.state.bestScore() >= 300.0);
    if (condition == u"dollars") {
        double spent = 0.0;
        for (const auto& [role, u] : o.state.usage)
            spent += u.dollars;
        QVERIFY(spent >= 0.02 && spent < 0.03); // at most the calls in flight past the cap
    }
    if (condition == u"stop")
        QCOMPARE(o.state.evaluations, 2);
}

// The evaluator fails before running a candidate (its runner finds no device): the search never
// records or scores that, evaluates the candidate once more, and pauses with the reason when that
// fails too. Nothing of the budget is spent; resumed once the device is back, the run ends with
// exactly B evaluations.
void TestEngine::harnessFailuresAreNeverScored_data()
{
    QTest::addColumn<bool>("once"); // the device comes back after the first failure
    QTest::newRow("device back for the second try") << true;
    QTest::newRow("device gone for both tries") << false;
}

void TestEngine::harnessFailuresAreNeverScored()
{
    QFETCH(bool, once);
    const fs::path d = dir(once ? "harness-once" : "harness-always");
    const fs::path flag = m_root / (once ? "gone-once" : "gone-always");
    test::writeText(flag, "");
    const fs::path runner = test::writeRunnerWithoutDevice(m_root / (once ? "once.sh" : "always.sh"), flag, once);
    qputenv("KSEARCH_RUNNER", QByteArray::fromStdString(runner.string()));
    const int budget = 3;
    auto o = m_fixture->run(d, EngineFixture::settings(budget, 2));
    auto evaluations = [](const EngineFixture::Outcome& r) {
        return std::count_if(r.events.begin(), r.events.end(),
            [](const json& e) { return e.value("type", std::string()) == "evaluation"; });
    };
    for (const auto& e : o.events)
        if (e.value("type", std::string()) == "evaluation")
            QVERIFY2(e["evaluation"].value("status", std::string()) != "HARNESS_ERROR", e.dump().c_str());
    if (once) {
        qunsetenv("KSEARCH_RUNNER");
        QVERIFY2(o.ok(), qPrintable(o.halted));
        QVERIFY(!fs::exists(flag)); // the first try did fail
        QCOMPARE(o.state.evaluations, budget);
        QCOMPARE(evaluations(o), budget);
        return;
    }
    QVERIFY2(o.halted.contains(u"failed twice") && o.halted.contains(u"before running it")
            && o.halted.contains(u"no CUDA-capable device"),
        qPrintable(o.halted));
    QCOMPARE(o.state.evaluations, 0);
    QCOMPARE(evaluations(o), 0);
    fs::remove(flag);
    const auto resumed = m_fixture->resume(d);
    qunsetenv("KSEARCH_RUNNER");
    QVERIFY2(resumed.ok(), qPrintable(resumed.halted));
    QCOMPARE(resumed.state.evaluations, budget);
    QCOMPARE(evaluations(resumed), budget);
}

KS_TEST_MAIN_CORE(TestEngine)
#include "tst_engine.moc"
