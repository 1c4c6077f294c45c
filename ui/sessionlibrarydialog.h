#pragma once

#include <QDialog>

#include <filesystem>
#include <vector>

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace ks::ui {

class SessionLibraryModel;

// File > Session Library: the recent sessions and those in the sessions folder, with task,
// strategy, best J, evaluations, cost and state. Reading a session replays its journal, so the
// folders are read off the window's thread and the table fills when they are in. From here a
// person opens, continues, compares, exports or deletes (after a confirmation naming the folder)
// sessions; the window opens, continues and exports (the signals), the dialog compares (in a
// SessionCompareDialog of its own) and deletes.
class SessionLibraryDialog : public QDialog
{
    Q_OBJECT
public:
    explicit SessionLibraryDialog(QWidget* parent = nullptr);

    // The folders the library lists: the recent sessions first, then the sessions folder's
    // sub-folders that hold a session (newest first), each once, those that exist.
    static std::vector<std::filesystem::path> librarySessions();

    // Reads `dirs` in the background; `loaded` when the table holds them.
    void load(const std::vector<std::filesystem::path>& dirs);
    // A session the window runs now: it may not be deleted.
    void setBusySession(const std::filesystem::path& dir) { m_busy = dir; }
    [[nodiscard]] SessionLibraryModel* model() const { return m_model; }
    // Selects the sessions of these folders (tests and the window's "current session").
    void select(const std::vector<std::filesystem::path>& dirs);
    // Deletes the selected session after asking; false when refused or cancelled.
    bool deleteSelected();
    // Opens the comparison of the selected sessions (two or more); null when fewer are selected.
    class SessionCompareDialog* compareSelected();

signals:
    void loaded();
    void openRequested(const QString& dir);
    void continueRequested(const QString& dir);
    void exportRequested(const QString& dir);

private:
    [[nodiscard]] QStringList selectedDirs() const;
    void updateButtons();

    SessionLibraryModel* m_model;
    QSortFilterProxyModel* m_proxy;
    QTableView* m_table;
    QLabel* m_status;
    QPushButton *m_open, *m_continue, *m_compare, *m_export, *m_delete;
    std::filesystem::path m_busy;
    int m_generation = 0; // a later load() makes the results of an earlier one stale
};

} // namespace ks::ui
