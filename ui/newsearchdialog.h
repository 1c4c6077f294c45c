#pragma once

#include <session/sessionconfig.h>

#include <QDialog>

#include <filesystem>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;
class QCheckBox;
class QTableWidget;

namespace ks::ui {

class LlmRoleBox;

// A new search: the task (with its details and workloads), strategy, budget, K, backend, the
// model of each role, a seed program, the stop conditions and the session folder.
class NewSearchDialog : public QDialog
{
    Q_OBJECT
public:
    explicit NewSearchDialog(QWidget* parent = nullptr);

    // What the form says; nullopt with `error` naming the field that is not right.
    std::optional<SessionConfig> config(QString* error) const;
    std::filesystem::path sessionDir() const;
    QString seedSource() const; // the seed program's text, empty for none

    void selectTask(const QString& name);
    void accept() override;

private:
    void showTask();

    QListWidget* m_tasks;
    QLabel* m_taskDetails;
    QTableWidget* m_workloads;
    QComboBox *m_strategy, *m_backend, *m_language;
    QSpinBox *m_budget, *m_k, *m_islands;
    QDoubleSpinBox *m_target, *m_maxMinutes, *m_maxDollars, *m_minGain;
    QCheckBox *m_frozen, *m_flat, *m_sameModel;
    LlmRoleBox *m_planner, *m_coder;
    QLineEdit *m_seed, *m_folder, *m_label;
};

} // namespace ks::ui
