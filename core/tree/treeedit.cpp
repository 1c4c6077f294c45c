#include "treeedit.h"

#include <util/numberformat.h>

#include <map>
#include <set>

namespace ks {

namespace {

using json = nlohmann::json;

std::string field(const char* list, std::size_t i, const char* name)
{
    return std::string(list) + "[" + std::to_string(i) + "]." + name;
}

bool readString(const json& o, const char* key, std::string& out, bool required, const std::string& where,
    std::vector<std::string>& errors)
{
    if (!o.contains(key) || o[key].is_null()) {
        if (required)
            errors.push_back(where + ": missing");
        return !required;
    }
    if (!o[key].is_string()) {
        errors.push_back(where + ": must be a string");
        return false;
    }
    out = o[key].get<std::string>();
    return true;
}

bool readPriority(const json& o, double& out, const std::string& where, std::vector<std::string>& errors)
{
    if (!o.contains("priority") || !o["priority"].is_number()) {
        errors.push_back(where + ": must be a number in [0, 1]");
        return false;
    }
    out = o["priority"].get<double>();
    if (!(out >= 0.0 && out <= 1.0)) {
        errors.push_back(where + ": " + o["priority"].dump() + " is outside [0, 1]");
        return false;
    }
    return true;
}

const json* list(const json& answer, const char* key, std::vector<std::string>& errors)
{
    if (!answer.contains(key) || answer[key].is_null())
        return nullptr;
    if (!answer[key].is_array()) {
        errors.push_back(std::string(key) + ": must be a list");
        return nullptr;
    }
    return &answer[key];
}

std::string describeStatus(const SearchNode& n)
{
    return n.id + " is " + std::string(nodeStatusName(n.status));
}

} // namespace

std::optional<TreeEdit> parseTreeEdit(const json& answer, std::vector<std::string>& errors)
{
    if (!answer.is_object()) {
        errors.push_back("the answer must be one JSON object");
        return std::nullopt;
    }
    TreeEdit e;
    if (answer.contains("reasoning") && answer["reasoning"].is_string())
        e.reasoning = answer["reasoning"].get<std::string>();
    if (const json* inserts = list(answer, "insert", errors))
        for (std::size_t i = 0; i < inserts->size(); ++i) {
            const json& o = (*inserts)[i];
            InsertOp op;
            if (!o.is_object()) {
                errors.push_back("insert[" + std::to_string(i) + "]: must be an object");
                continue;
            }
            readString(o, "parent", op.parent, true, field("insert", i, "parent"), errors);
            readString(o, "intent", op.intent, true, field("insert", i, "intent"), errors);
            readString(o, "rationale", op.rationale, false, field("insert", i, "rationale"), errors);
            readString(o, "id", op.ref, false, field("insert", i, "id"), errors);
            const std::size_t opErrors = errors.size();
            readPriority(o, op.priority, field("insert", i, "priority"), errors);
            if (o.contains("intent") && o["intent"].is_string()
                && op.intent.find_first_not_of(" \t\n") == std::string::npos)
                errors.push_back(field("insert", i, "intent") + ": empty");
            if (errors.size() == opErrors && !op.parent.empty() && !op.intent.empty())
                e.inserts.push_back(op);
        }
    if (const json* updates = list(answer, "update", errors))
        for (std::size_t i = 0; i < updates->size(); ++i) {
            const json& o = (*updates)[i];
            UpdateOp op;
            if (!o.is_object()) {
                errors.push_back("update[" + std::to_string(i) + "]: must be an object");
                continue;
            }
            const std::size_t opErrors = errors.size();
            readString(o, "node", op.node, true, field("update", i, "node"), errors);
            readString(o, "rationale", op.rationale, false, field("update", i, "rationale"), errors);
            readPriority(o, op.priority, field("update", i, "priority"), errors);
            if (errors.size() == opErrors)
                e.updates.push_back(op);
        }
    if (const json* prunes = list(answer, "prune", errors))
        for (std::size_t i = 0; i < prunes->size(); ++i) {
            const json& o = (*prunes)[i];
            PruneOp op;
            if (!o.is_object()) {
                errors.push_back("prune[" + std::to_string(i) + "]: must be an object");
                continue;
            }
            const std::size_t opErrors = errors.size();
            readString(o, "node", op.node, true, field("prune", i, "node"), errors);
            readString(o, "rationale", op.rationale, false, field("prune", i, "rationale"), errors);
            if (errors.size() == opErrors)
                e.prunes.push_back(op);
        }
    return e;
}

json toJson(const TreeEdit& e)
{
    json inserts = json::array(), updates = json::array(), prunes = json::array();
    for (const auto& op : e.inserts) {
        json o {{"parent", op.parent}, {"intent", op.intent}, {"priority", op.priority}, {"rationale", op.rationale}};
        if (!op.ref.empty())
            o["id"] = op.ref;
        inserts.push_back(o);
    }
    for (const auto& op : e.updates)
        updates.push_back({{"node", op.node}, {"priority", op.priority}, {"rationale", op.rationale}});
    for (const auto& op : e.prunes)
        prunes.push_back({{"node", op.node}, {"rationale", op.rationale}});
    return {{"reasoning", e.reasoning}, {"insert", inserts}, {"update", updates}, {"prune", prunes}};
}

TreeEdit treeEditFromJson(const json& j)
{
    std::vector<std::string> errors;
    auto e = parseTreeEdit(j, errors);
    return e ? *e : TreeEdit {};
}

EditCheck validateEdit(const SearchTree& tree, const TreeEdit& edit, const EditRules& rules)
{
    EditCheck check;
    auto& errors = check.errors;
    if (static_cast<int>(edit.inserts.size()) > rules.maxNewNodes)
        errors.push_back(std::to_string(edit.inserts.size()) + " new nodes: at most "
            + std::to_string(rules.maxNewNodes) + " per edit");

    std::map<std::string, std::size_t> refs; // insert ref -> its index
    for (std::size_t i = 0; i < edit.inserts.size(); ++i) {
        const std::string& ref = edit.inserts[i].ref;
        if (ref.empty())
            continue;
        if (tree.find(ref))
            errors.push_back(field("insert", i, "id") + ": '" + ref + "' is already a node; leave 'id' out");
        else if (!refs.emplace(ref, i).second)
            errors.push_back(field("insert", i, "id") + ": '" + ref + "' is used twice");
    }
    bool childOfSolved = false;
    for (std::size_t i = 0; i < edit.inserts.size(); ++i) {
        const InsertOp& op = edit.inserts[i];
        // Follow parents through other inserts of this edit until an existing node.
        std::string parent = op.parent;
        std::set<std::size_t> seen {i};
        while (refs.count(parent)) {
            const std::size_t next = refs.at(parent);
            if (!seen.insert(next).second) {
                errors.push_back(
                    field("insert", i, "parent") + ": the inserts' parents form a cycle through '" + parent + "'");
                parent.clear();
                break;
            }
            parent = edit.inserts[next].parent;
        }
        if (parent.empty())
            continue;
        const SearchNode* p = tree.find(parent);
        if (!p) {
            errors.push_back(field("insert", i, "parent") + ": no node '" + parent + "'");
            continue;
        }
        if (p->status == NodeStatus::Pruned || tree.hasPrunedAncestor(p->id))
            errors.push_back(field("insert", i, "parent") + ": " + p->id + " is in a pruned branch");
        if (op.parent == rules.solvedNode)
            childOfSolved = true;
    }
    if (rules.flat && !edit.inserts.empty())
        check.notes.push_back("flat frontier: every new intent goes under the root and starts from the best program");

    std::set<std::string> touched;
    for (std::size_t i = 0; i < edit.updates.size(); ++i) {
        const UpdateOp& op = edit.updates[i];
        const SearchNode* n = tree.find(op.node);
        if (!n)
            errors.push_back(field("update", i, "node") + ": no node '" + op.node + "'");
        else if (n->id == SearchTree::kRootId)
            errors.push_back(field("update", i, "node") + ": the root has no priority");
        else if (n->status != NodeStatus::Open)
            errors.push_back(field("update", i, "node") + ": " + describeStatus(*n)
                + (n->status == NodeStatus::Closed ? ": its result is final; insert a child to go on from it" : ""));
        else if (!touched.insert(op.node).second)
            errors.push_back(field("update", i, "node") + ": " + op.node + " is changed twice in one edit");
    }
    if (rules.frozenValues && !edit.updates.empty())
        check.notes.push_back("frozen V: " + std::to_string(edit.updates.size()) + " priority update(s) ignored");
    for (std::size_t i = 0; i < edit.prunes.size(); ++i) {
        const PruneOp& op = edit.prunes[i];
        const SearchNode* n = tree.find(op.node);
        if (!n)
            errors.push_back(field("prune", i, "node") + ": no node '" + op.node + "'");
        else if (n->id == SearchTree::kRootId)
            errors.push_back(field("prune", i, "node") + ": the root cannot be pruned");
        else if (n->status != NodeStatus::Open)
            errors.push_back(field("prune", i, "node") + ": " + describeStatus(*n) + "; only open intents can be pruned"
                + (n->solved() ? " (pruning it would lose a solution)" : ""));
        else if (!touched.insert(op.node).second)
            errors.push_back(field("prune", i, "node") + ": " + op.node + " is changed twice in one edit");
    }
    if (!rules.solvedNode.empty() && !rules.flat && !childOfSolved) {
        const SearchNode* solved = tree.find(rules.solvedNode);
        const Attempt* best = solved && solved->bestAttempt ? tree.attempt(*solved->bestAttempt) : nullptr;
        const std::string score = best ? " (J = " + formatScore(best->score()) + ")" : std::string();
        errors.push_back(
            rules.solvedNode + " passed" + score + ": insert at least one child under it that refines its program");
    }
    return check;
}

std::vector<std::size_t> insertionOrder(const SearchTree& tree, const TreeEdit& edit)
{
    std::vector<std::size_t> order;
    std::set<std::string> createdRefs;
    std::vector<bool> done(edit.inserts.size(), false);
    for (bool progress = true; progress;) {
        progress = false;
        for (std::size_t i = 0; i < edit.inserts.size(); ++i) {
            const InsertOp& op = edit.inserts[i];
            if (done[i] || (!createdRefs.count(op.parent) && !tree.find(op.parent)))
                continue;
            order.push_back(i);
            if (!op.ref.empty())
                createdRefs.insert(op.ref);
            done[i] = progress = true;
        }
    }
    return order;
}

std::vector<std::string> plannedInsertIds(const SearchTree& tree, const TreeEdit& edit)
{
    std::vector<std::string> ids(edit.inserts.size());
    int next = tree.idCounter();
    for (std::size_t i : insertionOrder(tree, edit))
        ids[i] = "n" + std::to_string(++next);
    return ids;
}

std::vector<std::string> applyEdit(SearchTree& tree, const TreeEdit& edit, const EditRules& rules, Author author,
    int round, const std::string& exchange)
{
    std::vector<std::string> ids(edit.inserts.size());
    std::map<std::string, std::string> refToId;
    for (std::size_t i : insertionOrder(tree, edit)) {
        const InsertOp& op = edit.inserts[i];
        std::string parent = op.parent;
        if (const auto it = refToId.find(parent); it != refToId.end())
            parent = it->second;
        if (rules.flat)
            parent = SearchTree::kRootId;
        ids[i] = tree.insert(parent, op.intent, op.rationale, {op.priority, author, op.rationale, round}, exchange).id;
        if (!op.ref.empty())
            refToId[op.ref] = ids[i];
    }
    if (!rules.frozenValues)
        for (const UpdateOp& op : edit.updates) {
            SearchNode* n = tree.findMutable(op.node);
            n->values.push_back({op.priority, author, op.rationale, round});
            if (!exchange.empty())
                n->exchanges.push_back(exchange);
        }
    for (const PruneOp& op : edit.prunes) {
        SearchNode* n = tree.findMutable(op.node);
        n->statusBeforePrune = n->status;
        n->status = NodeStatus::Pruned;
        n->pruneReason = op.rationale;
        if (!exchange.empty())
            n->exchanges.push_back(exchange);
    }
    return ids;
}

} // namespace ks
