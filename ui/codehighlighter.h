#pragma once

#include <task/language.h>

#include <QRegularExpression>
#include <QSyntaxHighlighter>

#include <vector>

namespace ks::ui {

// What a span of a program is, for colouring it.
enum class CodeCategory { Keyword, Type, Builtin, Preprocessor, Comment, String, Number, Decorator };

// Syntax colouring for the languages candidates are written in: C++ (cpp), C++ with CUDA's
// qualifiers, built-in variables and vector types (cuda), and Python (triton and python, with
// Triton's tl namespace as built-ins). Block comments and triple-quoted strings carry across
// lines through the block state, so a keyword inside either is not coloured as one.
class CodeHighlighter : public QSyntaxHighlighter
{
    Q_OBJECT
public:
    CodeHighlighter(QTextDocument* document, Language language);

    void setLanguage(Language language); // colours the document again
    [[nodiscard]] Language language() const { return m_language; }

    // The format of a category: the same in every code view of the window.
    static QTextCharFormat format(CodeCategory category);

protected:
    void highlightBlock(const QString& text) override;

private:
    struct Rule {
        QRegularExpression pattern;
        CodeCategory category;
    };
    // Where the text stops being code: a comment to the end of the line or the start of a
    // string or block comment; -1 when there is none.
    struct Span {
        int start = -1;
        int end = -1; // one past; -1 while it runs on to the next line
        CodeCategory category = CodeCategory::Comment;
        int carries = 0; // the block state a span open at the end of the line leaves
    };

    void buildRules();
    [[nodiscard]] Span nextSpan(const QString& text, int from) const;
    [[nodiscard]] int closeCarried(const QString& text, int state) const; // end of a span carried in, or -1
    void colourCode(const QString& text, int from, int to);

    Language m_language;
    std::vector<Rule> m_rules;
};

} // namespace ks::ui
