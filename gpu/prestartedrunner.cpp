#include "prestartedrunner.h"

#include "cudausernamespace.h"
#include "runner/protocol.h"
#include "runnerclient.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <string_view>
#include <sys/socket.h>
#include <unistd.h>

namespace ks {

namespace fs = std::filesystem;

namespace {

// One message of the handoff: the descriptors attached, their numbers in job.json in the payload.
bool sendMessage(int socket, const ksr::HandoffMessage& m)
{
    const std::string payload = ksr::toJson(m).dump();
    iovec io {const_cast<char*>(payload.data()), payload.size()};
    msghdr msg {};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    std::vector<char> control;
    if (!m.fds.empty()) {
        control.resize(CMSG_SPACE(sizeof(int) * m.fds.size()));
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        if (!c)
            return false;
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * m.fds.size());
        std::memcpy(CMSG_DATA(c), m.fds.data(), sizeof(int) * m.fds.size());
    }
    ssize_t sent = -1;
    do
        sent = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent == static_cast<ssize_t>(payload.size());
}

} // namespace

PrestartedRunner::PrestartedRunner(RunnerKind kind)
    : m_kind(std::move(kind))
{
    int pair[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        m_setupError = std::string("socketpair: ") + std::strerror(errno);
        return; // finish() reports it; no runner is started without its socket
    }
    m_socket = pair[0];
    SubprocessRequest sub;
    sub.environment = scrubbedEnvironment();
    const std::string backend(backendName(m_kind.backend));
    const std::string handoff = std::to_string(pair[1]);
    sub.argv = {runnerPath().string(), "--warm", backend, "--handoff", handoff};
    if (m_kind.python) {
        sub.argv = {
            m_kind.python->interpreter, m_kind.python->script.string(), "--warm", backend, "--handoff", handoff};
        sub.environment["TRITON_CACHE_DIR"] = m_kind.python->tritonCache.string();
        sub.environment["PYTHONDONTWRITEBYTECODE"] = "1";
        for (const auto& [variable, file] : {std::pair {"KSEARCH_SPANS_LIBRARY", "libksearch_spans.so"},
                 std::pair {"KSEARCH_CONFINE_LIBRARY", "libksearch_confine.so"}})
            if (const fs::path library = runnerLibraryPath(variable, file); !library.empty())
                sub.environment[variable] = library.string();
    }
    if (!m_kind.confined)
        sub.argv.emplace_back("--unconfined");
    else if (m_kind.backend == Backend::Cuda && m_kind.wrapper.empty() && cudaUserNamespace().use)
        sub.argv.emplace_back("--user-namespace");
    if (!m_kind.cudaVisibleDevices.empty())
        sub.environment["CUDA_VISIBLE_DEVICES"] = m_kind.cudaVisibleDevices;
    if (!m_kind.wrapper.empty()) {
        if (!m_kind.python) // keeps the network: the tool talks to it on loopback
            sub.argv.emplace_back(m_kind.wrapperConfined ? "--confined-under-tool" : "--under-tool");
        sub.argv.insert(sub.argv.begin(), m_kind.wrapper.begin(), m_kind.wrapper.end());
        sub.environment["KSEARCH_CUPTI_SPANS"] = "0"; // the tool drives CUPTI itself; nothing is timed
    }
    sub.inheritedFds = {pair[1]};
    try {
        m_process = std::make_unique<ChildProcess>(sub);
    } catch (...) {
        ::close(pair[1]);
        throw;
    }
    ::close(pair[1]);
}

bool PrestartedRunner::alive() const
{
    if (!m_process || !m_process->started() || m_socket < 0)
        return false;
    // The runner's end of the socket closes when it dies (a device that would not give it a
    // context, a kill): a hang-up here means there is nobody left to take a job.
    pollfd p {m_socket, 0, 0};
    return ::poll(&p, 1, 0) >= 0 && !(p.revents & (POLLHUP | POLLERR));
}

PrestartedRunner::~PrestartedRunner()
{
    m_process.reset(); // kills a runner that is still waiting
    if (m_socket >= 0)
        ::close(m_socket);
}

bool PrestartedRunner::waitUntilReady(std::chrono::milliseconds timeout)
{
    if (m_socket < 0 || !m_process || !m_process->started())
        return false;
    pollfd p {m_socket, POLLIN, 0};
    int ready = -1;
    do
        ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    while (ready < 0 && errno == EINTR);
    if (ready <= 0 || !(p.revents & POLLIN))
        return false;
    char buf[16] = {};
    const ssize_t got = ::recv(m_socket, buf, sizeof buf, MSG_DONTWAIT);
    return got > 0 && std::string_view(buf, static_cast<std::size_t>(got)) == ksr::kHandoffReady;
}

void PrestartedRunner::handOver(const fs::path& jobDir, const std::vector<int>& fds, std::chrono::milliseconds timeout)
{
    m_handedOverAt = std::chrono::steady_clock::now();
    m_deadline = m_handedOverAt + timeout;
    if (!m_process) {
        m_sendError = m_setupError;
        return;
    }
    if (!m_process->started())
        return;
    const std::string dir = fs::absolute(jobDir).string();
    std::size_t at = 0;
    do {
        const std::size_t n = std::min(ksr::kHandoffFdsPerMessage, fds.size() - at);
        const ksr::HandoffMessage m {dir,
            {fds.begin() + static_cast<std::ptrdiff_t>(at), fds.begin() + static_cast<std::ptrdiff_t>(at + n)},
            at + n == fds.size()};
        if (!sendMessage(m_socket, m)) {
            m_sendError = std::string("the job could not be handed to the runner: ") + std::strerror(errno);
            // Without its whole job the runner must not wait out the limit: the socket shut, it
            // sees the end of the handoff and leaves.
            ::shutdown(m_socket, SHUT_RDWR);
            break;
        }
        at += n;
    } while (at < fds.size());
}

bool PrestartedRunner::waitForOutput()
{
    if (!m_process || !m_process->started() || !m_sendError.empty())
        return false;
    return m_process->captureOutput(m_deadline);
}

void PrestartedRunner::kill()
{
    if (m_process)
        m_process->killGroup();
}

const SubprocessResult& PrestartedRunner::output() const
{
    return m_process ? m_process->partialResult() : m_result;
}

SubprocessResult PrestartedRunner::finish()
{
    if (m_finished)
        return m_result;
    m_finished = true;
    if (m_process)
        m_result = m_process->finish(m_deadline);
    // Closed only once the runner has ended: closing a socket with the runner's unread "ready"
    // still queued would reset the connection before the runner has read its job.
    if (m_socket >= 0)
        ::close(m_socket);
    m_socket = -1;
    // The limit counts from the handoff, and so does the time reported with it.
    m_result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_handedOverAt).count();
    if (!m_sendError.empty()) {
        if (!m_process || !m_process->started()) {
            m_result.started = false;
            m_result.error = m_sendError;
        } else { // it ran and ended (or left) before taking its job: its exit and words tell why
            m_result.err += (m_result.err.empty() ? "" : "\n") + ("ksearch: " + m_sendError);
        }
    }
    return m_result;
}

} // namespace ks
