#include "usageledger.h"

namespace ks {

void RoleUsage::add(const RoleUsage& o)
{
    calls += o.calls;
    failedCalls += o.failedCalls;
    unpricedCalls += o.unpricedCalls;
    tokens.promptTokens += o.tokens.promptTokens;
    tokens.completionTokens += o.tokens.completionTokens;
    tokens.reasoningTokens += o.tokens.reasoningTokens;
    dollars += o.dollars;
    latencySeconds += o.latencySeconds;
}

void UsageLedger::record(const QString& role, const LlmResult& r)
{
    RoleUsage u;
    u.calls = 1;
    u.failedCalls = r.error ? 1 : 0;
    const bool usedTokens = r.usage.promptTokens > 0 || r.usage.completionTokens > 0;
    u.unpricedCalls = !r.priced && usedTokens ? 1 : 0;
    u.tokens = r.usage;
    u.dollars = r.costDollars;
    u.latencySeconds = r.latencySeconds;
    QMutexLocker lock(&m_mutex);
    m_roles[role].add(u);
}

void UsageLedger::restore(const QMap<QString, RoleUsage>& roles)
{
    QMutexLocker lock(&m_mutex);
    m_roles = roles;
}

QMap<QString, RoleUsage> UsageLedger::byRole() const
{
    QMutexLocker lock(&m_mutex);
    return m_roles;
}

RoleUsage UsageLedger::total() const
{
    QMutexLocker lock(&m_mutex);
    RoleUsage t;
    for (const RoleUsage& u : m_roles)
        t.add(u);
    return t;
}

void UsageLedger::setCapDollars(double cap)
{
    QMutexLocker lock(&m_mutex);
    m_cap = cap;
}

double UsageLedger::capDollars() const
{
    QMutexLocker lock(&m_mutex);
    return m_cap;
}

bool UsageLedger::capReached() const
{
    const double cap = capDollars();
    return cap > 0 && total().dollars >= cap;
}

} // namespace ks
