#pragma once

#include "searchtree.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ks {

struct InsertOp {
    std::string parent; // a node id, or the `ref` of another insert of the same edit
    std::string intent;
    double priority = 0.5;
    std::string rationale;
    std::string ref; // optional name that later inserts of the same edit may use as parent
};
struct UpdateOp {
    std::string node;
    double priority = 0.5;
    std::string rationale;
};
struct PruneOp {
    std::string node;
    std::string rationale;
};

// One world-model answer: {"reasoning", "insert": [...], "update": [...], "prune": [...]}.
struct TreeEdit {
    std::string reasoning;
    std::vector<InsertOp> inserts;
    std::vector<UpdateOp> updates;
    std::vector<PruneOp> prunes;

    bool empty() const { return inserts.empty() && updates.empty() && prunes.empty(); }
};

struct EditRules {
    int maxNewNodes = 3;
    bool frozenValues = false; // ablation: priorities never change after insertion
    bool flat = false; // ablation: every intent hangs under the root
    std::string solvedNode; // when set, the edit must insert at least one child under it
};

struct EditCheck {
    std::vector<std::string> errors; // each names the op and why it is refused
    std::vector<std::string> notes; // what the rules changed (ignored updates, re-parenting)
    bool ok() const { return errors.empty(); }
};

// Reads the edit; `errors` names each field that is wrong ("insert[1].priority: ..."). The ops
// that are well-formed are returned even then, so that the validation can report what else is
// wrong in one go; an answer with any error is refused as a whole. nullopt: not an object.
std::optional<TreeEdit> parseTreeEdit(const nlohmann::json& answer, std::vector<std::string>& errors);
nlohmann::json toJson(const TreeEdit& edit);
TreeEdit treeEditFromJson(const nlohmann::json& j); // for journaled edits, already validated

// Everything that would make the edit unsafe, checked before anything is applied: unknown nodes,
// V outside [0, 1], changes to closed or pruned nodes, cycles, too many new nodes, a passed node
// left without a child.
EditCheck validateEdit(const SearchTree& tree, const TreeEdit& edit, const EditRules& rules);

// The order in which applyEdit creates the inserts: an insert whose parent is another insert of
// the same edit comes after that one. The i-th created node gets the id after the i-1-th.
std::vector<std::size_t> insertionOrder(const SearchTree& tree, const TreeEdit& edit);
// The ids the inserts of an edit will get, in the order of the inserts, without applying it.
std::vector<std::string> plannedInsertIds(const SearchTree& tree, const TreeEdit& edit);

// Applies an edit that validateEdit accepted, all of it; returns the ids of the inserted nodes
// in the order of the inserts.
std::vector<std::string> applyEdit(SearchTree& tree, const TreeEdit& edit, const EditRules& rules, Author author,
    int round, const std::string& exchange);

} // namespace ks
