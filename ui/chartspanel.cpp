#include "chartspanel.h"

#include "searchdocument.h"
#include "uistyle.h"
#include "workloadbestview.h"

#include <search/taskbrief.h>

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMessageBox>
#include <QPushButton>
#include <QScatterSeries>
#include <QSvgGenerator>
#include <QTabWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include <cmath>
#include <map>
#include <set>

namespace ks::ui {

namespace {

constexpr Verdict kVerdicts[] = {Verdict::Passed, Verdict::IncorrectNumerical, Verdict::IncorrectShape,
    Verdict::RuntimeError, Verdict::CompileError, Verdict::Timeout, Verdict::Rejected};

QChartView* makeView(const QString& name, const QString& title, QWidget* parent)
{
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->setAnimationOptions(QChart::NoAnimation);
    chart->legend()->setAlignment(Qt::AlignBottom);
    auto* view = new QChartView(chart, parent);
    view->setObjectName(name);
    view->setRenderHint(QPainter::Antialiasing);
    return view;
}

QColor groupColor(int i)
{
    static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
        QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2)};
    return colors[i % 7];
}

} // namespace

ChartsPanel::ChartsPanel(const SearchDocument& document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
{
    setObjectName(QStringLiteral("chartsPanel"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("chartTabs"));
    m_progressView = makeView(
        QStringLiteral("progressChart"), tr("Best J so far, and every attempt (the baseline scores 100)"), m_tabs);
    m_speedupView = makeView(QStringLiteral("speedupChart"), tr("Speedup of the best kernel per workload"), m_tabs);
    m_coverageView = makeView(QStringLiteral("coverageChart"), tr("Workloads at or above each speedup"), m_tabs);
    m_tabs->addTab(m_progressView, tr("Progress"));
    m_tabs->addTab(m_speedupView, tr("Speedup"));
    m_tabs->addTab(m_coverageView, tr("Coverage"));
    m_workloadBest = new WorkloadBestView(document, m_tabs);
    m_tabs->addTab(m_workloadBest, tr("Per workload"));
    layout->addWidget(m_tabs, 1);

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Group workloads by"), this));
    m_groupAxis = new QComboBox(this);
    m_groupAxis->setObjectName(QStringLiteral("speedupGroupAxis"));
    bar->addWidget(m_groupAxis);
    bar->addStretch(1);
    for (const auto& [suffix, label] :
        {std::pair {u"png"_qs, tr("Save PNG...")}, std::pair {u"svg"_qs, tr("Save SVG...")}}) {
        auto* button = new QPushButton(label, this);
        button->setObjectName(suffix == u"png" ? QStringLiteral("saveChartPng") : QStringLiteral("saveChartSvg"));
        connect(button, &QPushButton::clicked, this, [this, suffix = suffix] { saveCurrent(suffix); });
        // The Per workload tab is a table: nothing to save as a picture.
        connect(m_tabs, &QTabWidget::currentChanged, button,
            [this, button] { button->setEnabled(qobject_cast<QChartView*>(m_tabs->currentWidget()) != nullptr); });
        bar->addWidget(button);
    }
    layout->addLayout(bar);
    connect(m_groupAxis, &QComboBox::currentIndexChanged, this, [this] {
        m_bestAttempt = -1;
        refreshBest();
    });

    // Progress: one line and a scatter per verdict, filled point by point.
    QChart* chart = m_progressView->chart();
    m_bestLine = new QLineSeries(chart);
    m_bestLine->setName(tr("best J so far"));
    m_bestLine->setPen(QPen(QColor(0x22, 0x22, 0x22), 2));
    chart->addSeries(m_bestLine);
    for (Verdict v : kVerdicts) {
        auto* s = new QScatterSeries(chart);
        s->setName(QString::fromLatin1(verdictName(v).data()));
        s->setColor(verdictColor(v));
        s->setBorderColor(verdictColor(v).darker(130));
        s->setMarkerSize(v == Verdict::Passed ? 8 : 7);
        m_verdictSeries.append(s); // joins the chart (and its legend) with its first point
    }
    m_progressX = new QValueAxis(chart);
    m_progressX->setTitleText(tr("evaluation"));
    m_progressX->setLabelFormat(QStringLiteral("%d"));
    m_progressY = new QValueAxis(chart);
    m_progressY->setTitleText(tr("J"));
    m_progressY->setLabelFormat(QStringLiteral("%.0f"));
    chart->addAxis(m_progressX, Qt::AlignBottom);
    chart->addAxis(m_progressY, Qt::AlignLeft);
    for (QAbstractSeries* s : chart->series()) {
        s->attachAxis(m_progressX);
        s->attachAxis(m_progressY);
    }

    connect(&document, &SearchDocument::reset, this, &ChartsPanel::rebuild);
    connect(&document, &SearchDocument::attemptAdded, this, &ChartsPanel::addAttempt);
    rebuild();
}

void ChartsPanel::rebuild()
{
    m_bestLine->clear();
    for (QScatterSeries* s : std::as_const(m_verdictSeries))
        s->clear();
    m_best = 0.0;
    for (QScatterSeries* s : std::as_const(m_verdictSeries))
        if (s->chart())
            m_progressView->chart()->removeSeries(s);
    m_progressX->setRange(0, 10);
    m_progressX->setTickCount(11);
    m_progressY->setRange(0, 120);
    m_bestLine->clear();
    // The axes a workload can be grouped by: the task's var axes.
    const QString chosen = m_groupAxis->currentText();
    {
        QSignalBlocker block(m_groupAxis);
        m_groupAxis->clear();
        m_groupAxis->addItem(tr("(none)"));
        if (const Task* task = m_document.task())
            for (const Axis* a : task->definition.varAxes())
                m_groupAxis->addItem(QString::fromStdString(a->name));
        const int keep = m_groupAxis->findText(chosen);
        m_groupAxis->setCurrentIndex(keep > 0 ? keep : std::min(1, m_groupAxis->count() - 1));
    }
    // All points at once: appending them one by one re-lays the chart out for each.
    QList<QPointF> best;
    std::vector<QList<QPointF>> byVerdict(m_verdictSeries.size());
    double lastRound = 0;
    for (const Attempt& a : m_document.state().tree.attempts()) {
        if (!a.evaluated)
            continue;
        m_best = std::max(m_best, a.score());
        best.append(QPointF(a.round, m_best));
        const auto at =
            std::find(std::begin(kVerdicts), std::end(kVerdicts), a.evaluation.status) - std::begin(kVerdicts);
        if (at < m_verdictSeries.size())
            byVerdict[static_cast<std::size_t>(at)].append(QPointF(a.round, a.score()));
        lastRound = a.round;
    }
    m_bestLine->replace(best);
    for (qsizetype i = 0; i < m_verdictSeries.size(); ++i)
        if (!byVerdict[static_cast<std::size_t>(i)].isEmpty()) {
            attachVerdict(m_verdictSeries[i]);
            m_verdictSeries[i]->replace(byVerdict[static_cast<std::size_t>(i)]);
        }
    growAxes(lastRound);
    m_bestAttempt = -1;
    refreshBest();
}

void ChartsPanel::attachVerdict(QScatterSeries* series)
{
    if (series->chart()) // a verdict seen for the first time gets its place in the legend now
        return;
    m_progressView->chart()->addSeries(series);
    series->attachAxis(m_progressX);
    series->attachAxis(m_progressY);
}

void ChartsPanel::growAxes(double lastRound)
{
    // Only when the data outgrows them, in steps: a new range re-lays the whole chart out.
    if (lastRound + 1 > m_progressX->max()) {
        // Whole evaluations on the ticks: a step of 1, 2 or 5 times a power of ten, at most ten steps.
        double step = 1.0;
        for (double scale = 1.0; (lastRound + 1) / step > 10.0; scale *= 10.0)
            for (double m : {1.0, 2.0, 5.0})
                if ((lastRound + 1) / step > 10.0)
                    step = m * scale;
        const double max = std::max(10.0, std::ceil((lastRound + 1) / step) * step);
        m_progressX->setRange(0, max);
        m_progressX->setTickCount(static_cast<int>(max / step) + 1);
    }
    if (m_best * 1.05 > m_progressY->max() || m_progressY->max() < 120.0) {
        m_progressY->setRange(0, std::max(120.0, m_best * 1.25));
        m_progressY->applyNiceNumbers();
    }
}

void ChartsPanel::addAttempt(int index)
{
    const Attempt* a = m_document.state().tree.attempt(index);
    if (!a || !a->evaluated)
        return;
    const double x = a->round;
    m_best = std::max(m_best, a->score());
    m_bestLine->append(x, m_best);
    const auto at = std::find(std::begin(kVerdicts), std::end(kVerdicts), a->evaluation.status) - std::begin(kVerdicts);
    if (at < m_verdictSeries.size()) {
        attachVerdict(m_verdictSeries[at]);
        m_verdictSeries[at]->append(x, a->score());
    }
    growAxes(x);
    refreshBest();
}

void ChartsPanel::refreshBest()
{
    const SearchState& s = m_document.state();
    const auto best = s.bestAttempt();
    if ((best ? *best : -1) == m_bestAttempt)
        return;
    m_bestAttempt = best ? *best : -1;
    for (QChartView* view : {m_speedupView, m_coverageView}) {
        view->chart()->removeAllSeries();
        for (QAbstractAxis* axis : view->chart()->axes())
            view->chart()->removeAxis(axis);
    }
    if (!best)
        return;
    const Attempt& a = *s.tree.attempt(*best);
    const Task* task = m_document.task();
    const std::string axis = m_groupAxis->currentIndex() > 0 ? m_groupAxis->currentText().toStdString() : std::string();

    // Speedup per workload, sorted by the grouping axis, one colour per group.
    struct Point {
        long group;
        std::string label;
        double speedup;
    };
    std::vector<Point> points;
    for (const auto& w : a.evaluation.workloads) {
        const Workload* wl = task ? task->workload(w.id) : nullptr;
        const long group = wl && !axis.empty() && wl->axes.count(axis) ? static_cast<long>(wl->axes.at(axis)) : 0;
        points.push_back({group, task ? workloadLabel(*task, w.id) : w.id.substr(0, 8), w.speedup});
    }
    std::stable_sort(points.begin(), points.end(), [](const Point& l, const Point& r) { return l.group < r.group; });
    QChart* chart = m_speedupView->chart();
    std::map<long, QScatterSeries*> groups;
    double top = 1.2;
    for (std::size_t i = 0; i < points.size(); ++i) {
        QScatterSeries*& series = groups[points[i].group];
        if (!series) {
            series = new QScatterSeries(chart);
            series->setName(axis.empty()
                    ? tr("workloads")
                    : QStringLiteral("%1 = %2").arg(QString::fromStdString(axis)).arg(points[i].group));
            series->setColor(groupColor(static_cast<int>(groups.size()) - 1));
            series->setMarkerSize(10);
            chart->addSeries(series);
        }
        series->append(static_cast<double>(i + 1), points[i].speedup);
        top = std::max(top, points[i].speedup * 1.15);
    }
    auto* parity = new QLineSeries(chart);
    parity->setName(tr("baseline (1x)"));
    parity->setPen(QPen(QColor(0x55, 0x55, 0x55), 1, Qt::DashLine));
    parity->append(0.0, 1.0);
    parity->append(static_cast<double>(points.size()) + 1, 1.0);
    chart->addSeries(parity);
    auto* x = new QValueAxis(chart);
    x->setTitleText(axis.empty() ? tr("workload") : tr("workload (sorted by %1)").arg(QString::fromStdString(axis)));
    x->setRange(0, static_cast<double>(points.size()) + 1); // whole ticks: one per workload
    x->setTickCount(static_cast<int>(points.size()) + 2);
    x->setLabelFormat(QStringLiteral("%d"));
    auto* y = new QValueAxis(chart);
    y->setTitleText(tr("speedup (x)"));
    y->setLabelFormat(QStringLiteral("%.1f"));
    y->setRange(0, top);
    y->applyNiceNumbers();
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (QAbstractSeries* series : chart->series()) {
        series->attachAxis(x);
        series->attachAxis(y);
    }
    chart->setTitle(tr("Speedup over the baseline per workload: %1 (J %2)")
                        .arg(QString::fromStdString(a.node))
                        .arg(a.score(), 0, 'f', 1));

    // Coverage: the fraction of workloads whose speedup is at least s, for every s.
    std::vector<double> speedups;
    for (const Point& p : points)
        speedups.push_back(p.speedup);
    std::sort(speedups.begin(), speedups.end());
    QChart* cover = m_coverageView->chart();
    auto* curve = new QLineSeries(cover);
    curve->setName(tr("best kernel (%1)").arg(QString::fromStdString(a.node)));
    curve->setPen(QPen(bestColor().darker(120), 2.5));
    const double n = static_cast<double>(speedups.size());
    double last = 0.0;
    curve->append(0.0, 1.0);
    for (std::size_t i = 0; i < speedups.size(); ++i) {
        const double fraction = (n - static_cast<double>(i)) / n; // at or above speedups[i]
        curve->append(speedups[i], fraction);
        const double after = (n - static_cast<double>(i) - 1) / n;
        curve->append(speedups[i], after);
        last = speedups[i];
    }
    cover->addSeries(curve);
    auto* baseline = new QLineSeries(cover);
    baseline->setName(tr("baseline"));
    baseline->setPen(QPen(QColor(0x55, 0x55, 0x55), 1.5, Qt::DashLine));
    baseline->append(0.0, 1.0);
    baseline->append(1.0, 1.0);
    baseline->append(1.0, 0.0);
    cover->addSeries(baseline);
    auto* cx = new QValueAxis(cover);
    cx->setTitleText(tr("speedup against the baseline"));
    cx->setRange(0, std::max(1.5, last * 1.1));
    cx->applyNiceNumbers();
    auto* cy = new QValueAxis(cover);
    cy->setTitleText(tr("fraction"));
    cy->setRange(0, 1.0);
    cy->setTickCount(6); // 0, 0.2, ... 1
    cy->setLabelFormat(QStringLiteral("%.1f"));
    cover->addAxis(cx, Qt::AlignBottom);
    cover->addAxis(cy, Qt::AlignLeft);
    for (QAbstractSeries* series : cover->series()) {
        series->attachAxis(cx);
        series->attachAxis(cy);
    }
}

bool ChartsPanel::saveChart(QChartView* view, const QString& path, QString* error)
{
    if (path.endsWith(u".svg", Qt::CaseInsensitive)) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(view->size());
        svg.setViewBox(view->rect());
        svg.setTitle(view->chart()->title());
        QPainter painter;
        if (!painter.begin(&svg)) {
            *error = tr("cannot write %1").arg(path);
            return false;
        }
        view->render(&painter);
        painter.end();
        return true;
    }
    if (!view->grab().save(path)) {
        *error = tr("cannot write %1 (the name must end in .png or .svg)").arg(path);
        return false;
    }
    return true;
}

void ChartsPanel::saveCurrent(const QString& suffix)
{
    auto* view = qobject_cast<QChartView*>(m_tabs->currentWidget());
    if (!view)
        return;
    const QString path = QFileDialog::getSaveFileName(this, tr("Save chart"), view->objectName() + u'.' + suffix,
        suffix == u"png" ? tr("PNG images (*.png)") : tr("SVG pictures (*.svg)"));
    QString error;
    if (!path.isEmpty() && !saveChart(view, path, &error))
        QMessageBox::warning(this, tr("Save chart"), error);
}

} // namespace ks::ui
