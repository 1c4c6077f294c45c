#pragma once

#include "steering.h"

#include <QUndoCommand>

namespace ks::ui {

class SearchDocument;

// Each steering action as an undoable command: redo sends the person's command to the engine,
// undo sends the command that reverses it (recorded in the journal as the person's too, with
// "undo" in the reason). Pause, step, resume and stop are not undoable: time does not run back.
class SteeringCommand : public QUndoCommand
{
public:
    SteeringCommand(Steering& steering, const QString& text);
    void redo() override;
    void undo() override;

protected:
    virtual HumanCommand forward() const = 0;
    virtual HumanCommand backward() const = 0;
    static HumanCommand make(HumanCommand::Kind kind, const std::string& node, const std::string& reason);

private:
    Steering& m_steering;
};

class SetValueCommand final : public SteeringCommand
{
public:
    SetValueCommand(Steering& s, QString node, double before, double after, QString reason);

private:
    HumanCommand forward() const override;
    HumanCommand backward() const override;
    std::string m_node, m_reason;
    double m_before, m_after;
};

class PruneCommand final : public SteeringCommand
{
public:
    PruneCommand(Steering& s, QString node, QString reason, bool restore);

private:
    HumanCommand forward() const override;
    HumanCommand backward() const override;
    std::string m_node, m_reason;
    bool m_restore;
};

class InjectCommand final : public SteeringCommand
{
public:
    InjectCommand(
        Steering& s, const SearchDocument& document, QString parent, QString intent, double value, QString reason);

private:
    HumanCommand forward() const override;
    HumanCommand backward() const override; // prunes the node the injection created
    const SearchDocument& m_document;
    std::string m_parent, m_intent, m_reason;
    double m_value;
};

class EditIntentCommand final : public SteeringCommand
{
public:
    EditIntentCommand(Steering& s, QString node, QString before, QString after, QString reason);

private:
    HumanCommand forward() const override;
    HumanCommand backward() const override;
    std::string m_node, m_before, m_after, m_reason;
};

class PinCommand final : public SteeringCommand
{
public:
    PinCommand(Steering& s, QString node, QString previousPin);

private:
    HumanCommand forward() const override;
    HumanCommand backward() const override;
    std::string m_node, m_previous;
};

class EvaluateCommand final : public SteeringCommand
{
public:
    EvaluateCommand(Steering& s, const SearchDocument& document, QString parent, QString source, QString reason);

private:
    HumanCommand forward() const override;
    HumanCommand backward() const override; // prunes the program's node; the evaluation stays spent
    const SearchDocument& m_document;
    std::string m_parent, m_source, m_reason;
};

class SetLimitCommand final : public SteeringCommand
{
public:
    enum class Limit { Budget, K };
    SetLimitCommand(Steering& s, Limit limit, int before, int after);

private:
    HumanCommand forward() const override;
    HumanCommand backward() const override;
    Limit m_limit;
    int m_before, m_after;
};

} // namespace ks::ui
