#include "searchstate.h"

#include "stopreason.h"

#include <tree/treeedit.h>
#include <tree/treejson.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace ks {

namespace {

using json = nlohmann::json;

// The exchange an event refers to, if any.
std::string exchangeOf(const EventBody& body)
{
    if (const auto* x = std::get_if<ev::TreeEdit>(&body))
        return x->exchange.value_or("");
    if (const auto* x = std::get_if<ev::EditRejected>(&body))
        return x->exchange;
    if (const auto* x = std::get_if<ev::Candidate>(&body))
        return x->exchange.value_or("");
    if (const auto* x = std::get_if<ev::Evaluation>(&body))
        return x->exchange;
    return {};
}

EditRules rulesFromJson(const json& j)
{
    EditRules r;
    r.maxNewNodes = j.value("max_new_nodes", 3);
    r.frozenValues = j.value("frozen_values", false);
    r.flat = j.value("flat", false);
    r.solvedNode = j.value("solved_node", std::string());
    return r;
}

json plannerJson(const PlannerTask& p)
{
    return {{"purpose", purposeName(p.purpose)}, {"node", p.node}, {"repair", p.repair}, {"errors", p.errors},
        {"previous_answer", p.previousAnswer}};
}

PlannerTask plannerFromJson(const json& p)
{
    return {parsePurpose(p.value("purpose", std::string())).value_or(Purpose::Init), p.value("node", std::string()),
        p.value("repair", false), p.value("errors", std::vector<std::string>()),
        p.value("previous_answer", std::string())};
}

} // namespace

const ActionState* SearchState::actionOn(const std::string& node) const
{
    const auto it = std::find_if(actions.begin(), actions.end(), [&](const ActionState& a) { return a.node == node; });
    return it == actions.end() ? nullptr : &*it;
}

ActionState* SearchState::actionOn(const std::string& node)
{
    return const_cast<ActionState*>(std::as_const(*this).actionOn(node));
}

const PendingCandidate* SearchState::candidateOf(const std::string& node) const
{
    const auto it =
        std::find_if(candidates.begin(), candidates.end(), [&](const PendingCandidate& c) { return c.node == node; });
    return it == candidates.end() ? nullptr : &*it;
}

void SearchState::nextPlannerTask()
{
    planner.reset();
    if (!plannerQueue.empty()) {
        planner = plannerQueue.front();
        plannerQueue.pop_front();
    }
}

double SearchState::bestScore() const
{
    const auto best = bestAttempt();
    return best ? tree.attempt(*best)->score() : 0.0;
}

void SearchState::apply(const json& e)
{
    std::string error;
    const auto event = journalEventFromJson(e, error);
    if (!event)
        throw std::runtime_error("event " + std::to_string(e.is_object() ? e.value("seq", seq + 1) : seq + 1) + " ("
            + (e.is_object() ? e.value("type", std::string("?")) : std::string("?")) + "): " + error);
    apply(*event);
}

namespace {

// The nodes an edit's updates and prunes name (inserts are checked through insertionOrder).
std::vector<const std::string*> namedNodes(const TreeEdit& edit)
{
    std::vector<const std::string*> nodes;
    for (const auto& op : edit.updates)
        nodes.push_back(&op.node);
    for (const auto& op : edit.prunes)
        nodes.push_back(&op.node);
    return nodes;
}

bool commandNeedsNode(HumanCommand::Kind kind)
{
    using Kind = HumanCommand::Kind;
    return kind == Kind::SetValue || kind == Kind::Prune || kind == Kind::Restore || kind == Kind::Inject
        || kind == Kind::EditIntent;
}

} // namespace

void SearchState::apply(const JournalEvent& e)
{
    const std::string_view type = eventTypeName(e.body);
    const int eventSeq = e.seq.value_or(seq + 1);
    const auto corrupt = [&](const std::string& what) {
        throw std::runtime_error("event " + std::to_string(eventSeq) + " (" + std::string(type) + "): " + what);
    };
    seq = eventSeq;
    elapsedSeconds = std::max(elapsedSeconds, e.elapsedSeconds.value_or(0.0));
    if (!std::holds_alternative<ev::Exchange>(e.body)
        && (exchangeOf(e.body) == unconsumedExchange || std::holds_alternative<ev::Paused>(e.body)
            || std::holds_alternative<ev::RunFinished>(e.body)))
        unconsumedExchange.clear();

    if (const auto* started = std::get_if<ev::RunStarted>(&e.body)) {
        paused = false;
        finishedReason.clear();
        if (started->settings && !started->resumed) {
            std::string error;
            auto s = SearchSettings::fromJson(*started->settings, error);
            if (!s)
                corrupt(error);
            settings = *s;
        }
        if (started->seedProgram && !started->seedProgram->empty() && !started->resumed) {
            seedProgram = *started->seedProgram;
            seedPending = true;
        }
    } else if (const auto* call = std::get_if<ev::Exchange>(&e.body)) {
        RoleUsage u;
        u.calls = 1;
        u.failedCalls = call->error ? 1 : 0;
        u.tokens = {call->promptTokens, call->completionTokens, call->reasoningTokens};
        u.unpricedCalls = !call->priced && (u.tokens.promptTokens + u.tokens.completionTokens) > 0;
        u.dollars = call->costDollars;
        u.latencySeconds = call->latencySeconds;
        usage[call->role].add(u);
        exchanges[call->id] = std::make_shared<const json>(ks::toJson(e));
        ++exchangeCount;
        unconsumedExchange = call->id;
    } else if (const auto* edited = std::get_if<ev::TreeEdit>(&e.body)) {
        const TreeEdit edit = treeEditFromJson(edited->edit);
        // Validated when it was made; one that names a node the tree lacks (a corrupt or
        // hand-edited journal) is an error here, not a crash in the middle of applying it.
        for (const auto* node : namedNodes(edit))
            if (!tree.find(*node))
                corrupt("the edit names node " + *node + ", which the tree does not have");
        if (insertionOrder(tree, edit).size() != edit.inserts.size())
            corrupt("an insert's parent is neither a node of the tree nor another insert of the edit");
        const Author author = parseAuthor(edited->author).value_or(Author::WorldModel);
        const auto ids =
            applyEdit(tree, edit, rulesFromJson(edited->rules), author, evaluations, edited->exchange.value_or(""));
        if (edited->island)
            for (const auto& id : ids)
                islandOf[id] = *edited->island;
        if (planner && planner->purpose == edited->purpose)
            nextPlannerTask();
        if (edited->purpose == Purpose::Init)
            initialized = true;
        if (edited->purpose == Purpose::Fill)
            fillTried = true;
    } else if (const auto* rejected = std::get_if<ev::EditRejected>(&e.body)) {
        if (rejected->repair) {
            planner = PlannerTask {rejected->purpose, rejected->node, true, rejected->errors, rejected->answer};
        } else {
            nextPlannerTask();
            if (rejected->purpose == Purpose::Init)
                initialized = true;
            if (rejected->purpose == Purpose::Fill)
                fillTried = true;
        }
    } else if (const auto* begun = std::get_if<ev::ActionStarted>(&e.body)) {
        SearchNode* n = tree.findMutable(begun->node);
        if (!n)
            corrupt("unknown node " + begun->node);
        if (actionOn(n->id))
            corrupt(n->id + " is being implemented already");
        n->status = NodeStatus::Active;
        actions.push_back(ActionState {n->id, 0, 0, std::nullopt});
        if (pinned == n->id)
            pinned.clear();
        fillTried = false;
    } else if (const auto* cand = std::get_if<ev::Candidate>(&e.body)) {
        const Author author = parseAuthor(cand->author).value_or(Author::CodePolicy);
        if (!cand->problem || cand->problem->empty()) {
            if (candidateOf(cand->node))
                corrupt(cand->node + " has a program waiting for evaluation already");
            candidates.push_back(PendingCandidate {
                cand->node, cand->program.value_or(""), cand->exchange.value_or(""), cand->prompt, author});
        } else {
            Attempt a;
            a.node = cand->node;
            a.exchange = cand->exchange.value_or("");
            a.promptKind = cand->prompt;
            a.author = author;
            a.problem = *cand->problem;
            a.round = evaluations;
            tree.addAttempt(a);
            ++answersWithoutProgram;
            if (ActionState* action = actionOn(a.node)) {
                ++action->attempts;
                ++action->stagnation;
            }
        }
    } else if (const auto* evaluated = std::get_if<ev::Evaluation>(&e.body)) {
        applyEvaluation(*evaluated);
    } else if (const auto* ended = std::get_if<ev::ActionFinished>(&e.body)) {
        SearchNode* n = tree.findMutable(ended->node);
        if (!n)
            corrupt("unknown node " + ended->node);
        n->status = NodeStatus::Closed;
        if (ended->bestAttempt.is_number())
            n->bestAttempt = ended->bestAttempt.get<int>();
        std::erase_if(actions, [&](const ActionState& a) { return a.node == n->id; });
        if (ended->nextPlanner) {
            PlannerTask task {*ended->nextPlanner, n->id, false, {}, {}};
            if (planner)
                plannerQueue.push_back(std::move(task));
            else
                planner = std::move(task);
        }
    } else if (const auto* human = std::get_if<ev::Human>(&e.body)) {
        const auto c = HumanCommand::fromJson(human->command);
        if (!c)
            corrupt("unreadable command");
        if (commandNeedsNode(c->kind) && !tree.find(c->node))
            corrupt("the command names node " + c->node + ", which the tree does not have");
        applyCommand(*c);
    } else if (std::holds_alternative<ev::Paused>(e.body)) {
        paused = true;
    } else if (const auto* finished = std::get_if<ev::RunFinished>(&e.body)) {
        finishedReason = finished->reason;
    }
}

void SearchState::applyEvaluation(const ev::Evaluation& e)
{
    Attempt a;
    a.node = e.node;
    a.program = e.program;
    a.exchange = e.exchange;
    a.promptKind = e.prompt;
    a.author = parseAuthor(e.author).value_or(Author::CodePolicy);
    a.evaluated = true;
    a.evaluation = evaluationFromJson(e.evaluation);
    a.worker = e.worker.value_or("");
    a.round = ++evaluations;
    const auto pending =
        std::find_if(candidates.begin(), candidates.end(), [&](const PendingCandidate& c) { return c.node == e.node; });
    if (pending != candidates.end())
        candidates.erase(pending);
    answersWithoutProgram = 0;
    const int index = tree.addAttempt(a);
    const Attempt& added = *tree.attempt(index);
    SearchNode* n = tree.findMutable(a.node);
    if (!n)
        throw std::runtime_error("event " + std::to_string(seq) + " (evaluation): unknown node " + a.node);
    if (n->id == SearchTree::kRootId) { // the seed program
        seedPending = false;
        if (added.passed())
            n->bestAttempt = index;
    } else if (ActionState* action = actionOn(n->id)) {
        const double before = action->best ? tree.attempt(*action->best)->score() : 0.0;
        // A program evaluated before in this search is never progress, however its second timing
        // came out: on a loaded machine a repeat measured twice as fast restarted the K count.
        const auto& all = tree.attempts();
        const bool repeat = std::any_of(all.begin(), all.end() - 1,
            [&](const Attempt& earlier) { return earlier.evaluated && earlier.program == added.program; });
        const bool improved = !repeat && added.passed() && added.score() > before * (1.0 + settings.minImprovement);
        if (added.passed() && added.score() > before)
            action->best = index;
        ++action->attempts;
        action->stagnation = improved ? 0 : action->stagnation + 1;
    } else { // a program a person wrote, under a node of its own
        n->status = NodeStatus::Closed;
        if (added.passed())
            n->bestAttempt = index;
    }
}

void SearchState::applyCommand(const HumanCommand& c)
{
    using Kind = HumanCommand::Kind;
    SearchNode* n = tree.findMutable(c.node);
    switch (c.kind) {
    case Kind::SetValue:
        n->values.push_back({c.value, Author::Human, c.reason, evaluations});
        break;
    case Kind::Prune:
        n->statusBeforePrune = n->status;
        n->status = NodeStatus::Pruned;
        n->pruneReason = c.reason;
        break;
    case Kind::Restore:
        n->status = n->statusBeforePrune;
        n->pruneReason.clear();
        break;
    case Kind::Inject:
        tree.insert(c.node, c.text, c.reason, {c.value, Author::Human, c.reason, evaluations}, {});
        break;
    case Kind::EditIntent:
        n->rationale += (n->rationale.empty() ? "" : "\n") + std::string("[intent edited by a person: ")
            + (c.reason.empty() ? "no reason given" : c.reason) + "; it was: " + n->intent + "]";
        n->intent = c.text;
        break;
    case Kind::Pin:
        pinned = c.node;
        break;
    case Kind::Evaluate:
        break; // the node and the program arrive as their own events
    case Kind::SetBudget:
        settings.budget = c.number;
        break;
    case Kind::SetK:
        settings.stagnation = c.number;
        break;
    case Kind::Pause:
        paused = true;
        break;
    case Kind::Resume:
    case Kind::Step:
        paused = false;
        break;
    case Kind::Stop:
        finishedReason = StopReason::stoppedByPerson(c.reason).text;
        break;
    }
}

json SearchState::toJson() const
{
    json j {{"seq", seq}, {"evaluations", evaluations}, {"elapsed_s", elapsedSeconds}, {"settings", settings.toJson()},
        {"tree", ks::toJson(tree)}, {"initialized", initialized}, {"fill_tried", fillTried},
        {"seed_program", seedProgram}, {"seed_pending", seedPending}, {"pinned", pinned}, {"paused", paused},
        {"finished_reason", finishedReason}, {"answers_without_program", answersWithoutProgram},
        {"island_of", islandOf}, {"exchange_count", exchangeCount}, {"unconsumed_exchange", unconsumedExchange}};
    j["actions"] = json::array();
    for (const ActionState& a : actions)
        j["actions"].push_back({{"node", a.node}, {"attempts", a.attempts}, {"stagnation", a.stagnation},
            {"best", a.best ? json(*a.best) : json()}});
    j["candidates"] = json::array();
    for (const PendingCandidate& c : candidates)
        j["candidates"].push_back({{"node", c.node}, {"program", c.program}, {"exchange", c.exchange},
            {"prompt", purposeName(c.prompt)}, {"author", authorName(c.author)}});
    if (planner)
        j["planner"] = plannerJson(*planner);
    j["planner_queue"] = json::array();
    for (const PlannerTask& p : plannerQueue)
        j["planner_queue"].push_back(plannerJson(p));
    json roles = json::object();
    for (const auto& [role, u] : usage)
        roles[role] = {{"calls", u.calls}, {"failed_calls", u.failedCalls}, {"unpriced_calls", u.unpricedCalls},
            {"prompt", u.tokens.promptTokens}, {"completion", u.tokens.completionTokens},
            {"reasoning", u.tokens.reasoningTokens}, {"dollars", u.dollars}, {"latency_s", u.latencySeconds}};
    j["usage"] = roles;
    return j;
}

std::optional<SearchState> SearchState::fromJson(const json& j, std::string& error)
{
    try {
        SearchState s;
        auto tree = treeFromJson(j.at("tree"), error);
        if (!tree)
            return std::nullopt;
        s.tree = std::move(*tree);
        auto settings = SearchSettings::fromJson(j.at("settings"), error);
        if (!settings)
            return std::nullopt;
        s.settings = *settings;
        s.seq = j.at("seq").get<int>();
        s.evaluations = j.at("evaluations").get<int>();
        s.elapsedSeconds = j.value("elapsed_s", 0.0);
        s.initialized = j.value("initialized", false);
        s.fillTried = j.value("fill_tried", false);
        s.seedProgram = j.value("seed_program", std::string());
        s.seedPending = j.value("seed_pending", false);
        s.pinned = j.value("pinned", std::string());
        s.paused = j.value("paused", false);
        s.finishedReason = j.value("finished_reason", std::string());
        s.answersWithoutProgram = j.value("answers_without_program", 0);
        s.islandOf = j.value("island_of", std::map<std::string, int>());
        s.exchangeCount = j.value("exchange_count", 0);
        s.unconsumedExchange = j.value("unconsumed_exchange", std::string());
        // Checkpoints before parallel search held one "action" and one "candidate".
        json actions = j.contains("actions") ? j["actions"] : json::array();
        if (j.contains("action"))
            actions.push_back(j["action"]);
        for (const json& a : actions)
            s.actions.push_back(
                ActionState {a.at("node").get<std::string>(), a.value("attempts", 0), a.value("stagnation", 0),
                    a.at("best").is_number() ? std::optional<int>(a["best"].get<int>()) : std::nullopt});
        json candidates = j.contains("candidates") ? j["candidates"] : json::array();
        if (j.contains("candidate"))
            candidates.push_back(j["candidate"]);
        for (const json& c : candidates)
            s.candidates.push_back(PendingCandidate {c.value("node", std::string()), c.value("program", std::string()),
                c.value("exchange", std::string()),
                parsePurpose(c.value("prompt", std::string())).value_or(Purpose::Action),
                parseAuthor(c.value("author", std::string())).value_or(Author::CodePolicy)});
        if (j.contains("planner"))
            s.planner = plannerFromJson(j["planner"]);
        if (j.contains("planner_queue"))
            for (const json& p : j["planner_queue"])
                s.plannerQueue.push_back(plannerFromJson(p));
        const json usageByRole = j.value("usage", json::object()); // .items() of a temporary would dangle
        for (const auto& [role, u] : usageByRole.items()) {
            RoleUsage r;
            r.calls = u.value("calls", 0);
            r.failedCalls = u.value("failed_calls", 0);
            r.unpricedCalls = u.value("unpriced_calls", 0);
            r.tokens = {
                u.value("prompt", qint64 {0}), u.value("completion", qint64 {0}), u.value("reasoning", qint64 {0})};
            r.dollars = u.value("dollars", 0.0);
            r.latencySeconds = u.value("latency_s", 0.0);
            s.usage[role] = r;
        }
        return s;
    } catch (const json::exception& e) {
        error = e.what();
        return std::nullopt;
    }
}

} // namespace ks
