#pragma once

#include <QWidget>

class QChart;
class QChartView;
class QComboBox;
class QLineSeries;
class QScatterSeries;
class QTabWidget;
class QValueAxis;

namespace ks::ui {

class SearchDocument;

// The three charts: best-so-far J against evaluations with every attempt as a point coloured by
// verdict; per-workload speedup of the best kernel against the baseline, grouped by a workload
// axis; and the fraction of workloads at or above each speedup. Each can be saved as PNG or SVG.
class ChartsPanel : public QWidget
{
    Q_OBJECT
public:
    explicit ChartsPanel(const SearchDocument& document, QWidget* parent = nullptr);

    QChartView* progressView() const { return m_progressView; }
    QChartView* speedupView() const { return m_speedupView; }
    QChartView* coverageView() const { return m_coverageView; }
    class WorkloadBestView* workloadBestView() const { return m_workloadBest; }
    // Writes the chart shown in `view` to `path` (.png or .svg); false with `error` set on failure.
    static bool saveChart(QChartView* view, const QString& path, QString* error);

public slots:
    void rebuild();

private:
    void addAttempt(int index);
    void attachVerdict(QScatterSeries* series);
    void growAxes(double lastRound);
    void refreshBest();
    void saveCurrent(const QString& suffix);

    const SearchDocument& m_document;
    QTabWidget* m_tabs;
    QChartView *m_progressView, *m_speedupView, *m_coverageView;
    class WorkloadBestView* m_workloadBest;
    QLineSeries* m_bestLine;
    QList<QScatterSeries*> m_verdictSeries; // by Verdict
    QValueAxis *m_progressX, *m_progressY;
    QComboBox* m_groupAxis;
    double m_best = 0.0;
    int m_bestAttempt = -1;
};

} // namespace ks::ui
