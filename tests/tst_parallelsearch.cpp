#include "enginefixture.h"
#include "fakellm.h"
#include "sequencedrun.h"
#include "testmain.h"
#include "testsupport.h"

#include <QSignalSpy>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <evaluator.h>
#include <fstream>
#include <map>
#include <set>

using namespace ks;
using test::EngineFixture;
namespace fs = std::filesystem;
using json = nlohmann::json;

// Parallel search (several actions in progress, several evaluators) on the host backend with real
// compiles and runner processes: one lane is the serial search it always was; P lanes spend
// exactly the budget, keep several actions and candidates in flight, are a function of the order
// in which answers and evaluations complete, and resume after a crash at any event.
class TestParallelSearch : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void oneLaneReproducesRecordedJournals_data();
    void oneLaneReproducesRecordedJournals();
    void parallelRunsSpendExactlyTheBudget_data();
    void parallelRunsSpendExactlyTheBudget();
    void orderOfCompletionsDecidesTheRun_data();
    void orderOfCompletionsDecidesTheRun();
    void parallelRunResumesAfterEveryEvent_data();
    void parallelRunResumesAfterEveryEvent();
    void personsProgramsJoinTheQueue();
    void everyEvaluatorGetsTheSearchsSecret();

private:
    struct Sequenced {
        std::vector<json> events;
        QString finished, halted;
        int released = 0;
    };
    Sequenced runSequenced(const fs::path& dir, test::Sequencer::Order order, int evaluators, int lanes);

    QTemporaryDir m_tmp;
    fs::path m_root;
    std::unique_ptr<EngineFixture> m_fixture;
    std::vector<json> m_parallelReference; // a P = 4 run, cut at every event by the resume test
};

namespace {

int countType(const std::vector<json>& events, const std::string& type)
{
    return static_cast<int>(std::count_if(
        events.begin(), events.end(), [&](const json& e) { return e.value("type", std::string()) == type; }));
}

// The signature of a run with the evaluator each evaluation ran on.
std::vector<std::string> signatureWithWorkers(const std::vector<json>& events)
{
    std::vector<std::string> out = test::eventSignature(events);
    std::size_t i = 0;
    for (const json& e : events) {
        if (e.value("type", std::string()) == "run_started")
            continue;
        if (e.value("type", std::string()) == "evaluation")
            out[i] += " on " + e.value("worker", std::string("?"));
        ++i;
    }
    return out;
}

// The most actions in progress at once, and the most programs waiting for or in evaluation.
std::pair<int, int> mostInFlight(const std::vector<json>& events)
{
    std::set<std::string> actions, candidates;
    std::size_t mostActions = 0, mostCandidates = 0;
    for (const json& e : events) {
        const std::string type = e.value("type", std::string()), node = e.value("node", std::string());
        if (type == "action_started")
            actions.insert(node);
        if (type == "action_finished")
            actions.erase(node);
        if (type == "candidate" && e.contains("program"))
            candidates.insert(node);
        if (type == "evaluation")
            candidates.erase(node);
        mostActions = std::max(mostActions, actions.size());
        mostCandidates = std::max(mostCandidates, candidates.size());
    }
    return {static_cast<int>(mostActions), static_cast<int>(mostCandidates)};
}

} // namespace

void TestParallelSearch::initTestCase()
{
    qRegisterMetaType<ks::LlmResult>();
    m_root = m_tmp.path().toStdString();
    m_fixture = std::make_unique<EngineFixture>(m_root);
}

void TestParallelSearch::oneLaneReproducesRecordedJournals_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("budget");
    QTest::addColumn<int>("k");
    QTest::addColumn<QString>("mode");
    QTest::newRow("ksearch") << "ksearch"
                             << "ksearch" << 10 << 2 << "";
    QTest::newRow("ksearch, misbehaving LLM") << "ksearch_misbehaving"
                                              << "ksearch" << 8 << 2 << "malformed_init,invalid_update,nocode_broken";
    QTest::newRow("evolve") << "evolve"
                            << "evolve" << 6 << 1 << "";
    QTest::newRow("greedy") << "greedy"
                            << "greedy" << 5 << 1 << "";
}

void TestParallelSearch::oneLaneReproducesRecordedJournals()
{
    QFETCH(QString, name);
    QFETCH(QString, strategy);
    QFETCH(int, budget);
    QFETCH(int, k);
    QFETCH(QString, mode);
    const auto kind = parseStrategy(strategy.toStdString());
    QVERIFY(kind);
    const auto o =
        m_fixture->run(m_root / name.toStdString(), EngineFixture::settings(budget, k, *kind), mode.toStdString());
    QVERIFY2(o.ok(), qPrintable(o.halted));
    const fs::path file = fs::path(KSEARCH_SOURCE_DIR) / "tests/data/engine" / (name.toStdString() + ".jsonl");
    std::vector<json> recorded;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
        recorded.push_back(json::parse(line));
    QVERIFY2(recorded.size() > 20, file.c_str());
    const auto expected = test::eventSignature(recorded), actual = test::eventSignature(o.events);
    for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i)
        QVERIFY2(expected[i] == actual[i],
            ("event " + std::to_string(i) + ": " + actual[i] + ", recorded " + expected[i]).c_str());
    QCOMPARE(actual.size(), expected.size());
    // The same fields on every line: nothing a serial search did not write before.
    for (std::size_t i = 0; i < recorded.size(); ++i) {
        std::vector<std::string> a, b;
        for (const auto& [key, value] : o.events[i].items())
            a.push_back(key);
        for (const auto& [key, value] : recorded[i].items())
            b.push_back(key);
        QVERIFY2(a == b, ("event " + std::to_string(i + 1) + " has other fields than recorded").c_str());
    }
    // The recorded journal still replays (a session written before parallel search opens).
    SearchState replayed;
    for (const json& e : recorded)
        replayed.apply(e);
    QCOMPARE(replayed.evaluations, budget);
    QCOMPARE(test::eventSignature(recorded), expected);
}

void TestParallelSearch::parallelRunsSpendExactlyTheBudget_data()
{
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("budget");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("evaluators");
    QTest::addColumn<int>("lanes"); // 0: one per evaluator
    QTest::newRow("ksearch, 4 evaluators") << "ksearch" << 10 << 2 << 4 << 0;
    QTest::newRow("ksearch, 2 evaluators, 4 lanes") << "ksearch" << 9 << 1 << 2 << 4;
    QTest::newRow("ksearch, 1 evaluator, 3 lanes") << "ksearch" << 7 << 1 << 1 << 3;
    QTest::newRow("evolve, 3 evaluators") << "evolve" << 8 << 1 << 3 << 0;
    QTest::newRow("greedy, 2 evaluators") << "greedy" << 6 << 1 << 2 << 0;
}

void TestParallelSearch::parallelRunsSpendExactlyTheBudget()
{
    QFETCH(QString, strategy);
    QFETCH(int, budget);
    QFETCH(int, k);
    QFETCH(int, evaluators);
    QFETCH(int, lanes);
    m_fixture->setParallel(evaluators, lanes);
    const auto o = m_fixture->run(m_root / ("parallel-" + std::string(QTest::currentDataTag())),
        EngineFixture::settings(budget, k, *parseStrategy(strategy.toStdString())));
    m_fixture->setParallel(-1);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QVERIFY2(o.finished.contains(u"budget"), qPrintable(o.finished));
    QCOMPARE(o.state.evaluations, budget);
    QCOMPARE(countType(o.events, "evaluation"), budget);
    QVERIFY(o.state.actions.empty() && o.state.candidates.empty());
    const int p = lanes > 0 ? lanes : evaluators;
    const auto [actions, candidates] = mostInFlight(o.events);
    QVERIFY2(actions >= 2 && actions <= p, std::to_string(actions).c_str());
    QVERIFY(candidates <= p);
    // Every evaluation names the local evaluator that ran it; a single evaluator stays unnamed.
    std::set<std::string> workers;
    for (const json& e : o.events)
        if (e["type"] == "evaluation")
            workers.insert(e.value("worker", std::string()));
    for (const std::string& w : workers)
        QVERIFY2(
            evaluators == 1 ? w.empty() : (w.rfind("local", 0) == 0 && std::stoi(w.substr(5)) < evaluators), w.c_str());
    // The run finished only when nothing was in flight: the finish is the last event.
    QCOMPARE(o.events.back().value("type", std::string()), std::string("run_finished"));
    if (strategy == u"evolve") { // concurrent proposals go to different islands
        std::set<int> islands;
        for (const json& e : o.events)
            if (e["type"] == "tree_edit" && e.contains("island"))
                islands.insert(e["island"].get<int>());
        QCOMPARE(islands.size(), std::size_t {3});
    }
}

TestParallelSearch::Sequenced TestParallelSearch::runSequenced(
    const fs::path& dir, test::Sequencer::Order order, int evaluators, int lanes)
{
    Sequenced out;
    const SearchSettings settings = EngineFixture::settings(9, 1);
    const SessionConfig config = m_fixture->config(settings);
    std::string error;
    auto session = Session::create(dir, config, error);
    auto loaded = loadTask(m_fixture->taskDir());
    if (!session || !loaded.task) {
        out.halted = QString::fromStdString(error);
        return out;
    }
    test::Sequencer sequencer(order);
    std::vector<std::unique_ptr<Evaluator>> real;
    std::vector<std::unique_ptr<test::SequencedEvaluator>> held;
    std::vector<EvaluatorSlot> pool;
    for (int i = 0; i < evaluators; ++i) {
        EvaluatorSettings es;
        es.backend = Backend::Host;
        es.workDir = dir / "scratch" / std::to_string(i);
        fs::create_directories(es.workDir);
        es.cacheDir = m_root / "compile-cache";
        es.bench.maxSeconds = 0.03;
        real.push_back(std::make_unique<Evaluator>(*loaded.task, es));
        held.push_back(std::make_unique<test::SequencedEvaluator>(sequencer, *real.back()));
        pool.push_back({"local" + std::to_string(i), held.back().get()});
    }
    test::SequencedProvider planner(sequencer, "planner"), coder(sequencer, "coder");
    UsageLedger ledger;
    EngineSetup setup {&*loaded.task, session.get(), config.planner, config.coder, &planner, &coder, &ledger, pool,
        lanes, {"the host CPU", "g++", false, Language::Cpp}};
    SearchState state;
    state.settings = settings;
    {
        SearchEngine engine(setup, std::move(state));
        sequencer.attach(&engine);
        QSignalSpy finished(&engine, &SearchEngine::finished);
        QSignalSpy halted(&engine, &SearchEngine::halted);
        engine.start(false);
        for (int waited = 0; finished.isEmpty() && halted.isEmpty() && waited < 300; ++waited)
            finished.wait(1000);
        if (!finished.isEmpty())
            out.finished = finished.at(0).at(0).toString();
        if (!halted.isEmpty())
            out.halted = halted.at(0).at(0).toString();
        sequencer.releaseAll(); // a failed run must not leave evaluations waiting forever
    }
    out.released = sequencer.released();
    if (auto events = session->readJournal(error))
        out.events = *events;
    return out;
}

void TestParallelSearch::orderOfCompletionsDecidesTheRun_data()
{
    QTest::addColumn<int>("order");
    QTest::addColumn<int>("evaluators");
    QTest::addColumn<int>("lanes");
    QTest::newRow("oldest first, 3 evaluators") << int(test::Sequencer::Order::Oldest) << 3 << 0;
    QTest::newRow("newest first, 3 evaluators") << int(test::Sequencer::Order::Newest) << 3 << 0;
    QTest::newRow("oldest first, 2 evaluators, 4 lanes") << int(test::Sequencer::Order::Oldest) << 2 << 4;
}

// Given the order in which LLM answers and evaluations complete, a parallel run takes the same
// steps, writes the same programs and gives them to the same evaluators, every time.
void TestParallelSearch::orderOfCompletionsDecidesTheRun()
{
    QFETCH(int, order);
    QFETCH(int, evaluators);
    QFETCH(int, lanes);
    const std::string tag = QTest::currentDataTag();
    const auto a = runSequenced(m_root / ("sequenced-a-" + tag), test::Sequencer::Order(order), evaluators, lanes);
    const auto b = runSequenced(m_root / ("sequenced-b-" + tag), test::Sequencer::Order(order), evaluators, lanes);
    QVERIFY2(!a.finished.isEmpty() && a.halted.isEmpty(), qPrintable(a.halted));
    QVERIFY2(!b.finished.isEmpty() && b.halted.isEmpty(), qPrintable(b.halted));
    QCOMPARE(countType(a.events, "evaluation"), 9);
    const auto [actions, candidates] = mostInFlight(a.events);
    QVERIFY2(actions >= 2, "several actions were in progress at once");
    // Newest first, one lane's chain of answer and evaluation always runs ahead of the others.
    if (test::Sequencer::Order(order) == test::Sequencer::Order::Oldest)
        QVERIFY2(candidates >= 2, "several programs were in evaluation at once");
    const auto sa = signatureWithWorkers(a.events), sb = signatureWithWorkers(b.events);
    for (std::size_t i = 0; i < std::min(sa.size(), sb.size()); ++i)
        QVERIFY2(sa[i] == sb[i], ("event " + std::to_string(i) + ": " + sa[i] + " vs " + sb[i]).c_str());
    QCOMPARE(sa.size(), sb.size());
    QCOMPARE(a.released, b.released);
    // The same programs, in the same order.
    std::vector<std::string> pa, pb;
    for (const json& e : a.events)
        if (e["type"] == "evaluation")
            pa.push_back(e["program"]);
    for (const json& e : b.events)
        if (e["type"] == "evaluation")
            pb.push_back(e["program"]);
    QCOMPARE(pa, pb);
}

void TestParallelSearch::parallelRunResumesAfterEveryEvent_data()
{
    if (m_parallelReference.empty()) {
        m_fixture->setParallel(4);
        const auto o = m_fixture->run(m_root / "parallel-reference", EngineFixture::settings(6, 1));
        m_fixture->setParallel(-1);
        QVERIFY2(o.ok(), qPrintable(o.halted));
        QCOMPARE(o.state.evaluations, 6);
        QVERIFY(mostInFlight(o.events).first >= 2);
        m_parallelReference = o.events;
    }
    QTest::addColumn<int>("cut");
    for (int k = 1; k < static_cast<int>(m_parallelReference.size()); ++k)
        QTest::addRow("after event %d (%s)", k, m_parallelReference[k - 1].value("type", std::string()).c_str()) << k;
}

// Killed after any event (no checkpoint; a stale one is covered by tst_resume), a parallel run
// resumes with every program journaled before the crash evaluated exactly once, nothing
// evaluated twice, and exactly the budget spent.
void TestParallelSearch::parallelRunResumesAfterEveryEvent()
{
    QFETCH(int, cut);
    const fs::path dir = m_root / ("parallel-cut-" + std::to_string(cut));
    fs::create_directories(dir);
    fs::copy(m_root / "parallel-reference", dir, fs::copy_options::recursive);
    fs::remove(dir / "tree.json");
    {
        std::ofstream journal(dir / "journal.jsonl", std::ios::trunc);
        for (int i = 0; i < cut; ++i)
            journal << m_parallelReference[static_cast<std::size_t>(i)].dump() << "\n";
    }
    m_fixture->setParallel(4);
    const auto o = m_fixture->resume(dir);
    m_fixture->setParallel(-1);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QCOMPARE(o.state.evaluations, 6);
    QCOMPARE(countType(o.events, "evaluation"), 6);
    for (std::size_t i = 0; i < o.events.size(); ++i)
        QCOMPARE(o.events[i]["seq"].get<std::size_t>(), i + 1);
    // Each program journaled as a candidate is evaluated once: those pending at the crash after it.
    std::map<std::string, int> written, evaluated;
    for (const json& e : o.events) {
        if (e["type"] == "candidate" && e.contains("program"))
            ++written[e["node"].get<std::string>() + " " + e["program"].get<std::string>()];
        if (e["type"] == "evaluation")
            ++evaluated[e["node"].get<std::string>() + " " + e["program"].get<std::string>()];
    }
    QCOMPARE(evaluated, written);
}

// A person's programs arrive while the code policy's candidates wait or are being evaluated (two
// lanes, two evaluators): each gets a node of its own and one evaluation, nothing waiting is
// lost or evaluated twice, and the budget holds.
void TestParallelSearch::personsProgramsJoinTheQueue()
{
    m_fixture->setParallel(2);
    std::string error;
    auto run = SearchRun::create(
        m_root / "persons-programs", m_fixture->config(EngineFixture::settings(7, 1)), m_fixture->options(), error);
    m_fixture->setParallel(-1);
    QVERIFY2(run, error.c_str());
    SearchEngine& engine = run->engine();
    int submitted = 0;
    QObject::connect(&engine, &SearchEngine::eventRecorded, &engine, [&](const SearchEvent& e) {
        const auto* candidate = std::get_if<ev::Candidate>(&e->body);
        if (!candidate || candidate->author != "code_policy" || submitted >= 2)
            return;
        ++submitted; // right after the code policy's first two candidates are journaled
        HumanCommand c;
        c.kind = HumanCommand::Kind::Evaluate;
        c.node = "root";
        c.text = test::scaleKernel(submitted == 1 ? 1 : 4);
        c.reason = "a person's program " + std::to_string(submitted);
        engine.submit(c);
    });
    const auto o = m_fixture->drive(*run);
    QVERIFY2(o.ok(), qPrintable(o.halted));
    QCOMPARE(submitted, 2);
    QCOMPARE(o.state.evaluations, 7);
    QCOMPARE(countType(o.events, "evaluation"), 7);
    int persons = 0;
    std::map<std::string, int> written, evaluated;
    for (const json& e : o.events) {
        if (e["type"] == "candidate" && e.contains("program"))
            ++written[e["node"].get<std::string>() + " " + e["program"].get<std::string>()];
        if (e["type"] == "evaluation") {
            ++evaluated[e["node"].get<std::string>() + " " + e["program"].get<std::string>()];
            persons += e["author"] == "human" ? 1 : 0;
        }
    }
    QCOMPARE(persons, 2);
    QCOMPARE(evaluated, written);
}

void TestParallelSearch::everyEvaluatorGetsTheSearchsSecret()
{
    // Two local evaluators and two workers whose requests are copied on the way in: each is
    // given a candidate, and all four draw their inputs from one secret, drawn for this search
    // (a worker told 0 would draw its own).
    RunOptions o = m_fixture->options();
    o.localEvaluators = 2;
    o.workerTask = m_fixture->taskDir().string();
    const std::string ksearch = (test::binDir() / "ksearch").string();
    std::vector<fs::path> logs;
    for (int i = 0; i < 2; ++i) {
        logs.push_back(m_root / ("secret-requests-" + std::to_string(i) + ".jsonl"));
        o.workerCommands.push_back("tee " + logs.back().string() + " | " + ksearch + " worker");
    }
    std::string error;
    auto run = SearchRun::create(m_root / "secret", m_fixture->config(EngineFixture::settings(4, 1)), o, error);
    QVERIFY2(run, error.c_str());
    QCOMPARE(run->evaluators().size(), std::size_t {4});
    const fs::path kernel = m_root / "secret-kernel.cpp";
    test::writeText(kernel, test::scaleKernel(1));
    std::set<std::uint64_t> secrets;
    for (const EvaluatorSlot& slot : run->evaluators()) {
        const Evaluation e = slot.evaluator->evaluate(kernel);
        QVERIFY2(e.status == Verdict::Passed, (slot.name + ": " + e.log).c_str());
        if (const auto* local = dynamic_cast<const Evaluator*>(slot.evaluator))
            secrets.insert(local->settings().seed);
    }
    for (const fs::path& log : logs) {
        int requests = 0;
        std::ifstream in(log);
        for (std::string line; std::getline(in, line);) {
            const auto j = nlohmann::json::parse(line);
            if (j.value("type", std::string()) == "evaluate") {
                ++requests;
                secrets.insert(j.at("settings").at("seed").get<std::uint64_t>());
            }
        }
        QCOMPARE(requests, 1);
    }
    QCOMPARE(secrets.size(), std::size_t {1});
    QVERIFY(*secrets.begin() != 0);
}

KS_TEST_MAIN_CORE(TestParallelSearch)
#include "tst_parallelsearch.moc"
