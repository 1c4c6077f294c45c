#pragma once

#include <QWidget>

#include <optional>

class QComboBox;
class QLabel;
class QPushButton;
class QListWidget;
class QPlainTextEdit;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QTextBrowser;

namespace ks {
struct Attempt;
}

namespace ks::ui {

class CodeView;
class SearchDocument;

// Everything about one node: its intent and rationale, V with every change (who, why, when),
// its attempts with their verdicts and per-workload numbers, each program coloured for its
// language with a diff against the program its action started from, the node's first attempt
// or any other attempt, and the LLM exchanges that created or edited it.
class NodeInspector : public QWidget
{
    Q_OBJECT
public:
    explicit NodeInspector(const SearchDocument& document, QWidget* parent = nullptr);
    QString node() const { return m_node; }

public slots:
    void showNode(const QString& id);
    void showAttempt(int index); // an attempt of the shown node: its workloads, log and program

public:
    // What the shown program is compared with: nothing, the program the action started from, the
    // node's first attempt, or attempt `attempt` of the session.
    enum class Compare { Nothing, Start, FirstAttempt, Attempt };
    void compareWith(Compare what, int attempt = -1);

signals:
    // "Run compute-sanitizer" on the shown attempt; `tool` is a SanitizerTool.
    void sanitizeRequested(int attempt, int tool);

private:
    void refresh();
    void fillAttempts();
    void fillCode();
    void fillKernels(const Attempt* attempt);
    void fillCompareChoices();
    std::optional<int> comparedAttempt(QString* missing) const;
    void fillExchanges();

    const SearchDocument& m_document;
    QString m_node;
    int m_attempt = -1;
    QLabel* m_header;
    QTabWidget* m_tabs;
    QTextBrowser* m_intent;
    QStandardItemModel* m_values;
    QTableView* m_valueView;
    QStandardItemModel* m_attempts;
    QTableView* m_attemptView;
    QStandardItemModel* m_workloads;
    QStandardItemModel* m_kernels;
    QTableView* m_kernelView;
    QPlainTextEdit* m_log;
    QComboBox* m_sanitizerTool;
    QPushButton* m_sanitize;
    QComboBox* m_compare;
    QLabel* m_compareSummary;
    CodeView* m_code;
    QListWidget* m_exchangeList;
    QTextBrowser* m_exchange;
};

} // namespace ks::ui
