#include "llmtypes.h"

namespace ks {

bool LlmError::retryable() const
{
    return kind == LlmErrorKind::RateLimited || kind == LlmErrorKind::Overloaded || kind == LlmErrorKind::Network
        || kind == LlmErrorKind::Timeout;
}

QString errorKindName(LlmErrorKind kind)
{
    switch (kind) {
    case LlmErrorKind::Authentication:
        return QStringLiteral("authentication");
    case LlmErrorKind::Quota:
        return QStringLiteral("quota");
    case LlmErrorKind::RateLimited:
        return QStringLiteral("rate limited");
    case LlmErrorKind::BadRequest:
        return QStringLiteral("bad request");
    case LlmErrorKind::Overloaded:
        return QStringLiteral("overloaded");
    case LlmErrorKind::Timeout:
        return QStringLiteral("timeout");
    case LlmErrorKind::Network:
        return QStringLiteral("network");
    case LlmErrorKind::MalformedResponse:
        return QStringLiteral("malformed response");
    case LlmErrorKind::Cancelled:
        return QStringLiteral("cancelled");
    case LlmErrorKind::CommandFailed:
        return QStringLiteral("command failed");
    case LlmErrorKind::CostCap:
        return QStringLiteral("dollar cap");
    case LlmErrorKind::NoAnswer:
        return QStringLiteral("no recorded answer");
    }
    return QStringLiteral("?");
}

} // namespace ks
