#include "steeringdialogs.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>

namespace ks::ui {

SteeringDialog::SteeringDialog(Kind kind, const QString& node, QWidget* parent)
    : QDialog(parent)
    , m_kind(kind)
{
    setObjectName(QStringLiteral("steeringDialog"));
    auto* form = new QFormLayout(this);
    switch (kind) {
    case Kind::SetValue:
        setWindowTitle(tr("Set V of %1").arg(node));
        break;
    case Kind::Inject:
        setWindowTitle(tr("Inject an intent under %1").arg(node));
        break;
    case Kind::EditIntent:
        setWindowTitle(tr("Edit the intent of %1").arg(node));
        break;
    case Kind::Evaluate:
        setWindowTitle(tr("Evaluate a program under %1 (costs one evaluation)").arg(node));
        break;
    case Kind::Prune:
        setWindowTitle(tr("Prune %1").arg(node));
        break;
    }
    if (kind == Kind::SetValue || kind == Kind::Inject) {
        m_value = new QDoubleSpinBox(this);
        m_value->setObjectName(QStringLiteral("steeringValue"));
        m_value->setRange(0.0, 1.0);
        m_value->setSingleStep(0.05);
        m_value->setDecimals(2);
        m_value->setValue(0.5);
        form->addRow(tr("V"), m_value);
    }
    if (kind == Kind::Inject || kind == Kind::EditIntent || kind == Kind::Evaluate) {
        m_text = new QPlainTextEdit(this);
        m_text->setObjectName(QStringLiteral("steeringText"));
        if (kind == Kind::Evaluate) {
            m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
            m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
            m_text->setMinimumSize(720, 420);
        } else {
            m_text->setPlaceholderText(
                tr("One concrete change, e.g. \"stage K/V pages through shared memory with cp.async, "
                   "two stages\""));
            m_text->setMinimumSize(520, 90);
        }
        form->addRow(kind == Kind::Evaluate ? tr("Program") : tr("Intent"), m_text);
    }
    m_reason = new QLineEdit(this);
    m_reason->setObjectName(QStringLiteral("steeringReason"));
    m_reason->setPlaceholderText(tr("why (kept in the journal with the change)"));
    form->addRow(tr("Reason"), m_reason);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &SteeringDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    form->addRow(buttons);
}

void SteeringDialog::setValue(double v)
{
    if (m_value)
        m_value->setValue(v);
}

void SteeringDialog::setText(const QString& text)
{
    if (m_text)
        m_text->setPlainText(text);
}

double SteeringDialog::value() const
{
    return m_value ? m_value->value() : 0.0;
}

QString SteeringDialog::text() const
{
    return m_text ? m_text->toPlainText() : QString();
}

QString SteeringDialog::reason() const
{
    return m_reason->text().trimmed();
}

void SteeringDialog::accept()
{
    if (m_text && text().trimmed().isEmpty()) {
        QMessageBox::warning(this, windowTitle(),
            tr("%1 is empty.").arg(m_kind == Kind::Evaluate ? tr("The program") : tr("The intent")));
        return;
    }
    if (m_kind == Kind::Evaluate && !text().contains(u"ks_run")) {
        QMessageBox::warning(this, windowTitle(), tr("The program must define ks_run (see the task's ABI)."));
        return;
    }
    QDialog::accept();
}

} // namespace ks::ui
