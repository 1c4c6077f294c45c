#include "nodeinspector.h"

#include "codeview.h"
#include "searchdocument.h"
#include "uistyle.h"

#include <search/strategy.h>
#include <search/taskbrief.h>
#include <task/sanitizerreport.h>
#include <util/linediff.h>
#include <util/numberformat.h>
#include <util/qtext.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>

namespace ks::ui {

namespace {

// Columns as wide as their contents, so that a narrow dock shows every column; the `stretch`
// column (a name) takes what is left, its text elided in the middle with the whole in a tooltip
// where the model gives one. -1: the last column stretches.
QTableView* makeTable(QStandardItemModel* model, const QString& name, QWidget* parent, int stretch = -1)
{
    auto* view = new QTableView(parent);
    view->setObjectName(name);
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->verticalHeader()->hide();
    view->setAlternatingRowColors(true);
    view->setWordWrap(false);
    view->setTextElideMode(Qt::ElideMiddle);
    QHeaderView* header = view->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::ResizeToContents);
    auto stretchOne = [header, stretch] { // set anew, so that the header stretches it again
        if (stretch >= 0) {
            header->setSectionResizeMode(stretch, QHeaderView::Interactive);
            header->setSectionResizeMode(stretch, QHeaderView::Stretch);
        } else {
            header->setStretchLastSection(false);
            header->setStretchLastSection(true);
        }
    };
    stretchOne();
    // A header measures its ResizeToContents sections when the view is laid out, not when rows
    // arrive in a view already shown (a node's V history was cut to "..."): measure them again
    // once the rows are in, then let the stretching column take the rest.
    const auto fit = [header, stretchOne] {
        header->resizeSections(QHeaderView::ResizeToContents);
        stretchOne();
    };
    QObject::connect(model, &QAbstractItemModel::rowsInserted, view, fit, Qt::QueuedConnection);
    QObject::connect(model, &QAbstractItemModel::modelReset, view, fit, Qt::QueuedConnection);
    return view;
}

QStandardItem* cell(const QString& text, const QVariant& sort = {})
{
    auto* item = new QStandardItem(text);
    if (sort.isValid())
        item->setData(sort, Qt::UserRole);
    return item;
}

QString lines(int n)
{
    return n == 1 ? NodeInspector::tr("1 line") : NodeInspector::tr("%1 lines").arg(n);
}

} // namespace

NodeInspector::NodeInspector(const SearchDocument& document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
{
    setObjectName(QStringLiteral("nodeInspector"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_header = new QLabel(tr("Select a node in the graph or the table."), this);
    m_header->setObjectName(QStringLiteral("inspectorHeader"));
    m_header->setWordWrap(true);
    m_header->setTextFormat(Qt::RichText);
    layout->addWidget(m_header);
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("inspectorTabs"));
    layout->addWidget(m_tabs, 1);

    auto* intentPage = new QSplitter(Qt::Vertical, m_tabs);
    m_intent = new QTextBrowser(intentPage);
    m_intent->setObjectName(QStringLiteral("intentView"));
    m_values = new QStandardItemModel(0, 4, this);
    m_values->setHorizontalHeaderLabels({tr("V"), tr("By"), tr("Round"), tr("Reason")});
    m_valueView = makeTable(m_values, QStringLiteral("valueHistory"), intentPage);
    m_tabs->addTab(intentPage, tr("Intent"));

    auto* attemptPage = new QSplitter(Qt::Vertical, m_tabs);
    // Who wrote an attempt follows from its prompt (a person's and the seed are "human" and
    // "seed"), so it is the prompt's tooltip, not a column: at 1280 x 800 the figures fit without
    // scrolling sideways, the verdict taking what is left (elided, whole in its tooltip).
    m_attempts = new QStandardItemModel(0, 6, this);
    m_attempts->setHorizontalHeaderLabels(
        {tr("Attempt"), tr("Prompt"), tr("Verdict"), tr("J"), tr("Latency\n(us)"), tr("Round")});
    m_attemptView = makeTable(m_attempts, QStringLiteral("attemptTable"), attemptPage, 2);
    m_workloads = new QStandardItemModel(0, 7, this);
    // Two-line headers: the figures under them are narrower than their names.
    m_workloads->setHorizontalHeaderLabels({tr("Workload"), tr("Status"), tr("Latency\n(us)"), tr("Baseline\n(us)"),
        tr("Speedup"), tr("Roofline"), tr("Max abs\nerror")});
    makeTable(m_workloads, QStringLiteral("workloadTable"), attemptPage, 0);
    m_kernels = new QStandardItemModel(0, 5, this);
    m_kernels->setHorizontalHeaderLabels(
        {tr("Kernel"), tr("Registers"), tr("Shared (B)"), tr("Stack (B)"), tr("Spills (B)")});
    m_kernelView = makeTable(m_kernels, QStringLiteral("kernelTable"), attemptPage, 0);
    m_kernelView->setToolTip(tr("What ptxas reported for each kernel of the program (nvcc -Xptxas -v)"));
    auto* tools = new QWidget(attemptPage);
    auto* toolsLayout = new QHBoxLayout(tools);
    toolsLayout->setContentsMargins(0, 0, 0, 0);
    m_sanitizerTool = new QComboBox(tools);
    m_sanitizerTool->setObjectName(QStringLiteral("sanitizerTool"));
    for (const auto tool :
        {SanitizerTool::Memcheck, SanitizerTool::Racecheck, SanitizerTool::Initcheck, SanitizerTool::Synccheck})
        m_sanitizerTool->addItem(q(std::string(sanitizerToolName(tool))), static_cast<int>(tool));
    m_sanitize = new QPushButton(tr("Run compute-sanitizer"), tools);
    m_sanitize->setObjectName(QStringLiteral("sanitizeButton"));
    toolsLayout->addWidget(m_sanitizerTool);
    toolsLayout->addWidget(m_sanitize);
    toolsLayout->addStretch(1);
    connect(m_sanitize, &QPushButton::clicked, this,
        [this] { emit sanitizeRequested(m_attempt, m_sanitizerTool->currentData().toInt()); });
    m_log = new QPlainTextEdit(attemptPage);
    m_log->setObjectName(QStringLiteral("attemptLog"));
    m_log->setReadOnly(true);
    m_log->setPlaceholderText(tr("The evaluator's log of the selected attempt"));
    // On a short screen the tables get the height first: attempts, workloads, kernels, the
    // sanitizer row, the log.
    for (const auto& [index, stretch] : {std::pair {0, 2}, {1, 3}, {2, 1}, {3, 0}, {4, 1}})
        attemptPage->setStretchFactor(index, stretch);
    m_tabs->addTab(attemptPage, tr("Attempts"));
    connect(m_attemptView->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex& current) {
            if (current.isValid())
                showAttempt(m_attempts->item(current.row(), 0)->data(Qt::UserRole).toInt());
        });

    auto* codePage = new QWidget(m_tabs);
    auto* codeLayout = new QVBoxLayout(codePage);
    codeLayout->setContentsMargins(0, 0, 0, 0);
    auto* compareRow = new QHBoxLayout;
    compareRow->addWidget(new QLabel(tr("Compare with"), codePage));
    m_compare = new QComboBox(codePage);
    m_compare->setObjectName(QStringLiteral("compareWith"));
    m_compare->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_compare->setMinimumContentsLength(24);
    compareRow->addWidget(m_compare, 1);
    codeLayout->addLayout(compareRow);
    m_compareSummary = new QLabel(codePage);
    m_compareSummary->setObjectName(QStringLiteral("compareSummary"));
    m_compareSummary->setWordWrap(true);
    codeLayout->addWidget(m_compareSummary);
    m_code = new CodeView(codePage);
    m_code->setObjectName(QStringLiteral("codeView"));
    codeLayout->addWidget(m_code, 1);
    connect(m_compare, &QComboBox::currentIndexChanged, this, &NodeInspector::fillCode);
    m_tabs->addTab(codePage, tr("Code"));

    auto* llmPage = new QSplitter(Qt::Vertical, m_tabs);
    m_exchangeList = new QListWidget(llmPage);
    m_exchangeList->setObjectName(QStringLiteral("exchangeList"));
    m_exchange = new QTextBrowser(llmPage);
    m_exchange->setObjectName(QStringLiteral("exchangeView"));
    llmPage->setStretchFactor(1, 3);
    m_tabs->addTab(llmPage, tr("LLM"));
    connect(m_exchangeList, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row < 0)
            return;
        const auto it =
            m_document.state().exchanges.find(m_exchangeList->item(row)->data(Qt::UserRole).toString().toStdString());
        if (it == m_document.state().exchanges.end())
            return;
        const nlohmann::json& e = *it->second;
        QString html;
        for (const auto& m : e.value("messages", nlohmann::json::array()))
            html += QStringLiteral("<h4>%1</h4><pre style='white-space: pre-wrap'>%2</pre>")
                        .arg(q(m.value("role", std::string())).toHtmlEscaped(),
                            q(m.value("content", std::string())).toHtmlEscaped());
        html += QStringLiteral("<h4>answer (%1)</h4><pre style='white-space: pre-wrap'>%2</pre>")
                    .arg(q(e.value("model", std::string())).toHtmlEscaped(),
                        q(e.value("text", std::string())).toHtmlEscaped());
        if (e.contains("error"))
            html += QStringLiteral("<p style='color:#c0504d'>error: %1</p>")
                        .arg(q(e["error"].value("message", std::string())).toHtmlEscaped());
        m_exchange->setHtml(html);
    });

    connect(&document, &SearchDocument::reset, this, &NodeInspector::refresh);
    connect(&document, &SearchDocument::nodesChanged, this, [this](const QStringList& ids) {
        if (ids.contains(m_node))
            refresh();
    });
    connect(&document, &SearchDocument::attemptAdded, this, [this](int index) {
        const Attempt* a = m_document.state().tree.attempt(index);
        if (a && q(a->node) == m_node)
            refresh();
    });
}

void NodeInspector::showNode(const QString& id)
{
    if (id == m_node)
        return;
    m_node = id;
    m_attempt = -1;
    refresh();
}

void NodeInspector::refresh()
{
    const SearchState& s = m_document.state();
    const SearchNode* n = s.tree.find(m_node.toStdString());
    m_values->removeRows(0, m_values->rowCount());
    if (!n) {
        m_header->setText(m_node.isEmpty() ? tr("Select a node in the graph or the table.")
                                           : tr("%1 does not exist at this point of the history.").arg(m_node));
        m_intent->clear();
        m_attempts->removeRows(0, m_attempts->rowCount());
        m_workloads->removeRows(0, m_workloads->rowCount());
        m_code->showMessage(QString());
        m_compareSummary->clear();
        m_exchangeList->clear();
        return;
    }
    const Attempt* best = n->bestAttempt ? s.tree.attempt(*n->bestAttempt) : nullptr;
    m_header->setText(QStringLiteral("<b>%1</b> &nbsp; <span style='color:%2'>%3</span> &nbsp; V %4 &nbsp; %5 &nbsp; "
                                     "parent %6 &nbsp; created by %7 in round %8")
                          .arg(m_node, statusColor(*n, s).name(), q(std::string(nodeStatusName(n->status))),
                              q(formatPriority(n->value())),
                              best ? tr("best J %1 (attempt %2, %3 us)")
                                         .arg(q(formatScore(best->score())))
                                         .arg(best->index)
                                         .arg(q(formatMicros(best->evaluation.latencyMicros)))
                                   : (n->status == NodeStatus::Closed ? tr("nothing passed") : QString()),
                              n->parent.empty() ? QStringLiteral("-") : q(n->parent),
                              q(std::string(authorName(n->createdBy))).replace(u'_', u' '))
                          .arg(n->createdRound));
    QString html = QStringLiteral("<h3>Intent</h3><p>%1</p>").arg(q(n->intent).toHtmlEscaped());
    if (!n->rationale.empty())
        html += QStringLiteral("<h3>Rationale</h3><p style='white-space: pre-wrap'>%1</p>")
                    .arg(q(n->rationale).toHtmlEscaped());
    if (n->status == NodeStatus::Pruned)
        html += QStringLiteral("<h3>Pruned</h3><p>%1</p>").arg(q(n->pruneReason).toHtmlEscaped());
    m_intent->setHtml(html);
    for (const ValueChange& v : n->values)
        m_values->appendRow(
            {cell(q(formatPriority(v.value)), v.value), cell(q(std::string(authorName(v.author))).replace(u'_', u' ')),
                cell(QString::number(v.round), v.round), cell(q(v.reason))});
    fillAttempts();
    fillExchanges();
}

void NodeInspector::fillAttempts()
{
    const SearchState& s = m_document.state();
    const SearchNode* n = s.tree.find(m_node.toStdString());
    m_attempts->removeRows(0, m_attempts->rowCount());
    if (!n)
        return;
    for (int i : n->attempts) {
        const Attempt& a = *s.tree.attempt(i);
        QStandardItem* verdict =
            cell(a.evaluated ? q(std::string(verdictName(a.evaluation.status))) : tr("no program"));
        verdict->setToolTip(a.evaluated ? verdict->text() : tr("no program: %1").arg(q(a.problem)));
        if (a.evaluated)
            verdict->setForeground(verdictColor(a.evaluation.status));
        QStandardItem* prompt = cell(q(purposeName(a.promptKind)));
        prompt->setToolTip(tr("written by the %1").arg(q(std::string(authorName(a.author))).replace(u'_', u' ')));
        m_attempts->appendRow({cell(QString::number(a.index), a.index), prompt, verdict,
            cell(a.passed() ? q(formatScore(a.score())) : QString(), a.score()),
            cell(a.passed() ? q(formatMicros(a.evaluation.latencyMicros)) : QString(), a.evaluation.latencyMicros),
            cell(QString::number(a.round), a.round)});
    }
    if (m_attempt < 0 || std::find(n->attempts.begin(), n->attempts.end(), m_attempt) == n->attempts.end())
        m_attempt = n->bestAttempt ? *n->bestAttempt : (n->attempts.empty() ? -1 : n->attempts.back());
    showAttempt(m_attempt);
}

void NodeInspector::showAttempt(int index)
{
    m_attempt = index;
    m_workloads->removeRows(0, m_workloads->rowCount());
    m_log->clear();
    const Attempt* a = m_document.state().tree.attempt(index);
    // compute-sanitizer checks CUDA kernels: offered on an attempt with a CUDA program.
    const SessionConfig& config = m_document.config();
    const bool cuda = config.backend == "cuda" && config.candidateLanguage() == Language::Cuda;
    m_sanitize->setEnabled(cuda && a && !a->program.empty());
    m_sanitize->setToolTip(!cuda ? tr("compute-sanitizer checks CUDA kernels; this session's candidates are %1 on "
                                      "the %2 backend")
                                       .arg(q(std::string(languageName(config.candidateLanguage()))), q(config.backend))
            : a && a->program.empty() ? tr("This attempt has no program")
                                      : tr("Run one call of this attempt's program under the chosen tool"));
    if (a) {
        for (int r = 0; r < m_attempts->rowCount(); ++r)
            if (m_attempts->item(r, 0)->data(Qt::UserRole).toInt() == index
                && m_attemptView->currentIndex().row() != r) {
                QSignalBlocker block(m_attemptView->selectionModel());
                m_attemptView->selectRow(r);
            }
        for (const auto& w : a->evaluation.workloads) {
            QStandardItem* status = cell(q(std::string(verdictName(w.status))));
            status->setForeground(verdictColor(w.status));
            if (!w.message.empty())
                status->setToolTip(q(w.message));
            const Task* task = m_document.task();
            QStandardItem* label = cell(task ? q(workloadLabel(*task, w.id)) : q(w.id.substr(0, 8)));
            label->setToolTip(label->text() + u'\n' + q(w.id)); // the column may elide it
            if (w.heldOut) { // a person sees it whole; the code policy is never shown it
                label->setText(tr("held out: %1").arg(label->text()));
                label->setToolTip(
                    label->toolTip() + tr("\nHeld out: verified and timed, never shown to the code policy, not in J"));
            }
            m_workloads->appendRow({label, status,
                cell(w.latencyMicros > 0 ? q(formatMicros(w.latencyMicros)) : QString(), w.latencyMicros),
                cell(q(formatMicros(w.baselineLatencyMicros)), w.baselineLatencyMicros),
                cell(w.speedup > 0 ? q(formatSpeedup(w.speedup)) : QString(), w.speedup),
                cell(w.rooflineFraction > 0 ? q(formatPercent(w.rooflineFraction)) : QString(), w.rooflineFraction),
                cell(QString::number(w.maxAbsError, 'g', 3), w.maxAbsError)});
        }
        m_log->setPlainText(a->evaluated ? q(a->evaluation.log) : tr("Not evaluated: %1").arg(q(a->problem)));
    }
    fillKernels(a);
    fillCompareChoices();
    fillCode();
}

namespace {

// Combo data of the fixed choices; an attempt's choice holds its index (>= 0).
constexpr int kCompareNothing = -1;
constexpr int kCompareStart = -2;
constexpr int kCompareFirst = -3;

} // namespace

void NodeInspector::compareWith(Compare what, int attempt)
{
    const int choice = what == Compare::Nothing ? kCompareNothing
        : what == Compare::Start                ? kCompareStart
        : what == Compare::FirstAttempt         ? kCompareFirst
                                                : attempt;
    const int row = m_compare->findData(choice);
    if (row >= 0)
        m_compare->setCurrentIndex(row);
}

void NodeInspector::fillCompareChoices()
{
    const SearchState& s = m_document.state();
    const QVariant chosen = m_compare->currentData();
    QSignalBlocker block(m_compare);
    m_compare->clear();
    m_compare->addItem(tr("Nothing: the program alone"), kCompareNothing);
    m_compare->addItem(tr("The program its action started from"), kCompareStart);
    m_compare->addItem(tr("This node's first attempt"), kCompareFirst);
    for (const Attempt& a : s.tree.attempts()) {
        if (a.index == m_attempt || a.program.empty())
            continue;
        m_compare->addItem(
            tr("Attempt %1 of %2: %3%4")
                .arg(a.index)
                .arg(q(a.node), a.evaluated ? q(std::string(verdictName(a.evaluation.status))) : tr("not evaluated"),
                    a.passed() ? tr(", J %1").arg(q(formatScore(a.score()))) : QString()),
            a.index);
    }
    const int row = chosen.isValid() ? m_compare->findData(chosen) : -1;
    m_compare->setCurrentIndex(row >= 0 ? row : 0);
}

std::optional<int> NodeInspector::comparedAttempt(QString* missing) const
{
    const SearchState& s = m_document.state();
    const Attempt* a = s.tree.attempt(m_attempt);
    const int choice = m_compare->currentData().toInt();
    if (!a || choice == kCompareNothing)
        return std::nullopt;
    if (choice == kCompareStart) {
        const auto start = startingAttempt(s, a->node);
        if (!start)
            *missing = tr("The action started from the task alone: there is no earlier program to compare with.");
        return start;
    }
    if (choice == kCompareFirst) {
        const SearchNode* n = s.tree.find(a->node);
        for (int i : n ? n->attempts : std::vector<int> {})
            if (!s.tree.attempt(i)->program.empty())
                return i == m_attempt ? std::optional<int>() : std::optional<int>(i);
        return std::nullopt;
    }
    return choice;
}

void NodeInspector::fillKernels(const Attempt* a)
{
    m_kernels->removeRows(0, m_kernels->rowCount());
    if (a)
        for (const KernelResourceUsage& k : a->evaluation.resources) {
            QStandardItem* name = cell(q(kernelDisplayName(k.kernel)));
            name->setToolTip(q(k.kernel));
            QStandardItem* spills = cell(QString::number(k.spillBytes), static_cast<qlonglong>(k.spillBytes));
            if (k.spillBytes > 0)
                spills->setForeground(verdictColor(Verdict::IncorrectNumerical));
            m_kernels->appendRow({name, cell(QString::number(k.registers), k.registers),
                cell(QString::number(k.sharedBytes), static_cast<qlonglong>(k.sharedBytes)),
                cell(QString::number(k.stackBytes), static_cast<qlonglong>(k.stackBytes)), spills});
        }
    // Only CUDA builds have a ptxas report; elsewhere the table would only ever be empty.
    m_kernelView->setVisible(m_kernels->rowCount() > 0);
}

void NodeInspector::fillCode()
{
    const SearchState& s = m_document.state();
    const Attempt* a = s.tree.attempt(m_attempt);
    if (!a || a->program.empty()) {
        m_compareSummary->clear();
        m_code->showMessage(a ? tr("This attempt has no program: %1").arg(q(a->problem)) : QString());
        return;
    }
    const Language language = m_document.config().candidateLanguage();
    const std::string program = m_document.programSource(a->program);
    // A file's last newline ends its last line; it does not start another.
    QString shown = q(program);
    if (shown.endsWith(u'\n'))
        shown.chop(1);
    QString missing;
    const std::optional<int> other = comparedAttempt(&missing);
    const Attempt* base = other ? s.tree.attempt(*other) : nullptr;
    if (!base || base->program.empty()) {
        const bool first = m_compare->currentData().toInt() == kCompareFirst;
        m_compareSummary->setText(!missing.isEmpty() ? missing
                : first                              ? tr("This is the node's first attempt with a program.")
                                                     : tr("Attempt %1, %2 of %3.")
                              .arg(a->index)
                              .arg(lines(static_cast<int>(shown.count(u'\n')) + 1))
                              .arg(q(std::string(languageName(language)))));
        m_code->showProgram(shown, language);
        return;
    }
    m_code->showDiff(diffLines(m_document.programSource(base->program), program), language);
    m_compareSummary->setText(
        tr("Against the program of %1 (attempt %2%3): %4 added, %5 removed%6.")
            .arg(q(base->node))
            .arg(base->index)
            .arg(base->passed() ? tr(", J %1").arg(q(formatScore(base->score()))) : QString())
            .arg(lines(m_code->addedLines()))
            .arg(lines(m_code->removedLines()))
            .arg(m_code->addedLines() + m_code->removedLines() == 0 ? tr(" (identical)") : QString()));
}

void NodeInspector::fillExchanges()
{
    const SearchState& s = m_document.state();
    const SearchNode* n = s.tree.find(m_node.toStdString());
    m_exchangeList->clear();
    if (!n)
        return;
    std::vector<std::string> ids = n->exchanges;
    for (int i : n->attempts)
        if (!s.tree.attempt(i)->exchange.empty())
            ids.push_back(s.tree.attempt(i)->exchange);
    for (const auto& [id, e] : s.exchanges) // the world model's answers about this node (update, too hard)
        if (e->value("node", std::string()) == n->id && std::find(ids.begin(), ids.end(), id) == ids.end())
            ids.push_back(id);
    std::sort(ids.begin(), ids.end(),
        [](const std::string& a, const std::string& b) { return std::stoi(a.substr(1)) < std::stoi(b.substr(1)); });
    for (const auto& id : ids) {
        const auto it = s.exchanges.find(id);
        if (it == s.exchanges.end())
            continue;
        const nlohmann::json& e = *it->second;
        auto* item =
            new QListWidgetItem(QStringLiteral("%1  %2 %3  %4 tokens%5")
                                    .arg(q(id), q(e.value("role", std::string())), q(e.value("purpose", std::string())))
                                    .arg(e.value("usage", nlohmann::json::object()).value("prompt", 0)
                                        + e.value("usage", nlohmann::json::object()).value("completion", 0))
                                    .arg(e.contains("error") ? tr("  (failed)") : QString()),
                m_exchangeList);
        item->setData(Qt::UserRole, q(id));
    }
}

} // namespace ks::ui
