#pragma once

#include "workerprotocol.h"

#include <search/candidateevaluator.h>

#include <chrono>
#include <memory>
#include <string>

namespace ks::worker {

// The caller's side of `ksearch worker`: a CandidateEvaluator whose evaluations happen in a
// worker process started with a shell command ("ksearch worker" on this machine, "ssh gpu-box
// ksearch worker" on another). The worker is greeted once; each evaluate() sends the candidate's
// source with the task's name and digest and the search's settings, and waits for the verdict.
class WorkerClient : public CandidateEvaluator
{
public:
    struct Options {
        std::string command; // run with /bin/sh -c; inherits this process's environment (ssh agent)
        std::string task; // as the worker resolves it: a name on its task path, or a folder there
        std::string taskDigest; // of the caller's copy (taskDigest()); the worker refuses another
        Settings settings;
        std::string sourceSuffix = ".cpp";
        std::chrono::milliseconds replyTimeout {std::chrono::minutes(30)}; // per request
    };

    // Starts the worker and says hello; nullptr with `error` naming the command and the reason
    // (it could not start, it did not answer, another protocol version).
    static std::unique_ptr<WorkerClient> start(Options options, std::string& error);
    ~WorkerClient() override;

    // A request the worker could not serve, or a worker that died or went silent, gives a
    // RUNTIME_ERROR evaluation whose log starts with "worker:" and says why, after the worker was
    // started again once and failed again (unavailable() is then set).
    Evaluation evaluate(const std::filesystem::path& source) override;
    // How often a failed worker was started again.
    [[nodiscard]] int restarts() const { return m_restarts; }
    [[nodiscard]] std::string sourceSuffix() const override { return m_options.sourceSuffix; }
    [[nodiscard]] std::string targetDescription() const override;
    // Set by an evaluate() that failed on the worker's side (every failure this client sees is
    // one: the worker's own verdicts, COMPILE_ERROR included, come back as evaluations).
    [[nodiscard]] std::optional<std::string> unavailable() const override { return m_unavailable; }

    // The worker's exit status once it has gone (-1 while it runs).
    int exitCode();

private:
    explicit WorkerClient(Options options);
    bool connect(std::string& error); // starts the worker and says hello
    void disconnect();
    Evaluation evaluateOnce(const std::filesystem::path& source);
    bool send(const nlohmann::json& line, std::string& error);
    std::optional<nlohmann::json> receive(std::string& error);
    std::string gone();
    void drainErrors();

    Options m_options;
    int m_pid = -1;
    int m_toWorker = -1;
    int m_fromWorker = -1;
    int m_errors = -1; // the worker's stderr
    std::string m_errorTail; // its last bytes
    std::string m_buffered; // bytes read past the last complete line
    std::string m_device; // from the last evaluation
    int m_exitCode = -1;
    int m_requests = 0;
    std::optional<std::string> m_unavailable;
    int m_restarts = 0;
};

} // namespace ks::worker
