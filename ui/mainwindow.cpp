#include "mainwindow.h"

#include <task/task.h>
#include <task/taskcatalog.h>

#include <QAction>
#include <QApplication>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ks::ui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
{
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(tr("K-Search Studio"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/ksearch.svg")));

    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    auto* heading =
        new QLabel(tr("<h2>K-Search Studio</h2><p>Pick a task to search for a faster kernel. "
                      "Each task is a folder with a definition, workloads, a reference and a baseline.</p>"),
            central);
    heading->setObjectName(QStringLiteral("welcomeHeading"));
    heading->setWordWrap(true);
    layout->addWidget(heading);

    m_tasks = new QTableWidget(0, 5, central);
    m_tasks->setObjectName(QStringLiteral("taskTable"));
    m_tasks->setHorizontalHeaderLabels({tr("Task"), tr("Operation"), tr("Workloads"), tr("Status"), tr("Folder")});
    m_tasks->horizontalHeader()->setStretchLastSection(true);
    m_tasks->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_tasks->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_tasks->verticalHeader()->hide();
    m_tasks->setSortingEnabled(true);
    layout->addWidget(m_tasks);
    setCentralWidget(central);

    createActions();
    reloadTasks();
    resize(1100, 640);
}

void MainWindow::createActions()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* reload = file->addAction(tr("&Reload Tasks"), this, &MainWindow::reloadTasks);
    reload->setObjectName(QStringLiteral("actionReloadTasks"));
    reload->setShortcut(QKeySequence::Refresh);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About K-Search Studio"), this, [this] {
        QMessageBox::about(this, tr("About K-Search Studio"),
            tr("<b>K-Search Studio %1</b><p>Watch and steer an LLM-driven search for fast GPU kernels.</p>")
                .arg(QStringLiteral(KSEARCH_VERSION)));
    });
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
        m_tasks->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(entry.name)));
        m_tasks->setItem(
            row, 1, new QTableWidgetItem(ok ? QString::fromStdString(loaded.task->definition.opType) : QString()));
        m_tasks->setItem(row, 2, workloads);
        auto* status = new QTableWidgetItem(ok ? tr("valid") : tr("invalid"));
        if (!ok)
            status->setToolTip(QString::fromStdString(loaded.diagnostics.formatAll()));
        m_tasks->setItem(row, 3, status);
        m_tasks->setItem(row, 4, new QTableWidgetItem(QString::fromStdString(entry.dir.string())));
    }
    m_tasks->setSortingEnabled(true);
    m_tasks->resizeColumnsToContents();
    statusBar()->showMessage(
        tr("%n task(s) found", nullptr, m_tasks->rowCount()) + u", " + tr("%n valid", nullptr, valid));
}

} // namespace ks::ui
