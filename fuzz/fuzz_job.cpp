// The runner's job.json of any bytes: read as ksearch-runner reads it. A malformed job is an error
// naming the field (an exception), never a crash.
#include "protocol.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const nlohmann::json j = nlohmann::json::parse(
        reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size, nullptr, false);
    if (j.is_discarded())
        return 0;
    try {
        (void)ksr::jobFromJson(j);
    } catch (const std::exception&) {
    }
    return 0;
}
