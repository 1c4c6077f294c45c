#pragma once

#include <QDialog>
#include <QPointer>

class QPlainTextEdit;
class QTextBrowser;

namespace ks {
class ManualCall;
}

namespace ks::ui {

// The manual provider's dialog: the prompt the model would have got, and a box where a person
// pastes or writes the answer (for example from a chat window they trust, or their own plan).
class ManualAnswerDialog : public QDialog
{
    Q_OBJECT
public:
    ManualAnswerDialog(ManualCall* call, QWidget* parent = nullptr);
    void accept() override;
    void reject() override;

private:
    QPointer<ManualCall> m_call;
    QPlainTextEdit* m_answer;
};

} // namespace ks::ui
