#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace ks {

// Runs body(begin, end) over [0, n) in contiguous chunks, one per hardware thread, when n is
// large enough to pay for the threads; otherwise inline. Chunk boundaries depend only on n and
// the thread count, and callers write disjoint ranges, so results are deterministic.
template<typename Body> void parallelChunks(std::size_t n, Body body, std::size_t minPerThread = std::size_t {1} << 16)
{
    const std::size_t hw = std::max(1U, std::thread::hardware_concurrency());
    const std::size_t threads = std::min(hw, std::max<std::size_t>(1, n / minPerThread));
    if (threads <= 1) {
        body(std::size_t {0}, n, std::size_t {0});
        return;
    }
    std::vector<std::thread> pool;
    const std::size_t chunk = (n + threads - 1) / threads;
    for (std::size_t t = 0; t < threads; ++t) {
        const std::size_t begin = t * chunk, end = std::min(n, begin + chunk);
        if (begin < end)
            pool.emplace_back([=] { body(begin, end, t); });
    }
    for (auto& th : pool)
        th.join();
}

inline std::size_t parallelChunkCount(std::size_t n, std::size_t minPerThread = std::size_t {1} << 16)
{
    const std::size_t hw = std::max(1U, std::thread::hardware_concurrency());
    return std::max<std::size_t>(1, std::min(hw, std::max<std::size_t>(1, n / minPerThread)));
}

} // namespace ks
