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
    // Never needed before run(); it lets a caller (a test, a benchmark) know the start-up is over.
    bool waitUntilReady(std::chrono::milliseconds timeout);

    // Hands the job over (the folder holding job.json, and every descriptor job.json names) and
    // waits for the runner to end, killing its group when `timeout` from now has passed. Once.
    // A runner that died before the job came is reported as it ended (callers check alive()
    // first); a job that could not be sent is reported as not started, with the reason.
    SubprocessResult run(
        const std::filesystem::path& jobDir, const std::vector<int>& fds, std::chrono::milliseconds timeout);
    // When run() sent the job, on the steady clock: with the runner's ready time, how long the
    // job waited for its runner.
    [[nodiscard]] std::chrono::steady_clock::time_point handedOverAt() const { return m_handedOverAt; }

private:
    RunnerKind m_kind;
    int m_socket = -1; // ours; the runner's end is closed here once it has started
    std::unique_ptr<ChildProcess> m_process;
    std::chrono::steady_clock::time_point m_handedOverAt;
    std::string m_setupError; // why there is no process (no socket could be made)
};

} // namespace ks
