#include "treejson.h"

namespace ks {

namespace {

using json = nlohmann::json;

ValueChange valueFromJson(const json& j)
{
    return {j.at("value").get<double>(), parseAuthor(j.at("author").get<std::string>()).value_or(Author::System),
        j.value("reason", std::string()), j.value("round", 0)};
}

} // namespace

json toJson(const ValueChange& v)
{
    return {{"value", v.value}, {"author", authorName(v.author)}, {"reason", v.reason}, {"round", v.round}};
}

json toJson(const Attempt& a)
{
    json j {{"index", a.index}, {"node", a.node}, {"program", a.program}, {"author", authorName(a.author)},
        {"exchange", a.exchange}, {"prompt", purposeName(a.promptKind)}, {"evaluated", a.evaluated},
        {"round", a.round}};
    if (a.evaluated)
        j["evaluation"] = toJson(a.evaluation);
    else
        j["problem"] = a.problem;
    if (!a.worker.empty())
        j["worker"] = a.worker;
    return j;
}

Attempt attemptFromJson(const json& j)
{
    Attempt a;
    a.index = j.value("index", 0);
    a.node = j.value("node", std::string());
    a.program = j.value("program", std::string());
    a.author = parseAuthor(j.value("author", std::string())).value_or(Author::CodePolicy);
    a.exchange = j.value("exchange", std::string());
    a.promptKind = parsePurpose(j.value("prompt", std::string())).value_or(Purpose::Action);
    a.evaluated = j.value("evaluated", false);
    a.problem = j.value("problem", std::string());
    a.round = j.value("round", 0);
    a.worker = j.value("worker", std::string());
    if (a.evaluated && j.contains("evaluation"))
        a.evaluation = evaluationFromJson(j["evaluation"]);
    return a;
}

json toJson(const SearchNode& n)
{
    json values = json::array();
    for (const auto& v : n.values)
        values.push_back(toJson(v));
    json j {{"id", n.id}, {"parent", n.parent}, {"children", n.children}, {"intent", n.intent},
        {"rationale", n.rationale}, {"status", nodeStatusName(n.status)}, {"created_by", authorName(n.createdBy)},
        {"created_by_exchange", n.createdByExchange}, {"created_round", n.createdRound}, {"values", values},
        {"attempts", n.attempts}, {"exchanges", n.exchanges}};
    if (n.bestAttempt)
        j["best_attempt"] = *n.bestAttempt;
    if (n.status == NodeStatus::Pruned) {
        j["status_before_prune"] = nodeStatusName(n.statusBeforePrune);
        j["prune_reason"] = n.pruneReason;
    }
    return j;
}

json toJson(const SearchTree& tree)
{
    json nodes = json::array(), attempts = json::array();
    for (const auto& n : tree.nodes())
        nodes.push_back(toJson(n));
    for (const auto& a : tree.attempts())
        attempts.push_back(toJson(a));
    return {{"id_counter", tree.idCounter()}, {"nodes", nodes}, {"attempts", attempts}};
}

std::optional<SearchTree> treeFromJson(const json& j, std::string& error)
{
    try {
        std::vector<SearchNode> nodes;
        for (const auto& o : j.at("nodes")) {
            SearchNode n;
            n.id = o.at("id").get<std::string>();
            n.parent = o.value("parent", std::string());
            n.children = o.value("children", std::vector<std::string>());
            n.intent = o.value("intent", std::string());
            n.rationale = o.value("rationale", std::string());
            n.status = parseNodeStatus(o.value("status", std::string())).value_or(NodeStatus::Open);
            n.statusBeforePrune =
                parseNodeStatus(o.value("status_before_prune", std::string())).value_or(NodeStatus::Open);
            n.pruneReason = o.value("prune_reason", std::string());
            n.createdBy = parseAuthor(o.value("created_by", std::string())).value_or(Author::System);
            n.createdByExchange = o.value("created_by_exchange", std::string());
            n.createdRound = o.value("created_round", 0);
            for (const auto& v : o.value("values", json::array()))
                n.values.push_back(valueFromJson(v));
            n.attempts = o.value("attempts", std::vector<int>());
            n.exchanges = o.value("exchanges", std::vector<std::string>());
            if (o.contains("best_attempt"))
                n.bestAttempt = o["best_attempt"].get<int>();
            nodes.push_back(std::move(n));
        }
        if (nodes.empty() || nodes.front().id != SearchTree::kRootId) {
            error = "nodes: the first node must be the root";
            return std::nullopt;
        }
        std::vector<Attempt> attempts;
        for (const auto& o : j.value("attempts", json::array()))
            attempts.push_back(attemptFromJson(o));
        SearchTree tree;
        tree.assign(std::move(nodes), std::move(attempts), j.value("id_counter", 0));
        return tree;
    } catch (const json::exception& e) {
        error = e.what();
        return std::nullopt;
    }
}

} // namespace ks
