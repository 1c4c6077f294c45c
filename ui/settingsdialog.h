#pragma once

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QSpinBox;
class QPlainTextEdit;
class QLabel;
class QLineEdit;

namespace ks::ui {

class LlmRoleBox;

// The application's settings: each role's model, API keys (kept in the OS keychain, never in a
// file), the GPU to use, extra compiler flags, the timing-loop cap and a price override file.
class SettingsDialog : public QDialog
{
    Q_OBJECT
public:
    explicit SettingsDialog(QWidget* parent = nullptr);
    void accept() override;

private:
    void storeKey(const QString& provider, QLineEdit* edit, QLabel* status);

    LlmRoleBox *m_planner, *m_coder;
    QLineEdit *m_device, *m_flags, *m_python, *m_prices, *m_folder;
    QDoubleSpinBox* m_benchSeconds;
    QCheckBox* m_notify;
    QComboBox* m_sanitizeFailures = nullptr;
    QCheckBox* m_confine;
    QLineEdit *m_gpus, *m_slurm, *m_slurmKsearch;
    QSpinBox *m_perDevice, *m_parallel, *m_slurmWorkers;
    QPlainTextEdit* m_workers;
};

} // namespace ks::ui
