#include "nodetablemodel.h"

#include "searchdocument.h"
#include "uistyle.h"

#include <util/numberformat.h>
#include <util/qtext.h>

#include <QBrush>

namespace ks::ui {

NodeTableModel::NodeTableModel(const SearchDocument& document, QObject* parent)
    : QAbstractTableModel(parent)
    , m_document(document)
    , m_rows(document.state().tree.nodeCount())
{
    connect(&document, &SearchDocument::reset, this, [this] {
        beginResetModel();
        m_rows = m_document.state().tree.nodeCount();
        endResetModel();
    });
    connect(&document, &SearchDocument::nodesInserted, this, &NodeTableModel::onInserted);
    connect(&document, &SearchDocument::nodesChanged, this, &NodeTableModel::onChanged);
}

int NodeTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : m_rows;
}

int NodeTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

void NodeTableModel::onInserted(const QStringList& ids)
{
    const int total = m_document.state().tree.nodeCount();
    if (ids.isEmpty() || total <= m_rows)
        return;
    beginInsertRows({}, m_rows, total - 1);
    m_rows = total;
    endInsertRows();
}

void NodeTableModel::onChanged(const QStringList& ids)
{
    for (const QString& id : ids) {
        const QModelIndex first = indexOfNode(id);
        if (first.isValid())
            emit dataChanged(first, index(first.row(), ColumnCount - 1));
    }
}

QModelIndex NodeTableModel::indexOfNode(const QString& id) const
{
    const auto& tree = m_document.state().tree;
    const SearchNode* n = tree.find(id.toStdString());
    const int row = n ? static_cast<int>(n - tree.nodes().data()) : -1; // nodes are stored in row order
    return row >= 0 && row < m_rows ? index(row, 0) : QModelIndex();
}

QVariant NodeTableModel::data(const QModelIndex& index, int role) const
{
    const auto& tree = m_document.state().tree;
    if (!index.isValid() || index.row() >= m_rows || index.row() >= tree.nodeCount())
        return {};
    const SearchNode& n = tree.nodes()[static_cast<std::size_t>(index.row())];
    const Attempt* best = n.bestAttempt ? tree.attempt(*n.bestAttempt) : nullptr;
    const bool isRoot = n.id == SearchTree::kRootId;
    if (role == NodeIdRole)
        return QString::fromStdString(n.id);
    if (role == Qt::ForegroundRole)
        return n.status == NodeStatus::Pruned ? QBrush(Qt::gray) : QVariant();
    if (role == Qt::DecorationRole && index.column() == Status)
        return statusColor(n, m_document.state());
    if (role == Qt::ToolTipRole && index.column() == Intent)
        return QString::fromStdString(n.intent);
    if (role == Qt::TextAlignmentRole)
        return index.column() == Intent || index.column() == Status || index.column() == CreatedBy
            ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
            : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    const bool display = role == Qt::DisplayRole;
    if (!display && role != Qt::UserRole)
        return {};
    switch (index.column()) {
    case Id:
        return display ? QVariant(QString::fromStdString(n.id)) : QVariant(index.row());
    case Status:
        return QString::fromLatin1(nodeStatusName(n.status).data());
    case Value:
        if (isRoot)
            return display ? QVariant() : QVariant(2.0);
        return display ? QVariant(q(formatPriority(n.value()))) : QVariant(n.value());
    case BestScore:
        if (!best)
            return display ? QVariant(n.status == NodeStatus::Closed && !isRoot ? tr("failed") : QString())
                           : QVariant(-1.0);
        return display ? QVariant(q(formatScore(best->score()))) : QVariant(best->score());
    case Attempts:
        return static_cast<int>(n.attempts.size());
    case Parent:
        return QString::fromStdString(n.parent);
    case Depth:
        return tree.depth(n.id);
    case CreatedBy:
        return QString::fromLatin1(authorName(n.createdBy).data()).replace(u'_', u' ');
    case Intent:
        return QString::fromStdString(n.intent);
    default:
        return {};
    }
}

QVariant NodeTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {"Node", "Status", "V", "Best J", "Attempts", "Parent", "Depth", "By", "Intent"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

} // namespace ks::ui
