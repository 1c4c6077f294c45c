#pragma once

#include <string>

namespace ks {

struct LoggingOptions {
    bool verbose = false; // debug level on the console
    std::string logFile; // empty: the default under the user's data folder; "-": no file
};

// Console (stderr, warnings and up unless verbose) plus a rotating file at debug level.
// Returns the log file's path, or an empty string when no file could be opened.
std::string setupLogging(const LoggingOptions& options);

// The default log file: <AppLocalDataLocation>/logs/ksearch.log.
std::string defaultLogFile();

} // namespace ks
