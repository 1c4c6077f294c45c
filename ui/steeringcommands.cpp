#include "steeringcommands.h"

#include "searchdocument.h"

namespace ks::ui {

namespace {

using Kind = HumanCommand::Kind;

std::string s(const QString& text)
{
    return text.toStdString();
}

// The newest node a person created under `parent` with an intent that starts with `prefix`.
std::string humanNodeUnder(const SearchDocument& document, const std::string& parent, const std::string& prefix)
{
    const auto& nodes = document.state().tree.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)
        if (it->parent == parent && it->createdBy == Author::Human && it->intent.rfind(prefix, 0) == 0)
            return it->id;
    return {};
}

} // namespace

SteeringCommand::SteeringCommand(Steering& steering, const QString& text)
    : m_steering(steering)
{
    setText(text);
}

void SteeringCommand::redo()
{
    m_steering.send(forward());
}

void SteeringCommand::undo()
{
    m_steering.send(backward());
}

HumanCommand SteeringCommand::make(Kind kind, const std::string& node, const std::string& reason)
{
    HumanCommand c;
    c.kind = kind;
    c.node = node;
    c.reason = reason;
    return c;
}

SetValueCommand::SetValueCommand(Steering& st, QString node, double before, double after, QString reason)
    : SteeringCommand(st, QObject::tr("Set V of %1 to %2").arg(node).arg(after, 0, 'f', 2))
    , m_node(s(node))
    , m_reason(s(reason))
    , m_before(before)
    , m_after(after)
{
}

HumanCommand SetValueCommand::forward() const
{
    HumanCommand c = make(Kind::SetValue, m_node, m_reason);
    c.value = m_after;
    return c;
}

HumanCommand SetValueCommand::backward() const
{
    HumanCommand c = make(Kind::SetValue, m_node, "undo: " + m_reason);
    c.value = m_before;
    return c;
}

PruneCommand::PruneCommand(Steering& st, QString node, QString reason, bool restore)
    : SteeringCommand(st, (restore ? QObject::tr("Restore %1") : QObject::tr("Prune %1")).arg(node))
    , m_node(s(node))
    , m_reason(s(reason))
    , m_restore(restore)
{
}

HumanCommand PruneCommand::forward() const
{
    return make(m_restore ? Kind::Restore : Kind::Prune, m_node, m_reason);
}

HumanCommand PruneCommand::backward() const
{
    return make(m_restore ? Kind::Prune : Kind::Restore, m_node, "undo: " + m_reason);
}

InjectCommand::InjectCommand(
    Steering& st, const SearchDocument& document, QString parent, QString intent, double value, QString reason)
    : SteeringCommand(st, QObject::tr("Inject an intent under %1").arg(parent))
    , m_document(document)
    , m_parent(s(parent))
    , m_intent(s(intent))
    , m_reason(s(reason))
    , m_value(value)
{
}

HumanCommand InjectCommand::forward() const
{
    HumanCommand c = make(Kind::Inject, m_parent, m_reason);
    c.text = m_intent;
    c.value = m_value;
    return c;
}

HumanCommand InjectCommand::backward() const
{
    return make(Kind::Prune, humanNodeUnder(m_document, m_parent, m_intent), "undo: injected by mistake");
}

EditIntentCommand::EditIntentCommand(Steering& st, QString node, QString before, QString after, QString reason)
    : SteeringCommand(st, QObject::tr("Edit the intent of %1").arg(node))
    , m_node(s(node))
    , m_before(s(before))
    , m_after(s(after))
    , m_reason(s(reason))
{
}

HumanCommand EditIntentCommand::forward() const
{
    HumanCommand c = make(Kind::EditIntent, m_node, m_reason);
    c.text = m_after;
    return c;
}

HumanCommand EditIntentCommand::backward() const
{
    HumanCommand c = make(Kind::EditIntent, m_node, "undo: " + m_reason);
    c.text = m_before;
    return c;
}

PinCommand::PinCommand(Steering& st, QString node, QString previousPin)
    : SteeringCommand(st, QObject::tr("Pin %1 as the next action").arg(node))
    , m_node(s(node))
    , m_previous(s(previousPin))
{
}

HumanCommand PinCommand::forward() const
{
    return make(Kind::Pin, m_node, "pinned in the window");
}

HumanCommand PinCommand::backward() const
{
    return make(Kind::Pin, m_previous, "undo: pin");
}

EvaluateCommand::EvaluateCommand(
    Steering& st, const SearchDocument& document, QString parent, QString source, QString reason)
    : SteeringCommand(st, QObject::tr("Evaluate a program under %1").arg(parent))
    , m_document(document)
    , m_parent(s(parent))
    , m_source(s(source))
    , m_reason(s(reason))
{
}

HumanCommand EvaluateCommand::forward() const
{
    HumanCommand c = make(Kind::Evaluate, m_parent, m_reason);
    c.text = m_source;
    return c;
}

HumanCommand EvaluateCommand::backward() const
{
    return make(Kind::Prune, humanNodeUnder(m_document, m_parent, "Hand-written program"),
        "undo: the hand-written program (its evaluation stays spent)");
}

SetLimitCommand::SetLimitCommand(Steering& st, Limit limit, int before, int after)
    : SteeringCommand(
        st, (limit == Limit::Budget ? QObject::tr("Set the budget to %1") : QObject::tr("Set K to %1")).arg(after))
    , m_limit(limit)
    , m_before(before)
    , m_after(after)
{
}

HumanCommand SetLimitCommand::forward() const
{
    HumanCommand c = make(m_limit == Limit::Budget ? Kind::SetBudget : Kind::SetK, {}, "changed in the window");
    c.number = m_after;
    return c;
}

HumanCommand SetLimitCommand::backward() const
{
    HumanCommand c = make(m_limit == Limit::Budget ? Kind::SetBudget : Kind::SetK, {}, "undo");
    c.number = m_before;
    return c;
}

} // namespace ks::ui
