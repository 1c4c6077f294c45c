// MainWindow: what a person hears of a live search without watching it (a new best kernel, the
// end of the run), and the filter over the nodes.
#include "mainwindow.h"
#include "nodefilter.h"
#include "nodetablemodel.h"
#include "runcontroller.h"
#include "searchdocument.h"
#include "settings.h"
#include "treegraphview.h"

#include <QApplication>
#include <QStatusBar>
#include <QSystemTrayIcon>

namespace ks::ui {

void MainWindow::noticeAttempt(int index)
{
    // Only a live run's new attempts: opening a session or moving the history slider replays
    // attempts that are not news.
    if (!m_controller.isRunning() || !m_document.atLatest())
        return;
    const SearchState& s = m_document.state();
    const auto best = s.tree.bestAttempt();
    if (!best || *best != index)
        return;
    const Attempt& a = *s.tree.attempt(index);
    notify(tr("New best kernel"),
        tr("J %1 on %2 (attempt %3, %4 us), after %5 evaluations")
            .arg(QString::number(a.score(), 'f', 1), QString::fromStdString(a.node))
            .arg(a.index)
            .arg(QString::number(a.evaluation.latencyMicros, 'f', 2))
            .arg(s.evaluations));
}

void MainWindow::notify(const QString& title, const QString& text)
{
    statusBar()->showMessage(title + u": " + text, 30000);
    if (Settings::get(settings::notifications)) {
        QApplication::alert(this);
        if (QSystemTrayIcon::isSystemTrayAvailable()) {
            if (!m_tray) {
                m_tray = new QSystemTrayIcon(windowIcon(), this);
                m_tray->setToolTip(QStringLiteral("K-Search Studio"));
            }
            m_tray->show();
            m_tray->showMessage(title, text, QSystemTrayIcon::Information, 8000);
        }
    }
    emit notified(title, text);
}

void MainWindow::applyNodeFilter(const QString& filter)
{
    m_tableProxy->setNodeFilter(filter);
    m_graph->setNodeFilter(filter);
    if (!filter.trimmed().isEmpty())
        statusBar()->showMessage(
            tr("%1 of %2 nodes match \"%3\"").arg(m_tableProxy->rowCount()).arg(m_tableModel->rowCount()).arg(filter),
            10000);
}

} // namespace ks::ui
