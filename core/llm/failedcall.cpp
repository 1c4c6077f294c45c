#include "failedcall.h"

#include <QTimer>

namespace ks {

FailedCall::FailedCall(LlmError error)
{
    QTimer::singleShot(0, this, [this, error] {
        LlmResult r;
        r.error = error;
        emit finished(r);
    });
}

} // namespace ks
