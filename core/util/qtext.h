#pragma once

#include <QString>

#include <string>

namespace ks {

// The one conversion of core's strings (UTF-8 std::string) into QString, for the window and the
// CLI alike.
inline QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

} // namespace ks
