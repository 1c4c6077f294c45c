#pragma once

#include <llm/llmconfig.h>

#include <QGroupBox>

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;

namespace ks::ui {

// The settings of one LLM role (provider, model, base URL, command, replay file, temperature,
// max tokens, reasoning effort), used by the new-search and settings dialogs.
class LlmRoleBox : public QGroupBox
{
    Q_OBJECT
public:
    LlmRoleBox(const QString& title, const QString& objectPrefix, QWidget* parent = nullptr);
    void setConfig(const LlmRoleConfig& config);
    LlmRoleConfig config() const;

private:
    void updateEnabled();

    QComboBox* m_provider;
    QLineEdit *m_model, *m_baseUrl, *m_command, *m_replay, *m_effort;
    QDoubleSpinBox* m_temperature;
    QSpinBox* m_maxTokens;
};

} // namespace ks::ui
