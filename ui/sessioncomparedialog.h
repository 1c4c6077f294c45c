#pragma once

#include <session/sessionoverview.h>

#include <QDialog>

#include <vector>

class QChartView;
class QComboBox;
class QLineSeries;
class QValueAxis;

namespace ks::ui {

// Two or more sessions side by side (for example a strategy against its ablations on one task):
// their best-J-so-far curves on one chart, against evaluations or the run's time, and
// FlashInfer-Bench's fast_p curve of each session's best kernel (the fraction of workloads on
// which it is correct and more than p times as fast as the baseline).
class SessionCompareDialog : public QDialog
{
    Q_OBJECT
public:
    enum class XAxis { Evaluations, Seconds };

    explicit SessionCompareDialog(std::vector<SessionOverview> sessions, QWidget* parent = nullptr);

    void setXAxis(XAxis axis);
    // The p values of the fast_p chart run from 0 to this (the largest speedup shown, with room).
    [[nodiscard]] double fastPLimit() const { return m_pLimit; }

private:
    void drawProgress();
    void drawFastP();

    std::vector<SessionOverview> m_sessions;
    QChartView* m_progress;
    QChartView* m_fastP;
    QComboBox* m_axis;
    double m_pLimit = 2.0;
};

// A name for a session in a legend: its folder, and its strategy when the others differ.
QString sessionLegendName(const SessionOverview& s);

} // namespace ks::ui
