#pragma once

#include "searchtree.h"

#include <cstddef>
#include <string>

namespace ks {

struct TreeRenderOptions {
    std::size_t budget = 6000; // bytes of UTF-8, a hard limit
    std::string focus; // the node acted on last (its path is always shown); empty: the best node
    std::size_t intentChars = 180; // an intent longer than this is cut
};

// The tree as the world model reads it. While the whole tree fits the budget it is an indented
// outline of every node; beyond that, sections with the path to the focus node, the frontier by
// V, the best solved nodes, recent failures and a summary of pruned branches, each cut to its
// share and saying how much was left out. Never longer than the budget.
std::string renderTreeForPrompt(const SearchTree& tree, const TreeRenderOptions& options = {});

// One node on one line: id, status, V, best J, attempts, and the intent (cut at `intentChars`).
std::string renderNodeLine(const SearchTree& tree, const SearchNode& node, std::size_t intentChars);

// Cuts UTF-8 text to at most `bytes`, on a character boundary, marking the cut with "...".
std::string truncateUtf8(const std::string& text, std::size_t bytes);

} // namespace ks
