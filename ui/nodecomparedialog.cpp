#include "nodecomparedialog.h"

#include "codeview.h"
#include "searchdocument.h"

#include <search/taskbrief.h>
#include <util/numberformat.h>
#include <util/qtext.h>

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLabel>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>

namespace ks::ui {

namespace {

QString attemptName(const Attempt& a)
{
    return a.passed() ? QStringLiteral("%1 #%2 (J %3)").arg(q(a.node)).arg(a.index).arg(a.score(), 0, 'f', 1)
                      : QStringLiteral("%1 #%2 (%3)")
                            .arg(q(a.node))
                            .arg(a.index)
                            .arg(q(std::string(verdictName(a.evaluation.status))));
}

const WorkloadEvaluation* workloadOf(const Attempt& a, const std::string& id)
{
    for (const WorkloadEvaluation& w : a.evaluation.workloads)
        if (w.id == id)
            return &w;
    return nullptr;
}

// A workload's speedup as compared: 0 where the attempt failed it or has no figure.
double speedupOf(const WorkloadEvaluation* w)
{
    return w && w->status == Verdict::Passed ? w->speedup : 0.0;
}

} // namespace

int NodeCompareDialog::representativeAttempt(const SearchState& state, const std::string& node)
{
    int best = -1;
    int last = -1;
    for (const Attempt& a : state.tree.attempts()) {
        if (a.node != node || !a.evaluated)
            continue;
        last = a.index;
        if (a.passed() && (best < 0 || a.score() > state.tree.attempt(best)->score()))
            best = a.index;
    }
    return best >= 0 ? best : last;
}

NodeCompareDialog::NodeCompareDialog(const SearchDocument& document, int first, int second, QWidget* parent)
    : QDialog(parent)
{
    const Attempt& a = *document.state().tree.attempt(first);
    const Attempt& b = *document.state().tree.attempt(second);
    setWindowTitle(tr("Compare %1 and %2").arg(q(a.node), q(b.node)));
    auto* header = new QLabel(tr("A: %1    B: %2").arg(attemptName(a), attemptName(b)), this);
    header->setObjectName(QStringLiteral("nodeCompareHeader"));
    auto* tabs = new QTabWidget(this);
    tabs->setObjectName(QStringLiteral("nodeCompareTabs"));

    auto* speedups = new QWidget(tabs);
    auto* speedupLayout = new QVBoxLayout(speedups);
    auto* chart = new QChartView(speedups);
    chart->setObjectName(QStringLiteral("nodeCompareChart"));
    chart->setRenderHint(QPainter::Antialiasing);
    chart->setMinimumHeight(260);
    auto* table = new QTableWidget(speedups);
    table->setObjectName(QStringLiteral("nodeCompareTable"));
    speedupLayout->addWidget(chart, 3);
    speedupLayout->addWidget(table, 2);
    tabs->addTab(speedups, tr("Speedups"));

    auto* code = new CodeView(tabs);
    code->setObjectName(QStringLiteral("nodeCompareCode"));
    const Language language = document.config().candidateLanguage();
    code->showDiff(diffLines(document.programSource(a.program), document.programSource(b.program)), language);
    tabs->addTab(code, tr("Code: A to B (%1 added, %2 removed)").arg(code->addedLines()).arg(code->removedLines()));

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(header);
    layout->addWidget(tabs, 1);
    resize(1000, 680);
    fillSpeedups(document, first, second);
}

void NodeCompareDialog::fillSpeedups(const SearchDocument& document, int first, int second)
{
    const Attempt& a = *document.state().tree.attempt(first);
    const Attempt& b = *document.state().tree.attempt(second);
    std::vector<std::string> ids; // A's workloads in its order, then any only B has
    for (const Attempt* attempt : {&a, &b})
        for (const WorkloadEvaluation& w : attempt->evaluation.workloads)
            if (std::find(ids.begin(), ids.end(), w.id) == ids.end())
                ids.push_back(w.id);
    const Task* task = document.task();

    auto* setA = new QBarSet(tr("A: %1").arg(attemptName(a)));
    auto* setB = new QBarSet(tr("B: %1").arg(attemptName(b)));
    QStringList labels;
    auto* table = findChild<QTableWidget*>(QStringLiteral("nodeCompareTable"));
    table->setColumnCount(4);
    table->setHorizontalHeaderLabels({tr("Workload"), tr("A speedup"), tr("B speedup"), tr("Faster")});
    table->setRowCount(static_cast<int>(ids.size()));
    double top = 1.2;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const double sa = speedupOf(workloadOf(a, ids[i]));
        const double sb = speedupOf(workloadOf(b, ids[i]));
        const QString label = q(task ? workloadLabel(*task, ids[i]) : ids[i].substr(0, 8));
        labels << label;
        *setA << sa;
        *setB << sb;
        top = std::max({top, sa * 1.1, sb * 1.1});
        const int row = static_cast<int>(i);
        auto cell = [&](const QString& text) { return new QTableWidgetItem(text); };
        table->setItem(row, 0, cell(label));
        table->setItem(row, 1, cell(sa > 0 ? q(formatSpeedup(sa)) : tr("failed")));
        table->setItem(row, 2, cell(sb > 0 ? q(formatSpeedup(sb)) : tr("failed")));
        QString faster = tr("neither");
        if (sa > 0 && sb > 0)
            faster = sa == sb ? tr("tie")
                : sa > sb     ? tr("A, %1x B").arg(sa / sb, 0, 'f', 2)
                              : tr("B, %1x A").arg(sb / sa, 0, 'f', 2);
        else if (sa > 0 || sb > 0)
            faster = sa > 0 ? tr("A (B failed)") : tr("B (A failed)");
        table->setItem(row, 3, cell(faster));
    }
    table->resizeColumnsToContents();
    table->horizontalHeader()->setStretchLastSection(true);
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);

    auto* c = new QChart;
    c->setTitle(tr("Speedup over the baseline per workload (1 = the baseline; 0 = failed)"));
    auto* series = new QBarSeries(c);
    series->append(setA);
    series->append(setB);
    c->addSeries(series);
    auto* x = new QBarCategoryAxis(c);
    x->append(labels);
    auto* y = new QValueAxis(c);
    y->setRange(0, top);
    y->applyNiceNumbers();
    y->setTitleText(tr("speedup (x)"));
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    findChild<QChartView*>(QStringLiteral("nodeCompareChart"))->setChart(c);
}

} // namespace ks::ui
