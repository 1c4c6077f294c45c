#pragma once

// The shared objects in this process, so that the parent can see which ones a candidate brought
// in (docs/security.md, pattern 15: a kernel library such as cuBLAS doing the work). The runner
// only reports them; ksearch decides (core/task/kernellibraries.h).

#include <set>
#include <string>
#include <vector>

namespace ksr {

// Paths of the shared objects loaded now, as the dynamic loader names them (the program and the
// vDSO left out).
std::set<std::string> loadedObjects();

// Those loaded now and not in `before`, but `candidate` (the library the job loads), sorted.
std::vector<std::string> loadedSince(const std::set<std::string>& before, const std::string& candidate);

} // namespace ksr
