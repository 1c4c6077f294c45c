#include "demollm.h"

#include "testsupport.h"

#include <nlohmann/json.hpp>

#include <regex>

namespace ks::test {

namespace {

using json = nlohmann::json;

const char* kReorder = "Reorder the loops to i-k-j so that the innermost loop streams a row of B into a row of C "
                       "(unit stride, vectorisable)";
const char* kRegisters = "Register blocking: compute a 4x16 block of C per step, keeping the accumulators in registers";
const char* kTiles = "Tile all three loops for the caches (64x64x64 blocks)";
const char* kOpenMp = "Parallelise the row loop with OpenMP (static schedule): each thread owns whole rows of C";
const char* kUnroll = "Unroll the k loop by 4 so each pass over a row of C does four multiply-adds per element";
const char* kRestrict = "Declare the row pointers __restrict__ so the compiler vectorises the j loop without run-time "
                        "alias checks";
const char* kPanels = "Cache-block the k loop in 128-wide panels of B inside each thread's rows";
const char* kSmallRegisters = "Register blocking, smaller: 2 rows of C at a time on top of the OpenMP version";

std::string openNode(const std::string& prompt, const std::string& intentStart)
{
    static const std::regex line(R"((n\d+) \[open, V [0-9.]+\] ([^\n]*))");
    for (auto it = std::sregex_iterator(prompt.begin(), prompt.end(), line); it != std::sregex_iterator(); ++it)
        if ((*it)[2].str().rfind(intentStart.substr(0, 40), 0) == 0)
            return (*it)[1];
    return {};
}

json insert(const std::string& parent, const char* intent, double v, const char* why)
{
    return {{"parent", parent}, {"intent", intent}, {"priority", v}, {"rationale", why}};
}

std::string planner(const std::string& prompt)
{
    json edit {{"insert", json::array()}, {"update", json::array()}, {"prune", json::array()}};
    if (contains(prompt, "Start the tree")) {
        edit["reasoning"] = "The baseline walks B down its columns: one cache line per multiply-add, so it is bound by "
                            "memory latency, not arithmetic. Fixing the access order comes first; blocking and "
                            "registers pay only on top of it.";
        edit["insert"] = {
            insert("root", kReorder, 0.85, "unit stride in B and C lets the compiler vectorise; expect 5-10x"),
            insert("root", kRegisters, 0.55, "fewer loads per flop, but easy to get wrong"),
            insert("root", kTiles, 0.4, "helps once the access order is right; alone it keeps the bad order")};
        return "```json\n" + edit.dump(2) + "\n```";
    }
    std::smatch m;
    static const std::regex ended(R"(The action that just ended: (n\d+) \"([^\"]*)\")");
    static const std::regex failed(R"(The action on (n\d+) \"([^\"]*)\")");
    if (std::regex_search(prompt, m, ended)) {
        const std::string node = m[1], intent = m[2];
        if (contains(intent, "i-k-j")) {
            edit["reasoning"] = "i-k-j passed with a large gain. The kernel is now compute-friendly; the next gain is "
                                "the second core. Tiling alone is now less promising than panels inside threads.";
            edit["insert"] = {insert(node, kOpenMp, 0.8, "two cores, independent rows: up to 2x"),
                insert(node, kUnroll, 0.45, "fewer loads and stores of C, small gain")};
            if (const std::string tiles = openNode(prompt, kTiles); !tiles.empty())
                edit["update"] = {{{"node", tiles}, {"priority", 0.3}, {"rationale", "i-k-j already streams rows"}}};
        } else if (contains(intent, "OpenMP")) {
            edit["reasoning"] = "The threads scale. B no longer fits the cache for the deep workload; panels of B keep "
                                "it resident per thread.";
            edit["insert"] = {insert(node, kPanels, 0.6, "the deep workload reads B from memory k/128 times less")};
            if (const std::string regs = openNode(prompt, kRegisters); !regs.empty())
                edit["update"] = {
                    {{"node", regs}, {"priority", 0.25}, {"rationale", "the threads gave more than registers would"}}};
        } else if (contains(intent, "Cache-block")) {
            edit["reasoning"] = "Panels passed but gained little: the working set already fit. Plain tiling is now "
                                "redundant.";
            edit["insert"] = {insert(node, kUnroll, 0.5, "the remaining cost is loads and stores of C")};
            if (const std::string tiles = openNode(prompt, kTiles); !tiles.empty())
                edit["prune"] = {{{"node", tiles}, {"rationale", "superseded by panels inside the threads"}}};
        } else if (contains(intent, "Unroll")) {
            edit["reasoning"] = "Unrolling helped a little. The compiler still guards the j loop against C aliasing "
                                "A or B; telling it they do not is the next small step.";
            edit["insert"] = {insert(node, kRestrict, 0.3, "removes the alias checks around the vector loop")};
        } else {
            edit["reasoning"] = "A small refinement; keep polishing the best branch.";
            edit["insert"] = {insert(node, kUnroll, 0.2, "another pass over the best program")};
        }
        return edit.dump(2);
    }
    if (std::regex_search(prompt, m, failed)) {
        edit["reasoning"] = "Register blocking failed twice (a compile error, then wrong indices). The idea is sound "
                            "but too big a step from the baseline; a smaller version on top of the threaded kernel.";
        edit["insert"] = {insert("root", kSmallRegisters, 0.35, "smaller step, same idea")};
        return edit.dump(2);
    }
    edit["reasoning"] = "The frontier is empty; polish the best kernel.";
    edit["insert"] = {insert("root", kReorder, 0.5, "a fresh start from the best-known design")};
    return edit.dump(2);
}

const char* kHeader = "#include \"ks_task.h\"\n";

std::string ikj(bool omp, bool unroll, bool restrictPointers = false)
{
    const std::string out = restrictPointers ? "float* __restrict__ " : "float* ";
    const std::string in = restrictPointers ? "const float* __restrict__ " : "const float* ";
    std::string s = kHeader;
    s += "// C = A x B, loops in i-k-j order: the inner loop is unit-stride in B and C.\n";
    s += "extern \"C\" int ks_run(const KsArgs* p, void*, size_t, ks_stream_t)\n{\n";
    s += "    const int64_t m = p->m, n = p->n, k = p->k;\n";
    if (omp)
        s += "#pragma omp parallel for schedule(static)\n";
    s += "    for (int64_t i = 0; i < m; ++i) {\n        " + out + "c = p->c + i * n;\n"
        + "        for (int64_t j = 0; j < n; ++j)\n            c[j] = 0.0f;\n";
    if (unroll)
        s += "        int64_t t = 0;\n        for (; t + 4 <= k; t += 4) {\n"
             "            const float a0 = p->a[i * k + t], a1 = p->a[i * k + t + 1], a2 = p->a[i * k + t + 2], "
             "a3 = p->a[i * k + t + 3];\n"
             "            "
            + in + "b0 = p->b + t * n;\n            " + in + "b1 = b0 + n;\n            " + in
            + "b2 = b1 + n;\n            " + in + "b3 = b2 + n;\n"
            + "            for (int64_t j = 0; j < n; ++j)\n"
              "                c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];\n        }\n"
              "        for (; t < k; ++t) {\n            const float av = p->a[i * k + t];\n"
              "            "
            + in + "b = p->b + t * n;\n"
            + "            for (int64_t j = 0; j < n; ++j)\n                c[j] += av * b[j];\n        }\n";
    else
        s += "        for (int64_t t = 0; t < k; ++t) {\n            const float av = p->a[i * k + t];\n"
             "            const float* b = p->b + t * n;\n"
             "            for (int64_t j = 0; j < n; ++j)\n                c[j] += av * b[j];\n        }\n";
    s += "    }\n    return 0;\n}\n";
    return s;
}

std::string panels(bool zeroC)
{
    std::string s = kHeader;
    s += "// Threads own rows of C; the k loop walks B in 128-row panels that stay in cache.\n";
    s += "extern \"C\" int ks_run(const KsArgs* p, void*, size_t, ks_stream_t)\n{\n";
    s += "    const int64_t m = p->m, n = p->n, k = p->k, panel = 128;\n";
    s += "#pragma omp parallel for schedule(static)\n    for (int64_t i = 0; i < m; ++i) {\n";
    if (zeroC)
        s += "        for (int64_t j = 0; j < n; ++j)\n            p->c[i * n + j] = 0.0f;\n";
    s += "    }\n    for (int64_t t0 = 0; t0 < k; t0 += panel) {\n        const int64_t t1 = t0 + panel < k ? t0 + "
         "panel : k;\n"
         "#pragma omp parallel for schedule(static)\n        for (int64_t i = 0; i < m; ++i) {\n"
         "            float* c = p->c + i * n;\n            for (int64_t t = t0; t < t1; ++t) {\n"
         "                const float av = p->a[i * k + t];\n                const float* b = p->b + t * n;\n"
         "                for (int64_t j = 0; j < n; ++j)\n                    c[j] += av * b[j];\n            }\n"
         "        }\n    }\n    return 0;\n}\n";
    return s;
}

std::string tiles()
{
    return std::string(kHeader)
        + "// 64x64x64 tiles, i-k-j inside each tile.\nextern \"C\" int ks_run(const KsArgs* p, void*, size_t, "
          "ks_stream_t)\n{\n    const int64_t m = p->m, n = p->n, k = p->k, T = 64;\n"
          "    for (int64_t x = 0; x < m * n; ++x)\n        p->c[x] = 0.0f;\n"
          "    for (int64_t i0 = 0; i0 < m; i0 += T)\n        for (int64_t t0 = 0; t0 < k; t0 += T)\n"
          "            for (int64_t j0 = 0; j0 < n; j0 += T)\n"
          "                for (int64_t i = i0; i < i0 + T && i < m; ++i)\n"
          "                    for (int64_t t = t0; t < t0 + T && t < k; ++t) {\n"
          "                        const float av = p->a[i * k + t];\n"
          "                        for (int64_t j = j0; j < j0 + T && j < n; ++j)\n"
          "                            p->c[i * n + j] += av * p->b[t * n + j];\n                    }\n"
          "    return 0;\n}\n";
}

std::string registers(bool compiles)
{
    // Both versions are wrong: the first does not compile, the second mixes up B's indices.
    return std::string(kHeader)
        + "// A 4x16 block of C in registers per step.\nextern \"C\" int ks_run(const KsArgs* p, "
          "void*, size_t, ks_stream_t)\n{\n    const int64_t m = p->m, n = p->n, k = p->k;\n"
        + (compiles ? "" : "    float acc[4][16] = {0}\n") // the missing semicolon
        + "    for (int64_t i = 0; i < m; i += 4)\n        for (int64_t j = 0; j < n; j += 16) {\n"
          "            float acc[4][16] = {};\n            for (int64_t t = 0; t < k; ++t)\n"
          "                for (int r = 0; r < 4; ++r)\n                    for (int s = 0; s < 16; ++s)\n"
          "                        acc[r][s] += p->a[(i + r) * k + t] * p->b[t * k + j + s];\n"
          "            for (int r = 0; r < 4; ++r)\n                for (int s = 0; s < 16; ++s)\n"
          "                    p->c[(i + r) * n + j + s] = acc[r][s];\n        }\n    return 0;\n}\n";
}

std::string coder(const std::string& prompt)
{
    std::smatch m;
    static const std::regex intentLine(R"(Intent(?: to implement)? \((n\d+)\): ([^\n]*))");
    const std::string intent = std::regex_search(prompt, m, intentLine) ? std::string(m[2]) : std::string();
    const bool first = contains(prompt, "Intent to implement");
    const bool debugging = contains(prompt, "nothing has passed yet");
    const bool parentThreaded = contains(prompt, "#pragma omp");
    std::string program, note;
    if (contains(intent, "Register blocking:")) {
        program = registers(!first);
        note = first ? "A 4x16 register block." : "Fixed the missing semicolon.";
    } else if (contains(intent, "Register blocking, smaller")) {
        program = ikj(true, true);
        note = "Two rows at a time did not vectorise; this keeps the unrolled rows instead.";
    } else if (contains(intent, "Cache-block")) {
        program = panels(!(first && !debugging));
        note = first ? "Panels of B per thread." : "The output must be zeroed before the panels accumulate into it.";
    } else if (contains(intent, "__restrict__")) {
        program = ikj(parentThreaded || contains(prompt, "OpenMP"), true, true);
        note = "Row pointers declared __restrict__.";
    } else if (contains(intent, "Unroll")) {
        program = ikj(parentThreaded || contains(prompt, "OpenMP"), true);
        note = "k unrolled by four.";
    } else if (contains(intent, "OpenMP")) {
        program = ikj(true, false);
        note = "Rows of C split across threads.";
    } else if (contains(intent, "Tile")) {
        program = tiles();
        note = "Tiled loops.";
    } else {
        program = ikj(false, false);
        note = "i-k-j order.";
    }
    return note + "\n\n```cpp\n" + program + "```\n";
}

} // namespace

std::string demoLlmAnswer(const std::string& role, const std::vector<std::pair<std::string, std::string>>& messages)
{
    std::string prompt;
    for (const auto& [r, content] : messages)
        if (r == "user") {
            prompt = content;
            break;
        }
    return role == "planner" ? planner(prompt) : coder(prompt);
}

} // namespace ks::test
