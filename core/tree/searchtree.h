#pragma once

#include "node.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ks {

// The world model's tree of intents and every attempt made under it. Plain data with checked
// primitives; the rules of who may change what live in the edit validation and in the reducer
// of search events, which are the only writers.
class SearchTree
{
public:
    static constexpr const char* kRootId = "root";

    SearchTree();

    const SearchNode* find(const std::string& id) const;
    const SearchNode& root() const { return m_nodes.front(); }
    const std::vector<SearchNode>& nodes() const { return m_nodes; } // in creation order
    const std::vector<Attempt>& attempts() const { return m_attempts; }
    const Attempt* attempt(int index) const;
    int nodeCount() const { return static_cast<int>(m_nodes.size()); }

    // The id the next inserted node gets ("n1", "n2", ...).
    std::string peekNextId() const;
    SearchNode& insert(const std::string& parent, const std::string& intent, const std::string& rationale,
        const ValueChange& value, const std::string& exchange);
    int addAttempt(Attempt attempt); // returns its index
    SearchNode* findMutable(const std::string& id);
    Attempt* attemptMutable(int index);

    // Open nodes whose branch is alive (no pruned ancestor) and, unless `flat`, whose parent is the
    // root or solved: an intent needs its parent's program to start from.
    std::vector<const SearchNode*> frontier(bool flat = false) const;
    bool hasPrunedAncestor(const std::string& id) const;
    bool isAncestor(const std::string& ancestor, const std::string& id) const;
    std::vector<const SearchNode*> pathFromRoot(const std::string& id) const;
    int depth(const std::string& id) const;

    // The best passed attempt of the whole search (highest J; the earlier one on a tie).
    std::optional<int> bestAttempt() const;
    // The program an action on `id` starts from: its parent's best attempt (the root's is the seed).
    std::optional<int> startingAttempt(const std::string& id) const;

    int idCounter() const { return m_counter; }
    void setIdCounter(int c) { m_counter = c; }
    // For loading a checkpoint: takes nodes and attempts as they were saved.
    void assign(std::vector<SearchNode> nodes, std::vector<Attempt> attempts, int counter);

private:
    void reindex();

    std::vector<SearchNode> m_nodes;
    std::vector<Attempt> m_attempts;
    std::unordered_map<std::string, int> m_index;
    int m_counter = 0;
};

} // namespace ks
