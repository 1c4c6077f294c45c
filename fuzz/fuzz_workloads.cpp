// workloads.jsonl of any bytes against a real definition with axes, constraints and index inputs
// (GQA paged decode): every line parsed and validated; never a crash or a hang.
#include <task/definitionparser.h>
#include <task/strictjson.h>
#include <task/workloadparser.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

namespace {

std::optional<ks::Definition> g_definition;

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    const std::string file = KSEARCH_SOURCE_DIR "/tasks/gqa_paged_decode_h32_kv4_d128_ps1/definition.json";
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    std::string error;
    ks::Diagnostics diag;
    if (const auto doc = ks::parseStrictJson(text.str(), error))
        g_definition = ks::parseDefinition(*doc, file, diag);
    if (!g_definition) {
        std::cerr << "fuzz_workloads: cannot load " << file << "\n";
        std::abort();
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    ks::Diagnostics diag;
    (void)ks::parseWorkloads(
        std::string(reinterpret_cast<const char*>(data), size), *g_definition, "fuzz/workloads.jsonl", diag);
    return 0;
}
