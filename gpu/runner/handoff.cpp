#include "handoff.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <sys/socket.h>
#include <vector>

namespace ksr {

std::optional<ReceivedJob> receiveJob(int socket)
{
    // Told, not asked: a ksearch that has already gone away is found out by the receive below.
    ::send(socket, kHandoffReady, std::strlen(kHandoffReady), MSG_NOSIGNAL);
    ReceivedJob job;
    for (;;) {
        std::vector<char> payload(kHandoffMessageBytes);
        std::vector<char> control(CMSG_SPACE(sizeof(int) * kHandoffFdsPerMessage));
        iovec io {payload.data(), payload.size()};
        msghdr msg {};
        msg.msg_iov = &io;
        msg.msg_iovlen = 1;
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        ssize_t got = -1;
        do
            got = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
        while (got < 0 && errno == EINTR);
        if (got == 0)
            return std::nullopt;
        if (got < 0)
            throw std::runtime_error(std::string("handoff socket: ") + std::strerror(errno));
        if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
            throw std::runtime_error("handoff socket: a message was cut short");
        std::vector<int> received;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            const auto* data = reinterpret_cast<const unsigned char*>(CMSG_DATA(c));
            for (std::size_t k = 0; k < n; ++k) {
                int fd = -1;
                std::memcpy(&fd, data + k * sizeof(int), sizeof(int));
                received.push_back(fd);
            }
        }
        HandoffMessage m;
        try {
            m = handoffFromJson(nlohmann::json::parse(payload.begin(), payload.begin() + got));
        } catch (const nlohmann::json::exception& e) {
            throw std::runtime_error(std::string("handoff socket: malformed message: ") + e.what());
        }
        if (m.fds.size() != received.size())
            throw std::runtime_error("handoff socket: " + std::to_string(m.fds.size()) + " descriptors named, "
                + std::to_string(received.size()) + " received");
        for (std::size_t k = 0; k < m.fds.size(); ++k)
            job.descriptors[m.fds[k]] = received[k];
        job.dir = m.jobDir;
        if (m.last)
            return job;
    }
}

void renumberDescriptors(Job& job, const std::map<int, int>& descriptors)
{
    auto renumber = [&](BufferSet& set, const std::string& call) {
        for (auto& [name, buffer] : set) {
            const auto it = descriptors.find(buffer.fd);
            if (it == descriptors.end())
                throw std::runtime_error("call " + call + ", buffer " + name + ": descriptor "
                    + std::to_string(buffer.fd) + " was not handed over");
            buffer.fd = it->second;
        }
    };
    for (auto& call : job.calls) {
        renumber(call.inputs, call.id);
        renumber(call.outputs, call.id);
        renumber(call.repeatOutputs, call.id);
        for (auto* sets : {&call.timingInputs, &call.timingOutputs, &call.swappedOutputs})
            for (auto& set : *sets)
                renumber(set, call.id);
    }
}

} // namespace ksr
