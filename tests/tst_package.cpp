#include "testmain.h"
#include "testsupport.h"

#include <QDir>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

using namespace ks;

// Builds the .deb with CPack from this build tree, unpacks it into a staging folder and runs the
// installed executables from there.
class TestPackage : public QObject
{
    Q_OBJECT
private slots:
    void debInstallsAndRuns();
};

static QString run(const QString& program, const QStringList& args, const QString& cwd, int* exitCode)
{
    QProcess p;
    p.setWorkingDirectory(cwd);
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(program, args);
    p.waitForFinished(600000);
    *exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    return QString::fromUtf8(p.readAll());
}

void TestPackage::debInstallsAndRuns()
{
    if (QStandardPaths::findExecutable(u"dpkg-deb"_qs).isEmpty())
        QSKIP("dpkg-deb not found: not a Debian system");
    QTemporaryDir work;
    const QString binary = QStringLiteral(KSEARCH_BINARY_DIR);
    int rc = 0;
    const QString log = run(u"cpack"_qs,
        {u"-G"_qs, u"DEB"_qs, u"--config"_qs, binary + u"/CPackConfig.cmake"_qs, u"-B"_qs, work.path()}, binary, &rc);
    QVERIFY2(rc == 0, qPrintable(log));
    const QStringList debs = QDir(work.path()).entryList({u"*.deb"_qs});
    QCOMPARE(debs.size(), 1);
    const QString deb = work.filePath(debs[0]);

    const QString info = run(u"dpkg-deb"_qs, {u"--info"_qs, deb}, work.path(), &rc);
    QCOMPARE(rc, 0);
    QVERIFY2(info.contains(u"Package: ksearch-studio"), qPrintable(info));
    QVERIFY2(info.contains(u"Depends:") && info.contains(u"libqt6"), qPrintable(info));

    const QString stage = work.filePath(u"stage"_qs);
    run(u"dpkg-deb"_qs, {u"-x"_qs, deb, stage}, work.path(), &rc);
    QCOMPARE(rc, 0);
    for (const char* path :
        {"usr/bin/ksearch", "usr/bin/ksearch-runner", "usr/share/ksearch/tasks/rmsnorm/definition.json",
            "usr/share/applications/io.github.ksearch_studio.ksearch.desktop",
            "usr/share/metainfo/io.github.ksearch_studio.ksearch.metainfo.xml",
            "usr/share/icons/hicolor/scalable/apps/io.github.ksearch_studio.ksearch.svg",
            // the confinement the Python runner loads, where ksearch looks for it from bin/
            "usr/lib/ksearch/libksearch_confine.so"})
        QVERIFY2(QFile::exists(stage + u'/' + QLatin1String(path)), path);
    // A build with CUPTI has the spans library the Python runner loads, and installs it where
    // ksearch looks for it from bin/ (../lib/ksearch): without it, a Python candidate's work on a
    // side stream could hide from the timer.
    if (QFile::exists(binary + u"/bin/libksearch_spans.so"_qs))
        QVERIFY(QFile::exists(stage + u"/usr/lib/ksearch/libksearch_spans.so"_qs));

    const QString version = run(stage + u"/usr/bin/ksearch"_qs, {u"--version"_qs}, work.path(), &rc);
    QCOMPARE(rc, 0);
    QCOMPARE(version.trimmed(), u"ksearch " KSEARCH_VERSION ""_qs);
    // The installed binary finds the installed tasks (share/ksearch/tasks beside bin/), from a
    // folder with no tasks of its own.
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(u"KSEARCH_TASKS_PATH"_qs);
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(work.path());
    p.start(stage + u"/usr/bin/ksearch"_qs, {u"tasks"_qs, u"list"_qs});
    QVERIFY(p.waitForFinished(60000));
    const QString list = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(list.contains(stage + u"/usr/share/ksearch/tasks/rmsnorm"_qs), qPrintable(list));

    if (!QStandardPaths::findExecutable(u"desktop-file-validate"_qs).isEmpty()) {
        const QString v = run(u"desktop-file-validate"_qs,
            {stage + u"/usr/share/applications/io.github.ksearch_studio.ksearch.desktop"_qs}, work.path(), &rc);
        QVERIFY2(rc == 0, qPrintable(v));
    }
}

KS_TEST_MAIN_CORE(TestPackage)
#include "tst_package.moc"
