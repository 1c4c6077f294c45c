#pragma once

// The runner's end of the handoff socket (protocol.h, "the handoff socket"): it receives the job
// folder and the job's descriptors, and renumbers job.json's buffers to the descriptors it got.

#include "protocol.h"

#include <map>
#include <optional>
#include <string>

namespace ksr {

struct ReceivedJob {
    std::string dir;
    std::map<int, int> descriptors; // the number job.json uses -> the descriptor received
};

// Says the runner is ready, then blocks until the whole job has arrived. nullopt when the socket closes first (ksearch
// no longer needs this runner). Throws std::runtime_error on a malformed message.
std::optional<ReceivedJob> receiveJob(int socket);

// Points every buffer of the job at the descriptor received for it. Throws std::runtime_error
// naming the call and buffer whose descriptor was not handed over.
void renumberDescriptors(Job& job, const std::map<int, int>& descriptors);

} // namespace ksr
