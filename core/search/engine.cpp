#include "engine.h"

#include "commandcheck.h"
#include "engineevents.h"

#include <llm/providerfactory.h>
#include <tree/treeedit.h>
#include <util/elapsed.h>
#include <util/secrets.h>

#include <QDateTime>
#include <QTimer>

#include <spdlog/spdlog.h>

namespace ks {

using json = nlohmann::json;

namespace {

// The journal is the truth; a checkpoint only saves replaying it. Writing one costs tens of
// milliseconds at a thousand nodes (it is synced to disk), so not after every action.
constexpr int kCheckpointEvery = 100;

} // namespace

SearchEngine::SearchEngine(EngineSetup setup, SearchState state, QObject* parent)
    : QObject(parent)
    , m_setup(std::move(setup))
    , m_state(std::move(state))
    , m_prompts(*m_setup.task, m_setup.target,
          [session = m_setup.session](const std::string& hash) { return session->programSource(hash); })
    , m_pool(new EvaluatorPool(m_setup.evaluators, this))
    , m_lanes(m_setup.lanes > 0 ? m_setup.lanes : std::max(1, m_pool->size()))
{
    qRegisterMetaType<ks::SearchEvent>();
    qRegisterMetaType<ks::EngineActivity>();
    m_published.lanes = m_lanes;
    m_published.evaluators = m_pool->activity();
    connect(m_pool, &EvaluatorPool::evaluated, this, &SearchEngine::recordEvaluation);
}

SearchEngine::~SearchEngine()
{
    cancelCalls();
}

void SearchEngine::publishActivity()
{
    EngineActivity a;
    a.evaluators = m_pool->activity();
    for (const auto& [node, call] : m_coderCalls)
        a.coding.push_back(node);
    a.planner = !m_plannerCall.isNull();
    a.lanes = m_lanes;
    if (a == m_published)
        return;
    m_published = a;
    emit activityChanged(a);
}

void SearchEngine::cancelCalls()
{
    std::vector<QPointer<LlmCall>> calls {m_plannerCall}; // a cancelled call may finish at once
    for (const auto& [node, call] : m_coderCalls)
        calls.push_back(call);
    for (const QPointer<LlmCall>& call : calls)
        if (call)
            call->cancel();
}

InFlight SearchEngine::inFlight() const
{
    InFlight f;
    f.lanes = m_lanes;
    f.idleEvaluators = m_pool->idle();
    f.planner = !m_plannerCall.isNull();
    for (const auto& [node, call] : m_coderCalls)
        f.coding.insert(node);
    f.evaluating = m_evaluating;
    return f;
}

void SearchEngine::submit(const HumanCommand& command)
{
    {
        QMutexLocker lock(&m_mutex);
        m_commands.push_back(command);
    }
    QMetaObject::invokeMethod(
        this,
        [this] {
            bool stop = false;
            {
                QMutexLocker lock(&m_mutex);
                stop = std::any_of(m_commands.begin(), m_commands.end(),
                    [](const HumanCommand& c) { return c.kind == HumanCommand::Kind::Stop; });
            }
            if (stop) // do not wait for long answers that will be thrown away
                cancelCalls();
            scheduleStep();
        },
        Qt::QueuedConnection);
}

void SearchEngine::start(bool resumed)
{
    m_started = true;
    m_elapsedAtStart = m_state.elapsedSeconds;
    m_clock.start();
    ev::RunStarted e {resumed, std::nullopt, std::nullopt};
    if (!resumed) {
        e.settings = m_state.settings.toJson();
        if (!m_setup.session->config().seedProgram.empty())
            e.seedProgram = m_setup.session->config().seedProgram;
    }
    if (record(std::move(e)))
        scheduleStep();
}

void SearchEngine::scheduleStep()
{
    if (m_stepScheduled || m_halted || !m_started)
        return;
    m_stepScheduled = true;
    QTimer::singleShot(0, this, &SearchEngine::step);
}

bool SearchEngine::record(EventBody body)
{
    JournalEvent e;
    e.body = std::move(body);
    e.seq = m_state.seq + 1;
    e.time = QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs).toStdString();
    e.elapsedSeconds = m_elapsedAtStart + secondsElapsed(m_clock);
    e.round = m_state.evaluations;
    json line = toJson(e);
    std::string error;
    if (!m_setup.session->append(line, error)) {
        halt("cannot write the journal: " + error);
        return false;
    }
    try {
        m_state.apply(e);
    } catch (const std::exception& ex) {
        halt(std::string("internal error: ") + ex.what()); // an event the engine itself made is wrong
        return false;
    }
    emit eventRecorded(std::make_shared<const JournalEvent>(std::move(e)));
    if (++m_eventsSinceCheckpoint >= kCheckpointEvery)
        checkpoint();
    return true;
}

void SearchEngine::checkpoint()
{
    std::string error;
    if (!m_setup.session->writeCheckpoint(m_state, error))
        spdlog::warn("checkpoint: {}", error); // the journal still holds everything
    m_eventsSinceCheckpoint = 0;
}

void SearchEngine::halt(const std::string& why)
{
    spdlog::error("search halted: {}", why);
    m_halted = true;
    cancelCalls(); // answers and evaluations still out are dropped: resumed, the run asks again
    checkpoint();
    emit halted(QString::fromStdString(why));
}

void SearchEngine::applyCommands()
{
    std::deque<HumanCommand> commands;
    {
        QMutexLocker lock(&m_mutex);
        commands.swap(m_commands);
    }
    for (const HumanCommand& c : commands) {
        if (const auto why = checkCommand(m_state, c)) {
            emit commandRejected(QString::fromStdString(c.describe()), QString::fromStdString(*why));
            continue;
        }
        applyCommand(c);
    }
}

void SearchEngine::applyCommand(const HumanCommand& c)
{
    ev::Human e {c.toJson(), c.describe(), std::nullopt};
    if (c.kind != HumanCommand::Kind::Evaluate) {
        if (record(std::move(e)) && c.kind == HumanCommand::Kind::Step)
            m_stepsLeft = 1;
        if (c.kind == HumanCommand::Kind::Resume)
            m_stepsLeft = -1;
        return;
    }
    std::string error;
    const std::string hash = m_setup.session->storeProgram(c.text, error);
    if (hash.empty()) {
        halt(error);
        return;
    }
    e.program = hash;
    const std::string node = m_state.tree.peekNextId();
    const std::string why = c.reason.empty() ? "a program written by a person" : c.reason;
    if (!record(std::move(e))
        || !record(ev::TreeEdit {.author = "human",
            .purpose = Purpose::Human,
            .edit = singleInsert(c.node, "Hand-written program: " + why, 0.0, why),
            .rules = editRulesJson(EditRules {}),
            .inserted = {node}}))
        return;
    record(ev::Candidate {.node = node, .prompt = Purpose::Human, .author = "human", .program = hash});
}

void SearchEngine::step()
{
    m_stepScheduled = false;
    if (m_halted)
        return;
    publishActivity(); // calls that ended since the last step
    applyCommands();
    if (m_halted)
        return;
    if (m_state.finishedReason.empty() && !m_state.paused) {
        const double elapsed = m_elapsedAtStart + secondsElapsed(m_clock);
        std::optional<StopReason> stop;
        if (m_state.settings.maxSeconds > 0 && elapsed >= m_state.settings.maxSeconds)
            stop = StopReason::timeLimit(static_cast<int>(m_state.settings.maxSeconds));
        else if (m_setup.ledger && m_setup.ledger->capReached())
            stop = StopReason::dollarCap();
        if (stop && !record(ev::RunFinished {stop->text}))
            return;
    }
    const InFlight busy = inFlight();
    if (m_stepsLeft == 0) { // a "step" command's step is over once its result is in: pause again
        if (busy.any())
            return;
        m_stepsLeft = -1;
        if (m_state.finishedReason.empty())
            record(ev::Paused {"one step done"});
        return;
    }
    const Step st = planNextStep(m_state, busy);
    if (st.kind != Step::Kind::Idle && m_stepsLeft > 0)
        --m_stepsLeft; // this step (an LLM call and its consequence, or one evaluation) is the one
    switch (st.kind) {
    case Step::Kind::Idle:
        if (!m_state.finishedReason.empty() && !m_finishedEmitted && !busy.any()) {
            m_finishedEmitted = true;
            checkpoint();
            emit finished(QString::fromStdString(m_state.finishedReason));
        }
        return; // paused or finished: a command wakes the engine
    case Step::Kind::Finish:
        if (!record(ev::RunFinished {st.stop ? st.stop->text : std::string()}))
            return;
        break;
    case Step::Kind::SeedCandidate:
        if (!record(ev::Candidate {.node = SearchTree::kRootId,
                .prompt = Purpose::Seed,
                .author = "human",
                .program = m_state.seedProgram}))
            return;
        break;
    case Step::Kind::Evaluate:
        evaluate(st);
        break;
    case Step::Kind::PlannerCall:
        runPlanner(st);
        break; // the answer schedules a step too
    case Step::Kind::CoderCall:
        runCoder(st);
        break;
    case Step::Kind::StartAction:
        if (!record(ev::ActionStarted {st.node, st.reason}))
            return;
        break;
    case Step::Kind::FinishAction:
        finishAction(st);
        break;
    case Step::Kind::ProposeNode:
    case Step::Kind::FallbackNode: {
        ev::TreeEdit e {.author = "system",
            .purpose = st.kind == Step::Kind::ProposeNode ? Purpose::Propose : Purpose::Fallback,
            .edit = singleInsert(st.parent, st.intent, st.priority, st.reason),
            .rules = editRulesJson(EditRules {}),
            .inserted = {m_state.tree.peekNextId()}};
        if (st.island >= 0)
            e.island = st.island;
        if (!record(std::move(e)))
            return;
        break;
    }
    }
    publishActivity();
    scheduleStep();
}

void SearchEngine::evaluate(const Step& st)
{
    const PendingCandidate* c = m_state.candidateOf(st.node);
    if (c && m_pool->start(c->node, m_setup.session->programPath(c->program)))
        m_evaluating.insert(c->node);
}

void SearchEngine::recordEvaluation(const EvaluationDone& done)
{
    m_evaluating.erase(done.node);
    publishActivity();
    const PendingCandidate* c = m_state.candidateOf(done.node);
    if (m_halted || !c)
        return; // halted meanwhile: the candidate stays pending and is evaluated when the run resumes
    if (done.unavailable) {
        const std::string who = done.worker.empty() ? std::string("the evaluator") : done.worker;
        spdlog::warn("{} failed and takes no more candidates: {}", who, *done.unavailable);
        emit evaluatorLost(QString::fromStdString(done.worker), QString::fromStdString(*done.unavailable));
        if (m_pool->usable() == 0) {
            halt("the candidate of " + c->node + " was not judged: " + *done.unavailable
                + "; nothing was recorded, and it is evaluated again when the run resumes");
            return;
        }
    } else if (done.evaluation.status == Verdict::HarnessError) {
        harnessFailed(*c, done.evaluation);
        if (m_halted)
            return;
    } else {
        ev::Evaluation e {
            c->node, c->program, c->exchange, c->prompt, std::string(authorName(c->author)), toJson(done.evaluation)};
        if (!done.worker.empty())
            e.worker = done.worker;
        record(std::move(e));
    }
    scheduleStep();
}

void SearchEngine::harnessFailed(const PendingCandidate& candidate, const Evaluation& evaluation)
{
    std::string why = evaluation.log.substr(0, evaluation.log.find('\n'));
    if (why.empty())
        why = "no reason given";
    if (++m_harnessFailures[candidate.node] < 2) {
        spdlog::warn("the evaluator failed on the candidate of {}, not the candidate ({}): evaluating it again",
            candidate.node, why);
        return; // still pending: the next step hands it to an evaluator again
    }
    m_harnessFailures.erase(candidate.node);
    halt("the evaluator failed twice on the candidate of " + candidate.node + ", before running it: " + why
        + "; nothing was recorded, and it is evaluated again when the run resumes");
}

void SearchEngine::finishAction(const Step& st)
{
    const ActionState* action = m_state.actionOn(st.node);
    const std::optional<int> best = action ? action->best : std::nullopt;
    std::optional<Purpose> next;
    const bool worldModel = m_state.settings.strategy == StrategyKind::KSearch;
    const bool targetReached = m_state.settings.targetScore > 0 && m_state.bestScore() >= m_state.settings.targetScore;
    if (worldModel && !m_state.budgetExhausted() && !targetReached)
        next = best ? Purpose::Update : Purpose::TooHard;
    json bestJson = nullptr;
    if (best)
        bestJson = best.value();
    record(ev::ActionFinished {st.node, bestJson, best ? "passed" : "failed", next});
}

} // namespace ks
