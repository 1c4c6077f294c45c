#include "llmrolebox.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QSpinBox>

namespace ks::ui {

LlmRoleBox::LlmRoleBox(const QString& title, const QString& prefix, QWidget* parent)
    : QGroupBox(title, parent)
{
    setObjectName(prefix + u"Box");
    auto* form = new QFormLayout(this);
    m_provider = new QComboBox(this);
    m_provider->setObjectName(prefix + u"Provider");
    m_provider->addItems(knownProviders());
    m_model = new QLineEdit(this);
    m_model->setObjectName(prefix + u"Model");
    m_model->setPlaceholderText(tr("e.g. gpt-5.2, claude-sonnet-4-5, gemini-2.5-pro"));
    m_baseUrl = new QLineEdit(this);
    m_baseUrl->setObjectName(prefix + u"BaseUrl");
    m_baseUrl->setPlaceholderText(tr("the provider's public API; or http://127.0.0.1:8000/v1 for a local server"));
    m_command = new QLineEdit(this);
    m_command->setObjectName(prefix + u"Command");
    m_command->setPlaceholderText(tr("reads the request JSON on stdin, prints the answer"));
    m_replay = new QLineEdit(this);
    m_replay->setObjectName(prefix + u"Replay");
    m_temperature = new QDoubleSpinBox(this);
    m_temperature->setObjectName(prefix + u"Temperature");
    m_temperature->setRange(-0.1, 2.0);
    m_temperature->setSingleStep(0.1);
    m_temperature->setSpecialValueText(tr("default"));
    m_temperature->setValue(-0.1);
    m_maxTokens = new QSpinBox(this);
    m_maxTokens->setObjectName(prefix + u"MaxTokens");
    m_maxTokens->setRange(0, 1000000);
    m_maxTokens->setSpecialValueText(tr("default"));
    m_effort = new QLineEdit(this);
    m_effort->setObjectName(prefix + u"Effort");
    m_effort->setPlaceholderText(tr("low | medium | high (reasoning models)"));
    form->addRow(tr("Provider"), m_provider);
    form->addRow(tr("Model"), m_model);
    form->addRow(tr("Base URL"), m_baseUrl);
    form->addRow(tr("Command"), m_command);
    form->addRow(tr("Replay file"), m_replay);
    form->addRow(tr("Temperature"), m_temperature);
    form->addRow(tr("Max tokens"), m_maxTokens);
    form->addRow(tr("Reasoning effort"), m_effort);
    connect(m_provider, &QComboBox::currentTextChanged, this, &LlmRoleBox::updateEnabled);
    updateEnabled();
}

void LlmRoleBox::updateEnabled()
{
    const QString p = m_provider->currentText();
    const bool http = p == u"openai" || p == u"anthropic" || p == u"gemini";
    m_baseUrl->setEnabled(http);
    m_command->setEnabled(p == u"command");
    m_replay->setEnabled(p == u"replay");
    m_temperature->setEnabled(http);
    m_maxTokens->setEnabled(http);
    m_effort->setEnabled(http);
}

void LlmRoleBox::setConfig(const LlmRoleConfig& c)
{
    m_provider->setCurrentText(c.provider);
    m_model->setText(c.model);
    m_baseUrl->setText(c.baseUrl);
    m_command->setText(c.command);
    m_replay->setText(c.replayFile);
    m_temperature->setValue(c.temperature ? *c.temperature : -0.1);
    m_maxTokens->setValue(c.maxTokens);
    m_effort->setText(c.reasoningEffort);
}

LlmRoleConfig LlmRoleBox::config() const
{
    LlmRoleConfig c;
    c.provider = m_provider->currentText();
    c.model = m_model->text().trimmed();
    c.baseUrl = m_baseUrl->isEnabled() ? m_baseUrl->text().trimmed() : QString();
    c.command = m_command->isEnabled() ? m_command->text().trimmed() : QString();
    c.replayFile = m_replay->isEnabled() ? m_replay->text().trimmed() : QString();
    if (m_temperature->isEnabled() && m_temperature->value() >= 0)
        c.temperature = m_temperature->value();
    c.maxTokens = m_maxTokens->isEnabled() ? m_maxTokens->value() : 0;
    c.reasoningEffort = m_effort->isEnabled() ? m_effort->text().trimmed() : QString();
    return c;
}

} // namespace ks::ui
