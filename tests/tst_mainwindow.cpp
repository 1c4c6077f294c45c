#include "testmain.h"
#include "testsupport.h"

#include <QAbstractItemModelTester>
#include <QStatusBar>
#include <QTableWidget>

#include <mainwindow.h>

using namespace ks;

class TestMainWindow : public QObject
{
    Q_OBJECT
private slots:
    void showsTasks();
};

void TestMainWindow::showsTasks()
{
    ui::MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* table = window.findChild<QTableWidget*>(u"taskTable"_qs);
    QVERIFY(table);
    QAbstractItemModelTester tester(table->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    int row = -1;
    for (int r = 0; r < table->rowCount(); ++r)
        if (table->item(r, 0)->text() == u"rmsnorm")
            row = r;
    QVERIFY(row >= 0);
    QCOMPARE(table->item(row, 3)->text(), u"valid"_qs);
    QCOMPARE(table->item(row, 2)->data(Qt::DisplayRole).toInt(), 9);
    const int rows = table->rowCount();
    window.reloadTasks(); // a reload rebuilds the same rows (the tester checks every signal)
    QCOMPARE(table->rowCount(), rows);
    QVERIFY(window.statusBar()->currentMessage().contains(u"valid"));
}

KS_TEST_MAIN_GUI(TestMainWindow)
#include "tst_mainwindow.moc"
