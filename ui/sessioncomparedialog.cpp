#include "sessioncomparedialog.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFormLayout>
#include <QLineSeries>
#include <QPen>
#include <QSplitter>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>

namespace ks::ui {

namespace {

// The p values fast_p is drawn at: every speedup of every session (where the curve steps down:
// fast_p counts speedups strictly above p) and just below it, so each step is drawn square,
// between 0 and `limit`.
std::vector<double> stepPoints(const std::vector<SessionOverview>& sessions, double limit)
{
    std::vector<double> ps {0.0, limit};
    for (const SessionOverview& s : sessions)
        for (double speedup : s.bestSpeedups)
            if (speedup > 0 && speedup < limit) {
                ps.push_back(speedup * (1 - 1e-9));
                ps.push_back(speedup);
            }
    std::sort(ps.begin(), ps.end());
    ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
    return ps;
}

QValueAxis* axis(QChart* chart, const QString& title, const char* format, Qt::Alignment where)
{
    auto* a = new QValueAxis(chart);
    a->setTitleText(title);
    a->setLabelFormat(QLatin1String(format));
    chart->addAxis(a, where);
    return a;
}

// Sessions that share a beginning (a run and its continuation, a run cut short) draw the same
// line there: each later session is drawn thinner on top of the earlier ones, so both show.
QPen sessionPen(const QLineSeries* line, std::size_t index, std::size_t count)
{
    QPen pen = line->pen();
    pen.setWidthF(2.0 + 2.5 * static_cast<double>(count - 1 - index));
    return pen;
}

} // namespace

QString sessionLegendName(const SessionOverview& s)
{
    return QStringLiteral("%1 (%2)").arg(
        QString::fromStdString(s.dir.filename().string()), QString::fromStdString(s.strategy));
}

SessionCompareDialog::SessionCompareDialog(std::vector<SessionOverview> sessions, QWidget* parent)
    : QDialog(parent)
    , m_sessions(std::move(sessions))
    , m_progress(new QChartView(this))
    , m_fastP(new QChartView(this))
    , m_axis(new QComboBox(this))
{
    setWindowTitle(tr("Compare %n session(s)", nullptr, static_cast<int>(m_sessions.size())));
    m_progress->setObjectName(QStringLiteral("compareProgress"));
    m_fastP->setObjectName(QStringLiteral("compareFastP"));
    m_axis->setObjectName(QStringLiteral("compareAxis"));
    m_axis->addItems({tr("evaluations"), tr("run time (s)")});
    for (QChartView* v : {m_progress, m_fastP}) {
        v->setRenderHint(QPainter::Antialiasing);
        v->setMinimumSize(360, 280);
    }
    connect(m_axis, &QComboBox::currentIndexChanged, this,
        [this](int i) { setXAxis(i == 0 ? XAxis::Evaluations : XAxis::Seconds); });
    auto* form = new QFormLayout;
    form->addRow(tr("Best J against"), m_axis);
    auto* charts = new QSplitter(Qt::Horizontal, this);
    charts->addWidget(m_progress);
    charts->addWidget(m_fastP);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(charts, 1);
    resize(1100, 520);
    drawProgress();
    drawFastP();
}

void SessionCompareDialog::setXAxis(XAxis axis)
{
    const int index = axis == XAxis::Evaluations ? 0 : 1;
    if (m_axis->currentIndex() != index)
        m_axis->setCurrentIndex(index); // comes back here through the signal
    else
        drawProgress();
}

void SessionCompareDialog::drawProgress()
{
    const bool seconds = m_axis->currentIndex() == 1;
    auto* chart = new QChart;
    chart->setTitle(tr("Best J so far (the baseline scores 100)"));
    QValueAxis* x =
        axis(chart, seconds ? tr("run time (s)") : tr("evaluation"), seconds ? "%.0f" : "%d", Qt::AlignBottom);
    QValueAxis* y = axis(chart, tr("J"), "%.0f", Qt::AlignLeft);
    double maxX = 1;
    double maxY = 100;
    for (std::size_t i = 0; i < m_sessions.size(); ++i) {
        const SessionOverview& s = m_sessions[i];
        auto* line = new QLineSeries(chart);
        line->setName(sessionLegendName(s));
        double best = 0;
        for (const SessionOverview::Point& p : s.curve) {
            const double at = seconds ? p.seconds : p.evaluation;
            line->append(at, best); // a step: the best holds until the evaluation that beats it
            best = p.bestScore;
            line->append(at, best);
            maxX = std::max(maxX, at);
            maxY = std::max(maxY, best);
        }
        chart->addSeries(line); // gives it its colour
        line->setPen(sessionPen(line, i, m_sessions.size()));
        line->attachAxis(x);
        line->attachAxis(y);
    }
    x->setRange(0, maxX);
    y->setRange(0, maxY * 1.08);
    x->applyNiceNumbers();
    y->applyNiceNumbers();
    QChart* old = m_progress->chart();
    m_progress->setChart(chart);
    delete old;
}

void SessionCompareDialog::drawFastP()
{
    double largest = 1.0;
    for (const SessionOverview& s : m_sessions)
        for (double speedup : s.bestSpeedups)
            largest = std::max(largest, speedup);
    m_pLimit = std::max(2.0, largest * 1.1);
    auto* chart = new QChart;
    chart->setTitle(tr("fast_p of each best kernel: workloads correct and faster than p x baseline"));
    QValueAxis* x = axis(chart, tr("p (speedup over the baseline)"), "%.1f", Qt::AlignBottom);
    QValueAxis* y = axis(chart, tr("fraction of workloads"), "%.2f", Qt::AlignLeft);
    const std::vector<double> ps = stepPoints(m_sessions, m_pLimit);
    for (std::size_t i = 0; i < m_sessions.size(); ++i) {
        const SessionOverview& s = m_sessions[i];
        auto* line = new QLineSeries(chart);
        line->setName(sessionLegendName(s));
        for (double p : ps)
            line->append(p, fastP(s.bestSpeedups, p));
        chart->addSeries(line);
        line->setPen(sessionPen(line, i, m_sessions.size()));
        line->attachAxis(x);
        line->attachAxis(y);
    }
    x->setRange(0, m_pLimit);
    x->applyNiceNumbers();
    y->setRange(0, 1.0);
    y->setTickCount(6);
    QChart* old = m_fastP->chart();
    m_fastP->setChart(chart);
    delete old;
}

} // namespace ks::ui
