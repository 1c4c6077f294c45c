#include "eventlogmodel.h"

#include "searchdocument.h"

#include <util/qtext.h>

#include <QColor>

namespace ks::ui {

EventLogModel::EventLogModel(const SearchDocument& document, QObject* parent)
    : QAbstractListModel(parent)
    , m_document(document)
    , m_rows(document.shown())
{
    connect(&document, &SearchDocument::reset, this, [this] {
        beginResetModel();
        m_rows = m_document.shown();
        endResetModel();
    });
    connect(&document, &SearchDocument::eventShown, this, [this] {
        beginInsertRows({}, m_rows, m_rows);
        ++m_rows;
        endInsertRows();
    });
}

int EventLogModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : m_rows;
}

QString EventLogModel::describe(const JournalEvent& e)
{
    if (const auto* started = std::get_if<ev::RunStarted>(&e.body))
        return started->resumed ? tr("run resumed") : tr("run started");
    if (const auto* call = std::get_if<ev::Exchange>(&e.body)) {
        QString line = tr("%1 answered (%2, %3 + %4 tokens, %5 s)")
                           .arg(q(call->role), q(purposeName(call->purpose)))
                           .arg(call->promptTokens)
                           .arg(call->completionTokens)
                           .arg(call->latencySeconds, 0, 'f', 1);
        if (call->error)
            line += tr(": failed: %1").arg(q(call->error->message));
        return line;
    }
    if (const auto* edited = std::get_if<ev::TreeEdit>(&e.body)) {
        QStringList parts;
        for (const auto& id : edited->inserted)
            parts << u'+' + q(id);
        for (const auto& u : edited->edit.value("update", nlohmann::json::array()))
            parts << tr("V %1 -> %2").arg(q(u.value("node", std::string()))).arg(u.value("priority", 0.0), 0, 'f', 2);
        for (const auto& p : edited->edit.value("prune", nlohmann::json::array()))
            parts << tr("pruned %1").arg(q(p.value("node", std::string())));
        return tr("%1 edited the tree (%2): %3")
            .arg(q(edited->author).replace(u'_', u' '), q(purposeName(edited->purpose)), parts.join(u", "));
    }
    if (const auto* rejected = std::get_if<ev::EditRejected>(&e.body))
        return tr("world model answer refused: %1")
            .arg(rejected->errors.empty() ? QString() : q(rejected->errors.front()));
    if (const auto* begun = std::get_if<ev::ActionStarted>(&e.body))
        return tr("action on %1 (%2)").arg(q(begun->node), q(begun->reason));
    if (const auto* cand = std::get_if<ev::Candidate>(&e.body))
        return cand->problem ? tr("%1: no program: %2").arg(q(cand->node), q(*cand->problem))
                             : tr("%1: program %2 written (%3)")
                                   .arg(q(cand->node), q(cand->program.value_or("")), q(purposeName(cand->prompt)));
    if (const auto* evaluated = std::get_if<ev::Evaluation>(&e.body))
        return tr("%1: %2, J %3")
            .arg(q(evaluated->node), q(evaluated->evaluation.value("status", std::string())))
            .arg(evaluated->evaluation.value("score", 0.0), 0, 'f', 1);
    if (const auto* ended = std::get_if<ev::ActionFinished>(&e.body))
        return tr("action on %1 ended: %2").arg(q(ended->node), q(ended->outcome));
    if (const auto* human = std::get_if<ev::Human>(&e.body)) {
        const std::string reason = human->command.value("reason", std::string());
        return tr("person: %1%2").arg(q(human->description), reason.empty() ? QString() : tr(" (%1)").arg(q(reason)));
    }
    if (const auto* paused = std::get_if<ev::Paused>(&e.body))
        return tr("paused: %1").arg(q(paused->reason));
    if (const auto* finished = std::get_if<ev::RunFinished>(&e.body))
        return tr("finished: %1").arg(q(finished->reason));
    return q(std::string(eventTypeName(e.body)));
}

QVariant EventLogModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= m_rows || index.row() >= static_cast<int>(m_document.events().size()))
        return {};
    const JournalEvent& e = *m_document.events()[static_cast<std::size_t>(index.row())];
    if (role == Qt::DisplayRole)
        return tr("#%1  round %2  %3").arg(e.seq.value_or(0)).arg(e.round.value_or(0)).arg(describe(e));
    if (role == Qt::ForegroundRole) {
        const auto* call = std::get_if<ev::Exchange>(&e.body);
        if (std::holds_alternative<ev::Human>(e.body))
            return QColor(0x8e, 0x44, 0xad);
        if (std::holds_alternative<ev::EditRejected>(e.body) || std::holds_alternative<ev::Paused>(e.body)
            || (call && call->error))
            return QColor(0xc0, 0x50, 0x4d);
        if (const auto* evaluated = std::get_if<ev::Evaluation>(&e.body))
            return evaluated->evaluation.value("status", std::string()) == "PASSED" ? QColor(0x2e, 0x7d, 0x32)
                                                                                    : QColor(0x9e, 0x6b, 0x00);
    }
    if (role == Qt::ToolTipRole)
        return q(e.time.value_or(""));
    return {};
}

} // namespace ks::ui
