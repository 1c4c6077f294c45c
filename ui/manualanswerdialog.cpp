#include "manualanswerdialog.h"

#include <llm/manualprovider.h>

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace ks::ui {

ManualAnswerDialog::ManualAnswerDialog(ManualCall* call, QWidget* parent)
    : QDialog(parent)
    , m_call(call)
{
    setObjectName(QStringLiteral("manualAnswerDialog"));
    setWindowTitle(tr("Answer as the %1").arg(call->request().role));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("The search waits for an answer to this prompt. Paste or write it below; it is "
                                    "read exactly as a model's answer would be."),
        this));
    auto* split = new QSplitter(Qt::Vertical, this);
    auto* prompt = new QTextBrowser(split);
    prompt->setObjectName(QStringLiteral("manualPrompt"));
    QString text;
    for (const auto& m : call->request().messages)
        text += u"=== " + m.role + u"\n" + m.content + u"\n\n";
    prompt->setPlainText(text);
    m_answer = new QPlainTextEdit(split);
    m_answer->setObjectName(QStringLiteral("manualAnswer"));
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    QPushButton* copy = buttons->addButton(tr("Copy prompt"), QDialogButtonBox::ActionRole);
    connect(copy, &QPushButton::clicked, this, [text] { QApplication::clipboard()->setText(text); });
    connect(buttons, &QDialogButtonBox::accepted, this, &ManualAnswerDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &ManualAnswerDialog::reject);
    layout->addWidget(buttons);
    resize(900, 700);
}

void ManualAnswerDialog::accept()
{
    if (m_call)
        m_call->answer(m_answer->toPlainText());
    QDialog::accept();
}

void ManualAnswerDialog::reject()
{
    if (m_call)
        m_call->cancel();
    QDialog::reject();
}

} // namespace ks::ui
