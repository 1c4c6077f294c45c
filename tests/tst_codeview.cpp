#include "testmain.h"

#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>

#include <codehighlighter.h>
#include <codeview.h>

using namespace ks;
using ui::CodeCategory;

Q_DECLARE_METATYPE(ks::Language)
Q_DECLARE_METATYPE(ks::ui::CodeCategory)

namespace {

// The category whose format covers `column` of `line` (0-based), or nullopt for plain text.
std::optional<CodeCategory> categoryAt(const QTextDocument& doc, int line, int column)
{
    const QTextBlock block = doc.findBlockByNumber(line);
    for (const QTextLayout::FormatRange& r : block.layout()->formats()) {
        if (column < r.start || column >= r.start + r.length)
            continue;
        for (const CodeCategory c :
            {CodeCategory::Keyword, CodeCategory::Type, CodeCategory::Builtin, CodeCategory::Preprocessor,
                CodeCategory::Comment, CodeCategory::String, CodeCategory::Number, CodeCategory::Decorator})
            if (r.format == ui::CodeHighlighter::format(c))
                return c;
    }
    return std::nullopt;
}

} // namespace

// The code views of the inspector: colouring per language (what a token is depends on the
// language and on what is open around it), line numbers, and the unified diff.
class TestCodeView : public QObject
{
    Q_OBJECT
private slots:
    void colours_data();
    void colours();
    void languageChangeRecolours();
    void lineNumbersFollowTheProgram();
    void diffNumbersBothSides();
    void messageHasNoNumbersOrColours();
};

void TestCodeView::colours_data()
{
    QTest::addColumn<Language>("language");
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("token"); // the last line's first occurrence of it is looked at
    QTest::addColumn<int>("category"); // a CodeCategory, or -1 for plain text
    const int plain = -1;
    const auto c = [](CodeCategory k) { return static_cast<int>(k); };
    QTest::newRow("cuda qualifier") << Language::Cuda << "__global__ void k() {}"
                                    << "__global__" << c(CodeCategory::Keyword);
    QTest::newRow("cuda built-in") << Language::Cuda << "int i = threadIdx.x;"
                                   << "threadIdx" << c(CodeCategory::Builtin);
    QTest::newRow("cuda vector type") << Language::Cuda << "float4 v;"
                                      << "float4" << c(CodeCategory::Type);
    QTest::newRow("cpp has no cuda words") << Language::Cpp << "int i = threadIdx.x;"
                                           << "threadIdx" << plain;
    QTest::newRow("c++ keyword") << Language::Cpp << "  return 0;"
                                 << "return" << c(CodeCategory::Keyword);
    QTest::newRow("part of a name is not a keyword") << Language::Cpp << "int returned = 1;"
                                                     << "returned" << plain;
    QTest::newRow("member named like a keyword") << Language::Cpp << "a.for_each();"
                                                 << "for_each" << plain;
    QTest::newRow("line comment") << Language::Cuda << "x = 1; // return early"
                                  << "return" << c(CodeCategory::Comment);
    QTest::newRow("string") << Language::Cuda << "printf(\"for %d\", i);"
                            << "for" << c(CodeCategory::String);
    QTest::newRow("escaped quote stays in the string") << Language::Cpp << "s = \"a\\\" while\";"
                                                       << "while" << c(CodeCategory::String);
    QTest::newRow("block comment on one line") << Language::Cpp << "/* if */ if (x)"
                                               << "if (" << c(CodeCategory::Keyword);
    QTest::newRow("block comment carried") << Language::Cuda << "/* a\nstill for"
                                           << "for" << c(CodeCategory::Comment);
    QTest::newRow("after a carried comment closes") << Language::Cuda << "/* a\n b */ while (1)"
                                                    << "while" << c(CodeCategory::Keyword);
    QTest::newRow("preprocessor") << Language::Cuda << "#include <cuda_fp16.h>"
                                  << "#include" << c(CodeCategory::Preprocessor);
    QTest::newRow("hex number") << Language::Cpp << "x = 0xFFu;"
                                << "0xFFu" << c(CodeCategory::Number);
    QTest::newRow("float literal") << Language::Cuda << "y = 1.5e-3f;"
                                   << "1.5e-3f" << c(CodeCategory::Number);
    QTest::newRow("digits in a name") << Language::Cuda << "int x16 = 0;"
                                      << "16" << plain;
    QTest::newRow("python keyword") << Language::Python << "def run(x):"
                                    << "def" << c(CodeCategory::Keyword);
    QTest::newRow("python comment") << Language::Python << "y = 1  # for later"
                                    << "for" << c(CodeCategory::Comment);
    QTest::newRow("hash in a python string") << Language::Python << "s = '# not a comment'"
                                             << "not" << c(CodeCategory::String);
    QTest::newRow("triton decorator") << Language::Triton << "@triton.jit"
                                      << "@triton.jit" << c(CodeCategory::Decorator);
    QTest::newRow("triton namespace") << Language::Triton << "x = tl.load(p)"
                                      << "tl" << c(CodeCategory::Builtin);
    QTest::newRow("docstring carried") << Language::Python << "\"\"\"Doc\nif this"
                                       << "if" << c(CodeCategory::String);
    QTest::newRow("after a docstring closes") << Language::Python << "'''a\nb''' and x"
                                              << "and" << c(CodeCategory::Keyword);
    QTest::newRow("c++ comment syntax is not python's") << Language::Python << "x = a // b"
                                                        << "b" << plain;
}

void TestCodeView::colours()
{
    QFETCH(Language, language);
    QFETCH(QString, source);
    QFETCH(QString, token);
    QFETCH(int, category);
    QTextDocument doc;
    ui::CodeHighlighter highlighter(&doc, language);
    doc.setPlainText(source);
    highlighter.rehighlight(); // what the window's event loop does after the document is set
    const int line = doc.blockCount() - 1;
    const int column = static_cast<int>(doc.findBlockByNumber(line).text().indexOf(token));
    QVERIFY2(column >= 0, qPrintable(token));
    const std::optional<CodeCategory> got = categoryAt(doc, line, column);
    if (category < 0)
        QVERIFY2(!got, qPrintable(QStringLiteral("coloured as %1").arg(static_cast<int>(*got))));
    else
        QCOMPARE(got ? static_cast<int>(*got) : -1, category);
}

void TestCodeView::languageChangeRecolours()
{
    ui::CodeView view;
    view.showProgram(QStringLiteral("int i = threadIdx.x;"), Language::Cpp);
    QVERIFY(!categoryAt(*view.document(), 0, 8));
    view.showProgram(QStringLiteral("int i = threadIdx.x;"), Language::Cuda);
    QCOMPARE(view.language(), Language::Cuda);
    QCOMPARE(categoryAt(*view.document(), 0, 8), std::optional<CodeCategory>(CodeCategory::Builtin));
}

void TestCodeView::lineNumbersFollowTheProgram()
{
    ui::CodeView view;
    view.showProgram(QStringLiteral("a\nb\nc"), Language::Cuda);
    QCOMPARE(view.gutterText(0), u"1"_qs);
    QCOMPARE(view.gutterText(2), u"3"_qs);
    QCOMPARE(view.gutterText(3), QString());
    const int narrow = view.gutterWidth();
    QVERIFY(narrow > 0);
    view.showProgram(QString(12345, u'\n'), Language::Cuda); // 12,346 lines: five digits
    QCOMPARE(view.gutterText(12345), u"12346"_qs);
    QVERIFY2(view.gutterWidth() > narrow, qPrintable(QStringLiteral("%1 vs %2").arg(view.gutterWidth()).arg(narrow)));
}

void TestCodeView::diffNumbersBothSides()
{
    ui::CodeView view;
    const std::string before = "int a;\nint b;\nint c;\n";
    const std::string after = "int a;\nint c;\nint d;\n";
    view.showDiff(diffLines(before, after), Language::Cpp);
    QVERIFY(view.isDiff());
    QCOMPARE(view.addedLines(), 1);
    QCOMPARE(view.removedLines(), 1);
    const QStringList lines = view.toPlainText().split(u'\n');
    // Every line of both programs, in order; each labelled with its number in either program.
    QCOMPARE(lines.mid(0, 4), QStringList({u"int a;"_qs, u"int b;"_qs, u"int c;"_qs, u"int d;"_qs}));
    QCOMPARE(view.gutterText(0), u"1 1  "_qs);
    QCOMPARE(view.gutterText(1), u"2   -"_qs);
    QCOMPARE(view.gutterText(2), u"3 2  "_qs);
    QCOMPARE(view.gutterText(3), u"  3 +"_qs);
    // Changed lines (and only they) are marked with the diff's colours.
    const auto marks = view.extraSelections();
    QCOMPARE(marks.size(), 2);
    QCOMPARE(marks[0].cursor.blockNumber(), 1);
    QCOMPARE(marks[0].format.background().color(), ui::CodeView::diffBackground('-'));
    QCOMPARE(marks[1].cursor.blockNumber(), 3);
    QCOMPARE(marks[1].format.background().color(), ui::CodeView::diffBackground('+'));
    // Back to a plain program: no marks, plain numbers.
    view.showProgram(QString::fromStdString(after), Language::Cpp);
    QVERIFY(view.extraSelections().isEmpty());
    QCOMPARE(view.gutterText(1), u"2"_qs);
}

void TestCodeView::messageHasNoNumbersOrColours()
{
    ui::CodeView view;
    view.showMessage(QStringLiteral("This attempt has no program: the answer had no code block for return"));
    QCOMPARE(view.gutterWidth(), 0);
    QCOMPARE(view.gutterText(0), QString());
    const int column = static_cast<int>(view.toPlainText().indexOf(u"for"));
    QVERIFY(!categoryAt(*view.document(), 0, column));
}

KS_TEST_MAIN_GUI(TestCodeView)
#include "tst_codeview.moc"
