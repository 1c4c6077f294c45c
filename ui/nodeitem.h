#pragma once

#include <QFontMetrics>
#include <QGraphicsItem>
#include <QString>

namespace ks::ui {

class SearchDocument;

// One node of the intent graph. Holds only its id and reads everything else from the document
// when it paints, so a change of the node costs one repaint and nothing else.
class NodeItem : public QGraphicsItem
{
public:
    static constexpr qreal kWidth = 210, kHeight = 74;
    // Below this scale the boxes are drawn without text (NodeItem::paint).
    static constexpr qreal kLabelsFromDetail = 0.25;
    enum { Type = UserType + 1 };

    NodeItem(const SearchDocument& document, QString id);
    int type() const override { return Type; }
    const QString& nodeId() const { return m_id; }

    // `text` in at most two lines of `width` pixels: whole words on the first, the rest on the
    // second, elided at its end ("\n" between them). Word wrapping in a fixed rectangle spilled a
    // third line over the V bar.
    static QString twoLines(const QString& text, const QFontMetrics& fm, int width);

    QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

private:
    const SearchDocument& m_document;
    QString m_id;
};

} // namespace ks::ui
