#pragma once

#include "llmprovider.h"

#include <QElapsedTimer>

namespace ks {

// One question to a person: the front end shows request() and calls answer() or cancel(), from
// any thread.
class ManualCall final : public LlmCall
{
    Q_OBJECT
public:
    explicit ManualCall(LlmRequest request);
    const LlmRequest& request() const { return m_request; }
    void answer(const QString& text);
    void cancel() override;

private:
    void finishWith(const QString& text, const std::optional<LlmError>& error);

    LlmRequest m_request;
    QElapsedTimer m_clock;
    bool m_done = false;
};

// A person is the model: every request is announced with questionAsked, and the call finishes
// when somebody answers it (the GUI shows a dialog; tests answer directly). No timeout: a person
// takes the time they need, and cancel() ends the wait.
class ManualProvider : public QObject, public LlmProvider
{
    Q_OBJECT
public:
    using QObject::QObject;
    QString name() const override { return QStringLiteral("manual"); }
    LlmCall* send(const LlmRequest& request) override;

signals:
    void questionAsked(ks::ManualCall* call);
};

} // namespace ks
