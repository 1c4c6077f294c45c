#include "searchtree.h"

#include <algorithm>
#include <stdexcept>

namespace ks {

SearchTree::SearchTree()
{
    SearchNode root;
    root.id = kRootId;
    root.intent = "the task";
    root.status = NodeStatus::Closed;
    root.createdBy = Author::System;
    root.values.push_back({1.0, Author::System, "the root", 0});
    m_nodes.push_back(std::move(root));
    reindex();
}

void SearchTree::reindex()
{
    m_index.clear();
    for (int i = 0; i < static_cast<int>(m_nodes.size()); ++i)
        m_index[m_nodes[i].id] = i;
}

const SearchNode* SearchTree::find(const std::string& id) const
{
    const auto it = m_index.find(id);
    return it == m_index.end() ? nullptr : &m_nodes[it->second];
}

SearchNode* SearchTree::findMutable(const std::string& id)
{
    const auto it = m_index.find(id);
    return it == m_index.end() ? nullptr : &m_nodes[it->second];
}

const Attempt* SearchTree::attempt(int index) const
{
    return index >= 0 && index < static_cast<int>(m_attempts.size()) ? &m_attempts[index] : nullptr;
}

Attempt* SearchTree::attemptMutable(int index)
{
    return index >= 0 && index < static_cast<int>(m_attempts.size()) ? &m_attempts[index] : nullptr;
}

std::string SearchTree::peekNextId() const
{
    return "n" + std::to_string(m_counter + 1);
}

SearchNode& SearchTree::insert(const std::string& parent, const std::string& intent, const std::string& rationale,
    const ValueChange& value, const std::string& exchange)
{
    if (!find(parent))
        throw std::logic_error("insert under unknown node " + parent); // validated before
    SearchNode n;
    n.id = peekNextId();
    ++m_counter;
    n.parent = parent;
    n.intent = intent;
    n.rationale = rationale;
    n.createdBy = value.author;
    n.createdByExchange = exchange;
    n.createdRound = value.round;
    n.values.push_back(value);
    if (!exchange.empty())
        n.exchanges.push_back(exchange);
    m_nodes.push_back(std::move(n));
    m_index[m_nodes.back().id] = static_cast<int>(m_nodes.size()) - 1;
    findMutable(parent)->children.push_back(m_nodes.back().id);
    return m_nodes.back();
}

int SearchTree::addAttempt(Attempt attempt)
{
    attempt.index = static_cast<int>(m_attempts.size());
    if (SearchNode* n = findMutable(attempt.node))
        n->attempts.push_back(attempt.index);
    m_attempts.push_back(std::move(attempt));
    return m_attempts.back().index;
}

bool SearchTree::hasPrunedAncestor(const std::string& id) const
{
    for (const SearchNode* n = find(id); n && !n->parent.empty();) {
        n = find(n->parent);
        if (n && n->status == NodeStatus::Pruned)
            return true;
    }
    return false;
}

bool SearchTree::isAncestor(const std::string& ancestor, const std::string& id) const
{
    for (const SearchNode* n = find(id); n && !n->parent.empty();) {
        if (n->parent == ancestor)
            return true;
        n = find(n->parent);
    }
    return false;
}

std::vector<const SearchNode*> SearchTree::frontier(bool flat) const
{
    std::vector<const SearchNode*> out;
    for (const SearchNode& n : m_nodes) {
        if (n.status != NodeStatus::Open || hasPrunedAncestor(n.id))
            continue;
        const SearchNode* parent = find(n.parent);
        if (flat || n.parent == kRootId || (parent && parent->solved()))
            out.push_back(&n);
    }
    return out;
}

std::vector<const SearchNode*> SearchTree::pathFromRoot(const std::string& id) const
{
    std::vector<const SearchNode*> path;
    for (const SearchNode* n = find(id); n; n = n->parent.empty() ? nullptr : find(n->parent))
        path.push_back(n);
    std::reverse(path.begin(), path.end());
    return path;
}

int SearchTree::depth(const std::string& id) const
{
    return static_cast<int>(pathFromRoot(id).size()) - 1;
}

std::optional<int> SearchTree::bestAttempt() const
{
    std::optional<int> best;
    for (const Attempt& a : m_attempts)
        if (a.passed() && (!best || a.score() > m_attempts[*best].score()))
            best = a.index;
    return best;
}

std::optional<int> SearchTree::startingAttempt(const std::string& id) const
{
    const SearchNode* n = find(id);
    if (!n)
        return std::nullopt;
    const SearchNode* parent = find(n->parent);
    return parent ? parent->bestAttempt : std::nullopt;
}

void SearchTree::assign(std::vector<SearchNode> nodes, std::vector<Attempt> attempts, int counter)
{
    m_nodes = std::move(nodes);
    m_attempts = std::move(attempts);
    m_counter = counter;
    reindex();
}

} // namespace ks
