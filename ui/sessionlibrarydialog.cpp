#include "sessionlibrarydialog.h"

#include "sessioncomparedialog.h"
#include "sessionlibrarymodel.h"
#include "settings.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFutureWatcher>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

namespace ks::ui {

namespace fs = std::filesystem;

SessionLibraryDialog::SessionLibraryDialog(QWidget* parent)
    : QDialog(parent)
    , m_model(new SessionLibraryModel(this))
    , m_proxy(new QSortFilterProxyModel(this))
    , m_table(new QTableView(this))
    , m_status(new QLabel(this))
{
    setWindowTitle(tr("Session Library"));
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(SessionLibraryModel::SortRole);
    m_table->setObjectName(QStringLiteral("libraryTable"));
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->hide();
    m_status->setObjectName(QStringLiteral("libraryStatus"));

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    auto add = [&](const QString& text, const char* name) {
        QPushButton* b = buttons->addButton(text, QDialogButtonBox::ActionRole);
        b->setObjectName(QLatin1String(name));
        return b;
    };
    m_open = add(tr("&Open"), "libraryOpen");
    m_continue = add(tr("C&ontinue"), "libraryContinue");
    m_compare = add(tr("Co&mpare"), "libraryCompare");
    m_export = add(tr("&Export..."), "libraryExport");
    m_delete = add(tr("&Delete..."), "libraryDelete");
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_open, &QPushButton::clicked, this, [this] { emit openRequested(selectedDirs().value(0)); });
    connect(m_continue, &QPushButton::clicked, this, [this] { emit continueRequested(selectedDirs().value(0)); });
    connect(m_export, &QPushButton::clicked, this, [this] { emit exportRequested(selectedDirs().value(0)); });
    connect(m_compare, &QPushButton::clicked, this, &SessionLibraryDialog::compareSelected);
    connect(m_delete, &QPushButton::clicked, this, &SessionLibraryDialog::deleteSelected);
    connect(m_table, &QTableView::doubleClicked, this, [this] { emit openRequested(selectedDirs().value(0)); });
    connect(
        m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &SessionLibraryDialog::updateButtons);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_table);
    layout->addWidget(m_status);
    layout->addWidget(buttons);
    resize(960, 480);
    updateButtons();
}

std::vector<fs::path> SessionLibraryDialog::librarySessions()
{
    std::vector<fs::path> dirs;
    auto add = [&](const fs::path& dir) {
        std::error_code ec;
        const fs::path canonical = fs::weakly_canonical(dir, ec);
        if (!ec && isSessionFolder(canonical) && std::find(dirs.begin(), dirs.end(), canonical) == dirs.end())
            dirs.push_back(canonical);
    };
    for (const QString& dir : Settings::get(settings::recentSessions))
        add(dir.toStdString());
    QString folder = Settings::get(settings::sessionsFolder);
    if (folder.isEmpty())
        folder = QStandardPaths::writableLocation(QStandardPaths::HomeLocation) + u"/ksearch-sessions";
    const QFileInfoList entries = QDir(folder).entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Time);
    for (const QFileInfo& entry : entries)
        add(entry.absoluteFilePath().toStdString());
    return dirs;
}

void SessionLibraryDialog::load(const std::vector<fs::path>& dirs)
{
    const int generation = ++m_generation;
    m_status->setText(tr("Reading %n session(s)...", nullptr, static_cast<int>(dirs.size())));
    auto* watcher = new QFutureWatcher<std::vector<SessionOverview>>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
        watcher->deleteLater();
        if (generation != m_generation)
            return;
        m_model->setSessions(watcher->result());
        m_table->resizeColumnsToContents();
        const auto unreadable = std::count_if(m_model->sessions().begin(), m_model->sessions().end(),
            [](const SessionOverview& s) { return !s.error.empty(); });
        m_status->setText(tr("%n session(s)", nullptr, m_model->rowCount())
            + (unreadable > 0 ? tr("; %n unreadable (the tooltip says why)", nullptr, static_cast<int>(unreadable))
                              : QString()));
        updateButtons();
        emit loaded();
    });
    watcher->setFuture(QtConcurrent::run([dirs] {
        std::vector<SessionOverview> read;
        read.reserve(dirs.size());
        for (const fs::path& dir : dirs)
            read.push_back(readSessionOverview(dir));
        return read;
    }));
}

void SessionLibraryDialog::select(const std::vector<fs::path>& dirs)
{
    m_table->clearSelection();
    for (int row = 0; row < m_model->rowCount(); ++row)
        if (std::find(dirs.begin(), dirs.end(), m_model->at(row).dir) != dirs.end())
            m_table->selectionModel()->select(m_proxy->mapFromSource(m_model->index(row, 0)),
                QItemSelectionModel::Select | QItemSelectionModel::Rows);
}

QStringList SessionLibraryDialog::selectedDirs() const
{
    QStringList dirs;
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows())
        dirs << QString::fromStdString(m_model->at(m_proxy->mapToSource(index).row()).dir.string());
    return dirs;
}

void SessionLibraryDialog::updateButtons()
{
    const QStringList dirs = selectedDirs();
    const bool one = dirs.size() == 1;
    const bool readable =
        one && m_model->at(m_proxy->mapToSource(m_table->selectionModel()->selectedRows().front()).row()).error.empty();
    m_open->setEnabled(readable);
    m_continue->setEnabled(readable);
    m_export->setEnabled(readable);
    m_delete->setEnabled(one);
    m_compare->setEnabled(dirs.size() >= 2);
}

SessionCompareDialog* SessionLibraryDialog::compareSelected()
{
    const QStringList dirs = selectedDirs();
    std::vector<SessionOverview> chosen;
    for (const SessionOverview& s : m_model->sessions())
        if (dirs.contains(QString::fromStdString(s.dir.string())) && s.error.empty())
            chosen.push_back(s);
    if (chosen.size() < 2)
        return nullptr;
    auto* d = new SessionCompareDialog(std::move(chosen), this);
    d->setObjectName(QStringLiteral("sessionCompare"));
    d->setAttribute(Qt::WA_DeleteOnClose);
    d->show();
    return d;
}

bool SessionLibraryDialog::deleteSelected()
{
    const QStringList dirs = selectedDirs();
    if (dirs.size() != 1)
        return false;
    const fs::path dir = dirs.front().toStdString();
    if (!isSessionFolder(dir)) { // never remove a folder that is not a session's
        QMessageBox::warning(this, tr("Delete session"), tr("%1 holds no session any more.").arg(dirs.front()));
        return false;
    }
    if (!m_busy.empty() && fs::equivalent(dir, m_busy)) {
        QMessageBox::warning(this, tr("Delete session"),
            tr("%1 is the session the window is running: stop it and close it first.").arg(dirs.front()));
        return false;
    }
    const SessionOverview* s = nullptr;
    for (const SessionOverview& o : m_model->sessions())
        s = o.dir == dir ? &o : s;
    const QString what = s ? tr("%1, %2 evaluations, best J %3")
                                 .arg(QString::fromStdString(s->taskName))
                                 .arg(s->evaluations)
                                 .arg(s->bestScore, 0, 'f', 1)
                           : QString();
    if (QMessageBox::question(this, tr("Delete session"),
            tr("Delete the folder %1 (%2) with its journal and programs? This cannot be undone.")
                .arg(dirs.front(), what))
        != QMessageBox::Yes)
        return false;
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (ec) {
        QMessageBox::warning(
            this, tr("Delete session"), tr("%1: %2").arg(dirs.front(), QString::fromStdString(ec.message())));
        return false;
    }
    QStringList recent = Settings::get(settings::recentSessions);
    recent.removeIf([&](const QString& r) { return fs::weakly_canonical(r.toStdString(), ec) == dir; });
    Settings::set(settings::recentSessions, recent);
    m_model->remove(dir);
    updateButtons();
    return true;
}

} // namespace ks::ui
