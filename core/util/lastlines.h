#pragma once

#include <cstddef>
#include <string>

namespace ks {

// The last `count` non-empty lines of a tool's output, joined by '\n' with none after the last:
// where a traceback or an allocation's refusal says what went wrong, short enough for one log line.
std::string lastLines(const std::string& text, std::size_t count);

} // namespace ks
