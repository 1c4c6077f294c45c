#pragma once

#include <QWidget>

class QLabel;
class QTableWidget;

namespace ks::ui {

class SearchDocument;

// The Charts dock's "Per workload" tab: for each workload, the attempt fastest on it, its latency
// and speedup, the best single kernel's speedup there, and how much faster the workload's own best
// is; above it, the J a kernel choosing each workload's best would score at most (from the
// measured latencies; an estimate, not a measurement). Follows the document as it grows or is
// replayed; activating a row names its attempt.
class WorkloadBestView : public QWidget
{
    Q_OBJECT
public:
    enum Column { Workload, BestAttempt, Latency, Speedup, BestKernelSpeedup, Gain, ColumnCount };

    explicit WorkloadBestView(const SearchDocument& document, QWidget* parent = nullptr);

signals:
    void attemptActivated(int attempt);

private:
    void refresh();

    const SearchDocument& m_document;
    QLabel* m_summary;
    QTableWidget* m_table;
};

} // namespace ks::ui
