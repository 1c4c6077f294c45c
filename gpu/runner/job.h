#pragma once

// ksearch-runner's view of one job: the protocol's types (protocol.h), read from DIR/job.json.

#include "protocol.h"

#include <string>

namespace ksr {

// Reads DIR/job.json. Throws std::runtime_error naming the file and the field on malformed input.
Job readJob(const std::string& dir);

} // namespace ksr
