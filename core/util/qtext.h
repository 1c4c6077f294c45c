#pragma once

#include <QString>

#include <string>
#include <string_view>

namespace ks {

// The one conversion of core's strings (UTF-8 std::string) into QString, for the window and the
// CLI alike.
inline QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

// Names kept as views (purposeName, verdictName, ...).
inline QString q(std::string_view s)
{
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

} // namespace ks
