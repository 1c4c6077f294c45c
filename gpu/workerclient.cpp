#include "workerclient.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <pthread.h>
#include <sstream>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

namespace ks::worker {

namespace {

Evaluation failedEvaluation(const std::string& why)
{
    Evaluation e;
    e.status = Verdict::RuntimeError;
    e.log = "worker: " + why + "\n";
    return e;
}

} // namespace

WorkerClient::WorkerClient(Options options)
    : m_options(std::move(options))
{
}

std::unique_ptr<WorkerClient> WorkerClient::start(Options options, std::string& error)
{
    std::unique_ptr<WorkerClient> c(new WorkerClient(std::move(options)));
    if (!c->connect(error))
        return nullptr;
    return c;
}

bool WorkerClient::connect(std::string& error)
{
    int in[2] = {-1, -1};
    int out[2] = {-1, -1};
    int err[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        error = std::string("cannot make pipes: ") + std::error_code(errno, std::generic_category()).message();
        return false;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        error = std::string("cannot fork: ") + std::error_code(errno, std::generic_category()).message();
        return false;
    }
    if (pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        setpgid(0, 0); // its own group: killed as a whole if it hangs
        execl("/bin/sh", "sh", "-c", m_options.command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    m_pid = pid;
    m_toWorker = in[1];
    m_fromWorker = out[0];
    m_errors = err[0];
    m_exitCode = -1;
    m_buffered.clear();
    m_errorTail.clear();
    std::string why;
    std::optional<nlohmann::json> reply;
    if (send(helloLine(KSEARCH_VERSION), why))
        reply = receive(why);
    if (!reply) {
        error = "worker `" + m_options.command + "` did not answer the hello: " + why;
        return false;
    }
    if (reply->value("type", std::string()) != "hello") {
        error = "worker `" + m_options.command + "`: " + reply->value("message", reply->dump());
        return false;
    }
    return true;
}

// Ends the current worker process, whatever its state, and closes its pipes.
void WorkerClient::disconnect()
{
    if (m_toWorker >= 0)
        close(m_toWorker);
    if (m_pid > 0 && exitCode() < 0) {
        kill(-m_pid, SIGKILL);
        waitpid(m_pid, nullptr, 0);
    }
    if (m_fromWorker >= 0)
        close(m_fromWorker);
    if (m_errors >= 0)
        close(m_errors);
    m_toWorker = m_fromWorker = m_errors = -1;
    m_pid = -1;
}

WorkerClient::~WorkerClient()
{
    if (m_pid > 0 && exitCode() < 0) {
        std::string ignored;
        send({{"type", "bye"}}, ignored);
        close(m_toWorker);
        m_toWorker = -1;
        // A worker that does not leave within a few seconds of the end of its input is killed.
        for (int i = 0; i < 50 && exitCode() < 0; ++i)
            usleep(100 * 1000);
    }
    disconnect();
}

void WorkerClient::drainErrors()
{
    char chunk[4096];
    for (ssize_t n; m_errors >= 0 && (n = read(m_errors, chunk, sizeof chunk)) > 0;) {
        m_errorTail.append(chunk, static_cast<std::size_t>(n));
        if (m_errorTail.size() > 4096)
            m_errorTail.erase(0, m_errorTail.size() - 2048);
    }
}

// The same words whichever end of the pipes noticed first (a write into a closed pipe, or the end
// of the worker's output), with the exit status once the process has gone.
std::string WorkerClient::gone()
{
    for (int i = 0; i < 20 && exitCode() < 0; ++i)
        usleep(50 * 1000);
    std::string why = "the worker has gone";
    if (m_exitCode >= 0)
        why += " (exit status " + std::to_string(m_exitCode) + ")";
    if (m_exitCode == 127) // the shell's (or ssh's remote shell's) "command not found"
        why += ": the command was not found; install ksearch (the same version) where the worker runs, or give "
               "its full path in the command";
    else if (m_exitCode == 255) // ssh's own failures: the host, the network, the key
        why += ": ssh could not connect or log in (try `ssh HOST true` by hand: the host, the key, the agent)";
    drainErrors();
    // The last lines it wrote on stderr say why in its own words (srun's, ssh's, the shell's).
    std::string tail = m_errorTail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' '))
        tail.pop_back();
    if (const auto cut = tail.size() > 600 ? tail.find('\n', tail.size() - 600) : std::string::npos;
        cut != std::string::npos)
        tail = tail.substr(cut + 1);
    if (!tail.empty())
        why += "; its stderr: " + tail;
    return why;
}

int WorkerClient::exitCode()
{
    if (m_exitCode >= 0 || m_pid <= 0)
        return m_exitCode;
    int status = 0;
    if (waitpid(m_pid, &status, WNOHANG) == m_pid)
        m_exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return m_exitCode;
}

bool WorkerClient::send(const nlohmann::json& line, std::string& error)
{
    const std::string text = line.dump() + "\n";
    std::size_t done = 0;
    // A worker that has gone must not kill us with SIGPIPE: the signal is blocked on this thread
    // alone while writing (other threads and their clients are untouched), and one raised by a
    // write into a closed pipe is taken off the pending set before the mask is restored.
    sigset_t pipeSignal;
    sigset_t previous;
    sigemptyset(&pipeSignal);
    sigaddset(&pipeSignal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous);
    bool ok = true;
    while (ok && done < text.size()) {
        const ssize_t n = write(m_toWorker, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const int code = errno;
            if (code == EPIPE) {
                const timespec now {0, 0};
                sigtimedwait(&pipeSignal, nullptr, &now);
            }
            error = code == EPIPE
                ? gone()
                : "cannot write to the worker: " + std::error_code(code, std::generic_category()).message();
            ok = false;
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return ok;
}

std::optional<nlohmann::json> WorkerClient::receive(std::string& error)
{
    const auto deadline = std::chrono::steady_clock::now() + m_options.replyTimeout;
    for (;;) {
        if (const auto eol = m_buffered.find('\n'); eol != std::string::npos) {
            const std::string line = m_buffered.substr(0, eol);
            m_buffered.erase(0, eol + 1);
            try {
                return nlohmann::json::parse(line);
            } catch (const nlohmann::json::exception&) {
                error = "the worker wrote a line that is not JSON: " + line.substr(0, 200);
                return std::nullopt;
            }
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            error = "no answer within " + std::to_string(m_options.replyTimeout.count() / 1000) + " s";
            return std::nullopt;
        }
        // Its stderr is read as it comes (a full pipe would block the worker) and kept for messages.
        pollfd p[2] = {{m_fromWorker, POLLIN, 0}, {m_errors, POLLIN, 0}};
        const int ready = poll(p, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (ready > 0 && p[1].revents != 0)
            drainErrors();
        if (ready > 0 && p[0].revents == 0)
            continue;
        if (ready < 0 && errno != EINTR) {
            error = std::string("poll: ") + std::error_code(errno, std::generic_category()).message();
            return std::nullopt;
        }
        if (ready <= 0)
            continue;
        char chunk[65536];
        const ssize_t n = read(m_fromWorker, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            error = gone();
            return std::nullopt;
        }
        m_buffered.append(chunk, static_cast<std::size_t>(n));
    }
}

Evaluation WorkerClient::evaluateOnce(const std::filesystem::path& source)
{
    m_unavailable.reset();
    const auto failed = [this](const std::string& why) {
        m_unavailable = "worker `" + m_options.command + "`: " + why;
        return failedEvaluation(why);
    };
    std::ifstream in(source, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in)
        return failed(source.string() + ": cannot read the candidate");
    EvaluateRequest r;
    r.id = "e" + std::to_string(++m_requests);
    r.task = m_options.task;
    r.taskDigest = m_options.taskDigest;
    r.source = text.str();
    r.settings = m_options.settings;
    std::string error;
    if (!send(toJson(r), error))
        return failed(error);
    const auto reply = receive(error);
    if (!reply)
        return failed(error);
    if (reply->value("type", std::string()) == "error")
        return failed(reply->value("message", std::string("an error without a message")));
    if (reply->value("type", std::string()) != "evaluation" || reply->value("id", std::string()) != r.id
        || !reply->contains("evaluation"))
        return failed("an unexpected reply: " + reply->dump().substr(0, 300));
    Evaluation e = evaluationFromJson((*reply)["evaluation"]);
    if (!e.device.empty())
        m_device = e.device;
    return e;
}

// A worker that fails with a candidate in hand (a preempted SLURM step, a dropped ssh connection)
// is started again once and given the same candidate; only the result of the attempt that
// completes is returned, so an evaluation is never counted twice.
Evaluation WorkerClient::evaluate(const std::filesystem::path& source)
{
    Evaluation e = evaluateOnce(source);
    if (!m_unavailable)
        return e;
    const std::string first = *m_unavailable;
    disconnect();
    std::string error;
    if (!connect(error)) {
        m_unavailable = first + "; started again once: " + error;
        return failedEvaluation(*m_unavailable);
    }
    ++m_restarts;
    e = evaluateOnce(source);
    if (m_unavailable)
        m_unavailable = first + "; started again once, it failed again: " + *m_unavailable;
    return e;
}

std::string WorkerClient::targetDescription() const
{
    return (m_device.empty() ? std::string("a worker") : m_device) + " (through `" + m_options.command + "`)";
}

} // namespace ks::worker
