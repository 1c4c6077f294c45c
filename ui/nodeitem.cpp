#include "nodeitem.h"

#include "searchdocument.h"
#include "uistyle.h"

#include <QFontMetrics>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

namespace ks::ui {

NodeItem::NodeItem(const SearchDocument& document, QString id)
    : m_document(document)
    , m_id(std::move(id))
{
    setFlag(ItemIsSelectable);
    setAcceptHoverEvents(true);
    // No pixmap cache: a fitted view of a large tree changes scale on every insertion, and
    // re-rendering a thousand caches costs more than painting the boxes.
    setCacheMode(NoCache);
}

QRectF NodeItem::boundingRect() const
{
    return QRectF(-4, -4, kWidth + 8, kHeight + 8); // room for the thick outlines
}

QString NodeItem::twoLines(const QString& text, const QFontMetrics& fm, int width)
{
    const QStringList words = text.split(u' ', Qt::SkipEmptyParts);
    QString first;
    qsizetype used = 0;
    for (; used < words.size(); ++used) {
        const QString longer = first.isEmpty() ? words[used] : first + u' ' + words[used];
        if (fm.horizontalAdvance(longer) > width)
            break;
        first = longer;
    }
    if (first.isEmpty()) // a first word wider than the box
        return fm.elidedText(text, Qt::ElideRight, width);
    if (used == words.size())
        return first;
    return first + u'\n' + fm.elidedText(words.mid(used).join(u' '), Qt::ElideRight, width);
}

void NodeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* /*widget*/)
{
    const SearchState& s = m_document.state();
    const SearchNode* n = s.tree.find(m_id.toStdString());
    if (!n)
        return;
    const bool root = n->id == SearchTree::kRootId;
    const bool pruned = n->status == NodeStatus::Pruned;
    const bool isBest = m_document.bestNode() == n->id;
    const bool active = s.actionOn(n->id) != nullptr;
    const QRectF box(0, 0, kWidth, kHeight);
    const qreal detail = option->levelOfDetailFromTransform(p->worldTransform());
    const bool farOut = detail < 0.45;

    QPen border(isBest ? bestColor() : statusColor(*n, s), isBest || active ? 3.5 : 1.6);
    if (pruned)
        border.setStyle(Qt::DashLine);
    p->setPen(border);
    p->setBrush(statusFill(*n, s));
    if (farOut)
        p->drawRect(box); // the corners are a pixel wide at this scale; rounding them costs a path per box
    else
        p->drawRoundedRect(box, 7, 7);
    if (option->state & QStyle::State_Selected) {
        p->setPen(QPen(QColor(0x22, 0x22, 0x22), 1.5, Qt::DotLine));
        p->setBrush(Qt::NoBrush);
        p->drawRoundedRect(box.adjusted(-3, -3, 3, 3), 9, 9);
    }

    // Zoomed far out (a large tree fitted to the view) the text is unreadable anyway, and laying
    // it out for a thousand boxes is what would make the window stutter: boxes and V bars only.
    if (farOut) {
        if (!root) {
            p->setPen(Qt::NoPen);
            p->setBrush(statusColor(*n, s));
            p->drawRect(QRectF(8, kHeight - 18, (kWidth - 16) * std::clamp(n->value(), 0.0, 1.0), 10));
        }
        // A tree of a few dozen nodes fitted to a window of 1280 x 800 is drawn at about 0.4:
        // there the id (and J, where it fits) still reads, in a font about 10 pixels high on the
        // screen. A large tree fitted is drawn smaller than kLabelsFromDetail: boxes and bars.
        if (detail >= kLabelsFromDetail) {
            QFont label = p->font();
            label.setBold(true);
            label.setPixelSize(static_cast<int>(std::min(10.0 / detail, kHeight * 0.42)));
            p->setFont(label);
            p->setPen(pruned ? QColor(0x8a, 0x8a, 0x8a) : QColor(0x1e, 0x1e, 0x1e));
            const QFontMetrics fm(label);
            const QString id = root ? QStringLiteral("root") : m_id;
            QString text = id;
            if (n->bestAttempt)
                text += QStringLiteral("  J %1").arg(s.tree.attempt(*n->bestAttempt)->score(), 0, 'f', 0);
            if (fm.horizontalAdvance(text) > kWidth - 16)
                text = id;
            p->drawText(QRectF(8, 4, kWidth - 16, kHeight - 26), Qt::AlignLeft | Qt::AlignVCenter, text);
        }
        return;
    }
    const QColor text = pruned ? QColor(0x8a, 0x8a, 0x8a) : QColor(0x1e, 0x1e, 0x1e);
    QFont bold = p->font();
    bold.setPointSizeF(9.0);
    bold.setBold(true);
    p->setFont(bold);
    p->setPen(text);
    QString head = root ? QStringLiteral("root") : m_id;
    if (n->bestAttempt)
        head += QStringLiteral("   J %1").arg(s.tree.attempt(*n->bestAttempt)->score(), 0, 'f', 1);
    else if (n->status == NodeStatus::Closed && !root)
        head += QStringLiteral("   failed");
    if (active)
        head += QStringLiteral("   running");
    p->drawText(QRectF(8, 4, kWidth - 16, 16), Qt::AlignLeft | Qt::AlignVCenter, head);
    if (!n->attempts.empty()) {
        QFont small = bold;
        small.setBold(false);
        small.setPointSizeF(8.0);
        p->setFont(small);
        p->drawText(QRectF(8, 4, kWidth - 16, 16), Qt::AlignRight | Qt::AlignVCenter,
            QStringLiteral("%1 att.").arg(n->attempts.size()));
    }

    QFont body = p->font();
    body.setBold(false);
    body.setPointSizeF(8.5);
    p->setFont(body);
    const QString intent = QString::fromStdString(root ? std::string("the task") : n->intent).simplified();
    p->drawText(QRectF(8, 22, kWidth - 16, 32), Qt::AlignLeft | Qt::AlignTop,
        twoLines(intent, QFontMetrics(body), static_cast<int>(kWidth - 16)));

    if (!root) { // V as a bar with its value
        const qreal track = kWidth - 62;
        const QRectF bar(8, kHeight - 14, track, 6);
        p->setPen(QPen(QColor(0xbb, 0xbb, 0xbb), 1));
        p->setBrush(Qt::white);
        p->drawRoundedRect(bar, 3, 3);
        p->setPen(Qt::NoPen);
        p->setBrush(statusColor(*n, s));
        p->drawRoundedRect(QRectF(bar.topLeft(), QSizeF(track * std::clamp(n->value(), 0.0, 1.0), 6)), 3, 3);
        p->setPen(text);
        p->drawText(QRectF(kWidth - 52, kHeight - 20, 44, 16), Qt::AlignRight | Qt::AlignVCenter,
            QStringLiteral("V %1").arg(n->value(), 0, 'f', 2));
    }
}

} // namespace ks::ui
