#pragma once

#include "prestartedrunner.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ks {

// The jobs of one device take turns: one runner at a time runs kernels on it, so timings never
// overlap, while the devices of other GPUs run theirs. A runner that has written its results but is
// still exiting (the driver taking its context down, about 0.14 s on the H200) is left here by its
// job and is gone before the next turn starts: its teardown never overlaps a timing loop, and an
// exclusive-mode GPU has its one context free again. The wait is charged to the next job.
class DeviceQueue
{
public:
    // The queue of a device: "host", or "cuda:" with the CUDA_VISIBLE_DEVICES value of the job.
    static DeviceQueue& of(const std::string& device);

    struct Turn {
        std::unique_lock<std::mutex> lock;
        double queuedSeconds = 0.0; // behind other jobs of the device
        double exitSeconds = 0.0; // waiting for the runners left exiting before
    };
    // Blocks until the device is free and the runners left before have ended.
    Turn take();
    // With a turn held: a runner whose results are read, still exiting.
    void leaveExiting(std::unique_ptr<PrestartedRunner> runner);

private:
    std::mutex m_turn;
    std::vector<std::unique_ptr<PrestartedRunner>> m_exiting; // guarded by m_turn
};

} // namespace ks
