#include "workersmodel.h"

#include "searchdocument.h"

#include <session/runsummary.h>
#include <util/qtext.h>

#include <algorithm>

namespace ks::ui {

namespace {

QString displayName(const std::string& name)
{
    return name.empty() ? QObject::tr("this machine") : q(name);
}

} // namespace

WorkersModel::WorkersModel(const SearchDocument& document, QObject* parent)
    : QAbstractTableModel(parent)
    , m_document(document)
{
    connect(&document, &SearchDocument::reset, this, &WorkersModel::rebuild);
    connect(&document, &SearchDocument::attemptAdded, this, &WorkersModel::rebuild);
    rebuild();
}

void WorkersModel::setActivity(const EngineActivity& activity)
{
    m_activity = activity;
    rebuild();
}

void WorkersModel::rebuild()
{
    beginResetModel();
    m_rows.clear();
    auto rowOf = [this](const std::string& name) -> Row& {
        const auto it = std::find_if(m_rows.begin(), m_rows.end(), [&](const Row& r) { return r.name == name; });
        if (it != m_rows.end())
            return *it;
        m_rows.push_back({name});
        return m_rows.back();
    };
    for (const EvaluatorActivity& e : m_activity.evaluators)
        rowOf(e.name).live = &e;
    for (const Attempt& a : m_document.state().tree.attempts()) {
        if (!a.evaluated)
            continue;
        Row& r = rowOf(a.worker);
        ++r.evaluations;
        r.passed += a.passed() ? 1 : 0;
        // The candidate's runner on the device, not the time it queued for it. (Every attempt
        // repeats the evaluator's one-off reference and baseline times: left out.)
        const Evaluation& e = a.evaluation;
        const auto wait = e.phases.find("device_wait");
        r.deviceSeconds += e.candidateSeconds - (wait == e.phases.end() ? 0.0 : wait->second);
    }
    endResetModel();
}

int WorkersModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int WorkersModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant WorkersModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const Row& r = m_rows[static_cast<std::size_t>(index.row())];
    const double elapsed = m_document.state().elapsedSeconds;
    if (role == Qt::ToolTipRole && index.column() == Now && r.live && r.live->retired)
        return q(*r.live->retired);
    if (role == Qt::TextAlignmentRole && index.column() >= Evaluations)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Name:
        return displayName(r.name);
    case Now:
        if (!r.live)
            return QStringLiteral("-");
        if (r.live->retired)
            return tr("lost: %1").arg(q(*r.live->retired).left(80));
        return r.live->node.empty() ? tr("idle") : tr("evaluating %1").arg(q(r.live->node));
    case Evaluations:
        return r.evaluations;
    case Passed:
        return r.passed;
    case Failed:
        return r.evaluations - r.passed;
    case DeviceTime:
        return QString(q(formatFixed(r.deviceSeconds, 1)) + QStringLiteral(" s"));
    case Utilisation:
        return elapsed > 0 ? QString(q(formatFixed(100.0 * r.deviceSeconds / elapsed, 0)) + QStringLiteral(" %"))
                           : QStringLiteral("-");
    default:
        return {};
    }
}

QVariant WorkersModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return tr("Evaluator");
    case Now:
        return tr("Now");
    case Evaluations:
        return tr("Evaluations");
    case Passed:
        return tr("Passed");
    case Failed:
        return tr("Failed");
    case DeviceTime:
        return tr("Device time");
    case Utilisation:
        return tr("Busy");
    default:
        return {};
    }
}

QString WorkersModel::queueSummary() const
{
    if (m_activity.evaluators.empty())
        return tr("No search is running.");
    const auto& evaluators = m_activity.evaluators;
    const auto busy =
        std::count_if(evaluators.begin(), evaluators.end(), [](const EvaluatorActivity& e) { return !e.node.empty(); });
    const auto lost =
        std::count_if(evaluators.begin(), evaluators.end(), [](const EvaluatorActivity& e) { return e.retired; });
    QStringList parts {tr("%1 of %2 evaluators busy").arg(busy).arg(evaluators.size())};
    if (lost > 0)
        parts << tr("%1 lost").arg(lost);
    QStringList waiting;
    for (const PendingCandidate& c : m_document.state().candidates)
        if (std::none_of(
                evaluators.begin(), evaluators.end(), [&](const EvaluatorActivity& e) { return e.node == c.node; }))
            waiting << q(c.node);
    if (!waiting.isEmpty())
        parts << tr("waiting for an evaluator: %1").arg(waiting.join(u", "));
    QStringList coding;
    for (const std::string& n : m_activity.coding)
        coding << q(n);
    if (!coding.isEmpty())
        parts << tr("being written: %1").arg(coding.join(u", "));
    if (m_activity.planner)
        parts << tr("world model thinking");
    parts << tr("up to %1 actions at once").arg(m_activity.lanes);
    return parts.join(u"; ");
}

} // namespace ks::ui
