#pragma once

#include <search/engine.h>

#include <QAbstractTableModel>

#include <string>
#include <vector>

namespace ks::ui {

class SearchDocument;

// The evaluators of a search, one row each: what each does now (from the running engine's
// activity) and what it has done (from the journal: evaluations, verdicts, the time its candidates'
// runners held the device and that time's share of the search's running time). A finished or read-only session shows
// the evaluators its journal names; a serial search's single unnamed evaluator is "this machine".
class WorkersModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Name, Now, Evaluations, Passed, Failed, DeviceTime, Utilisation, ColumnCount };

    explicit WorkersModel(const SearchDocument& document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // The running engine's latest activity; an empty one when no search runs.
    void setActivity(const EngineActivity& activity);
    [[nodiscard]] const EngineActivity& activity() const { return m_activity; }
    // "2 of 3 evaluators busy; waiting for one: n5; being written: n3, n4; world model thinking".
    [[nodiscard]] QString queueSummary() const;

private:
    struct Row {
        std::string name;
        const EvaluatorActivity* live = nullptr;
        int evaluations = 0, passed = 0;
        double deviceSeconds = 0.0;
    };
    void rebuild();

    const SearchDocument& m_document;
    EngineActivity m_activity;
    std::vector<Row> m_rows;
};

} // namespace ks::ui
