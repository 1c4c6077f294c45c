#include "mainwindow.h"

#include "chartspanel.h"
#include "eventlogmodel.h"
#include "manualanswerdialog.h"
#include "nodefilter.h"
#include "nodeinspector.h"
#include "nodetablemodel.h"
#include "sanitizerrun.h"
#include "settings.h"
#include "treegraphview.h"
#include "workersmodel.h"
#include "workloadbestview.h"

#include <session/runsummary.h>
#include <task/taskcatalog.h>
#include <util/numberformat.h>
#include <util/qtext.h>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSlider>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include <searchrun.h>

namespace ks::ui {

std::filesystem::path MainWindow::exampleSession()
{
    std::vector<std::filesystem::path> candidates;
    if (const QByteArray env = qgetenv("KSEARCH_EXAMPLE_SESSION"); !env.isEmpty())
        candidates.emplace_back(env.toStdString());
    const std::filesystem::path app = QCoreApplication::applicationDirPath().toStdString();
    candidates.push_back(app / ".." / "share" / "ksearch" / "examples" / "matmul-demo");
#ifdef KSEARCH_SOURCE_DIR
    candidates.push_back(std::filesystem::path(KSEARCH_SOURCE_DIR) / "resources" / "examples" / "matmul-demo");
#endif
    for (const auto& c : candidates)
        if (std::filesystem::exists(c / "session.json"))
            return std::filesystem::weakly_canonical(c);
    return {};
}

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_controller(m_document)
{
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(tr("K-Search Studio"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/ksearch.svg")));
    setDockNestingEnabled(true);

    m_center = new QStackedWidget(this);
    auto* welcome = new QWidget(m_center);
    auto* layout = new QVBoxLayout(welcome);
    auto* heading = new QLabel(tr("<h2>K-Search Studio</h2><p>Start a new search on one of these tasks, open a "
                                  "session, or look at the example search that ships with the application.</p>"),
        welcome);
    heading->setObjectName(QStringLiteral("welcomeHeading"));
    heading->setWordWrap(true);
    layout->addWidget(heading);
    m_tasks = new QTableWidget(0, 5, welcome);
    m_tasks->setObjectName(QStringLiteral("taskTable"));
    m_tasks->setHorizontalHeaderLabels({tr("Task"), tr("Operation"), tr("Workloads"), tr("Status"), tr("Folder")});
    m_tasks->horizontalHeader()->setStretchLastSection(true);
    m_tasks->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_tasks->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_tasks->verticalHeader()->hide();
    m_tasks->setSortingEnabled(true);
    layout->addWidget(m_tasks);
    m_center->addWidget(welcome);
    // The session's label (how and why it was made) above the tree: the bundled example says
    // there that its LLM was scripted.
    m_graphPage = new QWidget(m_center);
    auto* graphLayout = new QVBoxLayout(m_graphPage);
    graphLayout->setContentsMargins(0, 0, 0, 0);
    graphLayout->setSpacing(0);
    m_sessionLabel = new QLabel(m_graphPage);
    m_sessionLabel->setObjectName(QStringLiteral("sessionLabel"));
    m_sessionLabel->setWordWrap(true);
    m_sessionLabel->setContentsMargins(8, 4, 8, 4);
    m_sessionLabel->setStyleSheet(QStringLiteral("background: #fff8e1; color: #5d4037;"));
    m_sessionLabel->hide();
    graphLayout->addWidget(m_sessionLabel);
    m_graph = new TreeGraphView(m_document, m_graphPage);
    graphLayout->addWidget(m_graph, 1);
    m_center->addWidget(m_graphPage);
    setCentralWidget(m_center);

    createDocks();
    createActions();
    createToolBar();
    createStatusBar();
    reloadTasks();

    connect(m_graph, &TreeGraphView::nodeSelected, this, &MainWindow::selectNode);
    connect(m_graph, &TreeGraphView::nodeContextMenu, this, &MainWindow::showNodeMenu);
    connect(m_graph, &TreeGraphView::nodeActivated, this, [this](const QString& id) {
        selectNode(id);
        if (auto* dock = findChild<QDockWidget*>(QStringLiteral("inspectorDock"))) {
            dock->show();
            dock->raise();
        }
        m_inspector->setFocus(Qt::ShortcutFocusReason);
    });
    connect(&m_document, &SearchDocument::attemptAdded, this, &MainWindow::noticeAttempt);
    connect(&m_document, &SearchDocument::progressChanged, this, &MainWindow::updateStatus);
    connect(&m_document, &SearchDocument::eventShown, this, [this](const SearchEvent& e) {
        if (std::holds_alternative<ev::Exchange>(e->body))
            m_stream->clear();
        updateActions();
        updateHistory();
    });
    connect(&m_document, &SearchDocument::reset, this, [this] {
        m_center->setCurrentWidget(m_document.hasSession() ? m_graphPage : m_center->widget(0));
        updateActions();
        updateHistory();
    });
    connect(&m_controller, &RunController::finished, this, [this](const QString& reason) {
        const auto best = m_document.state().bestAttempt();
        notify(tr("The search finished"),
            reason
                + (best ? tr("; best J %1 on %2")
                              .arg(q(formatScore(m_document.state().tree.attempt(*best)->score())),
                                  q(m_document.state().tree.attempt(*best)->node))
                        : tr("; nothing passed")));
        updateActions();
    });
    connect(&m_controller, &RunController::halted, this, [this](const QString& why) {
        updateActions();
        QMessageBox::warning(this, tr("The run stopped"),
            tr("%1\n\nThe session is intact: fix the problem and continue it (Run > Continue).").arg(why));
    });
    connect(&m_controller, &RunController::commandRejected, this, [this](const QString& command, const QString& why) {
        statusBar()->showMessage(tr("Refused: %1: %2").arg(command, why), 10000);
    });
    connect(&m_controller, &RunController::manualQuestion, this, [this](ManualCall* call) {
        auto* dialog = new ManualAnswerDialog(call, this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->show();
    });
    connect(&m_controller, &RunController::llmText, this, [this](const QString& role, const QString& delta) {
        if (m_stream->document()->isEmpty())
            m_stream->appendPlainText(tr("[%1]").arg(role));
        m_stream->moveCursor(QTextCursor::End);
        m_stream->insertPlainText(delta);
    });
    connect(&m_undo, &QUndoStack::indexChanged, this, &MainWindow::updateActions);

    resize(1500, 920);
    restoreGeometry(Settings::get(settings::windowGeometry));
    if (!restoreState(Settings::get(settings::windowState)))
        resetLayout(); // first start: the default shares of the restored size
    updateActions();
    updateStatus();
}

MainWindow::~MainWindow()
{
    m_controller.close();
    // The members (document, undo stack) are destroyed before QWidget deletes the children that
    // show them: silence them, then delete the views while what they show still exists (ASan and
    // UBSan saw the Workers table and the status labels read a destroyed document).
    m_undo.disconnect(this);
    m_document.disconnect();
    for (QDockWidget* d : findChildren<QDockWidget*>(Qt::FindDirectChildrenOnly))
        delete d;
    delete takeCentralWidget();
}

void MainWindow::createDocks()
{
    auto dock = [this](const QString& title, const QString& name, QWidget* content, Qt::DockWidgetArea area) {
        auto* d = new QDockWidget(title, this);
        d->setObjectName(name);
        d->setWidget(content);
        addDockWidget(area, d);
        return d;
    };
    m_inspector = new NodeInspector(m_document, this);
    dock(tr("Inspector"), QStringLiteral("inspectorDock"), m_inspector, Qt::RightDockWidgetArea);
    m_sanitizerRun = new SanitizerRun(this);
    connect(m_inspector, &NodeInspector::sanitizeRequested, this, &MainWindow::sanitizeAttempt);
    connect(m_sanitizerRun, &SanitizerRun::finished, this, &MainWindow::showSanitizerReport);

    m_tableModel = new NodeTableModel(m_document, this);
    m_tableProxy = new NodeFilterProxy(m_document, this);
    m_tableProxy->setSourceModel(m_tableModel);
    auto* nodes = new QWidget(this);
    auto* nodesLayout = new QVBoxLayout(nodes);
    nodesLayout->setContentsMargins(4, 4, 4, 4);
    m_filter = new QLineEdit(nodes);
    m_filter->setObjectName(QStringLiteral("nodeFilter"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setPlaceholderText(
        tr("Filter: words of an intent, a status or a verdict (compile_error, passed, pruned)"));
    connect(m_filter, &QLineEdit::textChanged, this, &MainWindow::applyNodeFilter);
    nodesLayout->addWidget(m_filter);
    m_table = new QTableView(this);
    m_table->setObjectName(QStringLiteral("nodeTable"));
    m_table->setModel(m_tableProxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(NodeTableModel::Id, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setAlternatingRowColors(true);
    sizeNodeColumns();
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& i) {
        if (i.isValid())
            selectNode(i.data(NodeTableModel::NodeIdRole).toString());
    });
    nodesLayout->addWidget(m_table, 1);
    QDockWidget* tableDock = dock(tr("Nodes"), QStringLiteral("tableDock"), nodes, Qt::BottomDockWidgetArea);

    m_charts = new ChartsPanel(m_document, this);
    connect(m_charts->workloadBestView(), &WorkloadBestView::attemptActivated, this, [this](int attempt) {
        if (const Attempt* a = m_document.state().tree.attempt(attempt)) {
            selectNode(q(a->node));
            m_inspector->showAttempt(attempt);
        }
    });
    QDockWidget* chartsDock = dock(tr("Charts"), QStringLiteral("chartsDock"), m_charts, Qt::BottomDockWidgetArea);
    splitDockWidget(chartsDock, tableDock, Qt::Horizontal);

    m_logModel = new EventLogModel(m_document, this);
    m_log = new QListView(this);
    m_log->setObjectName(QStringLiteral("eventLog"));
    m_log->setModel(m_logModel);
    m_log->setUniformItemSizes(true);
    m_log->setLayoutMode(QListView::Batched);
    // Follow new events only while the user is at the bottom, and at most once per turn of the event loop:
    // scrolling per row re-lays out the list for every event of a burst.
    connect(m_logModel, &QAbstractItemModel::rowsAboutToBeInserted, this, [this] {
        const QScrollBar* bar = m_log->verticalScrollBar();
        if (m_logFollowPending || bar->value() < bar->maximum())
            return;
        m_logFollowPending = true;
        QTimer::singleShot(0, this, [this] {
            m_logFollowPending = false;
            m_log->scrollToBottom();
        });
    });
    QDockWidget* logDock = dock(tr("Events"), QStringLiteral("logDock"), m_log, Qt::BottomDockWidgetArea);
    m_stream = new QPlainTextEdit(this);
    m_stream->setObjectName(QStringLiteral("llmStream"));
    m_stream->setReadOnly(true);
    m_stream->setPlaceholderText(tr("What the model is writing now"));
    QDockWidget* streamDock = dock(tr("LLM output"), QStringLiteral("streamDock"), m_stream, Qt::BottomDockWidgetArea);
    m_workersModel = new WorkersModel(m_document, this);
    auto* workers = new QWidget(this);
    auto* workersLayout = new QVBoxLayout(workers);
    workersLayout->setContentsMargins(4, 4, 4, 4);
    m_workersQueue = new QLabel(m_workersModel->queueSummary(), workers);
    m_workersQueue->setObjectName(QStringLiteral("workersQueue"));
    m_workersQueue->setWordWrap(true);
    auto* workersTable = new QTableView(workers);
    workersTable->setObjectName(QStringLiteral("workersTable"));
    workersTable->setModel(m_workersModel);
    workersTable->verticalHeader()->hide();
    workersTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    workersTable->horizontalHeader()->setStretchLastSection(true);
    workersLayout->addWidget(m_workersQueue);
    workersLayout->addWidget(workersTable);
    QDockWidget* workersDock = dock(tr("Workers"), QStringLiteral("workersDock"), workers, Qt::BottomDockWidgetArea);
    connect(&m_controller, &RunController::activityChanged, this, [this](const EngineActivity& a) {
        m_workersModel->setActivity(a);
        updateWorkers();
    });
    connect(&m_document, &SearchDocument::progressChanged, this, &MainWindow::updateWorkers);
    tabifyDockWidget(tableDock, logDock);
    tabifyDockWidget(logDock, streamDock);
    tabifyDockWidget(streamDock, workersDock);
    tableDock->raise();
    resetLayout();
}

void MainWindow::resetLayout()
{
    // Shares of the window, not pixels, so that the layout reads at 1280 x 800 as at 2560 x 1440:
    // the graph keeps most of the width, the inspector over a third (never under 480 px: what
    // every column of its workload table needs),
    // the charts and nodes the lower third, side by side.
    auto* inspector = findChild<QDockWidget*>(QStringLiteral("inspectorDock"));
    auto* charts = findChild<QDockWidget*>(QStringLiteral("chartsDock"));
    auto* nodes = findChild<QDockWidget*>(QStringLiteral("tableDock"));
    for (QDockWidget* d : {inspector, charts, nodes})
        d->show();
    const int w = width(), h = height();
    resizeDocks({inspector}, {std::max(480, w * 36 / 100)}, Qt::Horizontal);
    resizeDocks({charts}, {std::max(260, h * 38 / 100)}, Qt::Vertical);
    resizeDocks({charts, nodes}, {w / 2, w / 2}, Qt::Horizontal);
}

void MainWindow::createStatusBar()
{
    auto label = [this](const QString& name) {
        auto* l = new QLabel(this);
        l->setObjectName(name);
        l->setContentsMargins(8, 0, 8, 0);
        statusBar()->addPermanentWidget(l);
        return l;
    };
    m_statusRun = label(QStringLiteral("statusRun"));
    m_statusBudget = label(QStringLiteral("statusBudget"));
    m_statusTokens = label(QStringLiteral("statusTokens"));
    m_statusDollars = label(QStringLiteral("statusDollars"));
    m_statusElapsed = label(QStringLiteral("statusElapsed"));
    m_statusDevice = label(QStringLiteral("statusDevice"));
    m_statusWorkers = label(QStringLiteral("statusWorkers"));
    m_statusConfinement = label(QStringLiteral("statusConfinement"));
    m_statusConfinement->setStyleSheet(QStringLiteral("color: #b3261e; font-weight: bold"));
    m_statusConfinement->hide();
}

void MainWindow::updateWorkers()
{
    m_workersQueue->setText(m_workersModel->queueSummary());
    const auto& evaluators = m_workersModel->activity().evaluators;
    QStringList parts;
    for (const EvaluatorActivity& e : evaluators) {
        const QString name = e.name.empty() ? tr("evaluator") : q(e.name).left(24);
        parts << (e.retired      ? tr("%1 lost").arg(name)
                : e.node.empty() ? tr("%1 idle").arg(name)
                                 : tr("%1: %2").arg(name, q(e.node)));
    }
    m_statusWorkers->setText(parts.join(u" | "));
    m_statusWorkers->setVisible(!parts.isEmpty());
}

void MainWindow::updateStatus()
{
    const SearchState& s = m_document.state();
    if (!m_document.hasSession()) {
        for (QLabel* l :
            {m_statusRun, m_statusBudget, m_statusTokens, m_statusDollars, m_statusElapsed, m_statusDevice})
            l->clear();
        m_statusConfinement->hide();
        return;
    }
    updateConfinementStatus();
    const QString sessionLabel = q(m_document.config().label);
    m_sessionLabel->setText(sessionLabel);
    m_sessionLabel->setVisible(!sessionLabel.isEmpty());
    const RunSummary r = summarize(s);
    m_statusRun->setText(m_controller.isRunning() ? (s.paused ? tr("paused") : tr("running"))
            : m_document.isLive()                 ? tr("stopped")
                                                  : tr("read-only"));
    m_statusBudget->setText(tr("evaluations %1 / %2").arg(s.evaluations).arg(s.settings.budget));
    m_statusTokens->setText(
        tr("tokens %1").arg(q(formatTokens(r.totalUsage.tokens.promptTokens + r.totalUsage.tokens.completionTokens))));
    m_statusDollars->setText(
        q(formatDollars(r.totalUsage.dollars)) + (r.totalUsage.unpricedCalls ? u"*"_qs : QString()));
    m_statusDollars->setToolTip(
        r.totalUsage.unpricedCalls ? tr("* some calls used models without a price") : QString());
    const int secs = static_cast<int>(s.elapsedSeconds);
    m_statusElapsed->setText(tr("elapsed %1:%2:%3")
                                 .arg(secs / 3600)
                                 .arg(secs / 60 % 60, 2, 10, QChar(u'0'))
                                 .arg(secs % 60, 2, 10, QChar(u'0')));
    std::string device;
    for (auto it = s.tree.attempts().rbegin(); it != s.tree.attempts().rend() && device.empty(); ++it)
        device = it->evaluation.device;
    m_statusDevice->setText(device.empty() ? q(m_document.config().backend) : q(device));
    setWindowTitle(tr("%1 - %2 - K-Search Studio")
                       .arg(q(m_document.config().taskName), q(m_document.sessionDir().filename().string())));
}

void MainWindow::updateHistory()
{
    const int total = static_cast<int>(m_document.events().size());
    const bool follow = m_history->value() == m_history->maximum();
    QSignalBlocker block(m_history);
    m_history->setRange(0, total);
    if (follow || m_document.atLatest())
        m_history->setValue(m_document.shown());
    m_history->setEnabled(total > 0);
    m_historyLabel->setText(m_document.atLatest()
            ? tr("event %1 (latest)").arg(total)
            : tr("event %1 of %2, round %3").arg(m_document.shown()).arg(total).arg(m_document.state().evaluations));
}

void MainWindow::reloadTasks()
{
    m_tasks->setSortingEnabled(false);
    m_tasks->setRowCount(0);
    int valid = 0;
    for (const auto& entry : listTasks()) {
        const auto loaded = loadTask(entry.dir);
        const int row = m_tasks->rowCount();
        m_tasks->insertRow(row);
        const bool ok = loaded.task.has_value();
        valid += ok ? 1 : 0;
        auto* workloads = new QTableWidgetItem;
        workloads->setData(Qt::DisplayRole, ok ? static_cast<int>(loaded.task->workloads.size()) : 0);
        if (ok && !loaded.task->definition.heldOutWorkloads.empty())
            workloads->setToolTip(tr("%n of them held out: verified, never shown to the code policy, not in J", nullptr,
                static_cast<int>(loaded.task->definition.heldOutWorkloads.size())));
        m_tasks->setItem(row, 0, new QTableWidgetItem(q(entry.name)));
        m_tasks->setItem(row, 1, new QTableWidgetItem(ok ? q(loaded.task->definition.opType) : QString()));
        m_tasks->setItem(row, 2, workloads);
        auto* status = new QTableWidgetItem(ok ? tr("valid") : tr("invalid"));
        if (!ok)
            status->setToolTip(q(loaded.diagnostics.formatAll()));
        m_tasks->setItem(row, 3, status);
        m_tasks->setItem(row, 4, new QTableWidgetItem(q(entry.dir.string())));
    }
    m_tasks->setSortingEnabled(true);
    m_tasks->resizeColumnsToContents();
    statusBar()->showMessage(
        tr("%n task(s) found", nullptr, m_tasks->rowCount()) + u", " + tr("%n valid", nullptr, valid));
}

// The narrow columns sized once, to their header and the widest text they usually hold, and
// the intent given the rest (elided, the whole in its tooltip): at 1280 x 800 the table fits its
// dock without scrolling sideways. Not ResizeToContents, which measures every row again on each
// change of a live search's table.
void MainWindow::sizeNodeColumns()
{
    const QFontMetrics cells(m_table->font());
    const QFontMetrics header(m_table->horizontalHeader()->font());
    const std::pair<int, const char*> samples[] = {{NodeTableModel::Id, "n1000"}, {NodeTableModel::Status, "closed"},
        {NodeTableModel::Value, "0.00"}, {NodeTableModel::BestScore, "99999.9"}, {NodeTableModel::Attempts, "99"},
        {NodeTableModel::Parent, "n1000"}, {NodeTableModel::Depth, "99"}, {NodeTableModel::CreatedBy, "world model"}};
    for (const auto& [column, sample] : samples) {
        int title = 0;
        for (const QString& line :
            m_tableModel->headerData(column, Qt::Horizontal, Qt::DisplayRole).toString().split(u'\n'))
            title = std::max(title, header.horizontalAdvance(line));
        // Room for the cell's margins (and the status square) and the header's sort arrow.
        const int decoration = column == NodeTableModel::Status ? 18 : 0;
        m_table->setColumnWidth(
            column, std::max(cells.horizontalAdvance(QLatin1String(sample)) + 16 + decoration, title + 22));
    }
    m_table->setTextElideMode(Qt::ElideRight);
    // Depth and author are shown on demand (the header's context menu): with them the narrow
    // columns alone are wider than the dock at 1280 x 800.
    QHeaderView* columns = m_table->horizontalHeader();
    columns->setContextMenuPolicy(Qt::ActionsContextMenu);
    for (int column = 0; column < NodeTableModel::ColumnCount; ++column) {
        if (column == NodeTableModel::Id || column == NodeTableModel::Intent)
            continue;
        auto* toggle = new QAction(
            m_tableModel->headerData(column, Qt::Horizontal, Qt::DisplayRole).toString().replace(u'\n', u' '), columns);
        toggle->setObjectName(u"nodeColumn"_qs + QString::number(column));
        toggle->setCheckable(true);
        toggle->setChecked(column != NodeTableModel::Depth && column != NodeTableModel::CreatedBy);
        m_table->setColumnHidden(column, !toggle->isChecked());
        connect(
            toggle, &QAction::toggled, this, [this, column](bool shown) { m_table->setColumnHidden(column, !shown); });
        columns->addAction(toggle);
    }
}

void MainWindow::selectNode(const QString& id)
{
    if (id.isEmpty())
        return;
    m_currentNode = id;
    m_inspector->showNode(id);
    m_graph->selectNode(id);
    const QModelIndex source = m_tableModel->indexOfNode(id);
    const QModelIndex row = m_tableProxy->mapFromSource(source);
    if (row.isValid() && m_table->currentIndex().row() != row.row()) {
        QSignalBlocker block(m_table->selectionModel());
        m_table->setCurrentIndex(row);
    }
    updateActions();
}

bool MainWindow::startSearch(const std::filesystem::path& dir, const SessionConfig& config, const QString& seedSource)
{
    QString error;
    m_undo.clear();
    if (!m_controller.startNew(dir, config, seedSource, runOptions(), &error)) {
        QMessageBox::warning(this, tr("New search"), error);
        return false;
    }
    Settings::addRecentSession(q(dir.string()));
    m_center->setCurrentWidget(m_graphPage);
    statusBar()->showMessage(tr("Started a search in %1").arg(q(dir.string())), 10000);
    updateActions();
    updateStatus();
    return true;
}

bool MainWindow::continueSession(std::optional<int> budget)
{
    if (!m_document.hasSession() || m_controller.isRunning())
        return false;
    const QString dir = q(m_document.sessionDir().string());
    const std::string ended = m_document.state().finishedReason;
    std::vector<HumanCommand> first;
    if (budget && *budget != m_document.state().settings.budget) {
        HumanCommand raise;
        raise.kind = HumanCommand::Kind::SetBudget;
        raise.number = *budget;
        raise.reason = "Run > Continue This Session: budget " + std::to_string(*budget);
        first.push_back(raise);
    }
    QString error;
    m_undo.clear();
    if (!m_controller.resume(dir.toStdString(), runOptions(), &error, first)) {
        QMessageBox::warning(this, tr("Continue This Session"), error);
        return false;
    }
    statusBar()->showMessage(
        ended.empty() ? tr("Continuing %1").arg(dir) : tr("Continuing %1, which had ended (%2)").arg(dir, q(ended)),
        10000);
    updateActions();
    return true;
}

bool MainWindow::openSession(const QString& dir, bool resumeIfUnfinished)
{
    QString error;
    m_undo.clear();
    bool ok = m_controller.openReadOnly(dir.toStdString(), &error);
    if (ok && resumeIfUnfinished && m_document.state().finishedReason.empty())
        ok = m_controller.resume(dir.toStdString(), runOptions(), &error);
    if (!ok) {
        QMessageBox::warning(this, tr("Open session"), error);
        return false;
    }
    Settings::addRecentSession(dir);
    m_center->setCurrentWidget(m_graphPage);
    statusBar()->showMessage(
        tr("Opened %1 (%2)").arg(dir, m_controller.isRunning() ? tr("running") : tr("read-only")), 10000);
    if (const auto best = m_document.state().bestAttempt())
        selectNode(q(m_document.state().tree.attempt(*best)->node));
    updateActions();
    updateStatus();
    return true;
}

bool MainWindow::openExample()
{
    const auto dir = exampleSession();
    if (dir.empty()) {
        QMessageBox::information(this, tr("Example"), tr("The example session is not installed."));
        return false;
    }
    return openSession(q(dir.string()), false);
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    Settings::set(settings::windowGeometry, saveGeometry());
    Settings::set(settings::windowState, saveState());
    m_controller.close();
    event->accept();
}

} // namespace ks::ui
