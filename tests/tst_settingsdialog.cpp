#include "testmain.h"

#include <task/sanitizerreport.h>

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QTimer>

#include <settings.h>
#include <settingsdialog.h>

using namespace ks;

// The Settings dialog's Evaluators tab: what it stores, and what it refuses with a message that
// names the field (nothing stored then).
class TestSettingsDialog : public QObject
{
    Q_OBJECT
private slots:
    void evaluatorsTab_data();
    void evaluatorsTab();
    void switchesAreSettings_data();
    void switchesAreSettings();
    void sanitizerForFailuresIsASetting();
};

void TestSettingsDialog::evaluatorsTab_data()
{
    QTest::addColumn<QString>("gpus");
    QTest::addColumn<int>("perDevice");
    QTest::addColumn<QString>("workers");
    QTest::addColumn<QString>("slurm");
    QTest::addColumn<QString>("refusal"); // empty: accepted and stored
    QTest::newRow("local GPUs and remote workers")
        << "0,1" << 2 << "ssh://alice@gpu-box:2222/opt/ks/bin/ksearch\nssh other ksearch worker"
        << ""
        << "";
    QTest::newRow("a cluster alone") << "" << 0 << ""
                                     << "gpu,--gpus-per-task=1"
                                     << "";
    QTest::newRow("bad GPU list") << "0,x" << 1 << ""
                                  << ""
                                  << "Local GPUs:";
    QTest::newRow("bad ssh address") << "" << 1 << "ssh://gpu-box:99999"
                                     << ""
                                     << "Workers: 'ssh://gpu-box:99999'";
    QTest::newRow("slurm options without partition") << "" << 1 << ""
                                                     << ",--time=10"
                                                     << "SLURM allocation:";
    QTest::newRow("nothing evaluates") << "" << 0 << ""
                                       << ""
                                       << "nothing would evaluate";
}

void TestSettingsDialog::evaluatorsTab()
{
    QFETCH(QString, gpus);
    QFETCH(int, perDevice);
    QFETCH(QString, workers);
    QFETCH(QString, slurm);
    QFETCH(QString, refusal);
    ui::Settings::set(ui::settings::workerCommands, QStringList {u"before"_qs});
    ui::SettingsDialog dialog;
    dialog.findChild<QLineEdit*>(u"gpus"_qs)->setText(gpus);
    dialog.findChild<QSpinBox*>(u"localWorkers"_qs)->setValue(perDevice);
    dialog.findChild<QPlainTextEdit*>(u"workerCommands"_qs)->setPlainText(workers);
    dialog.findChild<QLineEdit*>(u"slurm"_qs)->setText(slurm);
    dialog.findChild<QSpinBox*>(u"slurmWorkers"_qs)->setValue(3);

    // A refusal is a modal message box: read it and close it from inside its own event loop.
    QString shown;
    QTimer closer;
    connect(&closer, &QTimer::timeout, &closer, [&] {
        if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
            shown = box->text();
            box->accept();
        }
    });
    closer.start(10);
    dialog.accept();
    closer.stop();

    if (refusal.isEmpty()) {
        QVERIFY2(shown.isEmpty(), qPrintable(shown));
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
        QCOMPARE(ui::Settings::get(ui::settings::workerCommands), workers.split(u'\n', Qt::SkipEmptyParts));
        QCOMPARE(ui::Settings::get(ui::settings::slurm), slurm);
        QCOMPARE(ui::Settings::get(ui::settings::slurmWorkers), 3);
        QCOMPARE(ui::Settings::get(ui::settings::gpus), gpus);
    } else {
        QVERIFY2(shown.contains(refusal), qPrintable(shown));
        QCOMPARE(ui::Settings::get(ui::settings::workerCommands), QStringList {u"before"_qs});
    }
}

void TestSettingsDialog::switchesAreSettings_data()
{
    QTest::addColumn<QString>("box");
    QTest::newRow("notices of a live search") << u"notifications"_qs;
    QTest::newRow("confinement of candidates") << u"confineCandidates"_qs;
}

// The switches of the Evaluation tab show what is stored and store what is set.
void TestSettingsDialog::switchesAreSettings()
{
    QFETCH(QString, box);
    const ui::SettingKey<bool>& key =
        box == u"notifications" ? ui::settings::notifications : ui::settings::confineCandidates;
    ui::Settings::set(ui::settings::localWorkers, 1); // a valid Evaluators tab, whatever ran before
    ui::Settings::set(ui::settings::workerCommands, QStringList());
    ui::Settings::set(ui::settings::gpus, QString());
    ui::Settings::set(ui::settings::slurm, QString());
    for (const bool on : {false, true}) {
        ui::Settings::set(key, !on);
        ui::SettingsDialog dialog;
        auto* check = dialog.findChild<QCheckBox*>(box);
        QVERIFY(check);
        QCOMPARE(check->isChecked(), !on);
        check->setChecked(on);
        dialog.accept();
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
        QCOMPARE(ui::Settings::get(key), on);
    }
}

// The tool failed CUDA candidates run under again: the box shows what is stored ("" is none) and
// stores what is picked, as the tool's own name, which the search reads back as a tool.
void TestSettingsDialog::sanitizerForFailuresIsASetting()
{
    ui::Settings::set(ui::settings::localWorkers, 1);
    ui::Settings::set(ui::settings::workerCommands, QStringList());
    ui::Settings::set(ui::settings::gpus, QString());
    ui::Settings::set(ui::settings::slurm, QString());
    for (const QString& tool : {u"racecheck"_qs, QString(), u"memcheck"_qs}) {
        ui::SettingsDialog dialog;
        auto* box = dialog.findChild<QComboBox*>(u"sanitizeFailures"_qs);
        QVERIFY(box);
        QCOMPARE(box->count(), 5); // none and the four tools
        const int index = box->findData(tool);
        QVERIFY(index >= 0);
        box->setCurrentIndex(index);
        dialog.accept();
        QCOMPARE(ui::Settings::get(ui::settings::sanitizeFailures), tool);
        QCOMPARE(parseSanitizerTool(tool.toStdString()).has_value(), !tool.isEmpty());
        ui::SettingsDialog again;
        QCOMPARE(again.findChild<QComboBox*>(u"sanitizeFailures"_qs)->currentData().toString(), tool);
    }
}

KS_TEST_MAIN_GUI(TestSettingsDialog)
#include "tst_settingsdialog.moc"
