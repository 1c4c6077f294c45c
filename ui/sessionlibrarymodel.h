#pragma once

#include <session/sessionoverview.h>

#include <QAbstractTableModel>

#include <vector>

namespace ks::ui {

// The sessions of the library, one row each (SessionOverview values read off the window's
// thread). Sorting is left to a QSortFilterProxyModel: SortRole gives numbers and times as
// numbers.
class SessionLibraryModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Session, Task, Strategy, BestJ, Evaluations, Cost, State, Created, ColumnCount };
    static constexpr int SortRole = Qt::UserRole + 1;

    using QAbstractTableModel::QAbstractTableModel;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    void setSessions(std::vector<SessionOverview> sessions);
    [[nodiscard]] const std::vector<SessionOverview>& sessions() const { return m_sessions; }
    // The row's session; the model's own rows, not a proxy's.
    [[nodiscard]] const SessionOverview& at(int row) const { return m_sessions.at(static_cast<std::size_t>(row)); }
    // Drops the session of `dir` (after it was deleted).
    void remove(const std::filesystem::path& dir);

    // "finished: budget of 40 evaluations used", "interrupted (or running)", "unreadable".
    static QString stateText(const SessionOverview& s);

private:
    std::vector<SessionOverview> m_sessions;
};

} // namespace ks::ui
