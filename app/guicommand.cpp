// `ksearch` / `ksearch gui`: the desktop window.

#include "cli.h"
#include "exitcodes.h"

#include <QApplication>
#include <QGuiApplication>
#include <QTextStream>

#include <mainwindow.h>

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
    if (!qobject_cast<QApplication*>(QCoreApplication::instance())) {
        err << "ksearch: internal error: the window needs a QApplication\n";
        return exitcode::Failure;
    }
    QGuiApplication::setDesktopFileName(QStringLiteral("io.github.ksearch_studio.ksearch"));
    ui::MainWindow window;
    window.show();
    return QApplication::exec();
}

} // namespace ks::cli
