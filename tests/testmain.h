#pragma once

// Test entry points: headless (offscreen) unless the caller chose a platform, fixed DPI, and an
// isolated data folder so tests never write into the user's home.

#ifdef QT_WIDGETS_LIB
#include <QApplication>
#endif
#include <QCoreApplication>
#include <QTemporaryDir>
#include <QTest>

#define KS_TEST_ENV_SETUP()                                                                                            \
    QTemporaryDir ksTestHome;                                                                                          \
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM"))                                                                 \
        qputenv("QT_QPA_PLATFORM", "offscreen");                                                                       \
    qputenv("XDG_DATA_HOME", ksTestHome.path().toLocal8Bit() + "/data");                                               \
    qputenv("XDG_CONFIG_HOME", ksTestHome.path().toLocal8Bit() + "/config");                                           \
    qputenv("XDG_CACHE_HOME", ksTestHome.path().toLocal8Bit() + "/cache");

#define KS_TEST_MAIN_CORE(TestClass)                                                                                   \
    int main(int argc, char** argv)                                                                                    \
    {                                                                                                                  \
        KS_TEST_ENV_SETUP()                                                                                            \
        QCoreApplication app(argc, argv);                                                                              \
        TestClass tc;                                                                                                  \
        return QTest::qExec(&tc, argc, argv);                                                                          \
    }

#define KS_TEST_MAIN_GUI(TestClass)                                                                                    \
    int main(int argc, char** argv)                                                                                    \
    {                                                                                                                  \
        KS_TEST_ENV_SETUP()                                                                                            \
        QApplication::setAttribute(Qt::AA_Use96Dpi, true);                                                             \
        QApplication app(argc, argv);                                                                                  \
        TestClass tc;                                                                                                  \
        return QTest::qExec(&tc, argc, argv);                                                                          \
    }
