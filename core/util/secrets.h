#pragma once

#include <QString>

#include <string>

namespace ks {

// The secrets this process holds (API keys). Whatever leaves the process as text (log lines,
// error messages, files) goes through redactSecrets, so a key that a server echoes back in an
// error body, or that ends up in an exception message, is never written anywhere.
void registerSecret(const QString& secret);
QString redactSecrets(QString text);
std::string redactSecrets(const std::string& text);

inline constexpr char kRedacted[] = "[redacted]";

} // namespace ks
