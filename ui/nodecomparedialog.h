#pragma once

#include <QDialog>

#include <string>

class QChartView;
class QLabel;
class QTableWidget;

namespace ks {
class SearchState;
}

namespace ks::ui {

class CodeView;
class SearchDocument;

// Two attempts of a session side by side (Node > Compare With Another Node): each one's speedup
// over the baseline per workload on one chart, a table saying which is faster on each workload
// and by how much, and the diff of their programs.
class NodeCompareDialog : public QDialog
{
    Q_OBJECT
public:
    // `first` and `second` are attempt indices of the document's state.
    NodeCompareDialog(const SearchDocument& document, int first, int second, QWidget* parent = nullptr);

    // The attempt that stands for a node: its best passing attempt, else its last evaluated one;
    // -1 when none of its attempts was evaluated.
    static int representativeAttempt(const SearchState& state, const std::string& node);

private:
    void fillSpeedups(const SearchDocument& document, int first, int second);
};

} // namespace ks::ui
