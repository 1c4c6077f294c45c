#include "sessionlibrarymodel.h"

#include <search/stopreason.h>
#include <session/runsummary.h>
#include <util/numberformat.h>
#include <util/qtext.h>

#include <QDateTime>

namespace ks::ui {

int SessionLibraryModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_sessions.size());
}

int SessionLibraryModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString SessionLibraryModel::stateText(const SessionOverview& s)
{
    if (!s.error.empty())
        return tr("unreadable");
    if (s.finishedReason.empty())
        return tr("interrupted (or running)");
    if (stopKindOf(s.finishedReason) == StopReason::Kind::StoppedByPerson)
        return tr("stopped");
    return tr("finished: %1").arg(q(s.finishedReason));
}

QVariant SessionLibraryModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const SessionOverview& s = at(index.row());
    const bool sort = role == SortRole;
    if (role == Qt::ToolTipRole)
        return s.error.empty() ? QString(q(s.dir.string()) + (s.label.empty() ? QString() : u"\n"_qs + q(s.label)))
                               : q(s.error);
    if (role != Qt::DisplayRole && !sort)
        return {};
    switch (index.column()) {
    case Session:
        return q(s.dir.filename().string());
    case Task:
        return q(s.taskName);
    case Strategy:
        return q(s.strategy);
    case BestJ:
        if (sort)
            return s.bestScore;
        return s.bestScore > 0 ? q(formatScore(s.bestScore)) : u"-"_qs;
    case Evaluations:
        if (sort)
            return s.evaluations;
        return QStringLiteral("%1 / %2").arg(s.evaluations).arg(s.budget);
    case Cost:
        if (sort)
            return s.dollars;
        return QString(q(formatDollars(s.dollars)) + (s.unpricedCalls ? u"*"_qs : QString()));
    case State:
        return stateText(s);
    case Created: {
        const QDateTime t = QDateTime::fromString(q(s.created), Qt::ISODate);
        if (sort)
            return t.isValid() ? t.toSecsSinceEpoch() : 0;
        return t.isValid() ? t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")) : q(s.created);
    }
    default:
        return {};
    }
}

QVariant SessionLibraryModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Session:
        return tr("Session");
    case Task:
        return tr("Task");
    case Strategy:
        return tr("Strategy");
    case BestJ:
        return tr("Best J");
    case Evaluations:
        return tr("Evaluations");
    case Cost:
        return tr("Cost");
    case State:
        return tr("State");
    case Created:
        return tr("Created");
    default:
        return {};
    }
}

void SessionLibraryModel::setSessions(std::vector<SessionOverview> sessions)
{
    beginResetModel();
    m_sessions = std::move(sessions);
    endResetModel();
}

void SessionLibraryModel::remove(const std::filesystem::path& dir)
{
    for (std::size_t i = 0; i < m_sessions.size(); ++i)
        if (m_sessions[i].dir == dir) {
            const int row = static_cast<int>(i);
            beginRemoveRows({}, row, row);
            m_sessions.erase(m_sessions.begin() + row);
            endRemoveRows();
            return;
        }
}

} // namespace ks::ui
