#include "testmain.h"

#include <tree/treerender.h>
#include <tree/treesvg.h>

#include <QRandomGenerator>

using namespace ks;

// The tree as the world model reads it stays within its budget at any size, and keeps what the
// next decision needs; the SVG picture is well-formed.
class TestTreeRender : public QObject
{
    Q_OBJECT
private slots:
    void smallTreeIsAFullOutline();
    void budgetHoldsAtAnySize_data();
    void budgetHoldsAtAnySize();
    void utf8IsCutOnCharacterBoundaries();
    void svgShowsEveryNode();
};

// A random tree of `count` nodes with long intents, passed and failed attempts and pruned branches.
static SearchTree bigTree(int count, quint32 seed)
{
    SearchTree t;
    QRandomGenerator rng(seed);
    for (int i = 1; i < count; ++i) {
        const auto& nodes = t.nodes();
        const std::string parent = nodes[rng.bounded(static_cast<int>(nodes.size()))].id;
        SearchNode& n = t.insert(parent,
            "intent " + std::to_string(i)
                + ": stage K/V pages through shared memory with cp.async and "
                  "double buffering, then fuse the eight query heads that share one KV head — variant "
                + std::to_string(rng.bounded(1000)),
            "because", {rng.bounded(100) / 100.0, Author::WorldModel, "", i}, "x");
        const std::string id = n.id;
        const int kind = rng.bounded(4);
        if (kind == 0) {
            Attempt a;
            a.node = id;
            a.evaluated = true;
            a.evaluation.status = Verdict::Passed;
            a.evaluation.score = rng.bounded(2000) / 10.0;
            t.findMutable(id)->bestAttempt = t.addAttempt(a);
            t.findMutable(id)->status = NodeStatus::Closed;
        } else if (kind == 1) {
            t.findMutable(id)->status = NodeStatus::Closed;
        } else if (kind == 2 && rng.bounded(3) == 0) {
            t.findMutable(id)->status = NodeStatus::Pruned;
            t.findMutable(id)->pruneReason = "dominated by its sibling";
        }
    }
    return t;
}

void TestTreeRender::smallTreeIsAFullOutline()
{
    const SearchTree t = bigTree(6, 1);
    const std::string text = renderTreeForPrompt(t, {6000, "", 180});
    QVERIFY(text.rfind("Search tree (6 nodes", 0) == 0);
    for (const auto& n : t.nodes())
        QVERIFY2(text.find(n.id + " [") != std::string::npos, n.id.c_str());
}

void TestTreeRender::budgetHoldsAtAnySize_data()
{
    QTest::addColumn<int>("nodes");
    QTest::addColumn<int>("budget");
    for (int nodes : {10, 100, 1000, 3000})
        for (int budget : {1500, 6000, 20000})
            QTest::addRow("%d nodes, %d bytes", nodes, budget) << nodes << budget;
}

void TestTreeRender::budgetHoldsAtAnySize()
{
    QFETCH(int, nodes);
    QFETCH(int, budget);
    const SearchTree t = bigTree(nodes, static_cast<quint32>(nodes));
    const auto best = t.bestAttempt();
    const std::string focus = t.nodes().back().id;
    const std::string text = renderTreeForPrompt(t, {static_cast<std::size_t>(budget), focus, 180});
    QVERIFY2(text.size() <= static_cast<std::size_t>(budget), std::to_string(text.size()).c_str());
    if (nodes >= 1000) {
        QVERIFY(text.find("summarised") != std::string::npos);
        // The focus node and the best node are never left out; the frontier is introduced.
        QVERIFY2(text.find(focus + " [") != std::string::npos, text.c_str());
        QVERIFY(text.find("Frontier") != std::string::npos);
        if (best && budget >= 6000)
            QVERIFY(text.find("best J") != std::string::npos);
        QVERIFY(text.find("more") != std::string::npos); // says how much it left out
    }
}

void TestTreeRender::utf8IsCutOnCharacterBoundaries()
{
    const std::string s = "fuse — heads — héllo";
    for (std::size_t n = 3; n < s.size(); ++n) {
        const std::string cut = truncateUtf8(s, n);
        QVERIFY(cut.size() <= n);
        QVERIFY(QString::fromUtf8(cut.c_str()).toUtf8().toStdString() == cut); // valid UTF-8
    }
}

void TestTreeRender::svgShowsEveryNode()
{
    const SearchTree t = bigTree(40, 7);
    const std::string svg = renderTreeSvg(t, {"title <&>", ""});
    QVERIFY(svg.rfind("<?xml", 0) == 0);
    QVERIFY(svg.find("title &lt;&amp;&gt;") != std::string::npos);
    for (const auto& n : t.nodes())
        QVERIFY2(svg.find("<title>" + n.id + ": ") != std::string::npos, n.id.c_str());
    QCOMPARE(std::count(svg.begin(), svg.end(), '<') - std::count(svg.begin(), svg.end(), '>'), 0L);
}

KS_TEST_MAIN_CORE(TestTreeRender)
#include "tst_treerender.moc"
