#include "treerender.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace ks {

namespace {

std::string fixed(double v, int digits)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string oneLine(std::string s)
{
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
}

// Appends lines until the section's byte allowance is used, then says how many were left out.
class Section
{
public:
    Section(std::string& out, std::size_t allowance)
        : m_out(out)
        , m_limit(out.size() + allowance)
    {
    }
    void add(const std::string& line, std::size_t remainingAfter)
    {
        if (m_full)
            return;
        const std::string more = "  ... and " + std::to_string(remainingAfter + 1) + " more\n";
        if (m_out.size() + line.size() + 1 + more.size() > m_limit) {
            if (m_out.size() + more.size() <= m_limit)
                m_out += more;
            m_full = true;
            return;
        }
        m_out += line + "\n";
    }

private:
    std::string& m_out;
    std::size_t m_limit;
    bool m_full = false;
};

} // namespace

std::string truncateUtf8(const std::string& text, std::size_t bytes)
{
    if (text.size() <= bytes)
        return text;
    if (bytes < 3)
        return std::string(bytes, '.');
    std::size_t cut = bytes - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    return text.substr(0, cut) + "...";
}

std::string renderNodeLine(const SearchTree& tree, const SearchNode& n, std::size_t intentChars)
{
    std::string line = n.id + " [" + std::string(nodeStatusName(n.status));
    if (n.id != SearchTree::kRootId)
        line += ", V " + fixed(n.value(), 2);
    if (n.bestAttempt) {
        const Attempt* best = tree.attempt(*n.bestAttempt);
        line += ", best J " + fixed(best ? best->score() : 0.0, 1);
    } else if (n.status == NodeStatus::Closed && n.id != SearchTree::kRootId) {
        line += ", nothing passed";
    }
    if (!n.attempts.empty())
        line += ", " + std::to_string(n.attempts.size()) + " attempt" + (n.attempts.size() > 1 ? "s" : "");
    line += "]";
    if (n.id != SearchTree::kRootId)
        line += " " + truncateUtf8(oneLine(n.intent), intentChars);
    if (n.status == NodeStatus::Pruned && !n.pruneReason.empty())
        line += " (pruned: " + truncateUtf8(oneLine(n.pruneReason), 80) + ")";
    return line;
}

std::string renderTreeForPrompt(const SearchTree& tree, const TreeRenderOptions& options)
{
    const std::size_t budget = options.budget;
    // The whole outline, when it fits.
    std::string outline = "Search tree (" + std::to_string(tree.nodeCount()) + " nodes; children indented):\n";
    std::vector<std::pair<const SearchNode*, int>> stack {{&tree.root(), 0}};
    while (!stack.empty() && outline.size() <= budget) {
        const auto [n, depth] = stack.back();
        stack.pop_back();
        outline += std::string(2 * static_cast<std::size_t>(depth), ' ') + renderNodeLine(tree, *n, options.intentChars)
            + "\n";
        for (auto it = n->children.rbegin(); it != n->children.rend(); ++it)
            if (const SearchNode* c = tree.find(*it))
                stack.push_back({c, depth + 1});
    }
    if (stack.empty() && outline.size() <= budget)
        return outline;

    // Too big: the parts that matter for the next decision, each cut to its share.
    int open = 0, closed = 0, pruned = 0;
    for (const auto& n : tree.nodes())
        (n.status == NodeStatus::Pruned ? pruned : n.status == NodeStatus::Open ? open : closed)++;
    const auto best = tree.bestAttempt();
    std::string out = "Search tree, summarised (" + std::to_string(tree.nodeCount()) + " nodes: " + std::to_string(open)
        + " open, " + std::to_string(closed) + " closed or active, " + std::to_string(pruned) + " pruned; best J "
        + (best ? fixed(tree.attempt(*best)->score(), 1) + " at " + tree.attempt(*best)->node : std::string("none"))
        + ").\n";
    std::set<std::string> shown;
    const auto lineOf = [&](const SearchNode& n) { return "  " + renderNodeLine(tree, n, options.intentChars); };

    std::string focus = options.focus;
    if (focus.empty() && best)
        focus = tree.attempt(*best)->node;
    if (!focus.empty() && tree.find(focus)) {
        out += "Path from the root to " + focus + ":\n";
        // The nearest ancestors matter most: fill the allowance from the focus upwards.
        const auto path = tree.pathFromRoot(focus);
        const std::size_t allowance = budget / 4;
        std::vector<std::string> lines;
        std::size_t used = 0;
        for (auto it = path.rbegin(); it != path.rend(); ++it) {
            const std::string line = lineOf(**it) + "\n";
            if (!lines.empty() && used + line.size() + 40 > allowance)
                break;
            lines.push_back(line);
            used += line.size();
            shown.insert((*it)->id);
        }
        if (lines.size() < path.size())
            out += "  ... " + std::to_string(path.size() - lines.size()) + " ancestors up to the root\n";
        for (auto it = lines.rbegin(); it != lines.rend(); ++it)
            out += *it;
    }
    auto frontier = tree.frontier();
    std::stable_sort(frontier.begin(), frontier.end(),
        [](const SearchNode* a, const SearchNode* b) { return a->value() > b->value(); });
    out += "Frontier (open intents that can run now, highest V first):\n";
    {
        Section s(out, budget * 3 / 10);
        for (std::size_t i = 0; i < frontier.size(); ++i)
            if (shown.insert(frontier[i]->id).second)
                s.add(lineOf(*frontier[i]) + " (under " + frontier[i]->parent + ")", frontier.size() - i - 1);
    }
    std::vector<const SearchNode*> solved;
    for (const auto& n : tree.nodes())
        if (n.solved() && !shown.count(n.id))
            solved.push_back(&n);
    std::stable_sort(solved.begin(), solved.end(), [&](const SearchNode* a, const SearchNode* b) {
        return tree.attempt(*a->bestAttempt)->score() > tree.attempt(*b->bestAttempt)->score();
    });
    out += "Best solved nodes:\n";
    {
        Section s(out, budget / 6);
        for (std::size_t i = 0; i < solved.size(); ++i)
            s.add(lineOf(*solved[i]) + " (under " + solved[i]->parent + ")", solved.size() - i - 1);
    }
    std::vector<const SearchNode*> failed;
    for (auto it = tree.nodes().rbegin(); it != tree.nodes().rend(); ++it)
        if (it->status == NodeStatus::Closed && !it->solved() && it->id != SearchTree::kRootId && !shown.count(it->id))
            failed.push_back(&*it);
    out += "Recent intents where nothing passed:\n";
    {
        Section s(out, budget / 10);
        for (std::size_t i = 0; i < failed.size(); ++i)
            s.add(lineOf(*failed[i]), failed.size() - i - 1);
    }
    if (pruned > 0) {
        out += "Pruned (" + std::to_string(pruned) + "):\n";
        std::vector<const SearchNode*> prunedNodes;
        for (auto it = tree.nodes().rbegin(); it != tree.nodes().rend(); ++it)
            if (it->status == NodeStatus::Pruned)
                prunedNodes.push_back(&*it);
        Section s(out, budget > out.size() ? budget - out.size() : 0);
        for (std::size_t i = 0; i < prunedNodes.size(); ++i)
            s.add("  " + prunedNodes[i]->id + ": " + truncateUtf8(oneLine(prunedNodes[i]->intent), 70),
                prunedNodes.size() - i - 1);
    }
    if (out.size() > budget) { // the headers alone can pass a tiny budget
        std::size_t cut = out.rfind('\n', budget > 0 ? budget - 1 : 0);
        out = cut == std::string::npos ? truncateUtf8(out, budget) : out.substr(0, cut + 1);
    }
    return out;
}

} // namespace ks
