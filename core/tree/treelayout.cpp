#include "treelayout.h"

#include <algorithm>
#include <vector>

namespace ks {

TreeLayout layoutTree(const SearchTree& tree, const TreeLayoutOptions& o)
{
    TreeLayout layout;
    double nextColumn = 0.0;
    int maxDepth = 0;
    // Iterative post-order walk: a node is placed after all its children.
    struct Frame {
        const SearchNode* node;
        int depth;
        std::size_t child;
    };
    std::vector<Frame> stack {{&tree.root(), 0, 0}};
    while (!stack.empty()) {
        Frame& f = stack.back();
        if (f.child < f.node->children.size()) {
            const SearchNode* c = tree.find(f.node->children[f.child++]);
            if (c)
                stack.push_back({c, f.depth + 1, 0});
            continue;
        }
        double x;
        std::vector<double> childX;
        for (const auto& id : f.node->children)
            if (const auto it = layout.positions.find(id); it != layout.positions.end())
                childX.push_back(it->second.x);
        if (childX.empty()) {
            x = nextColumn * (o.nodeWidth + o.horizontalGap);
            nextColumn += 1.0;
        } else {
            x = (childX.front() + childX.back()) / 2.0;
        }
        layout.positions[f.node->id] = {x, f.depth * (o.nodeHeight + o.verticalGap)};
        maxDepth = std::max(maxDepth, f.depth);
        stack.pop_back();
    }
    layout.width = std::max(1.0, nextColumn) * (o.nodeWidth + o.horizontalGap) - o.horizontalGap;
    layout.height = (maxDepth + 1) * (o.nodeHeight + o.verticalGap) - o.verticalGap;
    return layout;
}

} // namespace ks
