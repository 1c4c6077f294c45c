// MainWindow: an attempt's program under compute-sanitizer (issue #15 point 7), from the
// inspector's Attempts tab, and the report it gives.

#include "mainwindow.h"
#include "sanitizerrun.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QPlainTextEdit>
#include <QStatusBar>
#include <QVBoxLayout>

namespace ks::ui {

void MainWindow::sanitizeAttempt(int attempt, int tool)
{
    const Attempt* a = m_document.state().tree.attempt(attempt);
    if (!a || a->program.empty())
        return;
    SanitizerRun::Request request;
    request.taskDir = m_document.config().taskDir;
    request.backend = m_document.config().backend;
    request.language = m_document.config().candidateLanguage();
    request.source = m_document.programSource(a->program);
    request.tool = static_cast<SanitizerTool>(tool);
    request.attempt = attempt;
    const QString toolName = QString::fromLatin1(sanitizerToolName(request.tool).data());
    if (!m_sanitizerRun->start(request)) {
        statusBar()->showMessage(tr("compute-sanitizer is still running on another attempt"), 10000);
        return;
    }
    statusBar()->showMessage(tr("compute-sanitizer (%1) on attempt %2: preparing the task and running one call...")
                                 .arg(toolName)
                                 .arg(attempt));
}

void MainWindow::showSanitizerReport(int attempt, const SanitizerReport& report)
{
    const QString toolName = QString::fromLatin1(sanitizerToolName(report.tool).data());
    statusBar()->showMessage(report.complete
            ? tr("compute-sanitizer (%1) on attempt %2: %n error(s)", nullptr, report.errors).arg(toolName).arg(attempt)
            : tr("compute-sanitizer (%1) on attempt %2 gave no complete report").arg(toolName).arg(attempt),
        15000);
    auto* dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("sanitizerDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("compute-sanitizer %1: attempt %2").arg(toolName).arg(attempt));
    auto* layout = new QVBoxLayout(dialog);
    auto* text = new QPlainTextEdit(dialog);
    text->setObjectName(QStringLiteral("sanitizerReport"));
    text->setReadOnly(true);
    text->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    text->setPlainText(QString::fromStdString(formatSanitizerReport(report)));
    layout->addWidget(text, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog->resize(760, 420);
    dialog->show();
}

} // namespace ks::ui
