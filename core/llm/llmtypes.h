#pragma once

#include <QList>
#include <QMetaType>
#include <QString>

#include <optional>

namespace ks {

struct ChatMessage {
    QString role; // system | user | assistant
    QString content;
};

// One exchange with a model. `role` is the search role asking (planner or coder), used for
// accounting; the rest is what the provider sends.
struct LlmRequest {
    QString role;
    QList<ChatMessage> messages;
    QString model;
    std::optional<double> temperature;
    int maxTokens = 0; // 0: the provider's default
    QString reasoningEffort; // low | medium | high, for reasoning models; empty: unset
    bool stream = true;
};

struct LlmUsage {
    qint64 promptTokens = 0;
    qint64 completionTokens = 0;
    qint64 reasoningTokens = 0;
};

enum class LlmErrorKind {
    Authentication,
    Quota,
    RateLimited,
    BadRequest,
    Overloaded,
    Timeout,
    Network,
    MalformedResponse,
    Cancelled,
    CommandFailed, // the command provider's program exited with an error
    CostCap, // the dollar cap is reached: no new calls
    NoAnswer // replay: nothing recorded for this request
};

struct LlmError {
    LlmErrorKind kind = LlmErrorKind::Network;
    int httpStatus = 0;
    QString message; // what the user can act on, with the server's own words where it gave any
    int retryAfterMs = -1; // a delay the server asked for in its body, if any

    bool retryable() const;
};

struct LlmResult {
    QString text;
    LlmUsage usage;
    QString model;
    double latencySeconds = 0.0;
    double costDollars = 0.0; // filled by the accounting layer
    bool priced = false; // false: the model is not in the price table, cost unknown
    std::optional<LlmError> error;
};

QString errorKindName(LlmErrorKind kind);

} // namespace ks

Q_DECLARE_METATYPE(ks::LlmResult)
