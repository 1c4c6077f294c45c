#pragma once

#include <QDialog>

class QDoubleSpinBox;
class QLineEdit;
class QPlainTextEdit;

namespace ks::ui {

// Asks for what a steering action needs: an intent's text and V (inject, edit), a V (set V), a
// program (evaluate), and always the reason, which the journal keeps with the action.
class SteeringDialog : public QDialog
{
    Q_OBJECT
public:
    enum class Kind { SetValue, Inject, EditIntent, Evaluate, Prune };
    SteeringDialog(Kind kind, const QString& node, QWidget* parent = nullptr);

    void setValue(double v);
    void setText(const QString& text);
    double value() const;
    QString text() const;
    QString reason() const;
    void accept() override;

private:
    Kind m_kind;
    QDoubleSpinBox* m_value = nullptr;
    QPlainTextEdit* m_text = nullptr;
    QLineEdit* m_reason = nullptr;
};

} // namespace ks::ui
