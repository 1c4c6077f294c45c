#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ks::test {

// A scripted stand-in for the LLM on the example task (resources/examples/matmul-demo/task, C =
// A x B on the host): it plans and writes real matmul kernels (loop reordering, OpenMP, cache
// blocking, unrolling, and one idea it gets wrong twice), deciding from the request alone. It
// made the bundled example session and drives the window's end-to-end test. No model is called.
std::string demoLlmAnswer(const std::string& role, const std::vector<std::pair<std::string, std::string>>& messages);

} // namespace ks::test
