#pragma once

#include <tree/searchtree.h>

#include <string>

namespace ks::ui {

// A step through the tree from the keyboard, as the graph lays it out: up to the parent, down to
// the first child, sideways to the sibling created before or after (children are drawn left to
// right in creation order).
enum class TreeStep { Parent, FirstChild, PreviousSibling, NextSibling };

// The node one step from `from`, or `from` itself where the step leads nowhere (the root has no
// parent, a leaf no child, the first sibling none before it); empty when `from` is not a node.
std::string treeNeighbour(const SearchTree& tree, const std::string& from, TreeStep step);

} // namespace ks::ui
