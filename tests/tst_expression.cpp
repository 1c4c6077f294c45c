#include "testmain.h"

#include <task/expression.h>

#include <map>

using namespace ks;

class TestExpression : public QObject
{
    Q_OBJECT
private slots:
    void evaluates_data();
    void evaluates();
    void reportsErrors_data();
    void reportsErrors();
    void listsIdentifiers();
};

namespace {
std::optional<double> lookup(std::string_view name, std::optional<std::int64_t> index)
{
    static const std::map<std::string, double> axes {{"batch", 16}, {"hidden", 4096}, {"zero", 0}};
    static const std::vector<double> indptr {0, 5, 9, 12};
    if (index) {
        if (name != "indptr")
            return std::nullopt;
        const std::int64_t i = *index < 0 ? static_cast<std::int64_t>(indptr.size()) + *index : *index;
        if (i < 0 || i >= static_cast<std::int64_t>(indptr.size()))
            return std::nullopt;
        return indptr[static_cast<std::size_t>(i)];
    }
    const auto it = axes.find(std::string(name));
    return it == axes.end() ? std::nullopt : std::optional<double>(it->second);
}
} // namespace

void TestExpression::evaluates_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<double>("expected");
    QTest::newRow("number") << "42" << 42.0;
    QTest::newRow("float") << "1.5e3" << 1500.0;
    QTest::newRow("precedence") << "2 + 3 * 4" << 14.0;
    QTest::newRow("parentheses") << "(2 + 3) * 4" << 20.0;
    QTest::newRow("axes") << "2 * batch * hidden * 2 + hidden * 2" << 270336.0;
    QTest::newRow("floor division") << "hidden // 3" << 1365.0;
    QTest::newRow("modulo") << "hidden % 7" << 1.0;
    QTest::newRow("unary minus") << "-batch + 20" << 4.0;
    QTest::newRow("equality true") << "batch + 1 == 17" << 1.0;
    QTest::newRow("equality false") << "batch == 17" << 0.0;
    QTest::newRow("less-equal") << "batch <= 16" << 1.0;
    QTest::newRow("tensor last element") << "indptr[-1]" << 12.0;
    QTest::newRow("flashinfer item()") << "indptr[-1].item() == 12" << 1.0;
    QTest::newRow("tensor index expression") << "indptr[batch - 15]" << 5.0;
    // Segment lengths of indptr {0, 5, 9, 12} are 5, 4, 3.
    QTest::newRow("sum of segment lengths") << "sum(b, 0, 3, indptr[b + 1] - indptr[b])" << 12.0;
    QTest::newRow("sum of squares (causal pairs)")
        << "sum(b, 0, 3, (indptr[b + 1] - indptr[b]) * (indptr[b + 1] - indptr[b]))" << 50.0;
    QTest::newRow("empty sum") << "sum(b, 3, 3, indptr[b + 1]) + 7" << 7.0;
    QTest::newRow("nested sums") << "sum(i, 0, 3, sum(j, 0, i + 1, 1))" << 6.0;
    QTest::newRow("sum variable shadows nothing outside") << "sum(batch, 0, 2, batch) + batch" << 17.0;
    QTest::newRow("min of segment lengths") << "min(b, 0, 3, indptr[b + 1] - indptr[b])" << 3.0;
    QTest::newRow("max of the indices") << "max(i, 0, 4, indptr[i])" << 12.0;
    QTest::newRow("all: monotone") << "all(b, 0, 3, indptr[b] <= indptr[b + 1])" << 1.0;
    QTest::newRow("all: one term fails") << "all(b, 0, 3, indptr[b + 1] - indptr[b] > 3)" << 0.0;
    QTest::newRow("empty all holds") << "all(b, 2, 2, 0)" << 1.0;
    QTest::newRow("empty max is below anything") << "max(i, 0, 0, indptr[i]) < -1e300" << 1.0;
}

void TestExpression::evaluates()
{
    QFETCH(QString, text);
    QFETCH(double, expected);
    const auto r = evaluateExpression(text.toStdString(), lookup);
    QVERIFY2(r.value.has_value(), r.error.c_str());
    QCOMPARE(*r.value, expected);
}

void TestExpression::reportsErrors_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("unknown name") << "batch * heads"
                                  << "unknown name 'heads'";
    QTest::newRow("index out of range") << "indptr[7]"
                                        << "index out of range";
    // fuzz_definition's finding (fuzz/regressions/definition/index-as-huge-float): the index was
    // converted to an integer unchecked, undefined behaviour past int64's range.
    QTest::newRow("index as a huge number") << "indptr[2e114]"
                                            << "index out of range in 'indptr[...]'";
    QTest::newRow("index past what a double counts") << "indptr[-1e16]"
                                                     << "index out of range in 'indptr[...]'";
    QTest::newRow("unbalanced") << "(batch + 1"
                                << "missing ')'";
    QTest::newRow("trailing garbage") << "batch 3"
                                      << "unexpected '3'";
    QTest::newRow("division by zero") << "hidden / zero"
                                      << "division by zero";
    QTest::newRow("empty") << ""
                           << "unexpected end";
    QTest::newRow("bad number") << "12abc"
                                << "bad number";
    QTest::newRow("sum past the end") << "sum(b, 0, 4, indptr[b + 1])"
                                      << "index out of range 'indptr[4]'";
    QTest::newRow("sum without variable") << "sum(0, 3, 1)"
                                          << "sum needs a variable name";
    QTest::newRow("sum unclosed") << "sum(b, 0, 3, b"
                                  << "missing ')' after the body of sum";
    QTest::newRow("empty sum still checks names") << "sum(b, 0, 0, heads)"
                                                  << "unknown name 'heads'";
    QTest::newRow("max unclosed") << "max(i, 0, 3, indptr[i]"
                                  << "missing ')' after the body of max";
}

void TestExpression::reportsErrors()
{
    QFETCH(QString, text);
    QFETCH(QString, fragment);
    const auto r = evaluateExpression(text.toStdString(), lookup);
    QVERIFY(!r.value.has_value());
    QVERIFY2(QString::fromStdString(r.error).contains(fragment), r.error.c_str());
}

void TestExpression::listsIdentifiers()
{
    const auto ids = expressionIdentifiers("num_kv_indices == kv_indptr[-1].item() + batch_size / 2");
    QCOMPARE(ids, (std::vector<std::string> {"num_kv_indices", "kv_indptr", "batch_size"}));
}

KS_TEST_MAIN_CORE(TestExpression)
#include "tst_expression.moc"
