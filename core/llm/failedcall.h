#pragma once

#include "llmprovider.h"

namespace ks {

// A call that is over before it starts: it finishes with `error` on the next turn of the event
// loop, so callers connect to it exactly as to a real call.
class FailedCall final : public LlmCall
{
    Q_OBJECT
public:
    explicit FailedCall(LlmError error);
    void cancel() override { }
};

} // namespace ks
