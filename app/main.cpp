#include "cli.h"

#ifdef KSEARCH_WITH_GUI
#include <QApplication>
#endif
#include <QCoreApplication>

#include <memory>

int main(int argc, char** argv)
{
    QStringList arguments;
    for (int i = 0; i < argc; ++i)
        arguments << QString::fromLocal8Bit(argv[i]);

    // The window needs a QApplication (and a display); every other command stays headless.
    std::unique_ptr<QCoreApplication> app;
#ifdef KSEARCH_WITH_GUI
    if (ks::cli::wantsGui(arguments))
        app = std::make_unique<QApplication>(argc, argv);
    else
#endif
        app = std::make_unique<QCoreApplication>(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("ksearch"));
    QCoreApplication::setOrganizationName(QStringLiteral("K-Search Studio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(KSEARCH_VERSION));
    return ks::cli::dispatch(arguments);
}
