// Whether the GQA decode baseline's access granularity costs DRAM bandwidth: its CTAs each take one
// KV head of a run of tokens, so a token's K (and V) row of 4 heads x 256 bytes, 1 KB contiguous,
// is read as four 256-byte pieces by four CTAs at different times. This probe gathers the same
// bytes in the same order of tokens, with the same CTA count, threads, ring and 32 KB stages, and
// changes only how many of a token's heads one CTA reads:
//
//   heads 1  a CTA per (run, KV head), 64 tokens a tile (the baseline's split);
//   heads 2  a CTA per (run, pair of heads), 32 tokens a tile;
//   heads 4  a CTA per run, 16 tokens a tile, each token's 1 KB of K and of V whole.
//
// No arithmetic: cp.async with the baseline's L2 evict-first policy, a wait and a barrier a tile.
// Before every launch a 256 MB memset leaves L2 full of dirty lines, as the evaluator's lead-in.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a bench/gqa_gather_probe.cu -o gqa_gather_probe
//   ./gqa_gather_probe [tokens] [pool_pages]   (default 61519 tokens of 76962 pages: the task's
//                                              largest workload)
//
// Prints one line a configuration: heads a CTA, CTAs an SM, stages, microseconds (best and median
// of 9 launches), GB/s of K+V bytes. A measurement for docs/perf.md, not a test.
#include "cuda_check.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <random>
#include <vector>

namespace {

constexpr int kKvHeads = 4, kDim = 128, kThreads = 128;
constexpr int kRowBytes = kKvHeads * kDim * 2; // one token's K (or V), all heads
constexpr int kStageBytes = 32 * 1024; // K and V of one tile, whatever the split
constexpr int kChunksPerThread = kStageBytes / 16 / kThreads;

template<int kPending> __device__ __forceinline__ void wait_group()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// CTA b takes heads [kHeads * (b % groups), +kHeads) of run b / groups; runs are equal cuts of the
// token list, as the baseline's.
template<int kHeads, int kStages>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const uint8_t* __restrict__ k, const uint8_t* __restrict__ v, const int* __restrict__ idx, int tokens)
{
    constexpr int kGroups = kKvHeads / kHeads;
    constexpr int kTileTokens = 64 / kHeads;
    constexpr int kPieceChunks = kHeads * kDim * 2 / 16; // 16-byte chunks of one token's piece
    extern __shared__ __align__(128) uint8_t smem[];
    const int runs = gridDim.x / kGroups, run = blockIdx.x / kGroups, group = blockIdx.x % kGroups;
    const int chunk = (tokens + runs - 1) / runs;
    const int begin = min(run * chunk, tokens), end = min(begin + chunk, tokens);
    const int tiles = (end - begin + kTileTokens - 1) / kTileTokens;
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
    auto issue = [&](int tile) {
        if (tile < tiles) {
            const uint32_t stage = base + (tile % kStages) * kStageBytes;
#pragma unroll
            for (int i = 0; i < kChunksPerThread; ++i) {
                const int c = threadIdx.x + kThreads * i; // K chunks first, then V's
                const int which = c / (kStageBytes / 32), rem = c % (kStageBytes / 32);
                const int token = rem / kPieceChunks, sub = rem % kPieceChunks;
                const int64_t page = idx[min(begin + tile * kTileTokens + token, end - 1)];
                const uint8_t* src = (which ? v : k) + page * kRowBytes + group * (kRowBytes / kGroups) + sub * 16;
                asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(stage + c * 16),
                             "l"(src), "l"(policy)
                             : "memory");
            }
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    for (int s = 0; s < kStages - 1; ++s)
        issue(s);
    for (int t = 0; t < tiles; ++t) {
        wait_group<kStages - 2>();
        __syncthreads();
        issue(t + kStages - 1);
    }
    wait_group<0>();
}

} // namespace

int main(int argc, char** argv)
{
    const int tokens = argc > 1 ? std::atoi(argv[1]) : 61519;
    const int pages = argc > 2 ? std::atoi(argv[2]) : 76962;
    if (tokens <= 0 || pages < tokens) {
        std::fprintf(stderr, "usage: gqa_gather_probe [tokens] [pool_pages >= tokens]\n");
        return 2;
    }
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    uint8_t *k = nullptr, *v = nullptr, *flush = nullptr;
    int* idx = nullptr;
    const size_t flush_bytes = 256u << 20;
    CHECK(cudaMalloc(&k, (size_t)pages * kRowBytes));
    CHECK(cudaMalloc(&v, (size_t)pages * kRowBytes));
    CHECK(cudaMalloc(&idx, (size_t)tokens * sizeof(int)));
    CHECK(cudaMalloc(&flush, flush_bytes));
    CHECK(cudaMemset(k, 1, (size_t)pages * kRowBytes));
    CHECK(cudaMemset(v, 2, (size_t)pages * kRowBytes));
    // distinct pages, as the task's unique_indices
    std::vector<int> h(pages);
    for (int i = 0; i < pages; ++i)
        h[i] = i;
    std::shuffle(h.begin(), h.end(), std::mt19937(40));
    CHECK(cudaMemcpy(idx, h.data(), (size_t)tokens * sizeof(int), cudaMemcpyHostToDevice));
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    const double bytes = 2.0 * tokens * kRowBytes;
    auto measure = [&](const char* what, int heads, int per_sm, int stages, double moved, auto launch) {
        std::vector<float> us;
        for (int rep = 0; rep < 10; ++rep) {
            CHECK(cudaMemsetAsync(flush, rep, flush_bytes));
            const float ms = event_ms(t0, t1, launch);
            if (rep > 0)
                us.push_back(ms * 1000.0f);
        }
        std::sort(us.begin(), us.end());
        std::printf("%-7s heads %d  %d CTA/SM  %d stages  best %8.2f us  median %8.2f us  %6.0f GB/s\n", what, heads,
            per_sm, stages, us.front(), us[us.size() / 2], moved / (us.front() * 1e3));
    };
    std::printf("# %d tokens of %d + %d bytes (K, V) from %d pages, %d SMs, dirty L2 at the start\n", tokens, kRowBytes,
        kRowBytes, pages, sms);
    auto run = [&](auto kernel, int heads, int per_sm, int stages) {
        const int smem = stages * kStageBytes;
        CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        int fit = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, kThreads, smem));
        if (fit < per_sm)
            return;
        const int grid = sms * per_sm;
        measure("gather", heads, per_sm, stages, bytes, [&] { kernel<<<grid, kThreads, smem>>>(k, v, idx, tokens); });
    };
    for (int per_sm : {2, 1}) {
        run(gather_kernel<1, 2>, 1, per_sm, 2);
        run(gather_kernel<2, 2>, 2, per_sm, 2);
        run(gather_kernel<4, 2>, 4, per_sm, 2);
        run(gather_kernel<1, 3>, 1, per_sm, 3);
        run(gather_kernel<2, 3>, 2, per_sm, 3);
        run(gather_kernel<4, 3>, 4, per_sm, 3);
        if (per_sm == 1) {
            run(gather_kernel<1, 6>, 1, per_sm, 6);
            run(gather_kernel<4, 6>, 4, per_sm, 6);
        }
    }
    // DRAM's rate for contiguous writes, the yardstick
    measure("memset", 0, 0, 0, (double)flush_bytes, [&] { CHECK(cudaMemsetAsync(flush, 7, flush_bytes)); });
    return 0;
}
