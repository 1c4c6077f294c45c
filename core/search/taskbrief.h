#pragma once

#include "searchstate.h"

#include <task/language.h>
#include <task/task.h>

#include <string>

namespace ks {

// The task as the LLM reads it: definition, tensors, workloads, the kernel ABI and (in full)
// the reference implementation.
// The interface shown is the one of `language`: ks_task.h for cuda and cpp, run(...) for python
// and triton.
std::string describeTask(const Task& task, bool withReference, Language language = Language::Cuda);

// The entry point of a Python candidate: run's parameters, what each receives, and the outputs.
std::string pythonEntryForPrompt(const Task& task);

// The part of ks_task.h a kernel writer needs (KsArgs and ks_run), with the element types of
// the shared prelude summarised instead of spelled out.
std::string abiForPrompt(const Task& task);

// Per-workload latencies of the baseline (J = 100) from the latest evaluation that measured
// them; empty before the first evaluation.
std::string baselineTargets(const Task& task, const SearchState& state);

// One attempt's outcome: verdict, J, latencies against the baseline per workload, resource use
// and, when it failed, the trimmed log.
std::string describeAttempt(const Task& task, const Attempt& attempt, std::size_t logChars = 3000);

// "batch_size=16, num_kv_indices=23079" for a workload uuid (or its prefix).
std::string workloadLabel(const Task& task, const std::string& uuid);

} // namespace ks
