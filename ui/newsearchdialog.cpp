#include "newsearchdialog.h"

#include "llmrolebox.h"
#include "settings.h"

#include <search/taskbrief.h>
#include <task/language.h>
#include <task/taskcatalog.h>
#include <util/qtext.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ks::ui {

namespace {

QLineEdit* fileField(QWidget* parent, const QString& name, bool folder, QHBoxLayout** row)
{
    auto* edit = new QLineEdit(parent);
    edit->setObjectName(name);
    auto* browse = new QPushButton(QObject::tr("Browse..."), parent);
    *row = new QHBoxLayout;
    (*row)->addWidget(edit, 1);
    (*row)->addWidget(browse);
    QObject::connect(browse, &QPushButton::clicked, parent, [edit, folder, parent] {
        const QString path = folder
            ? QFileDialog::getExistingDirectory(parent, QObject::tr("Session folder"), edit->text())
            : QFileDialog::getOpenFileName(parent, QObject::tr("Seed program"), edit->text());
        if (!path.isEmpty())
            edit->setText(path);
    });
    return edit;
}

} // namespace

NewSearchDialog::NewSearchDialog(QWidget* parent)
    : QDialog(parent)
{
    setObjectName(QStringLiteral("newSearchDialog"));
    setWindowTitle(tr("New search"));
    auto* split = new QSplitter(this);

    auto* left = new QWidget(split);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->addWidget(new QLabel(tr("<b>Task</b>"), left));
    m_tasks = new QListWidget(left);
    m_tasks->setObjectName(QStringLiteral("taskList"));
    for (const auto& t : listTasks()) {
        auto* item = new QListWidgetItem(q(t.name), m_tasks);
        item->setData(Qt::UserRole, q(t.dir.string()));
    }
    leftLayout->addWidget(m_tasks, 1);
    m_taskDetails = new QLabel(left);
    m_taskDetails->setObjectName(QStringLiteral("taskDetails"));
    m_taskDetails->setWordWrap(true);
    m_taskDetails->setTextFormat(Qt::RichText);
    leftLayout->addWidget(m_taskDetails);
    m_workloads = new QTableWidget(0, 2, left);
    m_workloads->setObjectName(QStringLiteral("taskWorkloads"));
    m_workloads->setHorizontalHeaderLabels({tr("Workload"), tr("Axes")});
    m_workloads->horizontalHeader()->setStretchLastSection(true);
    m_workloads->verticalHeader()->hide();
    m_workloads->setEditTriggers(QAbstractItemView::NoEditTriggers);
    leftLayout->addWidget(m_workloads, 1);
    connect(m_tasks, &QListWidget::currentRowChanged, this, &NewSearchDialog::showTask);

    // The settings scroll where the screen is short (1280 x 800 with a title bar and a panel):
    // the dialog never has to be taller than the screen to show its buttons.
    auto* scroll = new QScrollArea(split);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* right = new QWidget(scroll);
    scroll->setWidget(right);
    auto* form = new QFormLayout(right);
    m_strategy = new QComboBox(right);
    m_strategy->setObjectName(QStringLiteral("strategy"));
    m_strategy->addItems({u"ksearch"_qs, u"evolve"_qs, u"greedy"_qs});
    m_backend = new QComboBox(right);
    m_backend->setObjectName(QStringLiteral("backend"));
    m_backend->addItems({u"cuda"_qs, u"host"_qs});
    m_backend->setCurrentText(Settings::get(settings::backend));
    // The languages the chosen backend runs; the compiled one first (the default).
    m_language = new QComboBox(right);
    m_language->setObjectName(QStringLiteral("language"));
    m_language->setToolTip(tr("What the code policy writes: CUDA or C++ (compiled), Triton or PyTorch (run in the "
                              "Python runner with the interpreter of Settings > Evaluation > Python)"));
    const auto fillLanguages = [this](const QString& backend) {
        const QString keep =
            m_language->currentText().isEmpty() ? Settings::get(settings::language) : m_language->currentText();
        m_language->clear();
        for (const Language l : {Language::Cuda, Language::Cpp, Language::Triton, Language::Python})
            if (languageBackendProblem(l, backend.toStdString()).empty())
                m_language->addItem(QString::fromLatin1(languageName(l).data()));
        if (m_language->findText(keep) >= 0)
            m_language->setCurrentText(keep);
    };
    fillLanguages(m_backend->currentText());
    connect(m_backend, &QComboBox::currentTextChanged, this, fillLanguages);
    m_budget = new QSpinBox(right);
    m_budget->setObjectName(QStringLiteral("budget"));
    m_budget->setRange(1, 100000);
    m_budget->setValue(120);
    m_k = new QSpinBox(right);
    m_k->setObjectName(QStringLiteral("stagnation"));
    m_k->setRange(1, 100);
    m_k->setValue(7);
    m_minGain = new QDoubleSpinBox(right);
    m_minGain->setObjectName(QStringLiteral("minImprovement"));
    m_minGain->setRange(0, 500);
    m_minGain->setSuffix(QStringLiteral(" %"));
    m_minGain->setValue(1.0);
    m_islands = new QSpinBox(right);
    m_islands->setObjectName(QStringLiteral("islands"));
    m_islands->setRange(1, 64);
    m_islands->setValue(3);
    m_frozen = new QCheckBox(tr("Frozen V (ablation)"), right);
    m_frozen->setObjectName(QStringLiteral("frozenValues"));
    m_flat = new QCheckBox(tr("Flat frontier (ablation)"), right);
    m_flat->setObjectName(QStringLiteral("flatFrontier"));
    m_target = new QDoubleSpinBox(right);
    m_target->setObjectName(QStringLiteral("targetScore"));
    m_target->setRange(0, 1e6);
    m_target->setSpecialValueText(tr("none"));
    m_maxMinutes = new QDoubleSpinBox(right);
    m_maxMinutes->setObjectName(QStringLiteral("maxMinutes"));
    m_maxMinutes->setRange(0, 1e6);
    m_maxMinutes->setSuffix(tr(" min"));
    m_maxMinutes->setSpecialValueText(tr("none"));
    m_maxDollars = new QDoubleSpinBox(right);
    m_maxDollars->setObjectName(QStringLiteral("maxDollars"));
    m_maxDollars->setRange(0, 1e6);
    m_maxDollars->setPrefix(QStringLiteral("$"));
    m_maxDollars->setSpecialValueText(tr("none"));
    form->addRow(tr("Strategy"), m_strategy);
    form->addRow(tr("Backend"), m_backend);
    form->addRow(tr("Candidate language"), m_language);
    form->addRow(tr("Budget B (evaluations)"), m_budget);
    form->addRow(tr("Stagnation limit K"), m_k);
    form->addRow(tr("Least gain that counts"), m_minGain);
    form->addRow(tr("Islands (evolve)"), m_islands);
    form->addRow(m_frozen);
    form->addRow(m_flat);
    form->addRow(tr("Stop at J"), m_target);
    form->addRow(tr("Stop after"), m_maxMinutes);
    form->addRow(tr("Dollar cap"), m_maxDollars);
    m_planner = new LlmRoleBox(tr("World model (planner)"), QStringLiteral("planner"), right);
    m_planner->setConfig(Settings::role(u"planner"_qs));
    form->addRow(m_planner);
    m_sameModel = new QCheckBox(tr("The code policy uses the same model"), right);
    m_sameModel->setObjectName(QStringLiteral("sameModel"));
    m_sameModel->setChecked(true);
    form->addRow(m_sameModel);
    m_coder = new LlmRoleBox(tr("Code policy (coder)"), QStringLiteral("coder"), right);
    m_coder->setConfig(Settings::role(u"coder"_qs));
    m_coder->setVisible(false);
    form->addRow(m_coder);
    connect(m_sameModel, &QCheckBox::toggled, m_coder, [this](bool same) { m_coder->setVisible(!same); });
    QHBoxLayout* row = nullptr;
    m_seed = fileField(right, QStringLiteral("seedFile"), false, &row);
    form->addRow(tr("Seed program"), row);
    m_folder = fileField(right, QStringLiteral("sessionFolder"), true, &row);
    form->addRow(tr("Session folder"), row);
    m_label = new QLineEdit(right);
    m_label->setObjectName(QStringLiteral("sessionLabel"));
    m_label->setPlaceholderText(tr("why this run (kept with the session)"));
    form->addRow(tr("Label"), m_label);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(split, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Start"));
    connect(buttons, &QDialogButtonBox::accepted, this, &NewSearchDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    if (m_tasks->count() > 0)
        m_tasks->setCurrentRow(0);
    resize(QSize(1100, 760).boundedTo(screen()->availableGeometry().size() * 9 / 10));
}

void NewSearchDialog::selectTask(const QString& name)
{
    const auto found = m_tasks->findItems(name, Qt::MatchExactly);
    if (!found.isEmpty())
        m_tasks->setCurrentItem(found.first());
}

void NewSearchDialog::showTask()
{
    m_workloads->setRowCount(0);
    QListWidgetItem* item = m_tasks->currentItem();
    if (!item)
        return;
    const auto loaded = loadTask(item->data(Qt::UserRole).toString().toStdString());
    if (!loaded.task) {
        m_taskDetails->setText(tr("<span style='color:#c0504d'>invalid task:</span><pre>%1</pre>")
                                   .arg(q(loaded.diagnostics.formatAll()).toHtmlEscaped()));
        return;
    }
    const Task& t = *loaded.task;
    QString inputs;
    for (const auto& in : t.definition.inputs)
        inputs += q(in.name) + u' ';
    const std::size_t heldOut = t.definition.heldOutWorkloads.size();
    const QString count = heldOut == 0 ? tr("%n workload(s)", nullptr, static_cast<int>(t.workloads.size()))
                                       : tr("%1 workloads, %2 of them held out").arg(t.workloads.size()).arg(heldOut);
    m_taskDetails->setText(tr("<b>%1</b> (%2)<br>%3<br><i>inputs:</i> %4<br><i>%5</i>")
                               .arg(q(t.definition.name), q(t.definition.opType),
                                   q(t.definition.description).toHtmlEscaped(), inputs, count));
    // A held-out workload is verified and timed on every candidate but never shown to the code
    // policy nor counted in J (docs/tasks.md): the person choosing the task should know which.
    const QString heldOutTip = tr("Held out: verified and timed on every candidate, never shown to the code policy, "
                                  "not counted in J");
    for (const auto& w : t.workloads) {
        const int r = m_workloads->rowCount();
        m_workloads->insertRow(r);
        auto* id = new QTableWidgetItem(q(w.uuid.substr(0, 8)));
        auto* axes = new QTableWidgetItem(q(workloadLabel(t, w.uuid)));
        if (t.definition.holdsOut(w.uuid)) {
            axes->setText(axes->text() + tr(" (held out)"));
            id->setToolTip(heldOutTip);
            axes->setToolTip(heldOutTip);
        }
        m_workloads->setItem(r, 0, id);
        m_workloads->setItem(r, 1, axes);
    }
    const QString base = Settings::get(settings::sessionsFolder).isEmpty()
        ? QStandardPaths::writableLocation(QStandardPaths::HomeLocation) + u"/ksearch-sessions"
        : Settings::get(settings::sessionsFolder);
    m_folder->setText(base + u'/' + q(t.definition.name) + u'-'
        + QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")));
}

std::optional<SessionConfig> NewSearchDialog::config(QString* error) const
{
    QListWidgetItem* item = m_tasks->currentItem();
    if (!item) {
        *error = tr("Task: choose one");
        return std::nullopt;
    }
    SessionConfig c;
    c.taskName = item->text().toStdString();
    c.taskDir = item->data(Qt::UserRole).toString().toStdString();
    c.backend = m_backend->currentText().toStdString();
    c.language = parseLanguage(m_language->currentText().toStdString());
    c.settings.strategy = parseStrategy(m_strategy->currentText().toStdString()).value_or(StrategyKind::KSearch);
    c.settings.budget = m_budget->value();
    c.settings.stagnation = m_k->value();
    c.settings.minImprovement = m_minGain->value() / 100.0;
    c.settings.islands = m_islands->value();
    c.settings.frozenValues = m_frozen->isChecked();
    c.settings.flat = m_flat->isChecked();
    c.settings.targetScore = m_target->value();
    c.settings.maxSeconds = m_maxMinutes->value() * 60.0;
    c.settings.maxDollars = m_maxDollars->value();
    c.planner = m_planner->config();
    c.coder = m_sameModel->isChecked() ? c.planner : m_coder->config();
    for (const auto& [role, r] : {std::pair {tr("World model"), &c.planner}, std::pair {tr("Code policy"), &c.coder}})
        if (const QStringList p = r->problems(); !p.isEmpty()) {
            *error = role + u": " + p.join(u"; ");
            return std::nullopt;
        }
    if (!m_seed->text().isEmpty() && !QFile::exists(m_seed->text())) {
        *error = tr("Seed program: %1 does not exist").arg(m_seed->text());
        return std::nullopt;
    }
    if (m_folder->text().trimmed().isEmpty()) {
        *error = tr("Session folder: choose one");
        return std::nullopt;
    }
    if (QFile::exists(m_folder->text() + u"/session.json")) {
        *error = tr("Session folder: %1 already holds a session (open it instead)").arg(m_folder->text());
        return std::nullopt;
    }
    c.created = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    c.version = KSEARCH_VERSION;
    c.label = m_label->text().toStdString();
    return c;
}

std::filesystem::path NewSearchDialog::sessionDir() const
{
    return m_folder->text().trimmed().toStdString();
}

QString NewSearchDialog::seedSource() const
{
    QFile f(m_seed->text());
    return !m_seed->text().isEmpty() && f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

void NewSearchDialog::accept()
{
    QString error;
    if (!config(&error)) {
        QMessageBox::warning(this, windowTitle(), error);
        return;
    }
    Settings::setRole(u"planner"_qs, m_planner->config());
    Settings::setRole(u"coder"_qs, m_sameModel->isChecked() ? m_planner->config() : m_coder->config());
    Settings::set(settings::backend, m_backend->currentText());
    Settings::set(settings::language, m_language->currentText());
    QDialog::accept();
}

} // namespace ks::ui
