#pragma once

#include "pythonruntime.h"
#include "subprocess.h"

#include <task/abiheader.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// What decides which runner process a job needs: it is fixed when the process starts.
struct RunnerKind {
    Backend backend = Backend::Host;
    std::string cudaVisibleDevices; // empty: the default GPU
    std::optional<PythonRuntime> python; // set: the Python runner, else ksearch-runner
    // Words put before the runner's command line (a tool it runs under, as compute-sanitizer);
    // such a runner is waited for to the end, since the tool reports after the runner exits.
    std::vector<std::string> wrapper;
    // Under a wrapper: true keeps the namespaces, filesystem and limits (only the network stays,
    // which the tool needs), for runs no person asked for; false drops them, as a person's own
    // compute-sanitizer run of an attempt always has.
    bool wrapperConfined = false;
    bool confined = true; // false: started with --unconfined (a person turned confinement off)

    bool operator==(const RunnerKind&) const = default;
};

// A runner process started before its job (protocol.h, "the handoff socket"): exec, imports and
// the device context are paid while the candidate compiles or the model thinks, not on the
// candidate's clock. It starts in a new process group with the scrubbed environment and waits,
// quiet, on a socket; the job's folder and shared buffers reach it there. It never sees a
// descriptor of another job. Destroying one that never got a job kills it.
class PrestartedRunner
{
public:
    explicit PrestartedRunner(RunnerKind kind);
    ~PrestartedRunner();
    PrestartedRunner(const PrestartedRunner&) = delete;
    PrestartedRunner& operator=(const PrestartedRunner&) = delete;

    [[nodiscard]] const RunnerKind& kind() const { return m_kind; }
    // Whether the runner is still there to take a job (it did not die while it waited).
    [[nodiscard]] bool alive() const;
    // Waits until the runner says its backend is ready (true), it dies or `timeout` passes.
    // Never needed before handOver(); it lets a caller (a test, a benchmark) know the start-up is over.
    bool waitUntilReady(std::chrono::milliseconds timeout);

    // Hands the job over (the folder holding job.json, and every descriptor job.json names); its
    // time limit counts from now. Once. A job that could not be sent is reported by finish(): as
    // not started, with the reason, when the runner never started; otherwise as its exit (it ran
    // and ended, or left, before taking the job), with the reason added to its stderr.
    void handOver(const std::filesystem::path& jobDir, const std::vector<int>& fds, std::chrono::milliseconds timeout);
    // Waits until the runner closes its output, which it does once its last result line is written
    // (it is then left to exit: the driver taking its context down), or when it dies; false when
    // the limit passed first. A runner that never got its job is not waited for.
    bool waitForOutput();
    // Waits for the runner to end, killing its group once the limit has passed: the whole run.
    // The same result when called again.
    SubprocessResult finish();
    // Kills the runner's group without waiting (it said it had finished: it is only exiting, and
    // nothing of the candidate's may outlive the results being read); finish() reaps it.
    void kill();
    // What waitForOutput() captured; no exit status until finish().
    [[nodiscard]] const SubprocessResult& output() const;

    // When the job was handed over, on the steady clock: with the runner's ready time, how long the
    // job waited for its runner.
    [[nodiscard]] std::chrono::steady_clock::time_point handedOverAt() const { return m_handedOverAt; }

private:
    RunnerKind m_kind;
    int m_socket = -1; // ours; the runner's end is closed here once it has started
    std::unique_ptr<ChildProcess> m_process;
    std::chrono::steady_clock::time_point m_handedOverAt;
    std::chrono::steady_clock::time_point m_deadline;
    std::string m_sendError; // why the job could not be handed over
    SubprocessResult m_result; // once finished
    bool m_finished = false;
    std::string m_setupError; // why there is no process (no socket could be made)
};

} // namespace ks
