#include "testmain.h"

#include <tree/treeedit.h>
#include <tree/treejson.h>

using namespace ks;
using json = nlohmann::json;

// Tree edits: what is refused and why (the reason goes back to the LLM), and that a refused edit
// changes nothing.
class TestTreeEdit : public QObject
{
    Q_OBJECT
private slots:
    void validEditApplies();
    void refused_data();
    void refused();
    void malformedFields_data();
    void malformedFields();
    void chainsThroughRefs();
    void ablationRules();
    void jsonRoundTrip();

private:
    static SearchTree sample();
};

// root -> n1 (closed, passed) -> n3 (open); root -> n2 (open); root -> n4 (pruned) -> n5 (open)
SearchTree TestTreeEdit::sample()
{
    SearchTree t;
    t.insert("root", "fuse heads", "", {0.9, Author::WorldModel, "", 0}, "x1");
    t.insert("root", "split K", "", {0.6, Author::WorldModel, "", 0}, "x1");
    t.insert("n1", "cp.async pipeline", "", {0.7, Author::WorldModel, "", 3}, "x2");
    t.insert("root", "independent heads", "", {0.2, Author::WorldModel, "", 0}, "x1");
    t.insert("n4", "tune heads", "", {0.5, Author::WorldModel, "", 0}, "x1");
    Attempt a;
    a.node = "n1";
    a.evaluated = true;
    a.evaluation.status = Verdict::Passed;
    a.evaluation.score = 45.0;
    t.findMutable("n1")->bestAttempt = t.addAttempt(a);
    t.findMutable("n1")->status = NodeStatus::Closed;
    t.findMutable("n4")->status = NodeStatus::Pruned;
    return t;
}

static TreeEdit parse(const char* text)
{
    std::vector<std::string> errors;
    auto e = parseTreeEdit(json::parse(text), errors);
    if (!e || !errors.empty())
        qFatal("test edit does not parse: %s", errors.empty() ? "" : errors[0].c_str());
    return *e;
}

void TestTreeEdit::validEditApplies()
{
    SearchTree t = sample();
    const TreeEdit e = parse(R"({"reasoning": "r",
        "insert": [{"parent": "n1", "intent": "register-resident rescaling", "priority": 0.8, "rationale": "fusion worked"}],
        "update": [{"node": "n2", "priority": 0.3, "rationale": "split-K only pays later"}],
        "prune": [{"node": "n3", "rationale": "superseded"}]})");
    EditRules rules;
    rules.solvedNode = "n1";
    const EditCheck check = validateEdit(t, e, rules);
    QVERIFY2(check.ok(), check.errors.empty() ? "" : check.errors[0].c_str());
    const auto ids = applyEdit(t, e, rules, Author::WorldModel, 7, "x9");
    QCOMPARE(ids, std::vector<std::string> {"n6"});
    QCOMPARE(t.find("n6")->parent, std::string("n1"));
    QCOMPARE(t.find("n6")->createdRound, 7);
    QCOMPARE(t.find("n2")->value(), 0.3);
    QCOMPARE(t.find("n2")->values.back().reason, std::string("split-K only pays later"));
    QCOMPARE(t.find("n2")->values.back().round, 7);
    QCOMPARE(t.find("n3")->status, NodeStatus::Pruned);
    QCOMPARE(t.find("n3")->pruneReason, std::string("superseded"));
    QCOMPARE(t.find("n1")->children.back(), std::string("n6"));
}

void TestTreeEdit::refused_data()
{
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("solved");
    QTest::addColumn<QString>("reason");
    QTest::newRow("unknown parent") << R"({"insert": [{"parent": "n99", "intent": "x", "priority": 0.5}]})"
                                    << ""
                                    << "insert[0].parent: no node 'n99'";
    QTest::newRow("unknown node") << R"({"update": [{"node": "n42", "priority": 0.5}]})"
                                  << ""
                                  << "no node 'n42'";
    QTest::newRow("V above 1") << R"({"update": [{"node": "n2", "priority": 1.2}]})"
                               << ""
                               << "1.2 is outside [0, 1]";
    QTest::newRow("V below 0") << R"({"insert": [{"parent": "root", "intent": "x", "priority": -0.1}]})"
                               << ""
                               << "outside [0, 1]";
    QTest::newRow("closed node's result") << R"({"update": [{"node": "n1", "priority": 0.1}]})"
                                          << ""
                                          << "n1 is closed: its result is final";
    QTest::newRow("prune a solution") << R"({"prune": [{"node": "n1"}]})"
                                      << ""
                                      << "would lose a solution";
    QTest::newRow("prune the root") << R"({"prune": [{"node": "root"}]})"
                                    << ""
                                    << "the root cannot be pruned";
    QTest::newRow("update the root") << R"({"update": [{"node": "root", "priority": 0.5}]})"
                                     << ""
                                     << "the root has no priority";
    QTest::newRow("pruned branch") << R"({"insert": [{"parent": "n5", "intent": "x", "priority": 0.5}]})"
                                   << ""
                                   << "n5 is in a pruned branch";
    QTest::newRow("four new nodes")
        << R"({"insert": [{"parent": "root", "intent": "a", "priority": 0.5}, {"parent": "root", "intent": "b", "priority": 0.5},
              {"parent": "root", "intent": "c", "priority": 0.5}, {"parent": "root", "intent": "d", "priority": 0.5}]})"
        << ""
        << "4 new nodes: at most 3 per edit";
    QTest::newRow("cycle")
        << R"({"insert": [{"id": "a", "parent": "b", "intent": "x", "priority": 0.5}, {"id": "b", "parent": "a", "intent": "y", "priority": 0.5}]})"
        << ""
        << "form a cycle";
    QTest::newRow("ref shadows a node")
        << R"({"insert": [{"id": "n2", "parent": "root", "intent": "x", "priority": 0.5}]})"
        << ""
        << "'n2' is already a node";
    QTest::newRow("changed twice") << R"({"update": [{"node": "n2", "priority": 0.5}], "prune": [{"node": "n2"}]})"
                                   << ""
                                   << "changed twice";
    QTest::newRow("solved node left without a child")
        << R"({"insert": [{"parent": "root", "intent": "x", "priority": 0.5}]})"
        << "n1"
        << "n1 passed (J = 45.0): insert at least one child";
}

void TestTreeEdit::refused()
{
    QFETCH(QString, edit);
    QFETCH(QString, solved);
    QFETCH(QString, reason);
    const SearchTree before = sample();
    std::vector<std::string> parseErrors;
    const auto e = parseTreeEdit(json::parse(edit.toStdString()), parseErrors);
    QVERIFY(e);
    EditRules rules;
    rules.solvedNode = solved.toStdString();
    const EditCheck check = validateEdit(before, *e, rules);
    std::string all;
    for (const auto& err : parseErrors)
        all += err + "\n";
    for (const auto& err : check.errors)
        all += err + "\n";
    QVERIFY2(!check.ok() || !parseErrors.empty(), "the edit was accepted");
    QVERIFY2(all.find(reason.toStdString()) != std::string::npos, all.c_str());
}

void TestTreeEdit::malformedFields_data()
{
    QTest::addColumn<QString>("answer");
    QTest::addColumn<QString>("reason");
    QTest::newRow("not an object") << "[1, 2]"
                                   << "one JSON object";
    QTest::newRow("insert not a list") << R"({"insert": {"parent": "root"}})"
                                       << "insert: must be a list";
    QTest::newRow("priority as text") << R"({"insert": [{"parent": "root", "intent": "x", "priority": "high"}]})"
                                      << "insert[0].priority: must be a number";
    QTest::newRow("missing intent") << R"({"insert": [{"parent": "root", "priority": 0.5}]})"
                                    << "insert[0].intent: missing";
    QTest::newRow("empty intent") << R"({"insert": [{"parent": "root", "intent": "  ", "priority": 0.5}]})"
                                  << "insert[0].intent: empty";
    QTest::newRow("update without node") << R"({"update": [{"priority": 0.5}]})"
                                         << "update[0].node: missing";
}

void TestTreeEdit::malformedFields()
{
    QFETCH(QString, answer);
    QFETCH(QString, reason);
    std::vector<std::string> errors;
    parseTreeEdit(json::parse(answer.toStdString()), errors);
    QVERIFY(!errors.empty());
    QVERIFY2(errors[0].find(reason.toStdString()) != std::string::npos, errors[0].c_str());
}

void TestTreeEdit::chainsThroughRefs()
{
    SearchTree t = sample();
    const TreeEdit e = parse(R"({"insert": [{"id": "step2", "parent": "step1", "intent": "then this", "priority": 0.4},
        {"id": "step1", "parent": "n1", "intent": "first this", "priority": 0.8}]})");
    QVERIFY(validateEdit(t, e, {}).ok());
    const auto ids = applyEdit(t, e, {}, Author::WorldModel, 1, "x");
    QCOMPARE(ids, (std::vector<std::string> {"n7", "n6"})); // step1 is created first, so its child can hang under it
    QCOMPARE(t.find("n7")->parent, std::string("n6"));
    QCOMPARE(t.find("n6")->parent, std::string("n1"));
}

void TestTreeEdit::ablationRules()
{
    SearchTree t = sample();
    const TreeEdit e = parse(R"({"insert": [{"parent": "n1", "intent": "deep", "priority": 0.6}],
        "update": [{"node": "n2", "priority": 0.1}]})");
    EditRules rules;
    rules.flat = true;
    rules.frozenValues = true;
    const EditCheck check = validateEdit(t, e, rules);
    QVERIFY(check.ok());
    QCOMPARE(check.notes.size(), std::size_t {2});
    applyEdit(t, e, rules, Author::WorldModel, 1, "x");
    QCOMPARE(t.find("n6")->parent, std::string("root")); // flat: every intent under the root
    QCOMPARE(t.find("n2")->value(), 0.6); // frozen: the update was ignored
}

void TestTreeEdit::jsonRoundTrip()
{
    const SearchTree t = sample();
    std::string error;
    const auto back = treeFromJson(toJson(t), error);
    QVERIFY2(back, error.c_str());
    QCOMPARE(toJson(*back).dump(), toJson(t).dump());
    QCOMPARE(back->peekNextId(), std::string("n6"));
    QCOMPARE(
        back->frontier().size(), std::size_t {2}); // n2 (under the root) and n3 (under solved n1); n5 is pruned off
}

KS_TEST_MAIN_CORE(TestTreeEdit)
#include "tst_treeedit.moc"
