#include "devicequeue.h"

#include <util/elapsed.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>

namespace ks {

DeviceQueue& DeviceQueue::of(const std::string& device)
{
    static std::mutex guard;
    static std::map<std::string, std::unique_ptr<DeviceQueue>> queues;
    std::lock_guard lock(guard);
    auto& queue = queues[device];
    if (!queue)
        queue = std::make_unique<DeviceQueue>();
    return *queue;
}

DeviceQueue::Turn DeviceQueue::take()
{
    Turn turn;
    const auto queued = std::chrono::steady_clock::now();
    turn.lock = std::unique_lock(m_turn);
    turn.queuedSeconds = secondsSince(queued);
    const auto exiting = std::chrono::steady_clock::now();
    for (auto& runner : m_exiting) {
        // Killed already (its results read); this waits for the driver to let it go. Past its
        // limit finish() gives up on it loudly rather than hold the device for good.
        const SubprocessResult end = runner->finish();
        if (end.timedOut)
            spdlog::warn("a runner that had reported its results did not end: {}", end.describeExit());
    }
    m_exiting.clear();
    turn.exitSeconds = secondsSince(exiting);
    return turn;
}

void DeviceQueue::leaveExiting(std::unique_ptr<PrestartedRunner> runner)
{
    if (runner)
        m_exiting.push_back(std::move(runner));
}

} // namespace ks
