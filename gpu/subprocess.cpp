#include "subprocess.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sstream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ks {
namespace {

void closeQuietly(int& fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

} // namespace

std::string SubprocessResult::describeExit() const
{
    if (!started)
        return "could not start: " + error;
    if (timedOut) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "timed out after %.1f s", seconds);
        return buf;
    }
    if (signal)
        return std::string("killed by ")
            + (sigabbrev_np(signal) ? std::string("SIG") + sigabbrev_np(signal) : "signal " + std::to_string(signal));
    return "exit code " + std::to_string(exitCode);
}

bool isSecretVariable(const std::string& name)
{
    std::string upper = name;
    std::transform(
        upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    auto endsWith = [&](const char* suffix) {
        const std::size_t n = std::strlen(suffix);
        return upper.size() >= n && upper.compare(upper.size() - n, n, suffix) == 0;
    };
    static const std::array<const char*, 8> exact {"AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS", "HF_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "SSH_AUTH_SOCK", "NETRC"};
    for (const char* e : exact)
        if (upper == e)
            return true;
    return endsWith("_API_KEY") || endsWith("_APIKEY") || endsWith("_TOKEN") || endsWith("_ACCESS_KEY")
        || endsWith("_PRIVATE_KEY") || upper == "API_KEY" || upper.find("SECRET") != std::string::npos
        || upper.find("PASSWORD") != std::string::npos || upper.find("PASSWD") != std::string::npos
        || upper.find("CREDENTIAL") != std::string::npos;
}

std::filesystem::path findOnPath(const std::string& program)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (program.find('/') != std::string::npos)
        return fs::exists(program, ec) ? fs::absolute(program, ec) : fs::path();
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');)
        if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0)
            return fs::absolute(fs::path(dir) / program, ec);
    return {};
}

std::map<std::string, std::string> scrubbedEnvironment()
{
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
        const std::string entry = *e;
        const auto eq = entry.find('=');
        if (eq == std::string::npos)
            continue;
        std::string name = entry.substr(0, eq);
        if (!isSecretVariable(name))
            env[name] = entry.substr(eq + 1);
    }
    return env;
}

ChildProcess::ChildProcess(const SubprocessRequest& request)
    : m_program(request.argv.empty() ? std::string() : request.argv.front())
    , m_maxCapturedBytes(request.maxCapturedBytes)
{
    if (request.argv.empty()) {
        m_result.error = "no program given";
        return;
    }
    int outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1}, execPipe[2] = {-1, -1};
    if (::pipe2(outPipe, O_CLOEXEC) != 0 || ::pipe2(errPipe, O_CLOEXEC) != 0 || ::pipe2(execPipe, O_CLOEXEC) != 0) {
        m_result.error = std::string("pipe: ") + std::strerror(errno);
        for (int* p : {outPipe, errPipe, execPipe})
            for (int k = 0; k < 2; ++k)
                closeQuietly(p[k]);
        return;
    }
    // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
    std::vector<std::string> envStrings;
    for (const auto& [k, v] : request.environment)
        envStrings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : envStrings)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = request.argv;
    for (auto& s : args)
        argv.push_back(s.data());
    argv.push_back(nullptr);

    m_start = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) {
        m_result.error = std::string("fork: ") + std::strerror(errno);
        for (int* p : {outPipe, errPipe, execPipe})
            for (int k = 0; k < 2; ++k)
                closeQuietly(p[k]);
        return;
    }
    if (pid == 0) {
        ::setpgid(0, 0);
        ::dup2(outPipe[1], STDOUT_FILENO);
        ::dup2(errPipe[1], STDERR_FILENO);
        const int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            ::dup2(devnull, STDIN_FILENO);
        for (const int fd : request.inheritedFds)
            ::fcntl(fd, F_SETFD, 0);
        if (!request.workingDirectory.empty() && ::chdir(request.workingDirectory.c_str()) != 0) {
            const int e = errno;
            [[maybe_unused]] auto n = ::write(execPipe[1], &e, sizeof e);
            ::_exit(127);
        }
        ::execvpe(argv[0], argv.data(), envp.data());
        const int e = errno;
        [[maybe_unused]] auto n = ::write(execPipe[1], &e, sizeof e);
        ::_exit(127);
    }
    ::setpgid(pid, pid); // also from the parent, so a kill right after fork still reaches the group
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    ::close(execPipe[1]);
    int execErrno = 0;
    if (::read(execPipe[0], &execErrno, sizeof execErrno) == static_cast<ssize_t>(sizeof execErrno)) {
        ::waitpid(pid, nullptr, 0);
        closeQuietly(outPipe[0]);
        closeQuietly(errPipe[0]);
        ::close(execPipe[0]);
        m_result.error = m_program + ": " + std::strerror(execErrno);
        return;
    }
    ::close(execPipe[0]);
    m_pid = pid;
    m_out = outPipe[0];
    m_err = errPipe[0];
    m_result.started = true;
}

ChildProcess::~ChildProcess()
{
    if (m_pid > 0 && !m_finished) {
        ::kill(-m_pid, SIGKILL);
        ::waitpid(m_pid, nullptr, 0);
    }
    closeQuietly(m_out);
    closeQuietly(m_err);
}

bool ChildProcess::captureOutput(std::chrono::steady_clock::time_point deadline)
{
    if (!m_result.started)
        return false;
    if (m_finished || m_outputCaptured)
        return !m_result.timedOut;
    m_outputCaptured = true;
    SubprocessResult& result = m_result;
    std::array<int*, 2> fds {&m_out, &m_err};
    std::array<std::string*, 2> sinks {&result.out, &result.err};
    while (m_out >= 0 || m_err >= 0) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            result.timedOut = true;
            break;
        }
        std::array<pollfd, 2> pfd {};
        int n = 0;
        std::array<int, 2> which {};
        for (int i = 0; i < 2; ++i)
            if (*fds[i] >= 0) {
                pfd[n] = {*fds[i], POLLIN, 0};
                which[n++] = i;
            }
        const auto waitMs = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        const int ready =
            ::poll(pfd.data(), static_cast<nfds_t>(n), static_cast<int>(std::min<long long>(waitMs + 1, 1000)));
        if (ready < 0 && errno != EINTR)
            break;
        for (int k = 0; k < n; ++k) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[65536];
            const ssize_t got = ::read(pfd[k].fd, buf, sizeof buf);
            const int i = which[k];
            if (got <= 0) {
                closeQuietly(*fds[i]);
            } else if (sinks[i]->size() < m_maxCapturedBytes) {
                sinks[i]->append(
                    buf, std::min<std::size_t>(static_cast<std::size_t>(got), m_maxCapturedBytes - sinks[i]->size()));
            }
        }
    }
    return !result.timedOut;
}

void ChildProcess::killGroup()
{
    if (m_pid > 0 && !m_finished)
        ::kill(-m_pid, SIGKILL);
}

SubprocessResult ChildProcess::finish(std::chrono::steady_clock::time_point deadline)
{
    if (!m_result.started || m_finished)
        return m_result;
    captureOutput(deadline);
    m_finished = true;
    SubprocessResult& result = m_result;
    const pid_t pid = m_pid;
    int status = 0;
    rusage usage {};
    if (result.timedOut) {
        ::kill(-pid, SIGKILL);
        ::wait4(pid, &status, 0, &usage);
    } else {
        // Pipes closed: the program exited, or closed them and keeps running. Wait out the deadline.
        for (;;) {
            const pid_t done = ::wait4(pid, &status, WNOHANG, &usage);
            if (done == pid)
                break;
            if (std::chrono::steady_clock::now() >= deadline) {
                result.timedOut = true;
                ::kill(-pid, SIGKILL);
                ::wait4(pid, &status, 0, &usage);
                break;
            }
            ::usleep(2000);
        }
        ::kill(-pid, SIGKILL); // reap any leftover children of the group
    }
    closeQuietly(m_out);
    closeQuietly(m_err);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    result.maxRssKiB = usage.ru_maxrss;
    if (!result.timedOut) {
        if (WIFEXITED(status))
            result.exitCode = WEXITSTATUS(status);
        else if (WIFSIGNALED(status))
            result.signal = WTERMSIG(status);
    }
    return result;
}

SubprocessResult runSubprocess(const SubprocessRequest& request)
{
    ChildProcess child(request);
    return child.finish(std::chrono::steady_clock::now() + request.timeout);
}

} // namespace ks
