#pragma once

#include "searchtree.h"

#include <string>
#include <unordered_map>

namespace ks {

struct NodePlacement {
    double x = 0.0, y = 0.0; // top-left corner
};

struct TreeLayout {
    std::unordered_map<std::string, NodePlacement> positions;
    double width = 0.0, height = 0.0;
};

struct TreeLayoutOptions {
    double nodeWidth = 210.0, nodeHeight = 74.0;
    double horizontalGap = 18.0, verticalGap = 46.0;
};

// A layered layout, root on top: leaves take consecutive columns in depth-first order and each
// parent is centred over its children, so subtrees never overlap and siblings keep creation order.
TreeLayout layoutTree(const SearchTree& tree, const TreeLayoutOptions& options = {});

} // namespace ks
