#include "engineevents.h"

namespace ks {

using json = nlohmann::json;

json messagesJson(const QList<ChatMessage>& messages)
{
    json a = json::array();
    for (const auto& m : messages)
        a.push_back({{"role", m.role.toStdString()}, {"content", m.content.toStdString()}});
    return a;
}

EditRules editRulesFor(const SearchState& s, const std::string& solvedNode)
{
    EditRules r;
    r.maxNewNodes = s.settings.maxNewNodes;
    r.frozenValues = s.settings.frozenValues;
    r.flat = s.settings.flat;
    r.solvedNode = solvedNode;
    return r;
}

json editRulesJson(const EditRules& r)
{
    return {{"max_new_nodes", r.maxNewNodes}, {"frozen_values", r.frozenValues}, {"flat", r.flat},
        {"solved_node", r.solvedNode}};
}

json singleInsert(const std::string& parent, const std::string& intent, double priority, const std::string& why)
{
    TreeEdit e;
    e.inserts.push_back({parent, intent, priority, why, {}});
    return toJson(e);
}

LlmResult resultFromExchange(const json& e)
{
    LlmResult r;
    r.text = QString::fromStdString(e.value("text", std::string()));
    r.model = QString::fromStdString(e.value("model", std::string()));
    const json usage = e.value("usage", json::object());
    r.usage = {
        usage.value("prompt", qint64 {0}), usage.value("completion", qint64 {0}), usage.value("reasoning", qint64 {0})};
    r.costDollars = e.value("cost", 0.0);
    r.priced = e.value("priced", false);
    r.latencySeconds = e.value("latency_s", 0.0);
    if (e.contains("error")) {
        const std::string kind = e["error"].value("kind", std::string());
        LlmError error {
            LlmErrorKind::MalformedResponse, 0, QString::fromStdString(e["error"].value("message", std::string()))};
        for (auto k :
            {LlmErrorKind::Authentication, LlmErrorKind::Quota, LlmErrorKind::RateLimited, LlmErrorKind::BadRequest,
                LlmErrorKind::Overloaded, LlmErrorKind::Timeout, LlmErrorKind::Network, LlmErrorKind::MalformedResponse,
                LlmErrorKind::Cancelled, LlmErrorKind::CommandFailed, LlmErrorKind::CostCap, LlmErrorKind::NoAnswer})
            if (errorKindName(k).toStdString() == kind)
                error.kind = k;
        r.error = error;
    }
    return r;
}

} // namespace ks
