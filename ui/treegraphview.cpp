#include "treegraphview.h"

#include "nodeitem.h"
#include "searchdocument.h"

#include <tree/treelayout.h>

#include <QContextMenuEvent>
#include <QGraphicsPathItem>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QWheelEvent>

namespace ks::ui {

TreeGraphView::TreeGraphView(const SearchDocument& document, QWidget* parent)
    : QGraphicsView(parent)
    , m_document(document)
    , m_scene(new QGraphicsScene(this))
{
    setObjectName(QStringLiteral("treeGraph"));
    setScene(m_scene);
    setRenderHint(QPainter::Antialiasing);
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
    setBackgroundBrush(QColor(0xfb, 0xfb, 0xfb));
    m_layoutTimer.setSingleShot(true);
    m_layoutTimer.setInterval(0); // one layout per burst of insertions
    connect(&m_layoutTimer, &QTimer::timeout, this, &TreeGraphView::relayout);
    connect(&document, &SearchDocument::reset, this, &TreeGraphView::rebuild);
    connect(&document, &SearchDocument::nodesInserted, this, &TreeGraphView::addNodes);
    connect(&document, &SearchDocument::nodesChanged, this, [this](const QStringList& ids) {
        for (const QString& id : ids)
            if (NodeItem* item = m_items.value(id))
                item->update();
        // Pruning or restoring changes the edge's style; the best node can move anywhere.
        for (const QString& id : ids)
            if (QGraphicsPathItem* edge = m_edges.value(id)) {
                const SearchNode* n = m_document.state().tree.find(id.toStdString());
                edge->setPen(
                    QPen(n && n->status == NodeStatus::Pruned ? QColor(0xcc, 0xcc, 0xcc) : QColor(0x8c, 0x8c, 0x8c),
                        1.5, n && n->status == NodeStatus::Pruned ? Qt::DashLine : Qt::SolidLine));
            }
    });
    connect(&document, &SearchDocument::attemptAdded, this, [this] { // the gold outline follows the best attempt
        const auto best = m_document.state().bestAttempt();
        const QString bestNode =
            best ? QString::fromStdString(m_document.state().tree.attempt(*best)->node) : QString();
        if (bestNode == m_bestNode)
            return;
        for (const QString& id : {m_bestNode, bestNode})
            if (NodeItem* item = m_items.value(id))
                item->update();
        m_bestNode = bestNode;
    });
    connect(m_scene, &QGraphicsScene::selectionChanged, this, [this] {
        const QString id = selectedNode();
        if (!id.isEmpty())
            emit nodeSelected(id);
    });
    rebuild();
}

void TreeGraphView::rebuild()
{
    m_scene->clear();
    m_items.clear();
    m_edges.clear();
    QStringList ids;
    for (const auto& n : m_document.state().tree.nodes())
        ids << QString::fromStdString(n.id);
    m_fitOnNextLayout = true;
    addNodes(ids);
}

void TreeGraphView::addNodes(const QStringList& ids)
{
    const auto& tree = m_document.state().tree;
    for (const QString& id : ids) {
        if (m_items.contains(id))
            continue;
        auto* item = new NodeItem(m_document, id);
        item->setZValue(1);
        m_scene->addItem(item);
        m_items.insert(id, item);
        const SearchNode* n = tree.find(id.toStdString());
        if (n && !n->parent.empty()) {
            auto* edge = m_scene->addPath(QPainterPath(), QPen(QColor(0x8c, 0x8c, 0x8c), 1.5));
            edge->setZValue(0);
            m_edges.insert(id, edge);
        }
    }
    m_layoutTimer.start();
}

void TreeGraphView::relayout()
{
    ++m_layouts;
    TreeLayoutOptions o;
    o.nodeWidth = NodeItem::kWidth;
    o.nodeHeight = NodeItem::kHeight;
    const TreeLayout layout = layoutTree(m_document.state().tree, o);
    for (auto it = m_items.begin(); it != m_items.end(); ++it) {
        const auto p = layout.positions.find(it.key().toStdString());
        if (p == layout.positions.end())
            continue;
        const QPointF at(p->second.x, p->second.y);
        if (it.value()->pos() != at)
            it.value()->setPos(at);
    }
    for (auto it = m_edges.begin(); it != m_edges.end(); ++it) {
        const SearchNode* n = m_document.state().tree.find(it.key().toStdString());
        NodeItem* child = m_items.value(it.key());
        NodeItem* parent = n ? m_items.value(QString::fromStdString(n->parent)) : nullptr;
        if (!child || !parent)
            continue;
        const QPointF from = parent->pos() + QPointF(NodeItem::kWidth / 2, NodeItem::kHeight);
        const QPointF to = child->pos() + QPointF(NodeItem::kWidth / 2, 0);
        const qreal midY = (from.y() + to.y()) / 2;
        QPainterPath path(from);
        path.cubicTo(QPointF(from.x(), midY), QPointF(to.x(), midY), to);
        if (it.value()->path() != path)
            it.value()->setPath(path);
        const bool pruned = n->status == NodeStatus::Pruned;
        it.value()->setPen(QPen(
            pruned ? QColor(0xcc, 0xcc, 0xcc) : QColor(0x8c, 0x8c, 0x8c), 1.5, pruned ? Qt::DashLine : Qt::SolidLine));
    }
    m_scene->setSceneRect(m_scene->itemsBoundingRect().adjusted(-40, -40, 40, 40));
    if (m_fitOnNextLayout || m_autoFit) {
        m_fitOnNextLayout = false;
        fitToView();
    }
}

void TreeGraphView::fitToView()
{
    m_autoFit = true;
    if (m_items.isEmpty())
        return;
    fitInView(m_scene->itemsBoundingRect().adjusted(-20, -20, 20, 20), Qt::KeepAspectRatio);
    if (transform().m11() > 1.2) // a small tree stays at a readable size instead of filling the screen
        setTransform(QTransform::fromScale(1.2, 1.2));
}

void TreeGraphView::resizeEvent(QResizeEvent* event)
{
    QGraphicsView::resizeEvent(event);
    if (m_autoFit)
        fitToView();
}

void TreeGraphView::mousePressEvent(QMouseEvent* event)
{
    QGraphicsView::mousePressEvent(event);
    if (event->button() == Qt::LeftButton && !itemAt(event->pos()))
        m_autoFit = false; // a drag on the background pans
}

void TreeGraphView::zoomBy(double factor)
{
    m_autoFit = false;
    const double current = transform().m11();
    if ((factor > 1 && current < 4.0) || (factor < 1 && current > 0.05))
        scale(factor, factor);
}

void TreeGraphView::wheelEvent(QWheelEvent* event)
{
    zoomBy(event->angleDelta().y() > 0 ? 1.15 : 1.0 / 1.15);
    event->accept();
}

void TreeGraphView::contextMenuEvent(QContextMenuEvent* event)
{
    for (QGraphicsItem* item : items(event->pos()))
        if (item->type() == NodeItem::Type) {
            auto* node = static_cast<NodeItem*>(item);
            m_scene->clearSelection();
            node->setSelected(true);
            emit nodeContextMenu(node->nodeId(), event->globalPos());
            return;
        }
}

void TreeGraphView::selectNode(const QString& id)
{
    NodeItem* item = m_items.value(id);
    if (!item || item->isSelected())
        return;
    m_scene->clearSelection();
    item->setSelected(true);
    ensureVisible(item, 40, 40);
}

QString TreeGraphView::selectedNode() const
{
    const auto selected = m_scene->selectedItems();
    for (QGraphicsItem* item : selected)
        if (item->type() == NodeItem::Type)
            return static_cast<NodeItem*>(item)->nodeId();
    return {};
}

} // namespace ks::ui
