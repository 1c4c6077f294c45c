// Journal lines of any bytes, as resume reads them: each line parsed, typed and applied to a
// search state. An unreadable line is an error (an exception the reader reports), never a crash.
#include <search/journalevent.h>
#include <search/searchstate.h>
#include <task/strictjson.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
    ks::SearchState state;
    std::string line;
    while (std::getline(lines, line)) {
        std::string error;
        const auto doc = ks::parseStrictJson(line, error);
        if (!doc)
            continue;
        const nlohmann::json j = nlohmann::json::parse(doc->dump());
        if (const auto event = ks::journalEventFromJson(j, error)) {
            try {
                state.apply(*event);
            } catch (const std::exception&) { // an event that does not fit the state: reported by resume
                return 0;
            }
        }
    }
    return 0;
}
