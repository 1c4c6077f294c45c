#include "eventlogmodel.h"

#include "searchdocument.h"

#include <QColor>

namespace ks::ui {

namespace {

QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

QString str(const nlohmann::json& e, const char* key)
{
    return e.contains(key) && e[key].is_string() ? q(e[key].get<std::string>()) : QString();
}

} // namespace

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

QString EventLogModel::describe(const nlohmann::json& e)
{
    const QString type = str(e, "type");
    if (type == u"run_started")
        return e.value("resumed", false) ? tr("run resumed") : tr("run started");
    if (type == u"exchange") {
        QString line = tr("%1 answered (%2, %3 + %4 tokens, %5 s)")
                           .arg(str(e, "role"), str(e, "purpose"))
                           .arg(e.value("usage", nlohmann::json::object()).value("prompt", 0))
                           .arg(e.value("usage", nlohmann::json::object()).value("completion", 0))
                           .arg(e.value("latency_s", 0.0), 0, 'f', 1);
        if (e.contains("error"))
            line += tr(": failed: %1").arg(q(e["error"].value("message", std::string())));
        return line;
    }
    if (type == u"tree_edit") {
        QStringList parts;
        for (const auto& id : e.value("inserted", std::vector<std::string>()))
            parts << u'+' + q(id);
        const auto edit = e.value("edit", nlohmann::json::object());
        for (const auto& u : edit.value("update", nlohmann::json::array()))
            parts << tr("V %1 -> %2").arg(q(u.value("node", std::string()))).arg(u.value("priority", 0.0), 0, 'f', 2);
        for (const auto& p : edit.value("prune", nlohmann::json::array()))
            parts << tr("pruned %1").arg(q(p.value("node", std::string())));
        return tr("%1 edited the tree (%2): %3")
            .arg(str(e, "author").replace(u'_', u' '), str(e, "purpose"), parts.join(u", "));
    }
    if (type == u"edit_rejected")
        return tr("world model answer refused: %1")
            .arg(q(e.value("errors", std::vector<std::string> {std::string()}).front()));
    if (type == u"action_started")
        return tr("action on %1 (%2)").arg(str(e, "node"), str(e, "reason"));
    if (type == u"candidate")
        return e.contains("problem")
            ? tr("%1: no program: %2").arg(str(e, "node"), str(e, "problem"))
            : tr("%1: program %2 written (%3)").arg(str(e, "node"), str(e, "program"), str(e, "prompt"));
    if (type == u"evaluation") {
        const auto ev = e.value("evaluation", nlohmann::json::object());
        return tr("%1: %2, J %3")
            .arg(str(e, "node"), q(ev.value("status", std::string())))
            .arg(ev.value("score", 0.0), 0, 'f', 1);
    }
    if (type == u"action_finished")
        return tr("action on %1 ended: %2").arg(str(e, "node"), str(e, "outcome"));
    if (type == u"human")
        return tr("person: %1%2")
            .arg(str(e, "description"),
                e["command"].value("reason", std::string()).empty()
                    ? QString()
                    : tr(" (%1)").arg(q(e["command"].value("reason", std::string()))));
    if (type == u"paused")
        return tr("paused: %1").arg(str(e, "reason"));
    if (type == u"run_finished")
        return tr("finished: %1").arg(str(e, "reason"));
    return type;
}

QVariant EventLogModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= m_rows || index.row() >= static_cast<int>(m_document.events().size()))
        return {};
    const nlohmann::json& e = *m_document.events()[static_cast<std::size_t>(index.row())];
    if (role == Qt::DisplayRole)
        return tr("#%1  round %2  %3").arg(e.value("seq", 0)).arg(e.value("round", 0)).arg(describe(e));
    if (role == Qt::ForegroundRole) {
        const std::string type = e.value("type", std::string());
        if (type == "human")
            return QColor(0x8e, 0x44, 0xad);
        if (type == "edit_rejected" || type == "paused" || e.contains("error"))
            return QColor(0xc0, 0x50, 0x4d);
        if (type == "evaluation")
            return e["evaluation"].value("status", std::string()) == "PASSED" ? QColor(0x2e, 0x7d, 0x32)
                                                                              : QColor(0x9e, 0x6b, 0x00);
    }
    if (role == Qt::ToolTipRole)
        return QString::fromStdString(e.value("t", std::string()));
    return {};
}

} // namespace ks::ui
