#include "meteredprovider.h"

#include "failedcall.h"

namespace ks {

namespace {

class MeteredCall final : public LlmCall
{
public:
    MeteredCall(LlmCall* inner, const LlmRequest& request, const PriceTable& prices, UsageLedger& ledger)
        : m_inner(inner)
    {
        m_inner->setParent(this);
        connect(m_inner, &LlmCall::textDelta, this, &LlmCall::textDelta);
        connect(m_inner, &LlmCall::finished, this, [this, request, &prices, &ledger](LlmResult r) {
            const QString model = r.model.isEmpty() ? request.model : r.model;
            auto price = prices.find(model);
            if (!price && model != request.model)
                price = prices.find(request.model);
            r.priced = price.has_value();
            r.costDollars = price ? PriceTable::cost(*price, r.usage) : 0.0;
            ledger.record(request.role, r);
            emit finished(r);
        });
    }
    void cancel() override { m_inner->cancel(); }

private:
    LlmCall* m_inner;
};

} // namespace

MeteredProvider::MeteredProvider(LlmProvider& inner, const PriceTable& prices, UsageLedger& ledger)
    : m_inner(inner)
    , m_prices(prices)
    , m_ledger(ledger)
{
}

LlmCall* MeteredProvider::send(const LlmRequest& request)
{
    if (m_ledger.capReached())
        return new FailedCall({LlmErrorKind::CostCap, 0,
            QStringLiteral("the dollar cap of $%1 is reached ($%2 spent): no new %3 calls; raise the cap to go on")
                .arg(m_ledger.capDollars(), 0, 'f', 2)
                .arg(m_ledger.dollars(), 0, 'f', 2)
                .arg(request.role)});
    return new MeteredCall(m_inner.send(request), request, m_prices, m_ledger);
}

} // namespace ks
