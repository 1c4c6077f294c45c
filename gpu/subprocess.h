#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ks {

struct SubprocessRequest {
    std::vector<std::string> argv; // argv[0] is the program (searched on PATH)
    std::string workingDirectory; // empty: inherit
    std::map<std::string, std::string> environment; // the child's whole environment
    std::chrono::milliseconds timeout {60000}; // wall clock, then the process group is killed
    std::size_t maxCapturedBytes = 1 << 20; // per stream; the rest is dropped (and counted)
    // Close-on-exec descriptors this child alone inherits, under the same numbers.
    std::vector<int> inheritedFds;
};

struct SubprocessResult {
    bool started = false; // false: the program could not be executed (see error)
    bool timedOut = false;
    int exitCode = -1; // valid when exited normally
    int signal = 0; // non-zero when killed by a signal
    double seconds = 0.0;
    long maxRssKiB = 0; // peak resident memory of the child
    std::string out, err;
    std::string error; // why it could not start

    bool succeeded() const { return started && !timedOut && signal == 0 && exitCode == 0; }
    std::string describeExit() const; // "exit code 1", "killed by SIGSEGV", "timed out after 5.0 s"
};

// A program started in a new process group, its output captured once finish() runs. For a child
// that is started ahead and given its work later (a runner waiting for its job): nobody reads its
// pipes before finish(), so it must stay quiet until then. Destroying an unfinished one kills
// the group.
class ChildProcess
{
public:
    explicit ChildProcess(const SubprocessRequest& request); // the request's timeout is not used
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    bool started() const { return m_result.started; }
    const std::string& error() const { return m_result.error; }
    std::chrono::steady_clock::time_point startTime() const { return m_start; }

    // Captures stdout and stderr until the program exits or the deadline passes, then kills the
    // group (the program and anything it forked) with SIGKILL. Returns the same result when called again.
    SubprocessResult finish(std::chrono::steady_clock::time_point deadline);

    // finish() in two steps, for a program whose work is done once it closes its output (a runner
    // that has written every result and is only left to exit): captureOutput() returns when both
    // pipes are closed (true) or at the deadline (false, the result timed out); finish() then waits
    // for the exit as before. Between the two the program may still be running. False as well for
    // a program that never started.
    bool captureOutput(std::chrono::steady_clock::time_point deadline);
    // SIGKILL to the group now, without waiting: finish() reaps it (and reports the signal unless
    // the program had already exited).
    void killGroup();
    // What captureOutput() read so far; exit status and time are filled by finish().
    [[nodiscard]] const SubprocessResult& partialResult() const { return m_result; }

private:
    std::string m_program;
    std::size_t m_maxCapturedBytes;
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    int m_pid = -1, m_out = -1, m_err = -1;
    bool m_finished = false;
    bool m_outputCaptured = false;
    SubprocessResult m_result;
};

// Runs a program in a new process group with a hard wall-clock limit; on timeout the whole group
// (the program and anything it forked) is killed with SIGKILL. Blocking: call it off the GUI thread.
SubprocessResult runSubprocess(const SubprocessRequest& request);

// The current environment without secrets: every variable whose name ends in _API_KEY, _TOKEN,
// _ACCESS_KEY or _PRIVATE_KEY, contains SECRET, PASSWORD or CREDENTIAL, or is a known credential.
std::map<std::string, std::string> scrubbedEnvironment();
bool isSecretVariable(const std::string& name);

// `program` as exec would find it, absolute: a path as it is (if it exists), a bare name in the
// first folder of PATH that holds an executable of that name; empty when nowhere.
std::filesystem::path findOnPath(const std::string& program);

} // namespace ks
