#pragma once

#include <QString>

#include <string>

namespace ks::ui {

// The window's one conversion of core's strings (UTF-8 std::string) into QString.
inline QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

} // namespace ks::ui
