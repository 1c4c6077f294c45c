#pragma once

#include "definition.h"
#include "diagnostics.h"
#include "workload.h"

#include <string>
#include <vector>

namespace ks {

// Parses and validates workloads.jsonl (FlashInfer-Bench Workload lines) against a definition:
// axes complete and consistent, every input sourced, generators well-formed, constraints hold,
// uuids unique. Problems are reported as "<file>:<line>" with the field path.
std::vector<Workload> parseWorkloads(
    const std::string& text, const Definition& def, const std::string& file, Diagnostics& diag);

} // namespace ks
