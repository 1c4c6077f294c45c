#include "strictjson.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace ks {

std::optional<nlohmann::ordered_json> parseStrictJson(const std::string& text, std::string& error)
{
    std::vector<std::set<std::string>> keysPerObject;
    std::string duplicate;
    std::vector<std::string> path;
    auto callback = [&](int /*depth*/, nlohmann::ordered_json::parse_event_t event, nlohmann::ordered_json& parsed) {
        using Event = nlohmann::ordered_json::parse_event_t;
        switch (event) {
        case Event::object_start:
            keysPerObject.emplace_back();
            break;
        case Event::object_end:
            if (!keysPerObject.empty())
                keysPerObject.pop_back();
            break;
        case Event::key:
            if (!keysPerObject.empty() && !keysPerObject.back().insert(parsed.get<std::string>()).second
                && duplicate.empty())
                duplicate = parsed.get<std::string>();
            break;
        default:
            break;
        }
        return true;
    };
    try {
        auto doc = nlohmann::ordered_json::parse(text, callback);
        if (!duplicate.empty()) {
            error = "duplicate key '" + duplicate + "'";
            return std::nullopt;
        }
        return doc;
    } catch (const nlohmann::ordered_json::exception& e) {
        // A syntax error, or a number out of range (1e999): nlohmann's message carries the place;
        // drop its "[json.exception...]" prefix.
        std::string what = e.what();
        const auto pos = what.find("] ");
        error = "invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos + 2));
        return std::nullopt;
    }
}

std::optional<std::string> readTextFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace ks
