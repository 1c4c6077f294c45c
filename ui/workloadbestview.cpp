#include "workloadbestview.h"

#include "searchdocument.h"

#include <search/taskbrief.h>
#include <search/workloadbest.h>
#include <util/numberformat.h>
#include <util/qtext.h>

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ks::ui {

WorkloadBestView::WorkloadBestView(const SearchDocument& document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_summary(new QLabel(this))
    , m_table(new QTableWidget(this))
{
    setObjectName(QStringLiteral("workloadBest"));
    m_summary->setObjectName(QStringLiteral("workloadBestSummary"));
    m_summary->setWordWrap(true);
    m_table->setObjectName(QStringLiteral("workloadBestTable"));
    m_table->setColumnCount(ColumnCount);
    m_table->setHorizontalHeaderLabels({tr("Workload"), tr("Fastest attempt"), tr("Latency (us)"), tr("Speedup"),
        tr("Best kernel's speedup"), tr("Gain")});
    m_table->horizontalHeaderItem(Gain)->setToolTip(
        tr("The best kernel's latency over the workload's fastest attempt's: 1.00 where the best kernel is it"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
    connect(m_table, &QTableWidget::cellActivated, this, [this](int row, int) {
        if (const QTableWidgetItem* item = m_table->item(row, BestAttempt); item && item->data(Qt::UserRole).isValid())
            emit attemptActivated(item->data(Qt::UserRole).toInt());
    });
    connect(&document, &SearchDocument::reset, this, &WorkloadBestView::refresh);
    connect(&document, &SearchDocument::attemptAdded, this, &WorkloadBestView::refresh);
    refresh();
}

void WorkloadBestView::refresh()
{
    const SearchState& s = m_document.state();
    const WorkloadBestTable t = bestPerWorkload(s);
    m_table->setRowCount(static_cast<int>(t.rows.size()));
    if (!t.overall) {
        m_summary->setText(tr("No attempt has passed yet."));
        return;
    }
    const Attempt& overall = *s.tree.attempt(*t.overall);
    int elsewhere = 0;
    int beyondNoise = 0; // of those, the ones whose gain is beyond the timing spread
    const Task* task = m_document.task();
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        const WorkloadBest& w = t.rows[i];
        const int row = static_cast<int>(i);
        auto set = [&](int column, const QString& text) {
            auto* item = new QTableWidgetItem(text);
            if (column != Workload && column != BestAttempt)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, column, item);
            return item;
        };
        set(Workload,
            q(task ? workloadLabel(*task, w.workload) : w.workload.substr(0, 8))
                + (w.scored ? QString() : tr(" (not scored)")));
        if (w.attempt < 0) {
            set(BestAttempt, tr("none passed"));
            continue;
        }
        const Attempt& best = *s.tree.attempt(w.attempt);
        set(BestAttempt, QStringLiteral("%1 #%2").arg(q(best.node)).arg(best.index))->setData(Qt::UserRole, best.index);
        set(Latency, q(formatMicros(w.latencyMicros)));
        set(Speedup, q(formatSpeedup(w.speedup)));
        set(BestKernelSpeedup, w.overallSpeedup > 0 ? q(formatSpeedup(w.overallSpeedup)) : tr("failed"));
        QTableWidgetItem* gain = set(Gain, w.gain > 0 ? q(formatFixed(w.gain, 2)) : QStringLiteral("-"));
        if (w.withinSpread && w.attempt != overall.index) {
            gain->setText(gain->text() + tr(" (noise)"));
            gain->setToolTip(tr("The fastest attempt's upper quartile reaches the best kernel's lower quartile: this "
                                "gain is within the timing spread"));
        }
        elsewhere += w.attempt != overall.index ? 1 : 0;
        beyondNoise += w.attempt != overall.index && !w.withinSpread ? 1 : 0;
    }
    m_table->resizeColumnsToContents();
    m_summary->setText(
        tr("Best single kernel: %1 #%2, J %3. %4 of %5 workloads run fastest in another attempt (%6 beyond the "
           "timing spread); a kernel choosing each workload's fastest would score at most J %7 (from the measured "
           "latencies, nothing paid for choosing: an estimate, not a measurement).")
            .arg(q(overall.node))
            .arg(overall.index)
            .arg(overall.score(), 0, 'f', 1)
            .arg(elsewhere)
            .arg(t.rows.size())
            .arg(beyondNoise)
            .arg(t.dispatchBoundScore, 0, 'f', 1));
}

} // namespace ks::ui
