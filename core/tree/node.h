#pragma once

#include "purpose.h"

#include <task/evaluation.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

// Who caused a change: the LLM in one of its two roles, the person at the window, or the engine.
enum class Author { WorldModel, CodePolicy, Human, System };

// open: waiting on the frontier; active: being implemented now; closed: pursued, its best
// attempt attached (or none when nothing passed); pruned: removed from the search, kept visible.
enum class NodeStatus { Open, Active, Closed, Pruned };

std::string_view authorName(Author a);
std::optional<Author> parseAuthor(std::string_view s);
std::string_view nodeStatusName(NodeStatus s);
std::optional<NodeStatus> parseNodeStatus(std::string_view s);

struct ValueChange {
    double value = 0.0;
    Author author = Author::WorldModel;
    std::string reason;
    int round = 0; // evaluations done when it changed
};

// One candidate program written under a node: what it was, who wrote it, and what it scored.
// `evaluated` is false when the answer held no program (no evaluator call was spent).
struct Attempt {
    int index = 0; // position in the tree's attempt list
    std::string node;
    std::string program; // content hash; the source is programs/<hash>.<ext> in the session
    Author author = Author::CodePolicy;
    std::string exchange; // the LLM exchange that wrote it, if any
    Purpose promptKind = Purpose::Action; // the code policy's prompt, or Human or Seed
    bool evaluated = false;
    std::string problem; // why it was not evaluated
    Evaluation evaluation;
    int round = 0; // evaluations done after it (its own included)
    std::string worker; // the evaluator that ran it, when the search had several

    bool passed() const { return evaluated && evaluation.status == Verdict::Passed; }
    double score() const { return passed() ? evaluation.score : 0.0; }
};

struct SearchNode {
    std::string id;
    std::string parent; // empty for the root
    std::vector<std::string> children;
    std::string intent;
    std::string rationale;
    NodeStatus status = NodeStatus::Open;
    NodeStatus statusBeforePrune = NodeStatus::Open; // what restore brings back
    std::string pruneReason;
    Author createdBy = Author::WorldModel;
    std::string createdByExchange;
    int createdRound = 0;
    std::vector<ValueChange> values; // the first is the value it was created with
    std::vector<int> attempts; // indices into the tree's attempt list
    std::optional<int> bestAttempt; // the best passed attempt, once closed
    std::vector<std::string> exchanges; // every exchange that created or edited it

    double value() const { return values.empty() ? 0.0 : values.back().value; }
    bool solved() const { return bestAttempt.has_value(); }
};

} // namespace ks
