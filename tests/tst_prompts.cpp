#include "testmain.h"
#include "testsupport.h"

#include <search/promptbuilder.h>
#include <search/prompttemplate.h>
#include <search/taskbrief.h>
#include <task/task.h>

using namespace ks;
using json = nlohmann::json;

// Every prompt of the search, built from a state made of events, carries what its reader needs.
class TestPrompts : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase();
    void templatesCatchMismatches();
    void planner_data();
    void planner();
    void repairIsASecondTurn();
    void coder_data();
    void coder();
    void coderDuringAnAction();
    void debugShowsTheSanitizersFindings();
    void heldOutWorkloadsAreNeverShown();
    void evolveShowsParentAndInspirations();

private:
    std::optional<Task> m_task;
    SearchState m_state; // n1 solved (attempts 0, 1), n2 failed (attempt 2), n3 open under n1, n4 open under root
};

static json evaluation(const std::string& node, const std::string& program, Verdict v, double score,
    std::optional<SanitizerReport> sanitizer = std::nullopt)
{
    Evaluation e;
    e.sanitizer = std::move(sanitizer);
    e.status = v;
    e.score = score;
    e.latencyMicros = 10.0;
    e.baselineLatencyMicros = 20.0;
    e.log = v == Verdict::CompileError ? "error: identifier \"oops\" is undefined" : "";
    WorkloadEvaluation w;
    w.id = "e316a464-ff7c-587e-a608-9c6bd5b1d263";
    w.status = v;
    w.latencyMicros = 10.0;
    w.baselineLatencyMicros = 20.0;
    w.speedup = 2.0;
    e.workloads.push_back(w);
    return {{"type", "evaluation"}, {"node", node}, {"program", program}, {"prompt", "action"},
        {"author", "code_policy"}, {"evaluation", toJson(e)}};
}

void TestPrompts::initTestCase()
{
    auto loaded = loadTask(test::tasksDir() / "rmsnorm");
    QVERIFY(loaded.task);
    m_task = std::move(loaded.task);
    const json edit = {{"insert",
        {{{"parent", "root"}, {"intent", "one block per row, vectorised bf16x8 loads"}, {"priority", 0.9}},
            {{"parent", "root"}, {"intent", "warp-per-row with shuffles"}, {"priority", 0.5}}}}};
    for (const json& e : std::vector<json> {{{"type", "run_started"}},
             {{"type", "tree_edit"}, {"author", "world_model"}, {"purpose", "init"}, {"edit", edit}},
             {{"type", "action_started"}, {"node", "n1"}}, evaluation("n1", "p1", Verdict::Passed, 150.0),
             evaluation("n1", "p2", Verdict::Passed, 140.0),
             {{"type", "action_finished"}, {"node", "n1"}, {"best_attempt", 0}, {"next_planner", ""}},
             {{"type", "tree_edit"}, {"author", "world_model"}, {"purpose", "update"},
                 {"edit",
                     {{"insert", {{{"parent", "n1"}, {"intent", "keep the row in registers"}, {"priority", 0.7}}}}}}},
             {{"type", "action_started"}, {"node", "n2"}}, evaluation("n2", "p3", Verdict::CompileError, 0.0),
             {{"type", "action_finished"}, {"node", "n2"}, {"best_attempt", nullptr}, {"next_planner", ""}},
             {{"type", "tree_edit"}, {"author", "world_model"}, {"purpose", "fill"},
                 {"edit", {{"insert", {{{"parent", "root"}, {"intent", "a persistent kernel"}, {"priority", 0.2}}}}}}}})
        m_state.apply(e);
    QCOMPARE(m_state.tree.nodeCount(), 5);
}

void TestPrompts::templatesCatchMismatches()
{
    QVERIFY_THROWS_EXCEPTION(std::logic_error, renderPrompt("planner_repair", {}));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, renderPrompt("planner_repair", {{"errors", "x"}, {"extra", "y"}}));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, renderPrompt("no_such_template", {}));
    QVERIFY(renderPrompt("planner_repair", {{"errors", "- bad"}}).find("- bad") != std::string::npos);
}

static PromptBuilder builder(const Task& task)
{
    return PromptBuilder(task, {"NVIDIA H200 (sm_90a)", "nvcc -O3 -arch=sm_90a", true},
        [](const std::string& hash) { return "// program " + hash + "\nextern \"C\" int ks_run();"; });
}

static std::string join(const QList<ChatMessage>& messages)
{
    std::string all;
    for (const auto& m : messages)
        all += "[" + m.role.toStdString() + "]\n" + m.content.toStdString() + "\n";
    return all;
}

void TestPrompts::planner_data()
{
    QTest::addColumn<QString>("purpose");
    QTest::addColumn<QString>("node");
    QTest::addColumn<QStringList>("mustContain");
    QTest::newRow("init") << "init"
                          << ""
                          << QStringList {u"Start the tree"_qs, u"typedef struct KsArgs"_qs,
                                 u"reference implementation"_qs, u"hidden_states [batch_size, hidden_size] bfloat16"_qs,
                                 u"NVIDIA H200"_qs, u"At most 3 inserts"_qs, u"no program yet"_qs};
    QTest::newRow("update") << "update"
                            << "n1"
                            << QStringList {u"n1 \"one block per row"_qs, u"attempt 0 (action): PASSED, J 150.0"_qs,
                                   u"Insert at least one child under n1"_qs, u"n3 [open, V 0.70]"_qs,
                                   u"Baseline to beat"_qs, u"batch_size=1, hidden_size=4096"_qs};
    QTest::newRow("too hard") << "too_hard"
                              << "n2"
                              << QStringList {u"ended after 1 attempts, and none passed"_qs, u"COMPILE_ERROR"_qs,
                                     u"identifier \"oops\" is undefined"_qs};
    QTest::newRow("fill") << "fill"
                          << "" << QStringList {u"frontier is empty"_qs, u"n4 [open, V 0.20]"_qs};
}

void TestPrompts::planner()
{
    QFETCH(QString, purpose);
    QFETCH(QString, node);
    QFETCH(QStringList, mustContain);
    const auto kind = parsePurpose(purpose.toStdString()); // the journal's name of it
    QVERIFY(kind.has_value());
    const auto messages = builder(*m_task).planner(m_state, {*kind, node.toStdString(), false, {}, {}});
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages[0].role, u"system"_qs);
    const std::string all = join(messages);
    QVERIFY2(all.find("{{") == std::string::npos, all.c_str());
    for (const QString& s : mustContain)
        QVERIFY2(all.find(s.toStdString()) != std::string::npos, (s.toStdString() + "\n---\n" + all).c_str());
}

void TestPrompts::repairIsASecondTurn()
{
    const auto messages = builder(*m_task).planner(
        m_state, {Purpose::Update, "n1", true, {"update[0].priority: 1.5 is outside [0, 1]"}, "{\"bad\": 1}"});
    QCOMPARE(messages.size(), 4);
    QCOMPARE(messages[2].role, u"assistant"_qs);
    QCOMPARE(messages[2].content, u"{\"bad\": 1}"_qs);
    QVERIFY(messages[3].content.contains(u"- update[0].priority: 1.5 is outside [0, 1]"));
}

void TestPrompts::coder_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("node");
    QTest::addColumn<QStringList>("mustContain");
    QTest::newRow("action from a parent")
        << "action"
        << "n3"
        << QStringList {u"Intent to implement (n3): keep the row in registers"_qs, u"Start from the program of n1"_qs,
               u"// program p1"_qs, u"launch all GPU work on `stream`"_qs, u"Where this intent sits"_qs};
    QTest::newRow("action from nothing") << "action"
                                         << "n4"
                                         << QStringList {u"no program to start from"_qs, u"a persistent kernel"_qs};
}

void TestPrompts::coder()
{
    QFETCH(QString, kind);
    QFETCH(QString, node);
    QFETCH(QStringList, mustContain);
    const auto purpose = parsePurpose(kind.toStdString());
    QVERIFY(purpose.has_value());
    const std::string all = join(builder(*m_task).coder(m_state, *purpose, node.toStdString()));
    QVERIFY2(all.find("{{") == std::string::npos, all.c_str());
    for (const QString& s : mustContain)
        QVERIFY2(all.find(s.toStdString()) != std::string::npos, (s.toStdString() + "\n---\n" + all).c_str());
}

void TestPrompts::coderDuringAnAction()
{
    SearchState s = m_state;
    s.apply({{"type", "action_started"}, {"node", "n3"}});
    s.apply(evaluation("n3", "p4", Verdict::CompileError, 0.0));
    const PromptBuilder b = builder(*m_task);
    std::string debug = join(b.coder(s, Purpose::Debug, "n3"));
    for (const char* must : {"attempt 2 under the intent, and nothing has passed yet", "COMPILE_ERROR",
             "identifier \"oops\"", "// program p4", "Fix what went wrong first"})
        QVERIFY2(debug.find(must) != std::string::npos, (std::string(must) + "\n---\n" + debug).c_str());
    s.apply(evaluation("n3", "p5", Verdict::Passed, 300.0));
    s.apply(evaluation("n3", "p6", Verdict::IncorrectNumerical, 0.0));
    const std::string improve = join(b.coder(s, Purpose::Improve, "n3"));
    for (const char* must :
        {"Its best program so far passed", "J = 300.0", "// program p5", "The last attempt did not beat it",
            "INCORRECT_NUMERICAL", "after 7 attempts in a row without a gain of at least 1 %"})
        QVERIFY2(improve.find(must) != std::string::npos, (std::string(must) + "\n---\n" + improve).c_str());
}

// A candidate that crashed and was run again under compute-sanitizer (EvaluatorSettings::
// sanitizeFailures): the next attempt's debug prompt names the tool, the workload, the count and
// each finding, and a report read back from the journal's JSON is the same.
void TestPrompts::debugShowsTheSanitizersFindings()
{
    SanitizerReport report;
    report.tool = SanitizerTool::Memcheck;
    report.workload = "e316a464";
    report.complete = true;
    report.errors = 2;
    report.findings = {
        "Invalid __global__ write of size 4 bytes at rms_kernel+0x1f0 by thread (31,0,0) in block (7,0,0)",
        "Address 0x7f00004 is out of bounds"};
    report.verdict = "crashed: an illegal memory access was encountered";
    const json line = evaluation("n3", "p7", Verdict::RuntimeError, 0.0, report);
    const auto back = sanitizerReportFromJson(line["evaluation"]["sanitizer"]);
    QVERIFY(back.has_value());
    QCOMPARE(back->findings, report.findings);
    QCOMPARE(back->errors, 2);
    QVERIFY(!sanitizerReportFromJson(json {{"tool", "valgrind"}}));
    SearchState s = m_state;
    s.apply({{"type", "action_started"}, {"node", "n3"}});
    s.apply(line);
    const std::string debug = join(builder(*m_task).coder(s, Purpose::Debug, "n3"));
    for (const char* must : {"Run again under compute-sanitizer --tool memcheck on workload e316a464: 2 errors",
             "the call: crashed: an illegal memory access", "[1] Invalid __global__ write of size 4 bytes",
             "[2] Address 0x7f00004 is out of bounds"})
        QVERIFY2(debug.find(must) != std::string::npos, (std::string(must) + "\n---\n" + debug).c_str());
}

// A task that holds a workload out: the brief lists the others and says that shapes not shown are
// checked; an attempt's outcome gives that workload's verdict alone. Its uuid and its shape appear
// in no prompt.
void TestPrompts::heldOutWorkloadsAreNeverShown()
{
    Task task = *m_task;
    const Workload& hidden = task.workloads.back();
    const std::string label = workloadLabel(task, hidden.uuid);
    for (const Workload& w : task.workloads) // the shape is its own: no other workload shows it
        if (w.uuid != hidden.uuid)
            QVERIFY(workloadLabel(task, w.uuid) != label);
    task.definition.heldOutWorkloads = {hidden.uuid};
    const std::string brief = describeTask(task, true);
    QVERIFY2(brief.find("held-out workloads, not listed") != std::string::npos, brief.c_str());
    QVERIFY2(brief.find(hidden.uuid.substr(0, 8)) == std::string::npos, brief.c_str());
    QVERIFY2(brief.find(label) == std::string::npos, brief.c_str());
    QVERIFY(brief.find(task.workloads.front().uuid.substr(0, 8)) != std::string::npos);

    Attempt a;
    a.evaluated = true;
    a.evaluation.status = Verdict::IncorrectNumerical;
    WorkloadEvaluation w;
    w.id = hidden.uuid;
    w.status = Verdict::IncorrectNumerical;
    w.heldOut = true;
    w.message = "y[70000]: 3.5 vs 1.25";
    w.latencyMicros = 12.0;
    a.evaluation.workloads.push_back(w);
    const std::string outcome = describeAttempt(task, a);
    QVERIFY2(outcome.find("a held-out workload: INCORRECT_NUMERICAL") != std::string::npos, outcome.c_str());
    for (const std::string& shown : {hidden.uuid.substr(0, 8), label, std::string("70000"), std::string("12")})
        QVERIFY2(outcome.find(shown) == std::string::npos, (shown + "\n---\n" + outcome).c_str());
}

void TestPrompts::evolveShowsParentAndInspirations()
{
    SearchState s = m_state;
    s.settings.strategy = StrategyKind::Evolve;
    s.apply({{"type", "tree_edit"}, {"author", "system"}, {"purpose", "propose"},
        {"edit", {{"insert", {{{"parent", "n1"}, {"intent", "Evolve (island 0): mutate n1"}, {"priority", 0.5}}}}}}});
    const std::string all = join(builder(*m_task).coder(s, Purpose::Evolve, "n5"));
    for (const char* must : {"The parent program (n1)", "// program p1", "An inspiration (n1, J 140.0)",
             "// program p2", "Write an improved program"})
        QVERIFY2(all.find(must) != std::string::npos, (std::string(must) + "\n---\n" + all).c_str());
}

KS_TEST_MAIN_CORE(TestPrompts)
#include "tst_prompts.moc"
