#pragma once

#include <QGraphicsItem>
#include <QLineF>
#include <QPainterPath>

#include <vector>

namespace ks::ui {

// Every parent-to-child edge of the tree graph in one item. One item per edge made each repaint
// ask a thousand path items for their bounds, and a stroked curve's bounds are computed by
// stroking it; here the bounds are known from the layout. Far out the edges are straight lines
// drawn in one call; close up, curves, only those inside the exposed area.
class EdgeLayer : public QGraphicsItem
{
public:
    struct Edge {
        QPointF from; // bottom centre of the parent's box
        QPointF to; // top centre of the child's box
        bool pruned = false;
    };

    EdgeLayer();

    void setEdges(std::vector<Edge> edges, const QRectF& bounds);
    int edgeCount() const { return static_cast<int>(m_edges.size()); }

    QRectF boundingRect() const override { return m_bounds; }
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

private:
    std::vector<Edge> m_edges;
    std::vector<QLineF> m_liveLines;
    std::vector<QLineF> m_prunedLines;
    QRectF m_bounds;
};

} // namespace ks::ui
