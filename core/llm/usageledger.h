#pragma once

#include "llmtypes.h"

#include <QMap>
#include <QMutex>
#include <QString>

namespace ks {

struct RoleUsage {
    int calls = 0; // finished calls, failed ones included
    int failedCalls = 0;
    int unpricedCalls = 0; // answered by a model the price table does not know
    LlmUsage tokens;
    double dollars = 0.0;
    double latencySeconds = 0.0;

    void add(const RoleUsage& other);
};

// Tokens and dollars per role (planner, coder, ...) and the dollar cap. Shared by the providers
// of one search across threads; every method is thread-safe.
class UsageLedger
{
public:
    void record(const QString& role, const LlmResult& result);
    // For resume: the totals a journal already holds.
    void restore(const QMap<QString, RoleUsage>& roles);

    QMap<QString, RoleUsage> byRole() const;
    RoleUsage total() const;
    double dollars() const { return total().dollars; }

    void setCapDollars(double cap); // 0: no cap
    double capDollars() const;
    bool capReached() const;

private:
    mutable QMutex m_mutex;
    QMap<QString, RoleUsage> m_roles;
    double m_cap = 0.0;
};

} // namespace ks
