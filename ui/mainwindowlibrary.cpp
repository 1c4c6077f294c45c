// MainWindow: File > Session Library. The dialog lists, compares and deletes sessions; opening,
// continuing and exporting one happen here, as from the File and Run menus.
#include "mainwindow.h"
#include "sessionlibrarydialog.h"

#include <QAction>

namespace ks::ui {

SessionLibraryDialog* MainWindow::showSessionLibrary()
{
    auto* d = new SessionLibraryDialog(this);
    d->setObjectName(QStringLiteral("sessionLibrary"));
    d->setAttribute(Qt::WA_DeleteOnClose);
    if (m_controller.isRunning())
        d->setBusySession(m_document.sessionDir());
    connect(d, &SessionLibraryDialog::openRequested, this, [this, d](const QString& dir) {
        if (openSession(dir, false))
            d->close();
    });
    connect(d, &SessionLibraryDialog::continueRequested, this, [this, d](const QString& dir) {
        if (!openSession(dir, false))
            return;
        d->close();
        // Run > Continue This Session: it asks for a new budget when the old one is used up.
        if (auto* action = findChild<QAction*>(QStringLiteral("actionContinue")); action && action->isEnabled())
            action->trigger();
    });
    connect(d, &SessionLibraryDialog::exportRequested, this, [this, d](const QString& dir) {
        if (!openSession(dir, false))
            return;
        d->close();
        exportSession();
    });
    d->load(SessionLibraryDialog::librarySessions());
    d->show();
    return d;
}

} // namespace ks::ui
