#pragma once

#include <QGraphicsView>
#include <QHash>
#include <QTimer>

namespace ks::ui {

class EdgeLayer;
class NodeItem;
class SearchDocument;

// The intent tree as a graph: one box per node (status colour, V bar, best J; pruned nodes grey
// and dashed, the active node outlined, the best in gold), zoom with the wheel, pan by dragging,
// fit to view. Follows the document incrementally: a changed node repaints alone; new nodes are
// added and the layout is recomputed once for a burst of insertions, moving only the boxes whose
// place changed. The keyboard walks the tree (arrows: parent, first child, siblings; Enter opens
// the selected node in the inspector), and a filter dims the nodes that do not match it.
class TreeGraphView : public QGraphicsView
{
    Q_OBJECT
public:
    explicit TreeGraphView(const SearchDocument& document, QWidget* parent = nullptr);
    ~TreeGraphView() override;

    void selectNode(const QString& id);
    QString selectedNode() const;
    int itemCount() const { return static_cast<int>(m_items.size()); }
    int edgeCount() const;
    int layoutCount() const { return m_layouts; } // how many layouts ran (tests, benchmark)
    // Nodes that do not match `filter` (nodeMatches) are drawn faint; empty shows all alike.
    void setNodeFilter(const QString& filter);
    [[nodiscard]] int dimmedCount() const;

public slots:
    void fitToView();
    void zoomBy(double factor);

signals:
    void nodeSelected(const QString& id);
    void nodeContextMenu(const QString& id, const QPoint& globalPos);
    void nodeActivated(const QString& id); // Enter on the selected node

protected:
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

private:
    void rebuild();
    void addNodes(const QStringList& ids);
    void relayout();
    void updateEdges();
    void updateRenderHints();
    void applyFilter(NodeItem* item);

    const SearchDocument& m_document;
    QGraphicsScene* m_scene;
    QHash<QString, NodeItem*> m_items;
    EdgeLayer* m_edgeLayer = nullptr; // owned by the scene
    QTimer m_layoutTimer;
    int m_layouts = 0;
    QString m_bestNode;
    bool m_fitOnNextLayout = true;
    bool m_autoFit = true; // the view follows the tree until the user zooms or pans
    bool m_refitPending = false;
    QString m_filter;
};

} // namespace ks::ui
