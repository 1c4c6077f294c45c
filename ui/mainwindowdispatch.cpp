// MainWindow: File > Export Dispatching Kernel. The export of File > Export, then the kernel that
// runs each workload shape's fastest attempt, measured next to the best single kernel off the
// window's thread (gpu/dispatchexport.h), and what came of it.
#include "mainwindow.h"
#include "settings.h"

#include <session/exporter.h>
#include <util/qtext.h>

#include <QFileDialog>
#include <QFutureWatcher>
#include <QMessageBox>
#include <QProgressDialog>
#include <QStatusBar>
#include <QtConcurrent/QtConcurrentRun>

#include <dispatchexport.h>
#include <memory>

namespace ks::ui {

QFutureWatcher<DispatchExportResult>* MainWindow::exportDispatching(const QString& folder)
{
    const Task* task = m_document.task();
    std::string error;
    std::shared_ptr<Session> session = Session::open(m_document.sessionDir(), error);
    if (!session || !task) {
        QMessageBox::warning(this, tr("Export Dispatching Kernel"),
            session ? tr("The session's task cannot be loaded: it is needed to measure the kernel.") : q(error));
        return nullptr;
    }
    const ExportResult exported = ks::exportSession(*session, m_document.state(), task, folder.toStdString());
    if (!exported.error.empty()) {
        QMessageBox::warning(this, tr("Export Dispatching Kernel"), q(exported.error));
        return nullptr;
    }
    auto* progress = new QProgressDialog(
        tr("Measuring the dispatching kernel and the best single kernel..."), QString(), 0, 0, this);
    progress->setObjectName(QStringLiteral("dispatchProgress"));
    progress->setWindowModality(Qt::WindowModal);
    progress->setMinimumDuration(0);
    auto* watcher = new QFutureWatcher<DispatchExportResult>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, progress, folder] {
        progress->deleteLater();
        watcher->deleteLater();
        const DispatchExportResult r = watcher->result();
        const QString figures = r.bestAttempt >= 0
            ? tr("Dispatching kernel: %1 variants, %2 shapes routed, %3, J %4.\nBest single kernel (%5, attempt %6): J "
                 "%7 now, %8 in the session.")
                  .arg(r.variants)
                  .arg(r.routedShapes)
                  .arg(q(r.verdict))
                  .arg(r.dispatchedScore, 0, 'f', 1)
                  .arg(q(r.bestNode))
                  .arg(r.bestAttempt)
                  .arg(r.singleScore, 0, 'f', 1)
                  .arg(r.sessionScore, 0, 'f', 1)
            : QString();
        if (r.outcome == DispatchExportResult::Outcome::Written) {
            statusBar()->showMessage(tr("Exported into %1 with a dispatching kernel (J %2 against %3)")
                                         .arg(folder)
                                         .arg(r.dispatchedScore, 0, 'f', 1)
                                         .arg(r.singleScore, 0, 'f', 1),
                15000);
            emit dispatchExported(QString(), figures);
        } else {
            const QString why = q(r.error) + (figures.isEmpty() ? QString() : u"\n\n"_qs + figures)
                + (r.log.empty() ? QString() : u"\n\n"_qs + q(r.log).left(2000));
            QMessageBox::warning(this, tr("Export Dispatching Kernel"),
                tr("The rest of the export is in %1; no dispatching kernel was written:\n%2").arg(folder, why));
            emit dispatchExported(q(r.error), figures);
        }
    });
    const SearchState state = m_document.state();
    const double benchSeconds = Settings::get(settings::benchSeconds);
    const std::string python = Settings::get(settings::python).toStdString();
    const bool confine = Settings::get(settings::confineCandidates);
    watcher->setFuture(QtConcurrent::run([session, state, task = *task, folder, benchSeconds, python, confine] {
        return exportDispatchingKernel(*session, state, task, folder.toStdString(), benchSeconds, python, confine);
    }));
    return watcher;
}

void MainWindow::askExportDispatching()
{
    const QString out = QFileDialog::getExistingDirectory(this, tr("Export with a dispatching kernel into a folder"));
    if (!out.isEmpty())
        exportDispatching(out);
}

} // namespace ks::ui
