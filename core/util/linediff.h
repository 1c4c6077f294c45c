#pragma once

#include <string>
#include <vector>

namespace ks {

struct DiffLine {
    char op = ' '; // ' ' both, '-' only in the old text, '+' only in the new
    std::string text;
};

// A line diff of two texts (longest common subsequence), every line of both in order.
std::vector<DiffLine> diffLines(const std::string& before, const std::string& after);

// The same as a unified diff with `context` lines around each change ("@@ -a,b +c,d @@" hunks);
// empty when the texts are equal.
std::string unifiedDiff(const std::string& before, const std::string& after, int context = 3);

} // namespace ks
