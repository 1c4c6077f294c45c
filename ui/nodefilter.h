#pragma once

#include <search/searchstate.h>

#include <QSortFilterProxyModel>
#include <QString>

namespace ks::ui {

class SearchDocument;

// Whether a node answers a filter typed by a person: every word of `filter` (case ignored) must
// appear in the node's id, intent, rationale, status or author, or in the verdict of one of its
// attempts ("compile_error", "passed"; a space in a verdict is written as in its name, with an
// underscore). An empty filter matches every node.
bool nodeMatches(const SearchState& state, const SearchNode& node, const QString& filter);

// The Nodes table's proxy: sorts by Qt::UserRole and keeps the rows whose node matches the filter.
class NodeFilterProxy : public QSortFilterProxyModel
{
    Q_OBJECT
public:
    NodeFilterProxy(const SearchDocument& document, QObject* parent = nullptr);
    void setNodeFilter(const QString& filter);
    [[nodiscard]] QString nodeFilter() const { return m_filter; }

protected:
    [[nodiscard]] bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    const SearchDocument& m_document;
    QString m_filter;
};

} // namespace ks::ui
