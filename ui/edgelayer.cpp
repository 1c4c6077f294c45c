#include "edgelayer.h"

#include <QPainter>
#include <QStyleOptionGraphicsItem>

namespace ks::ui {

namespace {

constexpr double kCurvesFromDetail = 0.45; // the scale at which the boxes show their text too

QPen edgePen(bool pruned)
{
    return QPen(
        pruned ? QColor(0xcc, 0xcc, 0xcc) : QColor(0x8c, 0x8c, 0x8c), 1.5, pruned ? Qt::DashLine : Qt::SolidLine);
}

} // namespace

EdgeLayer::EdgeLayer()
{
    setFlag(ItemUsesExtendedStyleOption); // for exposedRect
    setZValue(0);
}

void EdgeLayer::setEdges(std::vector<Edge> edges, const QRectF& bounds)
{
    prepareGeometryChange();
    m_edges = std::move(edges);
    m_bounds = bounds;
    m_liveLines.clear();
    m_prunedLines.clear();
    for (const Edge& e : m_edges)
        (e.pruned ? m_prunedLines : m_liveLines).emplace_back(e.from, e.to);
    update();
}

void EdgeLayer::paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget* /*widget*/)
{
    if (option->levelOfDetailFromTransform(p->worldTransform()) < kCurvesFromDetail) {
        for (const bool pruned : {false, true}) {
            const auto& lines = pruned ? m_prunedLines : m_liveLines;
            p->setPen(edgePen(pruned));
            p->drawLines(lines.data(), static_cast<int>(lines.size()));
        }
        return;
    }
    const QRectF exposed = option->exposedRect;
    p->setBrush(Qt::NoBrush);
    for (const bool pruned : {false, true}) {
        p->setPen(edgePen(pruned));
        for (const Edge& e : m_edges) {
            if (e.pruned != pruned || !exposed.intersects(QRectF(e.from, e.to).normalized().adjusted(-2, -2, 2, 2)))
                continue;
            const qreal midY = (e.from.y() + e.to.y()) / 2;
            QPainterPath path(e.from);
            path.cubicTo(QPointF(e.from.x(), midY), QPointF(e.to.x(), midY), e.to);
            p->drawPath(path);
        }
    }
}

} // namespace ks::ui
