#pragma once

#include <task/language.h>
#include <util/linediff.h>

#include <QPlainTextEdit>

#include <vector>

namespace ks::ui {

class CodeHighlighter;

// A read-only program view: syntax colouring for the program's language, line numbers in a
// gutter, and a unified diff mode in which every line of both programs is shown in order, added
// lines green and removed ones red, with the old and the new line number in the gutter.
class CodeView : public QPlainTextEdit
{
    Q_OBJECT
public:
    explicit CodeView(QWidget* parent = nullptr);

    void showProgram(const QString& text, Language language);
    void showDiff(const std::vector<DiffLine>& lines, Language language);
    void showMessage(const QString& text); // no program: plain text, no line numbers

    [[nodiscard]] Language language() const;
    [[nodiscard]] bool isDiff() const { return m_diff; }
    // What the gutter shows for a line: "12", or in a diff "  7  9 ", "  8    -", "    10 +".
    [[nodiscard]] QString gutterText(int block) const;
    [[nodiscard]] int gutterWidth() const;
    // Lines added and removed in the shown diff (both 0 outside diff mode).
    [[nodiscard]] int addedLines() const { return m_added; }
    [[nodiscard]] int removedLines() const { return m_removed; }
    // The background a diff line gets, by its op ('+' or '-').
    static QColor diffBackground(char op);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    class Gutter;
    void paintGutter(QPaintEvent* event);
    void updateGutterWidth();
    void markDiffLines();
    void colour(Language language);

    CodeHighlighter* m_highlighter;
    Gutter* m_gutter;
    bool m_diff = false;
    bool m_numbered = false;
    int m_added = 0;
    int m_removed = 0;
    // Per block in diff mode: its op and its line numbers in the old and the new program (0: none).
    struct Numbers {
        char op = ' ';
        int before = 0;
        int after = 0;
    };
    std::vector<Numbers> m_numbers;
};

} // namespace ks::ui
