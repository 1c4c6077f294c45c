// `ksearch` / `ksearch gui`: the desktop window.

#include "cli.h"
#include "exitcodes.h"

#include <QTextStream>

#ifdef KSEARCH_WITH_GUI
#include <QApplication>
#include <QGuiApplication>

#include <mainwindow.h>
#include <settings.h>
#endif

namespace ks::cli {

int runGui(const QStringList& arguments, const GlobalOptions& /*global*/)
{
    QTextStream err(stderr);
    QString session;
    for (int i = 1; i < arguments.size(); ++i) {
        if (arguments[i] == u"--help" || arguments[i] == u"-h") {
            QTextStream(stdout) << "Usage: ksearch [gui] [--session DIR]\n"
                                   "Opens the desktop window; with --session, that session (a run that has not\n"
                                   "finished continues). With no LLM configured yet, the example session opens.\n";
            return exitcode::Success;
        }
        if (arguments[i] == u"--session" && i + 1 < arguments.size()) {
            session = arguments[++i];
            continue;
        }
        err << "ksearch gui: unexpected argument '" << arguments[i] << "'\n";
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
    if (!session.isEmpty())
        window.openSession(session, true);
    else if (!ui::Settings::llmConfigured()) // a first start: a real tree and real charts at once
        window.openExample();
    return QApplication::exec();
#endif
}

} // namespace ks::cli
