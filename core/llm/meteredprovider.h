#pragma once

#include "llmprovider.h"
#include "pricetable.h"
#include "usageledger.h"

namespace ks {

// Puts a price on every answer of the provider it wraps and records it in the ledger; refuses
// new calls once the ledger's dollar cap is reached (a call already in flight finishes and is
// counted, so the total can pass the cap by at most one call per role in flight).
class MeteredProvider : public LlmProvider
{
public:
    MeteredProvider(LlmProvider& inner, const PriceTable& prices, UsageLedger& ledger);
    QString name() const override { return m_inner.name(); }
    LlmCall* send(const LlmRequest& request) override;

private:
    LlmProvider& m_inner;
    const PriceTable& m_prices;
    UsageLedger& m_ledger;
};

} // namespace ks
