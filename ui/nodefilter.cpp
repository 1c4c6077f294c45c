#include "nodefilter.h"

#include "searchdocument.h"

#include <algorithm>

namespace ks::ui {

bool nodeMatches(const SearchState& state, const SearchNode& node, const QString& filter)
{
    const QStringList words = filter.split(u' ', Qt::SkipEmptyParts);
    if (words.isEmpty())
        return true;
    QString haystack = QString::fromStdString(node.id + '\n' + node.intent + '\n' + node.rationale + '\n')
        + QLatin1String(nodeStatusName(node.status)) + u'\n' + QLatin1String(authorName(node.createdBy));
    for (const int i : node.attempts)
        if (const Attempt* a = state.tree.attempt(i); a && a->evaluated)
            haystack += u'\n' + QLatin1String(verdictName(a->evaluation.status));
    return std::ranges::all_of(words, [&](const QString& w) { return haystack.contains(w, Qt::CaseInsensitive); });
}

NodeFilterProxy::NodeFilterProxy(const SearchDocument& document, QObject* parent)
    : QSortFilterProxyModel(parent)
    , m_document(document)
{
    setSortRole(Qt::UserRole);
    // A node's verdicts and status change as the search goes on: filter again when rows change.
    setDynamicSortFilter(true);
}

void NodeFilterProxy::setNodeFilter(const QString& filter)
{
    if (filter == m_filter)
        return;
    m_filter = filter;
    invalidateFilter();
}

bool NodeFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    if (sourceParent.isValid() || m_filter.trimmed().isEmpty())
        return true;
    const auto& nodes = m_document.state().tree.nodes();
    return sourceRow < static_cast<int>(nodes.size())
        && nodeMatches(m_document.state(), nodes[static_cast<std::size_t>(sourceRow)], m_filter);
}

} // namespace ks::ui
