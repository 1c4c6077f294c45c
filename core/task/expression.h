#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

// Looks up `name` (an axis) or `name[index]` (an element of an integer input tensor; negative
// indices count from the end). Returns nullopt when the name is unknown or the index out of range.
using ExpressionLookup = std::function<std::optional<double>(std::string_view name, std::optional<std::int64_t> index)>;

struct ExpressionResult {
    std::optional<double> value;
    std::string error; // set when value is empty: what is wrong and where
};

// Evaluates the small expression language of task files: numbers, axis names, `t[-1]`
// (`.item()` is accepted and ignored, as FlashInfer-Bench constraints write it), + - * / // %,
// parentheses, one comparison (== != < <= > >=, giving 1 or 0) and sum(i, begin, end, body).
ExpressionResult evaluateExpression(std::string_view text, const ExpressionLookup& lookup);

// The identifiers an expression refers to, in order of appearance (for validation before evaluation).
std::vector<std::string> expressionIdentifiers(std::string_view text);

} // namespace ks
