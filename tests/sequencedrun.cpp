#include "sequencedrun.h"

#include "fakellm.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <tuple>

namespace ks::test {

namespace {

class HeldCall : public LlmCall
{
public:
    using LlmCall::LlmCall;
    void cancel() override { }
    void deliver(const LlmResult& r) { emit finished(r); }
};

} // namespace

Sequencer::Sequencer(Order order, QObject* parent)
    : QObject(parent)
    , m_order(order)
{
    m_timer.setInterval(1);
    connect(&m_timer, &QTimer::timeout, this, &Sequencer::pump);
}

void Sequencer::attach(SearchEngine* engine)
{
    m_engine = engine;
    connect(engine, &SearchEngine::eventRecorded, this, [this](const SearchEvent& e) {
        if (!m_waitingFor)
            return;
        const std::string type(eventTypeName(e->body));
        const auto* evaluation = std::get_if<ev::Evaluation>(&e->body);
        if (type == m_waitingFor->awaits && (!evaluation || evaluation->program == m_waitingFor->program))
            m_waitingFor.reset();
    });
    m_timer.start();
}

int Sequencer::add(std::string awaits, std::string program, std::function<void()> release)
{
    QMutexLocker lock(&m_mutex);
    char key[32];
    std::snprintf(key, sizeof key, "0-%08d", ++m_answers);
    const std::string order = awaits == "evaluation" ? "1-" + program : std::string(key);
    m_ops.push_back({++m_nextId, std::move(awaits), std::move(program), std::move(release), false, 0, order});
    return m_nextId;
}

void Sequencer::setReady(int id)
{
    QMutexLocker lock(&m_mutex);
    for (Op& op : m_ops)
        if (op.id == id)
            op.ready = true;
}

void Sequencer::releaseAll()
{
    m_timer.stop();
    std::vector<Op> ops;
    {
        QMutexLocker lock(&m_mutex);
        ops.swap(m_ops);
    }
    for (Op& op : ops)
        op.release();
}

void Sequencer::pump()
{
    if (!m_engine || m_waitingFor || m_engine->stepPending())
        return;
    const InFlight f = m_engine->inFlight();
    const std::size_t out = (f.planner ? 1 : 0) + f.coding.size() + f.evaluating.size();
    Op op;
    {
        QMutexLocker lock(&m_mutex);
        if (m_ops.empty() || m_ops.size() != out)
            return; // an evaluation the engine started has not reached its evaluator yet
        // Evaluations register from their own threads, in no fixed order: what was launched since
        // the last release is one batch, ordered by a key that does not depend on timing.
        ++m_batches;
        for (Op& o : m_ops)
            if (o.batch == 0)
                o.batch = m_batches;
        std::stable_sort(m_ops.begin(), m_ops.end(),
            [](const Op& a, const Op& b) { return std::tie(a.batch, a.key) < std::tie(b.batch, b.key); });
        const auto it = m_order == Order::Oldest ? m_ops.begin() : m_ops.end() - 1;
        if (!it->ready)
            return;
        op = *it;
        m_ops.erase(it);
    }
    ++m_released;
    m_waitingFor = op;
    op.release();
}

SequencedProvider::SequencedProvider(Sequencer& sequencer, std::string role, std::string mode)
    : m_sequencer(sequencer)
    , m_role(std::move(role))
    , m_mode(std::move(mode))
{
}

LlmCall* SequencedProvider::send(const LlmRequest& request)
{
    std::vector<std::pair<std::string, std::string>> messages;
    for (const ChatMessage& m : request.messages)
        messages.emplace_back(m.role.toStdString(), m.content.toStdString());
    LlmResult r;
    r.text = QString::fromStdString(fakeLlmAnswer(m_role, messages, m_mode));
    r.model = request.model;
    auto* call = new HeldCall;
    QPointer<HeldCall> held(call);
    const int id = m_sequencer.add("exchange", {}, [held, r] {
        if (held)
            held->deliver(r);
    });
    m_sequencer.setReady(id);
    return call;
}

SequencedEvaluator::SequencedEvaluator(Sequencer& sequencer, CandidateEvaluator& inner)
    : m_sequencer(sequencer)
    , m_inner(inner)
{
}

Evaluation SequencedEvaluator::evaluate(const std::filesystem::path& source)
{
    auto released = std::make_shared<std::promise<void>>();
    std::future<void> go = released->get_future();
    const int id = m_sequencer.add("evaluation", source.stem().string(), [released] { released->set_value(); });
    Evaluation e = m_inner.evaluate(source);
    m_sequencer.setReady(id);
    go.wait();
    return e;
}

} // namespace ks::test
