// The main window's actions: menus and tool bar, steering through the undo stack, run control,
// and the file operations.

#include "mainwindow.h"
#include "newsearchdialog.h"
#include "nodecomparedialog.h"
#include "settings.h"
#include "settingsdialog.h"
#include "steeringcommands.h"
#include "steeringdialogs.h"
#include "treegraphview.h"

#include <session/exporter.h>
#include <util/qtext.h>

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QToolBar>

#include <spdlog/spdlog.h>

#include <gpulist.h>
#include <searchrun.h>
#include <sshremote.h>

namespace ks::ui {

namespace {

QAction* named(QAction* a, const char* name, const QKeySequence& shortcut = {})
{
    a->setObjectName(QLatin1String(name));
    if (!shortcut.isEmpty())
        a->setShortcut(shortcut);
    return a;
}

} // namespace

void MainWindow::createActions()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    named(file->addAction(tr("&New Search..."), this, &MainWindow::newSearch), "actionNewSearch", QKeySequence::New);
    named(file->addAction(tr("&Open Session..."), this, &MainWindow::openSessionDialog), "actionOpenSession",
        QKeySequence::Open);
    QMenu* recent = file->addMenu(tr("Open &Recent"));
    connect(recent, &QMenu::aboutToShow, this, [this, recent] {
        recent->clear();
        for (const QString& dir : Settings::get(settings::recentSessions))
            recent->addAction(dir, this, [this, dir] { openSession(dir, true); });
    });
    named(file->addAction(tr("Open the &Example"), this, &MainWindow::openExample), "actionOpenExample");
    named(file->addAction(tr("Session &Library..."), this, &MainWindow::showSessionLibrary), "actionSessionLibrary",
        QKeySequence(tr("Ctrl+L")));
    m_export = named(file->addAction(tr("&Export..."), this, &MainWindow::exportSession), "actionExport");
    m_exportDispatch =
        named(file->addAction(tr("Export with a &Dispatching Kernel..."), this, &MainWindow::askExportDispatching),
            "actionExportDispatch");
    file->addSeparator();
    named(file->addAction(tr("&Settings..."), this, &MainWindow::showSettings), "actionSettings",
        QKeySequence::Preferences);
    named(file->addAction(tr("&Reload Tasks"), this, &MainWindow::reloadTasks), "actionReloadTasks",
        QKeySequence::Refresh);
    file->addSeparator();
    named(file->addAction(tr("&Quit"), qApp, &QApplication::quit), "actionQuit", QKeySequence::Quit);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(named(m_undo.createUndoAction(this, tr("&Undo")), "actionUndo", QKeySequence::Undo));
    edit->addAction(named(m_undo.createRedoAction(this, tr("&Redo")), "actionRedo", QKeySequence(tr("Ctrl+Shift+Z"))));

    QMenu* node = menuBar()->addMenu(tr("&Node"));
    m_setValue = named(node->addAction(tr("Set &V..."), this, &MainWindow::setValue), "actionSetValue");
    m_prune = named(node->addAction(tr("&Prune..."), this, [this] { pruneOrRestore(false); }), "actionPrune");
    m_restore = named(node->addAction(tr("&Restore"), this, [this] { pruneOrRestore(true); }), "actionRestore");
    m_inject = named(node->addAction(tr("&Inject a Child Intent..."), this, &MainWindow::injectIntent), "actionInject");
    m_editIntent = named(node->addAction(tr("&Edit the Intent..."), this, &MainWindow::editIntent), "actionEditIntent");
    m_pin = named(node->addAction(tr("Pin as &Next"), this, &MainWindow::pinNode), "actionPin");
    m_evaluate =
        named(node->addAction(tr("Evaluate &Code Under It..."), this, &MainWindow::evaluateCode), "actionEvaluate");
    node->addSeparator();
    m_compareNodes = named(node->addAction(tr("Compare With Another &Node..."), this, &MainWindow::askNodeToCompare),
        "actionCompareNodes");

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    m_pause =
        named(run->addAction(tr("&Pause"), this, [this] { sendRunCommand(HumanCommand::Kind::Pause); }), "actionPause");
    m_step =
        named(run->addAction(tr("&Step"), this, [this] { sendRunCommand(HumanCommand::Kind::Step); }), "actionStep");
    m_resume = named(
        run->addAction(tr("Res&ume"), this, [this] { sendRunCommand(HumanCommand::Kind::Resume); }), "actionResume");
    m_stop =
        named(run->addAction(tr("S&top"), this, [this] { sendRunCommand(HumanCommand::Kind::Stop); }), "actionStop");
    m_continue = named(run->addAction(tr("&Continue This Session"), this,
                           [this] {
                               const SearchState& s = m_document.state();
                               std::optional<int> budget;
                               if (s.evaluations >= s.settings.budget) {
                                   bool ok = false;
                                   budget = QInputDialog::getInt(this, tr("Continue This Session"),
                                       tr("The search used its whole budget of %1 evaluations. Continue up to:")
                                           .arg(s.settings.budget),
                                       s.settings.budget + std::max(8, s.settings.budget / 2), s.evaluations + 1,
                                       1000000, 1, &ok);
                                   if (!ok)
                                       return;
                               }
                               continueSession(budget);
                           }),
        "actionContinue");

    QMenu* view = menuBar()->addMenu(tr("&View"));
    named(view->addAction(tr("&Fit the Tree"), m_graph, &TreeGraphView::fitToView), "actionFit",
        QKeySequence(tr("Ctrl+0")));
    named(view->addAction(tr("Zoom &In"), m_graph, [this] { m_graph->zoomBy(1.25); }), "actionZoomIn",
        QKeySequence::ZoomIn);
    named(view->addAction(tr("Zoom &Out"), m_graph, [this] { m_graph->zoomBy(0.8); }), "actionZoomOut",
        QKeySequence::ZoomOut);
    named(view->addAction(tr("&Reset Layout"), this, &MainWindow::resetLayout), "actionResetLayout");
    view->addSeparator();
    for (QDockWidget* d : findChildren<QDockWidget*>())
        view->addAction(d->toggleViewAction());

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About K-Search Studio"), this, [this] {
        QMessageBox::about(this, tr("About K-Search Studio"),
            tr("<b>K-Search Studio %1</b><p>Watch and steer an LLM-driven search for fast GPU kernels.</p>")
                .arg(QStringLiteral(KSEARCH_VERSION)));
    });
}

void MainWindow::createToolBar()
{
    QToolBar* bar = addToolBar(tr("Run"));
    bar->setObjectName(QStringLiteral("runToolBar"));
    bar->addAction(findChild<QAction*>(u"actionNewSearch"_qs));
    bar->addAction(findChild<QAction*>(u"actionOpenSession"_qs));
    bar->addAction(m_export);
    bar->addSeparator();
    for (QAction* a : {m_pause, m_step, m_resume, m_stop})
        bar->addAction(a);
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" B "), bar));
    m_budget = new QSpinBox(bar);
    m_budget->setObjectName(QStringLiteral("budgetSpin"));
    m_budget->setRange(1, 100000);
    bar->addWidget(m_budget);
    bar->addWidget(new QLabel(tr(" K "), bar));
    m_k = new QSpinBox(bar);
    m_k->setObjectName(QStringLiteral("kSpin"));
    m_k->setRange(1, 100);
    bar->addWidget(m_k);
    m_applyLimits = named(bar->addAction(tr("Apply"), this, &MainWindow::applyLimits), "actionApplyLimits");
    bar->addSeparator();
    bar->addAction(findChild<QAction*>(u"actionUndo"_qs));
    bar->addAction(findChild<QAction*>(u"actionRedo"_qs));
    bar->addAction(findChild<QAction*>(u"actionFit"_qs));
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" History "), bar));
    m_history = new QSlider(Qt::Horizontal, bar);
    m_history->setObjectName(QStringLiteral("historySlider"));
    m_history->setMinimumWidth(120); // the tool bar fits 1280 px without an overflow menu
    bar->addWidget(m_history);
    m_historyLabel = new QLabel(bar);
    m_historyLabel->setObjectName(QStringLiteral("historyLabel"));
    bar->addWidget(m_historyLabel);
    auto* live = new QPushButton(tr("Latest"), bar);
    live->setObjectName(QStringLiteral("historyLatest"));
    bar->addWidget(live);
    connect(m_history, &QSlider::valueChanged, this, [this](int v) {
        m_document.showUpTo(v);
        updateHistory();
    });
    connect(live, &QPushButton::clicked, this, [this] { m_history->setValue(m_history->maximum()); });
}

void MainWindow::updateActions()
{
    const SearchState& s = m_document.state();
    const bool steer = m_controller.canSteer() && m_document.atLatest();
    const SearchNode* n = s.tree.find(m_currentNode.toStdString());
    const bool root = n && n->id == SearchTree::kRootId;
    const bool open = n && n->status == NodeStatus::Open;
    m_setValue->setEnabled(steer && open);
    m_prune->setEnabled(steer && n && !root && n->status != NodeStatus::Pruned && n->status != NodeStatus::Active);
    m_restore->setEnabled(steer && n && n->status == NodeStatus::Pruned);
    m_inject->setEnabled(steer && n && n->status != NodeStatus::Pruned);
    m_editIntent->setEnabled(steer && open);
    m_pin->setEnabled(steer && open);
    m_evaluate->setEnabled(steer && n && n->status != NodeStatus::Pruned);
    m_compareNodes->setEnabled(
        n && NodeCompareDialog::representativeAttempt(s, n->id) >= 0 && !comparableNodes().isEmpty());
    m_pause->setEnabled(steer && !s.paused);
    m_step->setEnabled(steer && s.paused);
    m_resume->setEnabled(steer && s.paused);
    m_stop->setEnabled(steer);
    m_applyLimits->setEnabled(steer);
    m_budget->setEnabled(steer);
    m_k->setEnabled(steer);
    if (!m_budget->hasFocus())
        m_budget->setValue(s.settings.budget);
    if (!m_k->hasFocus())
        m_k->setValue(s.settings.stagnation);
    m_export->setEnabled(m_document.hasSession());
    m_exportDispatch->setEnabled(m_document.hasSession() && m_document.task() && !m_controller.isRunning());
    m_continue->setEnabled(
        m_document.hasSession() && !m_controller.isRunning() && !m_document.config().taskName.empty());
    updateStatus();
}

void MainWindow::showNodeMenu(const QString& id, const QPoint& at)
{
    selectNode(id);
    QMenu menu(this);
    for (QAction* a : {m_setValue, m_prune, m_restore, m_inject, m_editIntent, m_pin, m_evaluate})
        menu.addAction(a);
    menu.exec(at);
}

RunOptions MainWindow::runOptions() const
{
    RunOptions o;
    o.benchSeconds = Settings::get(settings::benchSeconds);
    o.cudaDevice = Settings::get(settings::cudaDevice).toStdString();
    o.python = Settings::get(settings::python).toStdString();
    std::string gpuError;
    if (const QString gpus = Settings::get(settings::gpus); !gpus.isEmpty())
        if (const auto list = parseGpuList(gpus.toStdString(), gpuError))
            o.gpus = *list; // the Settings dialog refuses a list that does not parse
    for (const QString& worker : Settings::get(settings::workerCommands)) {
        std::string error; // the Settings dialog refuses an ssh:// address that does not parse
        const auto command = worker.startsWith(u"ssh://")
            ? sshWorkerCommand(worker.toStdString(), defaultSshCommand(), error)
            : std::optional<std::string>(worker.toStdString());
        if (command)
            o.workerCommands.push_back(*command);
        else
            spdlog::warn("left out of the search: worker {}: {}", worker.toStdString(), error);
    }
    o.slurm = Settings::get(settings::slurm).toStdString();
    o.slurmWorkers = Settings::get(settings::slurmWorkers);
    o.slurmKsearch = Settings::get(settings::slurmKsearch).isEmpty()
        ? QCoreApplication::applicationFilePath().toStdString()
        : Settings::get(settings::slurmKsearch).toStdString();
    o.localEvaluators = Settings::get(settings::localWorkers);
    o.lanes = Settings::get(settings::parallel);
    o.confineCandidates = Settings::get(settings::confineCandidates);
    o.sanitizeFailures = parseSanitizerTool(Settings::get(settings::sanitizeFailures).toStdString());
    for (const QString& f : Settings::get(settings::extraCompilerFlags).split(u' ', Qt::SkipEmptyParts))
        o.extraFlags.push_back(f.toStdString());
    PriceTable prices = PriceTable::builtIn();
    QString error;
    if (QFile::exists(PriceTable::userOverridePath()))
        prices.merge(PriceTable::userOverridePath(), &error);
    if (!Settings::get(settings::pricesFile).isEmpty())
        prices.merge(Settings::get(settings::pricesFile), &error);
    o.prices = prices;
    return o;
}

void MainWindow::setValue()
{
    const SearchNode* n = m_document.state().tree.find(m_currentNode.toStdString());
    if (!n)
        return;
    SteeringDialog d(SteeringDialog::Kind::SetValue, m_currentNode, this);
    d.setValue(n->value());
    if (d.exec() == QDialog::Accepted)
        m_undo.push(new SetValueCommand(m_controller, m_currentNode, n->value(), d.value(), d.reason()));
}

void MainWindow::pruneOrRestore(bool restore)
{
    QString reason;
    if (!restore) {
        SteeringDialog d(SteeringDialog::Kind::Prune, m_currentNode, this);
        if (d.exec() != QDialog::Accepted)
            return;
        reason = d.reason();
    }
    m_undo.push(new PruneCommand(m_controller, m_currentNode, reason, restore));
}

void MainWindow::injectIntent()
{
    SteeringDialog d(SteeringDialog::Kind::Inject, m_currentNode, this);
    if (d.exec() == QDialog::Accepted)
        m_undo.push(
            new InjectCommand(m_controller, m_document, m_currentNode, d.text().trimmed(), d.value(), d.reason()));
}

void MainWindow::editIntent()
{
    const SearchNode* n = m_document.state().tree.find(m_currentNode.toStdString());
    if (!n)
        return;
    SteeringDialog d(SteeringDialog::Kind::EditIntent, m_currentNode, this);
    d.setText(q(n->intent));
    if (d.exec() == QDialog::Accepted)
        m_undo.push(new EditIntentCommand(m_controller, m_currentNode, q(n->intent), d.text().trimmed(), d.reason()));
}

void MainWindow::pinNode()
{
    m_undo.push(new PinCommand(m_controller, m_currentNode, q(m_document.state().pinned)));
}

void MainWindow::evaluateCode()
{
    const SearchState& s = m_document.state();
    const SearchNode* n = s.tree.find(m_currentNode.toStdString());
    if (!n)
        return;
    SteeringDialog d(SteeringDialog::Kind::Evaluate, m_currentNode, this);
    // Start from the node's best program, or the one its action started from.
    std::optional<int> start = n->bestAttempt ? n->bestAttempt : s.tree.startingAttempt(n->id);
    if (start)
        d.setText(q(m_document.programSource(s.tree.attempt(*start)->program)));
    if (d.exec() == QDialog::Accepted)
        m_undo.push(new EvaluateCommand(m_controller, m_document, m_currentNode, d.text(), d.reason()));
}

void MainWindow::applyLimits()
{
    // Read both first: pushing a command refreshes the spin boxes from the state.
    const SearchState& s = m_document.state();
    const int budget = m_budget->value(), k = m_k->value(), oldBudget = s.settings.budget, oldK = s.settings.stagnation;
    if (budget != oldBudget)
        m_undo.push(new SetLimitCommand(m_controller, SetLimitCommand::Limit::Budget, oldBudget, budget));
    if (k != oldK)
        m_undo.push(new SetLimitCommand(m_controller, SetLimitCommand::Limit::K, oldK, k));
}

void MainWindow::sendRunCommand(HumanCommand::Kind kind)
{
    if (kind == HumanCommand::Kind::Stop
        && QMessageBox::question(this, tr("Stop the run"),
               tr("Stop this run? A stopped run can be continued later with "
                  "a larger budget."))
            != QMessageBox::Yes)
        return;
    HumanCommand c;
    c.kind = kind;
    c.reason = "from the window";
    m_controller.send(c);
}

void MainWindow::newSearch()
{
    NewSearchDialog d(this);
    const QModelIndexList selected = m_tasks->selectionModel()->selectedRows();
    if (!selected.isEmpty())
        d.selectTask(m_tasks->item(selected.first().row(), 0)->text());
    if (d.exec() != QDialog::Accepted)
        return;
    QString error;
    const auto config = d.config(&error);
    if (config)
        startSearch(d.sessionDir(), *config, d.seedSource());
}

void MainWindow::openSessionDialog()
{
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Open a session folder"), Settings::get(settings::sessionsFolder));
    if (dir.isEmpty())
        return;
    bool resume = false;
    if (!QFile::exists(dir + u"/session.json")) {
        QMessageBox::warning(this, tr("Open session"), tr("%1 holds no session (no session.json).").arg(dir));
        return;
    }
    const auto answer = QMessageBox::question(this, tr("Open session"),
        tr("Continue the run if it has not finished? (No opens it read-only.)"), QMessageBox::Yes | QMessageBox::No);
    resume = answer == QMessageBox::Yes;
    openSession(dir, resume);
}

void MainWindow::exportSession()
{
    const QString out = QFileDialog::getExistingDirectory(this, tr("Export into a folder"));
    if (out.isEmpty())
        return;
    std::string error;
    auto session = Session::open(m_document.sessionDir(), error);
    if (!session) {
        QMessageBox::warning(this, tr("Export"), q(error));
        return;
    }
    const ExportResult r = ks::exportSession(*session, m_document.state(), m_document.task(), out.toStdString());
    if (!r.error.empty()) {
        QMessageBox::warning(this, tr("Export"), q(r.error));
        return;
    }
    QStringList files;
    for (const auto& f : r.files)
        files << q(f.filename().string());
    statusBar()->showMessage(
        tr("Exported %1 into %2%3")
            .arg(files.join(u", "), out,
                m_document.atLatest() ? QString() : tr(" (as of event %1)").arg(m_document.shown())),
        15000);
}

void MainWindow::showSettings()
{
    SettingsDialog d(this);
    d.exec();
}

} // namespace ks::ui
