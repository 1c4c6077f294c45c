#pragma once

#include <string>

namespace ks {

// How each kind of figure reads, the same in the window, the CLI and the reports: one decimal
// for J (differences under 0.1 are timing noise), two for V and for speedups, two for
// latencies in microseconds. Plain ASCII and the C locale: these strings are also parsed back
// by scripts (bench/report.py) and compared in tests.
std::string formatFixed(double v, int digits);
std::string formatScore(double j); // "104.2"
std::string formatPriority(double v); // "0.85"
std::string formatMicros(double us); // "13.47" (the unit is the caller's)
std::string formatSpeedup(double x); // "1.25x"
std::string formatPercent(double fraction, int digits = 1); // 0.451 -> "45.1 %"
std::string formatTokens(long long n); // "812", "12.3k", "1.25M"
std::string formatDollars(double d); // "$0.0421", "$3.20"

} // namespace ks
