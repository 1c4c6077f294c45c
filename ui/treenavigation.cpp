#include "treenavigation.h"

#include <vector>

namespace ks::ui {

namespace {

std::vector<const SearchNode*> childrenOf(const SearchTree& tree, const std::string& parent)
{
    std::vector<const SearchNode*> children;
    for (const SearchNode& n : tree.nodes())
        if (n.parent == parent && n.id != parent)
            children.push_back(&n);
    return children;
}

} // namespace

std::string treeNeighbour(const SearchTree& tree, const std::string& from, TreeStep step)
{
    const SearchNode* node = tree.find(from);
    if (!node)
        return {};
    switch (step) {
    case TreeStep::Parent:
        return node->parent.empty() || !tree.find(node->parent) ? from : node->parent;
    case TreeStep::FirstChild: {
        const auto children = childrenOf(tree, from);
        return children.empty() ? from : children.front()->id;
    }
    case TreeStep::PreviousSibling:
    case TreeStep::NextSibling: {
        if (node->parent.empty())
            return from;
        const auto siblings = childrenOf(tree, node->parent);
        for (std::size_t i = 0; i < siblings.size(); ++i) {
            if (siblings[i] != node)
                continue;
            if (step == TreeStep::PreviousSibling)
                return i > 0 ? siblings[i - 1]->id : from;
            return i + 1 < siblings.size() ? siblings[i + 1]->id : from;
        }
        return from;
    }
    }
    return from;
}

} // namespace ks::ui
