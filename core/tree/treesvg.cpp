#include "treesvg.h"

#include "treelayout.h"
#include "treerender.h"

#include <util/numberformat.h>

#include <cstdio>

namespace ks {

namespace {

constexpr double kMargin = 24.0, kHeader = 64.0;

std::string escape(const std::string& s)
{
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\n':
            out += ' ';
            break;
        default:
            out += c;
        }
    }
    return out;
}

struct Style {
    const char* fill;
    const char* stroke;
    const char* text;
};

Style styleOf(const SearchNode& n, bool active)
{
    if (active || n.status == NodeStatus::Active)
        return {"#fde7c8", "#e08a00", "#3d2a00"};
    switch (n.status) {
    case NodeStatus::Open:
        return {"#e3eefb", "#4a7fc1", "#15314f"};
    case NodeStatus::Pruned:
        return {"#eeeeee", "#9e9e9e", "#8a8a8a"};
    default:
        return n.solved() || n.id == SearchTree::kRootId ? Style {"#dcf2dc", "#3c9a45", "#173d1b"}
                                                         : Style {"#f8dede", "#c0504d", "#4d1716"};
    }
}

// Splits an intent into at most two lines of about `width` characters, cutting the rest.
std::pair<std::string, std::string> twoLines(const std::string& text, std::size_t width)
{
    if (text.size() <= width)
        return {text, {}};
    std::size_t cut = text.rfind(' ', width);
    if (cut == std::string::npos || cut < width / 2)
        cut = width;
    return {text.substr(0, cut), truncateUtf8(text.substr(cut + (text[cut] == ' ' ? 1 : 0)), width)};
}

} // namespace

std::string renderTreeSvg(const SearchTree& tree, const TreeSvgOptions& options)
{
    const TreeLayoutOptions lo;
    const TreeLayout layout = layoutTree(tree, lo);
    const double width = std::max(layout.width + 2 * kMargin, 640.0);
    const double height = layout.height + 2 * kMargin + kHeader;
    const auto best = tree.bestAttempt();
    const std::string bestNode = best ? tree.attempt(*best)->node : std::string();
    std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
        + formatFixed(width, 0) + "\" height=\"" + formatFixed(height, 0) + "\" viewBox=\"0 0 " + formatFixed(width, 0)
        + " " + formatFixed(height, 0) + "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
        + "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg += "<text x=\"" + formatFixed(kMargin, 0) + "\" y=\"28\" font-size=\"17\" font-weight=\"bold\" fill=\"#222\">"
        + escape(options.title.empty() ? std::string("K-Search tree") : options.title) + "</text>\n";
    // Legend.
    double lx = kMargin;
    for (const auto& [label, fill, stroke] : {std::tuple {"open", "#e3eefb", "#4a7fc1"},
             std::tuple {"active", "#fde7c8", "#e08a00"}, std::tuple {"closed, passed", "#dcf2dc", "#3c9a45"},
             std::tuple {"closed, nothing passed", "#f8dede", "#c0504d"}, std::tuple {"pruned", "#eeeeee", "#9e9e9e"},
             std::tuple {"best", "#ffffff", "#d4a017"}}) {
        svg += "<rect x=\"" + formatFixed(lx, 0) + "\" y=\"40\" width=\"14\" height=\"14\" rx=\"3\" fill=\"" + fill
            + "\" stroke=\"" + stroke + "\" stroke-width=\"2\"/><text x=\"" + formatFixed(lx + 19, 0)
            + "\" y=\"52\" font-size=\"12\" fill=\"#444\">" + label + "</text>\n";
        lx += 30 + 7.0 * std::string(label).size();
    }
    const auto at = [&](const std::string& id) {
        const NodePlacement p = layout.positions.at(id);
        return std::pair {p.x + kMargin, p.y + kMargin + kHeader};
    };
    // Edges first, under the boxes.
    for (const auto& n : tree.nodes()) {
        if (n.parent.empty() || !layout.positions.count(n.parent))
            continue;
        const auto [px, py] = at(n.parent);
        const auto [cx, cy] = at(n.id);
        const double x1 = px + lo.nodeWidth / 2, y1 = py + lo.nodeHeight, x2 = cx + lo.nodeWidth / 2, y2 = cy;
        const double my = (y1 + y2) / 2;
        svg += "<path d=\"M" + formatFixed(x1, 1) + "," + formatFixed(y1, 1) + " C" + formatFixed(x1, 1) + ","
            + formatFixed(my, 1) + " " + formatFixed(x2, 1) + "," + formatFixed(my, 1) + " " + formatFixed(x2, 1) + ","
            + formatFixed(y2, 1) + "\" fill=\"none\" stroke=\""
            + (n.status == NodeStatus::Pruned ? "#c8c8c8" : "#8c8c8c") + "\" stroke-width=\"1.5\""
            + (n.status == NodeStatus::Pruned ? " stroke-dasharray=\"4 3\"" : "") + "/>\n";
    }
    for (const auto& n : tree.nodes()) {
        const auto [x, y] = at(n.id);
        const Style s = styleOf(n, n.id == options.activeNode);
        const bool isBest = n.id == bestNode;
        svg += "<g><title>" + escape(n.id + ": " + n.intent) + "</title>\n";
        svg += "<rect x=\"" + formatFixed(x, 1) + "\" y=\"" + formatFixed(y, 1) + "\" width=\""
            + formatFixed(lo.nodeWidth, 1) + "\" height=\"" + formatFixed(lo.nodeHeight, 1) + "\" rx=\"7\" fill=\""
            + s.fill + "\" stroke=\"" + (isBest ? "#d4a017" : s.stroke) + "\" stroke-width=\"" + (isBest ? "4" : "1.6")
            + "\"" + (n.status == NodeStatus::Pruned ? " stroke-dasharray=\"5 3\"" : "") + "/>\n";
        std::string head = n.id == SearchTree::kRootId ? std::string("root") : n.id;
        if (n.bestAttempt)
            head += "   J " + formatFixed(tree.attempt(*n.bestAttempt)->score(), 1);
        else if (n.status == NodeStatus::Closed && n.id != SearchTree::kRootId)
            head += "   failed";
        if (!n.attempts.empty())
            head += "   (" + std::to_string(n.attempts.size()) + " att.)";
        svg += "<text x=\"" + formatFixed(x + 8, 1) + "\" y=\"" + formatFixed(y + 17, 1)
            + "\" font-size=\"12.5\" font-weight=\"bold\" fill=\"" + s.text + "\">" + escape(head) + "</text>\n";
        const auto [l1, l2] = twoLines(n.intent, 34);
        svg += "<text x=\"" + formatFixed(x + 8, 1) + "\" y=\"" + formatFixed(y + 34, 1) + "\" font-size=\"11\" fill=\""
            + s.text + "\">" + escape(l1) + "</text>\n";
        if (!l2.empty())
            svg += "<text x=\"" + formatFixed(x + 8, 1) + "\" y=\"" + formatFixed(y + 48, 1)
                + "\" font-size=\"11\" fill=\"" + s.text + "\">" + escape(l2) + "</text>\n";
        if (n.id != SearchTree::kRootId) { // V as a bar along the bottom, its value beside it
            const double track = lo.nodeWidth - 62;
            svg += "<rect x=\"" + formatFixed(x + 8, 1) + "\" y=\"" + formatFixed(y + lo.nodeHeight - 14, 1)
                + "\" width=\"" + formatFixed(track, 1)
                + "\" height=\"6\" rx=\"3\" fill=\"#ffffff\" stroke=\"#bbbbbb\"/>\n";
            svg += "<rect x=\"" + formatFixed(x + 8, 1) + "\" y=\"" + formatFixed(y + lo.nodeHeight - 14, 1)
                + "\" width=\"" + formatFixed(track * n.value(), 1) + "\" height=\"6\" rx=\"3\" fill=\"" + s.stroke
                + "\"/>\n";
            svg += "<text x=\"" + formatFixed(x + lo.nodeWidth - 8, 1) + "\" y=\""
                + formatFixed(y + lo.nodeHeight - 8, 1) + "\" font-size=\"11\" text-anchor=\"end\" fill=\"" + s.text
                + "\">V " + formatFixed(n.value(), 2) + "</text>\n";
        }
        svg += "</g>\n";
    }
    svg += "</svg>\n";
    return svg;
}

} // namespace ks
