#pragma once

#include "runcontroller.h"
#include "searchdocument.h"

#include <QFutureWatcher>
#include <QMainWindow>
#include <QUndoStack>

#include <dispatchexport.h>
#include <optional>

class QAction;
class QLabel;
class QSlider;
class QSpinBox;
class QStackedWidget;
class QTableWidget;
class QTableView;
class QListView;
class QPlainTextEdit;
class QLineEdit;
class QSystemTrayIcon;

namespace ks {
struct RunOptions;
struct SanitizerReport;
} // namespace ks

namespace ks::ui {

class ChartsPanel;
class EventLogModel;
class NodeFilterProxy;
class NodeInspector;
class NodeTableModel;
class SanitizerRun;
class WorkersModel;
class TreeGraphView;

// The main window: the intent tree as a graph (centre) and as a sortable table, the inspector of
// the selected node, the charts, the event log and the LLM's live output in docks; run controls,
// budget and K, and the history slider in the tool bar; budget, tokens, dollars, time and device
// in the status bar. Steering actions go through the undo stack to the running engine.
class NodeCompareDialog;

class SessionLibraryDialog;

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    SearchDocument& document() { return m_document; }
    RunController& controller() { return m_controller; }
    QUndoStack& undoStack() { return m_undo; }
    TreeGraphView* graph() const { return m_graph; }
    NodeInspector* inspector() const { return m_inspector; }
    ChartsPanel* charts() const { return m_charts; }
    QString currentNode() const { return m_currentNode; }
    QLineEdit* nodeFilter() const { return m_filter; }

    // The example session that ships with the application, or an empty path.
    static std::filesystem::path exampleSession();

signals:
    // A live search found a new best kernel or ended: shown in the status bar, and, when the
    // notifications setting is on, as a desktop notification and a taskbar alert.
    void notified(const QString& title, const QString& text);
    // File > Export Dispatching Kernel ended: `error` empty when the kernel was written;
    // `figures` both J, when they were measured.
    void dispatchExported(const QString& error, const QString& figures);

public slots:
    void reloadTasks();
    bool startSearch(const std::filesystem::path& dir, const ks::SessionConfig& config, const QString& seedSource = {});
    bool openSession(const QString& dir, bool resumeIfUnfinished);
    bool openExample();
    void selectNode(const QString& id);
    // Run > Continue This Session: the shown session goes on, whether it was killed, stopped by a
    // person or ended by a limit. `budget` (when set) replaces a budget that is used up; the
    // action asks for one then.
    bool continueSession(std::optional<int> budget = std::nullopt);
    // File > Session Library (mainwindowlibrary.cpp): the dialog, shown and reading its sessions.
    ks::ui::SessionLibraryDialog* showSessionLibrary();
    // View > Reset Layout: the docks back where they start, sized in shares of the window.
    void resetLayout();
    // File > Export Dispatching Kernel into `folder` (mainwindowdispatch.cpp): the export, then the
    // dispatching kernel measured in the background; null when the export could not start.
    QFutureWatcher<ks::DispatchExportResult>* exportDispatching(const QString& folder);
    // Node > Compare With Another Node (mainwindowcompare.cpp): the two nodes' representative
    // attempts side by side; null when either has no evaluated attempt.
    ks::ui::NodeCompareDialog* compareNodes(const QString& first, const QString& second);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void createDocks();
    void createActions();
    void createToolBar();
    void createStatusBar();
    void updateActions();
    void updateStatus();
    void updateWorkers(); // the Workers panel's summary and the status bar's evaluators
    void updateHistory();
    void showNodeMenu(const QString& id, const QPoint& at);
    // Notices of a live search (mainwindownotice.cpp).
    void noticeAttempt(int index);
    void updateConfinementStatus();
    // The nodes the selected one can be compared with, as "n4: J 1793.5, intent..." items.
    [[nodiscard]] QStringList comparableNodes() const;
    void askNodeToCompare();
    void askExportDispatching();
    void notify(const QString& title, const QString& text);
    void sizeNodeColumns();
    void applyNodeFilter(const QString& filter);
    RunOptions runOptions() const;

    // compute-sanitizer on an attempt's program, and its report (mainwindowsanitize.cpp).
    void sanitizeAttempt(int attempt, int tool);
    void showSanitizerReport(int attempt, const ks::SanitizerReport& report);

    // Steering and run control (mainwindowactions.cpp).
    void setValue();
    void pruneOrRestore(bool restore);
    void injectIntent();
    void editIntent();
    void pinNode();
    void evaluateCode();
    void applyLimits();
    void sendRunCommand(HumanCommand::Kind kind);
    void newSearch();
    void openSessionDialog();
    void exportSession();
    void showSettings();

    SearchDocument m_document;
    RunController m_controller;
    QUndoStack m_undo;
    QString m_currentNode;

    QStackedWidget* m_center = nullptr;
    QTableWidget* m_tasks = nullptr;
    TreeGraphView* m_graph = nullptr;
    NodeInspector* m_inspector = nullptr;
    SanitizerRun* m_sanitizerRun = nullptr;
    ChartsPanel* m_charts = nullptr;
    NodeTableModel* m_tableModel = nullptr;
    WorkersModel* m_workersModel = nullptr;
    QLabel* m_workersQueue = nullptr;
    NodeFilterProxy* m_tableProxy = nullptr;
    QLineEdit* m_filter = nullptr;
    QSystemTrayIcon* m_tray = nullptr; // made at the first notice where a tray exists
    std::filesystem::path m_confinementNoticed; // the session whose unconfined candidates were notified
    QTableView* m_table = nullptr;
    EventLogModel* m_logModel = nullptr;
    QWidget* m_graphPage = nullptr;
    QLabel* m_sessionLabel = nullptr;
    QListView* m_log = nullptr;
    bool m_logFollowPending = false;
    QPlainTextEdit* m_stream = nullptr;
    QSlider* m_history = nullptr;
    QLabel* m_historyLabel = nullptr;
    QSpinBox *m_budget = nullptr, *m_k = nullptr;
    QLabel *m_statusRun = nullptr, *m_statusBudget = nullptr, *m_statusTokens = nullptr, *m_statusDollars = nullptr,
           *m_statusElapsed = nullptr, *m_statusDevice = nullptr, *m_statusWorkers = nullptr,
           *m_statusConfinement = nullptr;
    QAction *m_pause = nullptr, *m_step = nullptr, *m_resume = nullptr, *m_stop = nullptr, *m_continue = nullptr;
    QAction *m_setValue = nullptr, *m_prune = nullptr, *m_restore = nullptr, *m_inject = nullptr,
            *m_editIntent = nullptr, *m_pin = nullptr, *m_evaluate = nullptr, *m_compareNodes = nullptr,
            *m_export = nullptr, *m_exportDispatch = nullptr, *m_applyLimits = nullptr;
};

} // namespace ks::ui
