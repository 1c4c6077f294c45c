#pragma once

#include "searchtree.h"

#include <string>

namespace ks {

struct TreeSvgOptions {
    std::string title; // drawn above the tree
    std::string activeNode; // highlighted
};

// The tree as a standalone SVG picture: one box per node coloured by status (pruned greyed and
// dashed), its best J, a bar for V, the best node outlined in gold, and a legend.
std::string renderTreeSvg(const SearchTree& tree, const TreeSvgOptions& options = {});

} // namespace ks
