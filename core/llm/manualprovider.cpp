#include "manualprovider.h"

#include <util/elapsed.h>

#include <QMetaObject>
#include <QPointer>
#include <QTimer>

namespace ks {

ManualCall::ManualCall(LlmRequest request)
    : m_request(std::move(request))
{
    m_clock.start();
}

void ManualCall::answer(const QString& text)
{
    QMetaObject::invokeMethod(
        this,
        [this, text] {
            if (text.trimmed().isEmpty())
                finishWith({}, LlmError {LlmErrorKind::MalformedResponse, 0, QStringLiteral("the answer was empty")});
            else
                finishWith(text, std::nullopt);
        },
        Qt::QueuedConnection);
}

void ManualCall::cancel()
{
    QMetaObject::invokeMethod(
        this,
        [this] {
            finishWith({}, LlmError {LlmErrorKind::Cancelled, 0, QStringLiteral("cancelled")});
        },
        Qt::QueuedConnection);
}

void ManualCall::finishWith(const QString& text, const std::optional<LlmError>& error)
{
    if (m_done)
        return;
    m_done = true;
    LlmResult r;
    r.text = text;
    r.model = m_request.model.isEmpty() ? QStringLiteral("manual") : m_request.model;
    r.latencySeconds = secondsElapsed(m_clock);
    r.error = error;
    if (!error)
        emit textDelta(text);
    emit finished(r);
}

LlmCall* ManualProvider::send(const LlmRequest& request)
{
    auto* call = new ManualCall(request);
    // After the caller has connected to the call, like every other provider.
    QTimer::singleShot(0, this, [this, call = QPointer<ManualCall>(call)] {
        if (call)
            emit questionAsked(call);
    });
    return call;
}

} // namespace ks
