#pragma once

#include "subprocess.h"

#include <task/sanitizerreport.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ks {

// compute-sanitizer: $KSEARCH_COMPUTE_SANITIZER, else the one beside nvcc, else the toolkit's
// (/usr/local/cuda/bin, /usr/local/cuda/compute-sanitizer), else any on PATH; empty when none is
// there.
std::filesystem::path computeSanitizerPath();

// The words that put a runner under `tool`; the runner's own command line follows them. The tool
// exits with kSanitizerErrorExit when it found errors, and prints only device backtraces; memcheck
// leaves kSanitizerPaddingBytes unallocated after every allocation, so that accesses just past a
// buffer are reported rather than landing in its neighbour.
std::vector<std::string> sanitizerCommand(const std::filesystem::path& program, SanitizerTool tool);
inline constexpr int kSanitizerErrorExit = 86;
inline constexpr std::size_t kSanitizerPaddingBytes = std::size_t {1} << 20;

// Reads the tool's lines (each starts with "========="; whatever the candidate printed sits
// between them and is ignored) from the wrapped runner's output. The report is complete only
// when the tool ended by itself and its closing summary ("ERROR SUMMARY", or racecheck's
// "RACECHECK SUMMARY") comes after its last finding, so a candidate
// that prints a summary of its own, or kills the tool before it prints one, cannot pass one off
// as the tool's; an exit code that says errors were found overrules a summary that says none.
SanitizerReport readSanitizerOutput(SanitizerTool tool, const SubprocessResult& process);

} // namespace ks
