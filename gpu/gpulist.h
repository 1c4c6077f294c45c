#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ks {

// The local GPUs of `--gpus`, as CUDA_VISIBLE_DEVICES values, one evaluator each. "all" is every
// device this process may use: the entries of its own CUDA_VISIBLE_DEVICES when that is set,
// else every device the runner's probe finds. A list ("0,2,5") is taken as written; an entry
// that is not a device index or UUID, or one given twice, is an error naming it.
std::optional<std::vector<std::string>> parseGpuList(const std::string& text, std::string& error);

} // namespace ks
