#pragma once

#include <search/searchstate.h>

#include <QColor>

namespace ks::ui {

// One palette for the graph, the table, the charts and the SVG export's meaning: open blue,
// active orange, passed green, failed red, pruned grey, the best node gold.
QColor statusColor(const SearchNode& node, const SearchState& state);
QColor statusFill(const SearchNode& node, const SearchState& state);
QColor verdictColor(Verdict v);
QColor bestColor();

} // namespace ks::ui
