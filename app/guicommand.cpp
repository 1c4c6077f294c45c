// `ksearch` / `ksearch gui`: the desktop window.

#include "cli.h"
#include "exitcodes.h"

#include <QTextStream>

#ifdef KSEARCH_WITH_GUI
#include <QApplication>
#include <QGuiApplication>

#include <mainwindow.h>
#endif

namespace ks::cli {

int runGui(const QStringList& arguments, const GlobalOptions& /*global*/)
{
    QTextStream err(stderr);
    if (arguments.size() > 1) {
        if (arguments.contains(QStringLiteral("--help")) || arguments.contains(QStringLiteral("-h"))) {
            QTextStream(stdout) << "Usage: ksearch [gui]\nOpens the desktop window.\n";
            return exitcode::Success;
        }
        err << "ksearch gui: unexpected argument '" << arguments[1] << "'\n";
        return exitcode::InvalidInput;
    }
#ifndef KSEARCH_WITH_GUI
    err << "ksearch: this build has no window (configured with KSEARCH_BUILD_GUI=OFF); see 'ksearch --help'\n";
    return exitcode::Environment;
#else
    if (!qobject_cast<QApplication*>(QCoreApplication::instance())) {
        err << "ksearch: internal error: the window needs a QApplication\n";
        return exitcode::Failure;
    }
    QGuiApplication::setDesktopFileName(QStringLiteral("io.github.ksearch_studio.ksearch"));
    ui::MainWindow window;
    window.show();
    return QApplication::exec();
#endif
}

} // namespace ks::cli
