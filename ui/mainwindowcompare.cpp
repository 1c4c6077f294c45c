// MainWindow: Node > Compare With Another Node. The selected node's attempt against another's,
// each the node's best passing attempt (else its last evaluated one).
#include "mainwindow.h"
#include "nodecomparedialog.h"

#include <util/qtext.h>

#include <QInputDialog>

namespace ks::ui {

QStringList MainWindow::comparableNodes() const
{
    QStringList items;
    const SearchState& s = m_document.state();
    for (const SearchNode& n : s.tree.nodes()) {
        const int a = NodeCompareDialog::representativeAttempt(s, n.id);
        if (a < 0 || q(n.id) == m_currentNode)
            continue;
        const Attempt& attempt = *s.tree.attempt(a);
        const QString figure = attempt.passed() ? tr("J %1").arg(attempt.score(), 0, 'f', 1)
                                                : q(std::string(verdictName(attempt.evaluation.status)));
        items << QStringLiteral("%1: %2, %3").arg(q(n.id), figure, q(n.intent).left(60));
    }
    return items;
}

void MainWindow::askNodeToCompare()
{
    const QStringList items = comparableNodes();
    bool ok = false;
    const QString chosen = QInputDialog::getItem(
        this, tr("Compare With Another Node"), tr("Compare %1 with:").arg(m_currentNode), items, 0, false, &ok);
    if (ok && !chosen.isEmpty())
        compareNodes(m_currentNode, chosen.section(u':', 0, 0));
}

NodeCompareDialog* MainWindow::compareNodes(const QString& first, const QString& second)
{
    const SearchState& s = m_document.state();
    const int a = NodeCompareDialog::representativeAttempt(s, first.toStdString());
    const int b = NodeCompareDialog::representativeAttempt(s, second.toStdString());
    if (a < 0 || b < 0)
        return nullptr;
    auto* d = new NodeCompareDialog(m_document, a, b, this);
    d->setObjectName(QStringLiteral("nodeCompare"));
    d->setAttribute(Qt::WA_DeleteOnClose);
    d->show();
    return d;
}

} // namespace ks::ui
