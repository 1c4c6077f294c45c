#include "codeview.h"

#include "codehighlighter.h"

#include <QFontDatabase>
#include <QPainter>
#include <QTextBlock>

namespace ks::ui {

class CodeView::Gutter : public QWidget
{
public:
    explicit Gutter(CodeView* view)
        : QWidget(view)
        , m_view(view)
    {
        setObjectName(QStringLiteral("codeGutter"));
    }
    [[nodiscard]] QSize sizeHint() const override { return {m_view->gutterWidth(), 0}; }

protected:
    void paintEvent(QPaintEvent* event) override { m_view->paintGutter(event); }

private:
    CodeView* m_view;
};

CodeView::CodeView(QWidget* parent)
    : QPlainTextEdit(parent)
    , m_highlighter(new CodeHighlighter(document(), Language::Cuda))
    , m_gutter(new Gutter(this))
{
    setReadOnly(true);
    setLineWrapMode(QPlainTextEdit::NoWrap);
    setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    connect(this, &QPlainTextEdit::blockCountChanged, this, &CodeView::updateGutterWidth);
    connect(this, &QPlainTextEdit::updateRequest, this, [this](const QRect& rect, int dy) {
        if (dy != 0)
            m_gutter->scroll(0, dy);
        else
            m_gutter->update(0, rect.y(), m_gutter->width(), rect.height());
    });
    updateGutterWidth();
}

Language CodeView::language() const
{
    return m_highlighter->language();
}

void CodeView::showProgram(const QString& text, Language language)
{
    m_diff = false;
    m_numbered = true;
    m_added = m_removed = 0;
    m_numbers.clear();
    setPlainText(text);
    colour(language);
    setExtraSelections({});
    updateGutterWidth();
}

void CodeView::showDiff(const std::vector<DiffLine>& lines, Language language)
{
    m_diff = true;
    m_numbered = true;
    m_added = m_removed = 0;
    m_numbers.clear();
    QString text;
    int before = 0;
    int after = 0;
    for (const DiffLine& line : lines) {
        Numbers n {line.op};
        if (line.op != '+')
            n.before = ++before;
        if (line.op != '-')
            n.after = ++after;
        m_added += line.op == '+' ? 1 : 0;
        m_removed += line.op == '-' ? 1 : 0;
        m_numbers.push_back(n);
        if (m_numbers.size() > 1)
            text += u'\n';
        text += QString::fromStdString(line.text);
    }
    setPlainText(text);
    colour(language);
    markDiffLines();
    updateGutterWidth();
}

void CodeView::showMessage(const QString& text)
{
    m_diff = false;
    m_numbered = false;
    m_added = m_removed = 0;
    m_numbers.clear();
    // A message is prose: no colouring of words that happen to be keywords.
    m_highlighter->setDocument(nullptr);
    setPlainText(text);
    setExtraSelections({});
    updateGutterWidth();
}

void CodeView::colour(Language language)
{
    // Colouring now rather than on the event loop's next turn (attaching a highlighter defers
    // it), so that what is shown is coloured from its first paint.
    if (!m_highlighter->document())
        m_highlighter->setDocument(document());
    if (m_highlighter->language() != language)
        m_highlighter->setLanguage(language); // colours the text again itself
    else
        m_highlighter->rehighlight();
}

QColor CodeView::diffBackground(char op)
{
    return op == '+' ? QColor(0xe6, 0xff, 0xec) : op == '-' ? QColor(0xff, 0xeb, 0xe9) : QColor();
}

void CodeView::markDiffLines()
{
    QList<QTextEdit::ExtraSelection> marks;
    QTextBlock block = document()->begin();
    for (const Numbers& n : m_numbers) {
        if (!block.isValid())
            break;
        if (n.op != ' ') {
            QTextEdit::ExtraSelection mark;
            mark.format.setBackground(diffBackground(n.op));
            mark.format.setProperty(QTextFormat::FullWidthSelection, true);
            mark.cursor = QTextCursor(block);
            marks.append(mark);
        }
        block = block.next();
    }
    setExtraSelections(marks);
}

QString CodeView::gutterText(int block) const
{
    if (!m_numbered || block < 0 || block >= document()->blockCount())
        return {};
    if (!m_diff)
        return QString::number(block + 1);
    if (block >= static_cast<int>(m_numbers.size()))
        return {};
    const int digits = QString::number(std::max<int>(1, static_cast<int>(m_numbers.size()))).size();
    const Numbers& n = m_numbers[static_cast<std::size_t>(block)];
    const auto column = [digits](int v) {
        return v > 0 ? QString::number(v).rightJustified(digits) : QString(digits, u' ');
    };
    return column(n.before) + u' ' + column(n.after) + u' ' + QChar::fromLatin1(n.op);
}

int CodeView::gutterWidth() const
{
    if (!m_numbered)
        return 0;
    const QString widest = m_diff ? gutterText(0) : QString::number(std::max(1, document()->blockCount()));
    const int chars = std::max<int>(2, static_cast<int>(widest.size()));
    return 8 + fontMetrics().horizontalAdvance(QString(chars, u'9'));
}

void CodeView::updateGutterWidth()
{
    setViewportMargins(gutterWidth(), 0, 0, 0);
    const QRect r = contentsRect();
    m_gutter->setGeometry(r.left(), r.top(), gutterWidth(), r.height());
    m_gutter->update();
}

void CodeView::resizeEvent(QResizeEvent* event)
{
    QPlainTextEdit::resizeEvent(event);
    const QRect r = contentsRect();
    m_gutter->setGeometry(r.left(), r.top(), gutterWidth(), r.height());
}

void CodeView::paintGutter(QPaintEvent* event)
{
    QPainter painter(m_gutter);
    painter.fillRect(event->rect(), palette().color(QPalette::AlternateBase));
    painter.setFont(font());
    QTextBlock block = firstVisibleBlock();
    int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
    while (block.isValid() && top <= event->rect().bottom()) {
        const int height = qRound(blockBoundingRect(block).height());
        if (block.isVisible() && top + height >= event->rect().top()) {
            const QString label = gutterText(block.blockNumber());
            const char op = m_diff && block.blockNumber() < static_cast<int>(m_numbers.size())
                ? m_numbers[static_cast<std::size_t>(block.blockNumber())].op
                : ' ';
            if (op != ' ')
                painter.fillRect(0, top, m_gutter->width(), height, diffBackground(op).darker(108));
            painter.setPen(palette().color(QPalette::PlaceholderText));
            painter.drawText(0, top, m_gutter->width() - 4, height, Qt::AlignRight | Qt::AlignVCenter, label);
        }
        block = block.next();
        top += height;
    }
}

} // namespace ks::ui
