#include "treegraphview.h"

#include "edgelayer.h"
#include "nodefilter.h"
#include "nodeitem.h"
#include "searchdocument.h"
#include "treenavigation.h"

#include <tree/treelayout.h>

#include <QContextMenuEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QWheelEvent>

#include <optional>

namespace ks::ui {

TreeGraphView::TreeGraphView(const SearchDocument& document, QWidget* parent)
    : QGraphicsView(parent)
    , m_document(document)
    , m_scene(new QGraphicsScene(this))
{
    setObjectName(QStringLiteral("treeGraph"));
    // Every insertion moves many boxes: a spatial index would be rebuilt each time.
    m_scene->setItemIndexMethod(QGraphicsScene::NoIndex);
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
            if (NodeItem* item = m_items.value(id)) {
                applyFilter(item); // a new verdict or status may make it match
                item->update();
            }
        // Pruning or restoring changes an edge's style.
        if (!m_layoutTimer.isActive())
            updateEdges();
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
    m_edgeLayer = new EdgeLayer;
    m_scene->addItem(m_edgeLayer);
    QStringList ids;
    for (const auto& n : m_document.state().tree.nodes())
        ids << QString::fromStdString(n.id);
    m_fitOnNextLayout = true;
    addNodes(ids);
}

void TreeGraphView::addNodes(const QStringList& ids)
{
    for (const QString& id : ids) {
        if (m_items.contains(id))
            continue;
        auto* item = new NodeItem(m_document, id);
        item->setZValue(1);
        applyFilter(item);
        m_scene->addItem(item);
        m_items.insert(id, item);
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
    updateEdges();
    // From the layout's own size: asking the scene for the items' bounds walks every item.
    m_scene->setSceneRect(QRectF(-40, -40, std::max(layout.width, NodeItem::kWidth) + 80, layout.height + 80));
    if (m_fitOnNextLayout || m_autoFit) {
        m_fitOnNextLayout = false;
        fitToView();
    }
}

void TreeGraphView::updateEdges()
{
    const SearchTree& tree = m_document.state().tree;
    std::vector<EdgeLayer::Edge> edges;
    edges.reserve(m_items.size());
    QRectF bounds;
    for (const SearchNode& n : tree.nodes()) {
        const NodeItem* child = n.parent.empty() ? nullptr : m_items.value(QString::fromStdString(n.id));
        const NodeItem* parent = child ? m_items.value(QString::fromStdString(n.parent)) : nullptr;
        if (!parent)
            continue;
        const QPointF from = parent->pos() + QPointF(NodeItem::kWidth / 2, NodeItem::kHeight);
        const QPointF to = child->pos() + QPointF(NodeItem::kWidth / 2, 0);
        edges.push_back({from, to, n.status == NodeStatus::Pruned});
        bounds |= QRectF(from, to).normalized();
    }
    m_edgeLayer->setEdges(std::move(edges), bounds.adjusted(-2, -2, 2, 2));
}

void TreeGraphView::fitToView()
{
    m_autoFit = true;
    if (m_items.isEmpty())
        return;
    // The whole scene rect: fitting less would bring the scroll bars back, which resizes the
    // viewport, which refits, and so on.
    fitInView(m_scene->sceneRect(), Qt::KeepAspectRatio);
    if (transform().m11() > 1.2) // a small tree stays at a readable size instead of filling the screen
        setTransform(QTransform::fromScale(1.2, 1.2));
    updateRenderHints();
}

void TreeGraphView::resizeEvent(QResizeEvent* event)
{
    QGraphicsView::resizeEvent(event);
    if (m_autoFit && !m_refitPending) { // once, after the layout has settled
        m_refitPending = true;
        QTimer::singleShot(0, this, [this] {
            m_refitPending = false;
            if (m_autoFit)
                fitToView();
        });
    }
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
    updateRenderHints();
}

void TreeGraphView::updateRenderHints()
{
    // Far out, a thousand antialiased curves cost more than they show.
    setRenderHint(QPainter::Antialiasing, transform().m11() >= 0.45);
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

void TreeGraphView::keyPressEvent(QKeyEvent* event)
{
    const QString current = selectedNode();
    const auto stepFor = [](int key) -> std::optional<TreeStep> {
        switch (key) {
        case Qt::Key_Up:
            return TreeStep::Parent;
        case Qt::Key_Down:
            return TreeStep::FirstChild;
        case Qt::Key_Left:
            return TreeStep::PreviousSibling;
        case Qt::Key_Right:
            return TreeStep::NextSibling;
        default:
            return std::nullopt;
        }
    };
    if (const auto step = stepFor(event->key())) {
        // With nothing selected the first arrow selects the root, where every walk starts.
        const std::string next = current.isEmpty()
            ? std::string(SearchTree::kRootId)
            : treeNeighbour(m_document.state().tree, current.toStdString(), *step);
        if (!next.empty())
            selectNode(QString::fromStdString(next));
        event->accept(); // the arrows walk the tree here; they do not scroll the view
        return;
    }
    if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) && !current.isEmpty()) {
        emit nodeActivated(current);
        event->accept();
        return;
    }
    QGraphicsView::keyPressEvent(event);
}

void TreeGraphView::setNodeFilter(const QString& filter)
{
    m_filter = filter;
    for (NodeItem* item : std::as_const(m_items))
        applyFilter(item);
}

void TreeGraphView::applyFilter(NodeItem* item)
{
    const SearchNode* n = m_document.state().tree.find(item->nodeId().toStdString());
    item->setOpacity(!n || nodeMatches(m_document.state(), *n, m_filter) ? 1.0 : 0.22);
}

int TreeGraphView::dimmedCount() const
{
    int dimmed = 0;
    for (const NodeItem* item : m_items)
        dimmed += item->opacity() < 1.0 ? 1 : 0;
    return dimmed;
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

TreeGraphView::~TreeGraphView()
{
    // QWidget deletes the scene (a child) after this body: its items' removal must not call back
    // into a view that is half gone.
    m_scene->disconnect(this);
}

int TreeGraphView::edgeCount() const
{
    return m_edgeLayer->edgeCount();
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
