#pragma once

#include <QAbstractTableModel>

namespace ks::ui {

class SearchDocument;

// Every node of the tree as a row (creation order), for the sortable table beside the graph.
// Display text in Qt::DisplayRole, raw values for sorting in Qt::UserRole, the node id in
// NodeIdRole. Follows the document's signals row by row.
class NodeTableModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Id, Status, Value, BestScore, Attempts, Parent, Depth, CreatedBy, Intent, ColumnCount };
    static constexpr int NodeIdRole = Qt::UserRole + 1;

    explicit NodeTableModel(const SearchDocument& document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    QModelIndex indexOfNode(const QString& id) const;

private:
    void onInserted(const QStringList& ids);
    void onChanged(const QStringList& ids);

    const SearchDocument& m_document;
    int m_rows = 0; // rows announced to views (the document may be ahead inside a signal)
};

} // namespace ks::ui
