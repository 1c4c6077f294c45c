// The SearchEngine's LLM side: asking the world model and the code policy, journaling their
// answers, and turning each answer into its consequence (an edit, a refusal, a candidate).

#include "answerparsing.h"
#include "engine.h"
#include "engineevents.h"
#include "stopreason.h"

#include <llm/providerfactory.h>
#include <util/secrets.h>

namespace ks {

using json = nlohmann::json;

std::string SearchEngine::recordExchange(
    const std::string& role, const Step& st, const QList<ChatMessage>& messages, const LlmResult& r)
{
    const std::string id = "x" + std::to_string(m_state.exchangeCount + 1);
    ev::Exchange e {.id = id,
        .role = role,
        .purpose = st.purpose,
        .node = st.node,
        .messages = messagesJson(messages),
        .text = redactSecrets(r.text.toStdString()),
        .model = r.model.toStdString(),
        .promptTokens = r.usage.promptTokens,
        .completionTokens = r.usage.completionTokens,
        .reasoningTokens = r.usage.reasoningTokens,
        .costDollars = r.costDollars,
        .priced = r.priced,
        .latencySeconds = r.latencySeconds,
        .error = std::nullopt};
    if (r.error)
        e.error = ev::Exchange::Error {errorKindName(r.error->kind).toStdString(), r.error->message.toStdString()};
    return record(std::move(e)) ? id : std::string();
}

bool SearchEngine::haltOnLlmError(const LlmError& e, const std::string& role)
{
    switch (e.kind) {
    case LlmErrorKind::MalformedResponse:
    case LlmErrorKind::BadRequest:
        return false; // an unusable answer: the search goes on without it
    case LlmErrorKind::Cancelled:
        return true; // a stop command cancelled it; the next step records the stop
    case LlmErrorKind::CostCap:
        record(ev::RunFinished {StopReason::dollarCap(e.message.toStdString()).text});
        return true;
    default:
        record(ev::Paused {role + " endpoint failed: " + e.message.toStdString()});
        halt("the " + role + "'s endpoint failed (" + errorKindName(e.kind).toStdString()
            + "): " + e.message.toStdString() + "; fix it and resume the run");
        return true;
    }
}

bool SearchEngine::answerFromJournal(const Step& st, const std::string& role)
{
    if (m_state.unconsumedExchange.empty())
        return false;
    const auto it = m_state.exchanges.find(m_state.unconsumedExchange);
    if (it == m_state.exchanges.end())
        return false;
    const json& e = *it->second;
    if (e.value("role", std::string()) != role || e.value("purpose", std::string()) != purposeName(st.purpose)
        || e.value("node", std::string()) != st.node)
        return false;
    const LlmResult r = resultFromExchange(e);
    // A call a stop cancelled has no answer to replay: asked again. Replaying it would only
    // schedule the same step again, for ever (a run stopped during a call never moved on).
    if (r.error && r.error->kind == LlmErrorKind::Cancelled)
        return false;
    if (role == "planner")
        handlePlannerAnswer(st, r, m_state.unconsumedExchange);
    else
        handleCoderAnswer(st, r, m_state.unconsumedExchange);
    return true;
}

void SearchEngine::runPlanner(const Step& st)
{
    if (answerFromJournal(st, "planner"))
        return;
    const PlannerTask task = m_state.planner ? *m_state.planner : PlannerTask {st.purpose, st.node, false, {}, {}};
    const QList<ChatMessage> messages = m_prompts.planner(m_state, task);
    LlmCall* call = m_setup.planner->send(makeRequest(m_setup.plannerConfig, u"planner"_qs, messages));
    m_plannerCall = call;
    call->setParent(this);
    connect(call, &LlmCall::textDelta, this, [this](const QString& d) { emit llmText(u"planner"_qs, d); });
    connect(call, &LlmCall::finished, this, [this, call, st, messages](const LlmResult& r) {
        call->deleteLater();
        m_plannerCall = nullptr;
        if (m_halted)
            return; // dropped: a resumed run asks again
        handlePlannerAnswer(st, r, recordExchange("planner", st, messages, r));
    });
}

void SearchEngine::handlePlannerAnswer(const Step& st, const LlmResult& r, const std::string& exchange)
{
    if (exchange.empty() || (r.error && haltOnLlmError(*r.error, "planner"))) {
        scheduleStep();
        return;
    }
    const bool repairing = m_state.planner && m_state.planner->repair;
    const std::string solved = st.purpose == Purpose::Update ? st.node : std::string();
    const EditRules rules = editRulesFor(m_state, solved);
    std::vector<std::string> errors;
    const std::string answer = r.text.toStdString();
    std::optional<TreeEdit> edit;
    if (r.error) {
        errors.push_back("the call failed: " + r.error->message.toStdString());
    } else {
        std::string error;
        if (const auto j = extractJsonObject(answer, error))
            edit = parseTreeEdit(*j, errors);
        else
            errors.push_back(error);
    }
    EditCheck check;
    if (edit) {
        check = validateEdit(m_state.tree, *edit, rules);
        errors.insert(errors.end(), check.errors.begin(), check.errors.end());
    }
    if (errors.empty()) {
        TreeEdit applied = *edit;
        if (rules.frozenValues)
            applied.updates.clear();
        const auto ids = plannedInsertIds(m_state.tree, applied);
        record(ev::TreeEdit {.author = "world_model",
            .purpose = st.purpose,
            .exchange = exchange,
            .node = st.node,
            .reasoning = edit->reasoning,
            .edit = toJson(applied),
            .rules = editRulesJson(rules),
            .inserted = ids,
            .notes = check.notes});
    } else {
        record(ev::EditRejected {exchange, st.purpose, st.node, errors, !repairing && !r.error, answer});
        // After a success the solved node must still get a child, even from a failed repair.
        if (repairing && !solved.empty()) {
            const SearchNode* n = m_state.tree.find(solved);
            record(ev::TreeEdit {.author = "system",
                .purpose = Purpose::Fallback,
                .edit = singleInsert(solved, "Refine " + solved + ": profile it and remove its largest bottleneck", 0.5,
                    "the world model gave no valid refinement of a passing node"),
                .rules = editRulesJson(EditRules {}),
                .inserted = {m_state.tree.peekNextId()},
                .notes = std::vector<std::string> {"fallback child for " + (n ? n->intent : solved)}});
        }
    }
    scheduleStep();
}

void SearchEngine::runCoder(const Step& st)
{
    if (answerFromJournal(st, "coder"))
        return;
    const QList<ChatMessage> messages = m_prompts.coder(m_state, st.purpose, st.node);
    LlmCall* call = m_setup.coder->send(makeRequest(m_setup.coderConfig, u"coder"_qs, messages));
    m_coderCalls[st.node] = call;
    call->setParent(this);
    connect(call, &LlmCall::textDelta, this, [this](const QString& d) { emit llmText(u"coder"_qs, d); });
    connect(call, &LlmCall::finished, this, [this, call, st, messages](const LlmResult& r) {
        call->deleteLater();
        m_coderCalls.erase(st.node);
        if (m_halted)
            return;
        handleCoderAnswer(st, r, recordExchange("coder", st, messages, r));
    });
}

void SearchEngine::handleCoderAnswer(const Step& st, const LlmResult& r, const std::string& exchange)
{
    if (exchange.empty() || (r.error && haltOnLlmError(*r.error, "coder"))) {
        scheduleStep();
        return;
    }
    ev::Candidate e {.node = st.node, .exchange = exchange, .prompt = st.purpose, .author = "code_policy"};
    std::string problem;
    const auto program = r.error ? std::nullopt : extractProgram(r.text.toStdString(), problem);
    if (r.error)
        problem = "the call failed: " + r.error->message.toStdString();
    if (program) {
        std::string error;
        const std::string hash = m_setup.session->storeProgram(*program, error);
        if (hash.empty()) {
            halt(error);
            return;
        }
        e.program = hash;
    } else {
        e.problem = problem;
    }
    record(std::move(e));
    scheduleStep();
}

} // namespace ks
