#include "evaluatorpool.h"

#include <algorithm>

namespace ks {

EvaluatorPool::EvaluatorPool(std::vector<EvaluatorSlot> evaluators, QObject* parent)
    : QObject(parent)
    , m_slots(std::move(evaluators))
    , m_workers(m_slots.size())
{
    qRegisterMetaType<ks::EvaluationDone>();
}

EvaluatorPool::~EvaluatorPool()
{
    for (Worker& w : m_workers)
        if (w.thread.joinable())
            w.thread.join();
}

int EvaluatorPool::idle() const
{
    return static_cast<int>(
        std::count_if(m_workers.begin(), m_workers.end(), [](const Worker& w) { return !w.busy && !w.retired; }));
}

int EvaluatorPool::usable() const
{
    return static_cast<int>(
        std::count_if(m_workers.begin(), m_workers.end(), [](const Worker& w) { return !w.retired; }));
}

std::vector<EvaluatorActivity> EvaluatorPool::activity() const
{
    std::vector<EvaluatorActivity> out;
    for (std::size_t i = 0; i < m_workers.size(); ++i)
        out.push_back({m_slots[i].name, m_workers[i].node,
            m_workers[i].retired ? std::optional<std::string>(m_workers[i].why) : std::nullopt});
    return out;
}

bool EvaluatorPool::start(const std::string& node, const std::filesystem::path& source)
{
    const auto it =
        std::find_if(m_workers.begin(), m_workers.end(), [](const Worker& w) { return !w.busy && !w.retired; });
    if (it == m_workers.end())
        return false;
    const int slot = static_cast<int>(it - m_workers.begin());
    if (it->thread.joinable())
        it->thread.join(); // its last evaluation has been delivered already
    it->busy = true;
    it->node = node;
    it->thread =
        std::thread([this, slot, node, source, evaluator = m_slots[slot].evaluator, name = m_slots[slot].name] {
            EvaluationDone done {node, name, evaluator->evaluate(source), std::nullopt};
            done.unavailable = evaluator->unavailable();
            QMetaObject::invokeMethod(
                this, [this, slot, done = std::move(done)]() mutable { finish(slot, std::move(done)); },
                Qt::QueuedConnection);
        });
    return true;
}

void EvaluatorPool::finish(int slot, EvaluationDone done)
{
    Worker& w = m_workers[static_cast<std::size_t>(slot)];
    w.busy = false;
    w.node.clear();
    if (done.unavailable) {
        w.retired = true;
        w.why = *done.unavailable;
    }
    emit evaluated(done);
}

} // namespace ks
