#include "settingsdialog.h"

#include "llmrolebox.h"
#include "settings.h"

#include <llm/apikeys.h>
#include <llm/pricetable.h>
#include <task/sanitizerreport.h>
#include <util/qtext.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <gpulist.h>
#include <sshremote.h>

namespace ks::ui {

SettingsDialog::SettingsDialog(QWidget* parent)
    : QDialog(parent)
{
    setObjectName(QStringLiteral("settingsDialog"));
    setWindowTitle(tr("Settings"));
    auto* tabs = new QTabWidget(this);

    auto* models = new QWidget(tabs);
    auto* modelsLayout = new QHBoxLayout(models);
    m_planner = new LlmRoleBox(tr("World model (planner)"), QStringLiteral("settingsPlanner"), models);
    m_planner->setConfig(Settings::role(u"planner"_qs));
    m_coder = new LlmRoleBox(tr("Code policy (coder)"), QStringLiteral("settingsCoder"), models);
    m_coder->setConfig(Settings::role(u"coder"_qs));
    modelsLayout->addWidget(m_planner);
    modelsLayout->addWidget(m_coder);
    tabs->addTab(models, tr("Models"));

    auto* keys = new QWidget(tabs);
    auto* keysForm = new QFormLayout(keys);
    keysForm->addRow(new QLabel(tr("Keys are looked up in the environment first, then in the OS keychain. "
                                   "They are never written to a file, a session or a log."),
        keys));
    for (const QString& provider : {u"openai"_qs, u"anthropic"_qs, u"gemini"_qs}) {
        auto* row = new QHBoxLayout;
        auto* edit = new QLineEdit(keys);
        edit->setObjectName(provider + u"KeyEdit");
        edit->setEchoMode(QLineEdit::Password);
        auto* store = new QPushButton(tr("Store in keychain"), keys);
        auto* status = new QLabel(keys);
        const QString variable = apiKeyVariable(provider);
        status->setText(qEnvironmentVariableIsSet(variable.toLatin1().constData())
                ? tr("set in %1").arg(variable)
                : (readKeychainKey(provider) ? tr("in the keychain") : tr("not set")));
        row->addWidget(edit, 1);
        row->addWidget(store);
        row->addWidget(status);
        keysForm->addRow(provider, row);
        connect(
            store, &QPushButton::clicked, this, [this, provider, edit, status] { storeKey(provider, edit, status); });
    }
    tabs->addTab(keys, tr("API keys"));

    auto* evaluation = new QWidget(tabs);
    auto* evalForm = new QFormLayout(evaluation);
    m_device = new QLineEdit(Settings::get(settings::cudaDevice), evaluation);
    m_device->setObjectName(QStringLiteral("cudaDevice"));
    m_device->setPlaceholderText(tr("the first visible GPU; or an index such as 1"));
    m_flags = new QLineEdit(Settings::get(settings::extraCompilerFlags), evaluation);
    m_flags->setObjectName(QStringLiteral("compilerFlags"));
    m_flags->setPlaceholderText(tr("extra nvcc / g++ flags for candidates, e.g. --use_fast_math"));
    m_python = new QLineEdit(Settings::get(settings::python), evaluation);
    m_python->setObjectName(QStringLiteral("python"));
    m_python->setPlaceholderText(tr("python3 with torch (and triton), for Triton and PyTorch candidates"));
    m_benchSeconds = new QDoubleSpinBox(evaluation);
    m_benchSeconds->setObjectName(QStringLiteral("benchSeconds"));
    m_benchSeconds->setRange(0.01, 60);
    m_benchSeconds->setValue(Settings::get(settings::benchSeconds));
    m_benchSeconds->setSuffix(tr(" s per workload"));
    m_prices = new QLineEdit(Settings::get(settings::pricesFile), evaluation);
    m_prices->setObjectName(QStringLiteral("pricesFile"));
    m_prices->setPlaceholderText(PriceTable::userOverridePath());
    m_folder = new QLineEdit(Settings::get(settings::sessionsFolder), evaluation);
    m_folder->setObjectName(QStringLiteral("sessionsFolder"));
    m_folder->setPlaceholderText(tr("~/ksearch-sessions"));
    evalForm->addRow(tr("GPU"), m_device);
    evalForm->addRow(tr("Compiler flags"), m_flags);
    evalForm->addRow(tr("Python"), m_python);
    evalForm->addRow(tr("Timing loop cap"), m_benchSeconds);
    evalForm->addRow(tr("Price overrides"), m_prices);
    evalForm->addRow(tr("Sessions folder"), m_folder);
    m_notify = new QCheckBox(tr("Notify me when a live search finds a new best kernel or ends"), evaluation);
    m_notify->setObjectName(QStringLiteral("notifications"));
    m_notify->setChecked(Settings::get(settings::notifications));
    evalForm->addRow(tr("Notifications"), m_notify);
    m_confine =
        new QCheckBox(tr("Confine candidates (turn off only to debug one; every evaluation records it)"), evaluation);
    m_confine->setObjectName(QStringLiteral("confineCandidates"));
    m_confine->setChecked(Settings::get(settings::confineCandidates));
    evalForm->addRow(tr("Confinement"), m_confine);
    m_sanitizeFailures = new QComboBox(evaluation);
    m_sanitizeFailures->setObjectName(QStringLiteral("sanitizeFailures"));
    m_sanitizeFailures->addItem(tr("Judged as they are, not run again"), QString());
    for (const SanitizerTool tool :
        {SanitizerTool::Memcheck, SanitizerTool::Racecheck, SanitizerTool::Initcheck, SanitizerTool::Synccheck})
        m_sanitizeFailures->addItem(
            tr("Under compute-sanitizer %1").arg(q(sanitizerToolName(tool))), q(sanitizerToolName(tool)));
    m_sanitizeFailures->setCurrentIndex(
        std::max(0, m_sanitizeFailures->findData(Settings::get(settings::sanitizeFailures))));
    m_sanitizeFailures->setToolTip(tr("A CUDA candidate that crashes or computes wrong results runs once more under "
                                      "the tool; the code policy's next attempt sees what it found."));
    evalForm->addRow(tr("Failed CUDA candidates"), m_sanitizeFailures);
    tabs->addTab(evaluation, tr("Evaluation"));

    auto* evaluators = new QWidget(tabs);
    auto* evaluatorsForm = new QFormLayout(evaluators);
    m_gpus = new QLineEdit(Settings::get(settings::gpus), evaluators);
    m_gpus->setObjectName(QStringLiteral("gpus"));
    m_gpus->setPlaceholderText(tr("all, or a list such as 0,1 (empty: the GPU above)"));
    m_perDevice = new QSpinBox(evaluators);
    m_perDevice->setObjectName(QStringLiteral("localWorkers"));
    m_perDevice->setRange(0, 16);
    m_perDevice->setSpecialValueText(tr("none: only the workers below"));
    m_perDevice->setValue(Settings::get(settings::localWorkers));
    m_perDevice->setToolTip(tr("Runs on one device take turns; with two or more, the next candidate compiles "
                               "while one is timed."));
    m_workers = new QPlainTextEdit(Settings::get(settings::workerCommands).join(u'\n'), evaluators);
    m_workers->setObjectName(QStringLiteral("workerCommands"));
    m_workers->setPlaceholderText(tr("One per line: an ssh address, or a command that starts a `ksearch worker`, e.g.\n"
                                     "ssh://alice@gpu-box/opt/ksearch/bin/ksearch\n"
                                     "srun --partition=gpu --gres=gpu:1 ksearch worker"));
    m_slurm = new QLineEdit(Settings::get(settings::slurm), evaluators);
    m_slurm->setObjectName(QStringLiteral("slurm"));
    m_slurm->setPlaceholderText(tr("PARTITION[,SALLOC OPTIONS], e.g. gpu,--gpus-per-task=1 (empty: no cluster)"));
    m_slurmWorkers = new QSpinBox(evaluators);
    m_slurmWorkers->setObjectName(QStringLiteral("slurmWorkers"));
    m_slurmWorkers->setRange(1, 256);
    m_slurmWorkers->setValue(Settings::get(settings::slurmWorkers));
    m_slurmWorkers->setToolTip(tr("Job steps in the search's one allocation, a worker each"));
    m_slurmKsearch = new QLineEdit(Settings::get(settings::slurmKsearch), evaluators);
    m_slurmKsearch->setObjectName(QStringLiteral("slurmKsearch"));
    m_slurmKsearch->setPlaceholderText(tr("the ksearch the nodes run (empty: this one, on a shared file system)"));
    m_parallel = new QSpinBox(evaluators);
    m_parallel->setObjectName(QStringLiteral("parallel"));
    m_parallel->setRange(0, 64);
    m_parallel->setSpecialValueText(tr("one per evaluator"));
    m_parallel->setValue(Settings::get(settings::parallel));
    evaluatorsForm->addRow(tr("Local GPUs"), m_gpus);
    evaluatorsForm->addRow(tr("Evaluators per device"), m_perDevice);
    evaluatorsForm->addRow(tr("Workers"), m_workers);
    evaluatorsForm->addRow(tr("SLURM allocation"), m_slurm);
    evaluatorsForm->addRow(tr("SLURM workers"), m_slurmWorkers);
    evaluatorsForm->addRow(tr("ksearch on the nodes"), m_slurmKsearch);
    evaluatorsForm->addRow(tr("Actions at once"), m_parallel);
    tabs->addTab(evaluators, tr("Evaluators"));

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(tabs);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &SettingsDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

void SettingsDialog::storeKey(const QString& provider, QLineEdit* edit, QLabel* status)
{
    QString error;
    if (edit->text().trimmed().isEmpty())
        return;
    if (!writeKeychainKey(provider, edit->text().trimmed(), &error)) {
        QMessageBox::warning(this, windowTitle(), error);
        return;
    }
    edit->clear();
    status->setText(tr("in the keychain"));
}

void SettingsDialog::accept()
{
    if (!m_prices->text().isEmpty()) {
        PriceTable t = PriceTable::builtIn();
        QString error;
        if (!t.merge(m_prices->text(), &error)) {
            QMessageBox::warning(this, windowTitle(), error);
            return;
        }
    }
    if (const QString gpus = m_gpus->text().trimmed(); !gpus.isEmpty()) {
        std::string error;
        if (!parseGpuList(gpus.toStdString(), error)) {
            QMessageBox::warning(this, windowTitle(), tr("Local GPUs: %1").arg(QString::fromStdString(error)));
            return;
        }
    }
    QStringList workers;
    for (const QString& line : m_workers->toPlainText().split(u'\n', Qt::SkipEmptyParts))
        if (!line.trimmed().isEmpty())
            workers << line.trimmed();
    for (const QString& worker : workers) {
        std::string error;
        if (worker.startsWith(u"ssh://") && !sshWorkerCommand(worker.toStdString(), "ssh", error)) {
            QMessageBox::warning(this, windowTitle(), tr("Workers: %1").arg(QString::fromStdString(error)));
            return;
        }
    }
    const QString slurm = m_slurm->text().trimmed();
    if (slurm.startsWith(u',')) {
        QMessageBox::warning(this, windowTitle(), tr("SLURM allocation: the partition comes first"));
        return;
    }
    if (workers.isEmpty() && slurm.isEmpty() && m_perDevice->value() == 0) {
        QMessageBox::warning(
            this, windowTitle(), tr("Evaluators per device: none, and no worker: nothing would evaluate."));
        return;
    }
    Settings::set(settings::gpus, m_gpus->text().trimmed());
    Settings::set(settings::localWorkers, m_perDevice->value());
    Settings::set(settings::workerCommands, workers);
    Settings::set(settings::parallel, m_parallel->value());
    Settings::set(settings::slurm, slurm);
    Settings::set(settings::slurmWorkers, m_slurmWorkers->value());
    Settings::set(settings::slurmKsearch, m_slurmKsearch->text().trimmed());
    Settings::setRole(u"planner"_qs, m_planner->config());
    Settings::setRole(u"coder"_qs, m_coder->config());
    Settings::set(settings::cudaDevice, m_device->text().trimmed());
    Settings::set(settings::extraCompilerFlags, m_flags->text().trimmed());
    Settings::set(settings::python, m_python->text().trimmed());
    Settings::set(settings::benchSeconds, m_benchSeconds->value());
    Settings::set(settings::pricesFile, m_prices->text().trimmed());
    Settings::set(settings::sessionsFolder, m_folder->text().trimmed());
    Settings::set(settings::notifications, m_notify->isChecked());
    Settings::set(settings::confineCandidates, m_confine->isChecked());
    Settings::set(settings::sanitizeFailures, m_sanitizeFailures->currentData().toString());
    QDialog::accept();
}

} // namespace ks::ui
