#include "answerparsing.h"

#include <vector>

namespace ks {

namespace {

struct Fence {
    std::string language;
    std::string body;
};

// Fenced blocks (``` or ~~~, three or more), with their info string.
std::vector<Fence> fencedBlocks(const std::string& text)
{
    std::vector<Fence> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t open = text.find("```", pos);
        if (open == std::string::npos)
            break;
        const std::size_t lineEnd = text.find('\n', open);
        if (lineEnd == std::string::npos)
            break;
        std::string info = text.substr(open + 3, lineEnd - open - 3);
        while (!info.empty() && (info.back() == '\r' || info.back() == ' '))
            info.pop_back();
        std::size_t close = text.find("\n```", lineEnd);
        if (close == std::string::npos) { // an answer cut off before its closing fence
            out.push_back({info, text.substr(lineEnd + 1)});
            break;
        }
        out.push_back({info, text.substr(lineEnd + 1, close - lineEnd)});
        const std::size_t after = text.find('\n', close + 4);
        pos = after == std::string::npos ? text.size() : after;
    }
    return out;
}

// The end of the balanced {...} that starts at `open`, or npos.
std::size_t matchingBrace(const std::string& t, std::size_t open)
{
    int depth = 0;
    bool inString = false, escaped = false;
    for (std::size_t i = open; i < t.size(); ++i) {
        const char c = t[i];
        if (inString) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"')
            inString = true;
        else if (c == '{')
            ++depth;
        else if (c == '}' && --depth == 0)
            return i;
    }
    return std::string::npos;
}

bool looksLikeEdit(const nlohmann::json& j)
{
    return j.is_object()
        && (j.contains("insert") || j.contains("update") || j.contains("prune") || j.contains("reasoning"));
}

} // namespace

std::optional<nlohmann::json> extractJsonObject(const std::string& answer, std::string& error)
{
    std::vector<std::string> candidates;
    for (const Fence& f : fencedBlocks(answer))
        candidates.push_back(f.body);
    candidates.push_back(answer);
    std::optional<nlohmann::json> fallback;
    std::string firstError;
    for (const std::string& text : candidates) {
        for (std::size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
            const std::size_t close = matchingBrace(text, open);
            if (close == std::string::npos) {
                if (firstError.empty())
                    firstError = "a JSON object starts at character " + std::to_string(open) + " but never ends";
                continue;
            }
            try {
                nlohmann::json j = nlohmann::json::parse(text.substr(open, close - open + 1));
                if (looksLikeEdit(j))
                    return j;
                if (!fallback && j.is_object())
                    fallback = std::move(j);
                open = close; // the objects nested in it are not the answer
            } catch (const nlohmann::json::exception& e) { // a syntax error, or a number out of range
                if (firstError.empty())
                    firstError = std::string("the JSON does not parse: ") + e.what();
            }
        }
    }
    if (fallback)
        return fallback;
    error = firstError.empty() ? "the answer holds no JSON object" : firstError;
    return std::nullopt;
}

std::optional<std::string> extractProgram(const std::string& answer, std::string& problem)
{
    const std::vector<Fence> blocks = fencedBlocks(answer);
    const Fence* best = nullptr;
    for (const Fence& f : blocks)
        if (f.body.find("ks_run") != std::string::npos && (!best || f.body.size() > best->body.size()))
            best = &f;
    if (!best && blocks.size() == 1)
        best = &blocks.front();
    if (best) {
        if (best->body.find_first_not_of(" \t\r\n") == std::string::npos) {
            problem = "the code block is empty";
            return std::nullopt;
        }
        return best->body;
    }
    if (blocks.empty() && answer.find("ks_run") != std::string::npos && answer.find("#include") != std::string::npos)
        return answer;
    problem = blocks.empty() ? "the answer has no fenced code block"
                             : std::to_string(blocks.size()) + " code blocks and none defines ks_run";
    return std::nullopt;
}

} // namespace ks
