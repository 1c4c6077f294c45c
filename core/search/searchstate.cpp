#include "searchstate.h"

#include <tree/treeedit.h>
#include <tree/treejson.h>

#include <algorithm>
#include <stdexcept>

namespace ks {

namespace {

using json = nlohmann::json;

std::string str(const json& e, const char* key)
{
    const auto it = e.find(key);
    return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
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

} // namespace

double SearchState::bestScore() const
{
    const auto best = bestAttempt();
    return best ? tree.attempt(*best)->score() : 0.0;
}

void SearchState::apply(const json& e)
{
    const std::string type = str(e, "type");
    const int eventSeq = e.value("seq", seq + 1);
    const auto corrupt = [&](const std::string& what) {
        throw std::runtime_error("event " + std::to_string(eventSeq) + " (" + type + "): " + what);
    };
    seq = eventSeq;
    elapsedSeconds = std::max(elapsedSeconds, e.value("elapsed_s", 0.0));
    if (type != "exchange" && (str(e, "exchange") == unconsumedExchange || type == "paused" || type == "run_finished"))
        unconsumedExchange.clear();

    if (type == "run_started") {
        paused = false;
        finishedReason.clear();
        if (e.contains("settings") && !e.value("resumed", false)) {
            std::string error;
            auto s = SearchSettings::fromJson(e["settings"], error);
            if (!s)
                corrupt(error);
            settings = *s;
        }
        if (const std::string seed = str(e, "seed_program"); !seed.empty() && !e.value("resumed", false)) {
            seedProgram = seed;
            seedPending = true;
        }
    } else if (type == "exchange") {
        const std::string role = str(e, "role");
        RoleUsage u;
        u.calls = 1;
        u.failedCalls = e.contains("error") ? 1 : 0;
        const json usageJson = e.value("usage", json::object());
        u.tokens = {usageJson.value("prompt", qint64 {0}), usageJson.value("completion", qint64 {0}),
            usageJson.value("reasoning", qint64 {0})};
        u.unpricedCalls = !e.value("priced", false) && (u.tokens.promptTokens + u.tokens.completionTokens) > 0;
        u.dollars = e.value("cost", 0.0);
        u.latencySeconds = e.value("latency_s", 0.0);
        usage[role].add(u);
        exchanges[str(e, "id")] = std::make_shared<const json>(e);
        ++exchangeCount;
        unconsumedExchange = str(e, "id");
    } else if (type == "tree_edit") {
        const TreeEdit edit = treeEditFromJson(e.value("edit", json::object()));
        const Author author = parseAuthor(str(e, "author")).value_or(Author::WorldModel);
        const auto ids = applyEdit(
            tree, edit, rulesFromJson(e.value("rules", json::object())), author, evaluations, str(e, "exchange"));
        if (e.contains("island"))
            for (const auto& id : ids)
                islandOf[id] = e["island"].get<int>();
        const std::string purpose = str(e, "purpose");
        if (planner && planner->purpose == purpose)
            planner.reset();
        if (purpose == "init")
            initialized = true;
        if (purpose == "fill")
            fillTried = true;
    } else if (type == "edit_rejected") {
        const std::string purpose = str(e, "purpose");
        if (e.value("repair", false)) {
            planner = PlannerTask {
                purpose, str(e, "node"), true, e.value("errors", std::vector<std::string>()), str(e, "answer")};
        } else {
            planner.reset();
            if (purpose == "init")
                initialized = true;
            if (purpose == "fill")
                fillTried = true;
        }
    } else if (type == "action_started") {
        SearchNode* n = tree.findMutable(str(e, "node"));
        if (!n)
            corrupt("unknown node " + str(e, "node"));
        n->status = NodeStatus::Active;
        action = ActionState();
        action->node = n->id;
        if (pinned == n->id)
            pinned.clear();
        fillTried = false;
    } else if (type == "candidate") {
        const std::string problem = str(e, "problem");
        if (problem.empty()) {
            candidate = PendingCandidate {str(e, "node"), str(e, "program"), str(e, "exchange"), str(e, "prompt"),
                parseAuthor(str(e, "author")).value_or(Author::CodePolicy)};
        } else {
            Attempt a;
            a.node = str(e, "node");
            a.exchange = str(e, "exchange");
            a.promptKind = str(e, "prompt");
            a.author = parseAuthor(str(e, "author")).value_or(Author::CodePolicy);
            a.problem = problem;
            a.round = evaluations;
            tree.addAttempt(a);
            ++answersWithoutProgram;
            if (action && action->node == a.node) {
                ++action->attempts;
                ++action->stagnation;
            }
        }
    } else if (type == "evaluation") {
        applyEvaluation(e);
    } else if (type == "action_finished") {
        SearchNode* n = tree.findMutable(str(e, "node"));
        if (!n)
            corrupt("unknown node " + str(e, "node"));
        n->status = NodeStatus::Closed;
        if (e.contains("best_attempt") && e["best_attempt"].is_number())
            n->bestAttempt = e["best_attempt"].get<int>();
        action.reset();
        if (const std::string next = str(e, "next_planner"); !next.empty())
            planner = PlannerTask {next, n->id, false, {}, {}};
    } else if (type == "human") {
        const auto c = HumanCommand::fromJson(e.value("command", json::object()));
        if (!c)
            corrupt("unreadable command");
        applyCommand(*c);
    } else if (type == "paused") {
        paused = true;
    } else if (type == "run_finished") {
        finishedReason = str(e, "reason");
    } else if (type != "note") {
        corrupt("unknown event type");
    }
}

void SearchState::applyEvaluation(const json& e)
{
    Attempt a;
    a.node = str(e, "node");
    a.program = str(e, "program");
    a.exchange = str(e, "exchange");
    a.promptKind = str(e, "prompt");
    a.author = parseAuthor(str(e, "author")).value_or(Author::CodePolicy);
    a.evaluated = true;
    a.evaluation = evaluationFromJson(e.value("evaluation", json::object()));
    a.round = ++evaluations;
    candidate.reset();
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
    } else if (action && action->node == n->id) {
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
        finishedReason = "stopped by a person" + (c.reason.empty() ? std::string() : ": " + c.reason);
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
    if (action)
        j["action"] = {{"node", action->node}, {"attempts", action->attempts}, {"stagnation", action->stagnation},
            {"best", action->best ? json(*action->best) : json()}};
    if (candidate)
        j["candidate"] = {{"node", candidate->node}, {"program", candidate->program}, {"exchange", candidate->exchange},
            {"prompt", candidate->prompt}, {"author", authorName(candidate->author)}};
    if (planner)
        j["planner"] = {{"purpose", planner->purpose}, {"node", planner->node}, {"repair", planner->repair},
            {"errors", planner->errors}, {"previous_answer", planner->previousAnswer}};
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
        if (j.contains("action")) {
            const json& a = j["action"];
            s.action = ActionState {a.at("node").get<std::string>(), a.value("attempts", 0), a.value("stagnation", 0),
                a["best"].is_number() ? std::optional<int>(a["best"].get<int>()) : std::nullopt};
        }
        if (j.contains("candidate")) {
            const json& c = j["candidate"];
            s.candidate = PendingCandidate {c.value("node", std::string()), c.value("program", std::string()),
                c.value("exchange", std::string()), c.value("prompt", std::string()),
                parseAuthor(c.value("author", std::string())).value_or(Author::CodePolicy)};
        }
        if (j.contains("planner")) {
            const json& p = j["planner"];
            s.planner = PlannerTask {p.value("purpose", std::string()), p.value("node", std::string()),
                p.value("repair", false), p.value("errors", std::vector<std::string>()),
                p.value("previous_answer", std::string())};
        }
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
