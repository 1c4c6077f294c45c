// A definition.json of any bytes: parsed strictly, then validated; never a crash or a hang.
#include <task/definitionparser.h>
#include <task/strictjson.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::string error;
    const auto doc = ks::parseStrictJson(std::string(reinterpret_cast<const char*>(data), size), error);
    if (!doc)
        return 0;
    ks::Diagnostics diag;
    (void)ks::parseDefinition(*doc, "fuzz/definition.json", diag);
    return 0;
}
