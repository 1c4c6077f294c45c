#include "fakellm.h"

#include "testsupport.h"

#include <nlohmann/json.hpp>

#include <regex>

namespace ks::test {

namespace {

using json = nlohmann::json;

// Open nodes in the rendered tree: "n3 [open, V 0.30] [[slow]] ...".
std::vector<std::pair<std::string, std::string>> openNodes(const std::string& prompt)
{
    std::vector<std::pair<std::string, std::string>> out;
    static const std::regex line(R"((n\d+) \[open, V [0-9.]+\] ([^\n]*))");
    for (auto it = std::sregex_iterator(prompt.begin(), prompt.end(), line); it != std::sregex_iterator(); ++it)
        out.push_back({(*it)[1], (*it)[2]});
    return out;
}

std::string openWith(const std::string& prompt, const char* marker)
{
    for (const auto& [id, intent] : openNodes(prompt))
        if (contains(intent, marker))
            return id;
    return {};
}

std::string planner(const std::string& prompt, bool repair, const std::string& mode)
{
    if (contains(mode.c_str(), "garbage"))
        return "I would fuse everything into one kernel.";
    json edit {
        {"reasoning", "scripted"}, {"insert", json::array()}, {"update", json::array()}, {"prune", json::array()}};
    if (contains(prompt, "Start the tree")) {
        if (contains(mode.c_str(), "malformed_init") && !repair)
            return "Let me think about the memory traffic first; I will answer in the next message.";
        edit["insert"] = {{{"parent", "root"}, {"intent", "[[plain]] a straightforward loop"}, {"priority", 0.9},
                              {"rationale", "simple first"}},
            {{"parent", "root"}, {"intent", "[[broken]] hand-vectorised intrinsics"}, {"priority", 0.6},
                {"rationale", "could be fast"}},
            {{"parent", "root"}, {"intent", "[[slow]] a cautious version"}, {"priority", 0.3}, {"rationale", "safe"}}};
        return "Here is the plan.\n```json\n" + edit.dump(2) + "\n```\n";
    }
    std::smatch m;
    static const std::regex ended(R"(The action that just ended: (n\d+) \"([^\"]*)\")");
    static const std::regex failed(R"(The action on (n\d+) \"([^\"]*)\")");
    if (std::regex_search(prompt, m, ended)) {
        const std::string node = m[1], intent = m[2];
        if (contains(mode.c_str(), "invalid_update") && !repair) {
            edit["update"] = {{{"node", node}, {"priority", 1.5}, {"rationale", "over-confident"}}};
            return edit.dump();
        }
        const bool fast = contains(intent, "[[fast]]");
        edit["insert"] = {{{"parent", node},
            {"intent", fast ? "[[fast]] keep the single pass; tidy the loop" : "[[fast]] a single pass over the data"},
            {"priority", fast ? 0.5 : 0.8}, {"rationale", "refine what passed"}}};
        if (const std::string slow = openWith(prompt, "[[slow]]"); !slow.empty()) {
            if (fast)
                edit["prune"] = {{{"node", slow}, {"rationale", "two passes are worse than one"}}};
            else
                edit["update"] = {{{"node", slow}, {"priority", 0.2}, {"rationale", "the plain loop already passed"}}};
        }
        return edit.dump();
    }
    if (std::regex_search(prompt, m, failed)) {
        edit["insert"] = {{{"parent", "root"}, {"intent", "[[plain]] a simpler rewrite of " + std::string(m[1])},
            {"priority", 0.4}, {"rationale", "the idea was too hard as stated"}}};
        if (const std::string tidy = openWith(prompt, "tidy the loop"); !tidy.empty())
            edit["update"] = {{{"node", tidy}, {"priority", 0.7}, {"rationale", "safer than the failed idea"}}};
        return edit.dump();
    }
    edit["insert"] = {{{"parent", "root"}, {"intent", "[[plain]] another straightforward loop"}, {"priority", 0.5},
        {"rationale", "the frontier was empty"}}};
    return edit.dump();
}

std::string coder(const std::string& prompt, const std::string& mode)
{
    std::smatch m;
    static const std::regex intentLine(R"(Intent(?: to implement)? \((n\d+)\): ([^\n]*))");
    int passes = 8; // the baseline's
    if (std::regex_search(prompt, m, intentLine)) {
        const std::string intent = m[2];
        if (contains(intent, "[[broken]]")) {
            if (contains(mode.c_str(), "nocode_broken") && contains(prompt, "Intent to implement"))
                return "I would use AVX-512 intrinsics here, but I need to think about alignment first.";
            passes = 0;
        } else if (contains(intent, "[[fast]]")) {
            passes = 1;
        } else if (contains(intent, "[[slow]]")) {
            passes = 32;
        } else if (contains(intent, "[[plain]]")) {
            passes = 4;
        }
    } else { // evolve and greedy: a quarter of the passes of the parent program
        static const std::regex parentPasses(R"(parent program[\s\S]*?// passes: (\d+))");
        passes = std::regex_search(prompt, m, parentPasses) ? std::max(1, std::stoi(m[1]) / 4) : 4;
    }
    return "Here is the kernel.\n```cpp\n" + scaleKernel(passes) + "```\n";
}

} // namespace

std::string scaleKernel(int passes)
{
    if (passes == 0)
        return "#include \"ks_task.h\"\n// passes: 0\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, "
               "ks_stream_t) {\n    __m512 v = oops;\n    return 0;\n}\n";
    // Compute-bound on purpose: each pass is 16 dependent multiply-adds per element by factors the
    // compiler cannot see (1 and 0, read from volatiles), so the cost grows with the passes and
    // hardly depends on caches, and the result stays exactly alpha * x.
    return "#include \"ks_task.h\"\n// passes: " + std::to_string(passes)
        + "\nextern \"C\" int ks_run(const KsArgs* a, void*, size_t, ks_stream_t) {\n"
          "    static volatile float kOne = 1.0f, kZero = 0.0f;\n"
          "    const float one = kOne, zero = kZero;\n"
          "    for (int64_t i = 0; i < a->n; ++i) {\n"
          "        float v = a->alpha * a->x[i];\n"
          "        for (int k = 0; k < "
        + std::to_string(16 * passes)
        + "; ++k) v = v * one + zero;\n"
          "        a->y[i] = v;\n    }\n    return 0;\n}\n";
}

std::string fakeLlmAnswer(
    const std::string& role, const std::vector<std::pair<std::string, std::string>>& messages, const std::string& mode)
{
    std::string prompt;
    for (const auto& [r, content] : messages)
        if (r == "user") {
            prompt = content;
            break;
        }
    const bool repair = messages.size() > 2;
    return role == "planner" ? planner(prompt, repair, mode) : coder(prompt, mode);
}

} // namespace ks::test
