// MainWindow: what a person hears of a live search without watching it (a new best kernel, the
// end of the run, candidates that ran unconfined), and the filter over the nodes.
#include "mainwindow.h"
#include "nodefilter.h"
#include "nodetablemodel.h"
#include "runcontroller.h"
#include "searchdocument.h"
#include "settings.h"
#include "treegraphview.h"

#include <util/numberformat.h>
#include <util/qtext.h>

#include <QApplication>
#include <QLabel>
#include <QStatusBar>
#include <QSystemTrayIcon>

#include <map>

namespace ks::ui {

void MainWindow::noticeAttempt(int index)
{
    // Only a live run's new attempts: opening a session or moving the history slider replays
    // attempts that are not news.
    if (!m_controller.isRunning() || !m_document.atLatest())
        return;
    const SearchState& s = m_document.state();
    const Attempt* attempt = s.tree.attempt(index);
    if (attempt && attempt->evaluation.confinement && m_confinementNoticed != m_document.sessionDir()) {
        const auto gaps = confinementGaps(*attempt->evaluation.confinement);
        if (!gaps.empty()) { // once per session: every later attempt would say the same
            m_confinementNoticed = m_document.sessionDir();
            QStringList words;
            for (const auto& g : gaps)
                words << QString::fromStdString(g);
            notify(tr("Candidates are not fully confined"),
                tr("%1 (attempt %2 on %3; docs/security.md)")
                    .arg(words.join(u"; "))
                    .arg(index)
                    .arg(QString::fromStdString(attempt->node)));
        }
    }
    const auto best = s.tree.bestAttempt();
    if (!best || *best != index)
        return;
    const Attempt& a = *s.tree.attempt(index);
    notify(tr("New best kernel"),
        tr("J %1 on %2 (attempt %3, %4 us), after %5 evaluations")
            .arg(q(formatScore(a.score())), QString::fromStdString(a.node))
            .arg(a.index)
            .arg(q(formatMicros(a.evaluation.latencyMicros)))
            .arg(s.evaluations));
}

void MainWindow::updateConfinementStatus()
{
    // Every attempt shown whose candidate ran with less than full confinement, by what it lacked:
    // a session keeps that record, so a read-only one shows it as a live one does.
    std::map<std::string, int> lacking;
    int unconfined = 0;
    for (const Attempt& a : m_document.state().tree.attempts()) {
        if (!a.evaluation.confinement)
            continue;
        const auto gaps = confinementGaps(*a.evaluation.confinement);
        unconfined += gaps.empty() ? 0 : 1;
        for (const auto& g : gaps)
            ++lacking[g];
    }
    m_statusConfinement->setVisible(unconfined > 0);
    if (unconfined == 0)
        return;
    const bool off = lacking.contains("confinement turned off in the settings");
    m_statusConfinement->setText(off ? tr("confinement off") : tr("not fully confined"));
    QStringList lines;
    for (const auto& [gap, count] : lacking)
        lines << tr("%1: %n attempt(s)", nullptr, count).arg(QString::fromStdString(gap));
    m_statusConfinement->setToolTip(
        tr("%n attempt(s) ran with less than full confinement (docs/security.md):", nullptr, unconfined) + u'\n'
        + lines.join(u'\n'));
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
