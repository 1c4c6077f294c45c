#include "linediff.h"

#include <algorithm>
#include <sstream>

namespace ks {

namespace {

std::vector<std::string> splitLines(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

} // namespace

std::vector<DiffLine> diffLines(const std::string& before, const std::string& after)
{
    const auto a = splitLines(before), b = splitLines(after);
    // Common prefix and suffix first: kernels change in places, and the table stays small.
    std::size_t prefix = 0;
    while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix])
        ++prefix;
    std::size_t suffix = 0;
    while (suffix < a.size() - prefix && suffix < b.size() - prefix
        && a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
        ++suffix;
    const std::size_t n = a.size() - prefix - suffix, m = b.size() - prefix - suffix;
    std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
        for (std::size_t j = m; j-- > 0;)
            lcs[i][j] = a[prefix + i] == b[prefix + j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    std::vector<DiffLine> out;
    for (std::size_t i = 0; i < prefix; ++i)
        out.push_back({' ', a[i]});
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && a[prefix + i] == b[prefix + j]) {
            out.push_back({' ', a[prefix + i]});
            ++i;
            ++j;
        } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
            out.push_back({'+', b[prefix + j++]});
        } else {
            out.push_back({'-', a[prefix + i++]});
        }
    }
    for (std::size_t k = a.size() - suffix; k < a.size(); ++k)
        out.push_back({' ', a[k]});
    return out;
}

std::string unifiedDiff(const std::string& before, const std::string& after, int context)
{
    const auto lines = diffLines(before, after);
    const int total = static_cast<int>(lines.size());
    // A line is shown when it is a change or within `context` lines of one.
    std::vector<bool> shown(lines.size(), false);
    for (int k = 0; k < total; ++k)
        if (lines[static_cast<std::size_t>(k)].op != ' ')
            for (int t = std::max(0, k - context); t <= std::min(total - 1, k + context); ++t)
                shown[static_cast<std::size_t>(t)] = true;
    std::string out;
    int oldLine = 1, newLine = 1;
    for (int k = 0; k < total;) {
        if (!shown[static_cast<std::size_t>(k)]) {
            oldLine += lines[static_cast<std::size_t>(k)].op != '+';
            newLine += lines[static_cast<std::size_t>(k)].op != '-';
            ++k;
            continue;
        }
        const int oldStart = oldLine, newStart = newLine;
        std::string body;
        for (; k < total && shown[static_cast<std::size_t>(k)]; ++k) {
            const DiffLine& l = lines[static_cast<std::size_t>(k)];
            oldLine += l.op != '+';
            newLine += l.op != '-';
            body += std::string(1, l.op) + l.text + "\n";
        }
        out += "@@ -" + std::to_string(oldStart) + "," + std::to_string(oldLine - oldStart) + " +"
            + std::to_string(newStart) + "," + std::to_string(newLine - newStart) + " @@\n" + body;
    }
    return out;
}

} // namespace ks
