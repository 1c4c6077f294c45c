// What one GPU can pull on MLA decode's access pattern, outside the task: rows of 1,024 bytes
// (the latent) and 128 bytes (the RoPE part) gathered by random page numbers from a pool of
// about 1 GB, each CTA walking its own run of tokens in 32-row tiles, no arithmetic.  Three ways
// to move a tile, each with one to four CTAs an SM:
//
//   cpasync  each of 256 threads issues nine 16-byte cp.async a tile (the decode kernels' way),
//            a ring of `stages` tiles, cp.async.wait_group and a barrier a tile;
//   ldg      the same chunks loaded into registers, `stages` tiles in flight a thread, folded
//            into a checksum so that the loads are kept;
//   cp-ef    cpasync with an L2 evict-first policy, as the decode baselines' copies;
//   bulk     two bulk copies a row (latent, RoPE) that complete on the stage's mbarrier.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a bench/gather_probe.cu -o gather_probe
//   ./gather_probe [tokens] [pool_pages] [clean]  (default 600000 tokens, 989669 pages; clean: the
//            dirty lines the L2 flush leaves are written back before the clock starts)
//
// Prints one line a configuration: method, CTAs an SM, stages, microseconds, GB/s of row bytes.
// Not a test: a measurement for docs/perf.md (session 29's "next" item).
#include "cuda_check.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kTile = 32, kThreads = 256;
constexpr int kCkvBytes = 1024, kKpeBytes = 128, kRowBytes = kCkvBytes + kKpeBytes;
constexpr int kPad = 16; // bulk rows are padded, as MLA_DECODE_BULK's
constexpr int kStageBytes = kTile * (kRowBytes + 2 * kPad);

__device__ __forceinline__ uint32_t smem_addr(const void* p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

struct Run {
    int begin, end;
};
__device__ __forceinline__ Run my_run(int tokens)
{
    const int chunk = (tokens + gridDim.x - 1) / gridDim.x;
    const int begin = min((int)blockIdx.x * chunk, tokens);
    return {begin, min(begin + chunk, tokens)};
}

// Thread t moves chunk t % 8 (+ 8 k) of row t / 8 of a tile, and chunk t % 8 of its RoPE part.
template<bool kEvictFirst>
__global__ void __launch_bounds__(kThreads)
    cpasync_kernel(const uint8_t* ckv, const uint8_t* kpe, const int* idx, int tokens, int stages)
{
    uint64_t policy = 0;
    if constexpr (kEvictFirst)
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    auto copy16 = [&](uint32_t dst, const void* src) {
        if constexpr (kEvictFirst)
            asm volatile(
                "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "l"(policy));
        else
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
    };
    extern __shared__ __align__(128) uint8_t smem[];
    const Run r = my_run(tokens);
    const int row = threadIdx.x >> 3, sub = threadIdx.x & 7;
    const int tiles = (r.end - r.begin + kTile - 1) / kTile;
    auto issue = [&](int tile) {
        if (tile < tiles) {
            const int pos = min(r.begin + tile * kTile + row, r.end - 1);
            const int64_t page = idx[pos];
            const uint32_t dst = smem_addr(smem + (tile % stages) * kStageBytes + row * kRowBytes);
            for (int k = 0; k < 8; ++k)
                copy16(dst + (sub + 8 * k) * 16, ckv + page * kCkvBytes + (sub + 8 * k) * 16);
            copy16(dst + kCkvBytes + sub * 16, kpe + page * kKpeBytes + sub * 16);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    for (int s = 0; s < stages - 1; ++s)
        issue(s);
    for (int t = 0; t < tiles; ++t) {
        // stages - 2 groups may stay pending; the ring depth is a runtime value, so wait on the
        // deepest one the switch knows
        switch (stages) {
        case 2:
            asm volatile("cp.async.wait_group 0;\n" ::: "memory");
            break;
        case 3:
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
            break;
        case 4:
            asm volatile("cp.async.wait_group 2;\n" ::: "memory");
            break;
        default:
            asm volatile("cp.async.wait_group 3;\n" ::: "memory");
            break;
        }
        __syncthreads();
        issue(t + stages - 1);
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

template<int kAhead>
__global__ void __launch_bounds__(kThreads)
    ldg_kernel(const uint8_t* ckv, const uint8_t* kpe, const int* idx, int tokens, unsigned* sink)
{
    const Run r = my_run(tokens);
    const int row = threadIdx.x >> 3, sub = threadIdx.x & 7;
    const int tiles = (r.end - r.begin + kTile - 1) / kTile;
    uint4 v[kAhead][9];
    auto load = [&](uint4(&d)[9], int tile) {
        const int pos = min(r.begin + min(tile, tiles - 1) * kTile + row, r.end - 1);
        const int64_t page = idx[pos];
#pragma unroll
        for (int k = 0; k < 8; ++k)
            d[k] = __ldcs(reinterpret_cast<const uint4*>(ckv + page * kCkvBytes + (sub + 8 * k) * 16));
        d[8] = __ldcs(reinterpret_cast<const uint4*>(kpe + page * kKpeBytes + sub * 16));
    };
    unsigned acc = 0;
    if (tiles > 0) {
#pragma unroll
        for (int a = 0; a < kAhead; ++a)
            load(v[a], a);
        for (int t = 0; t < tiles; t += kAhead) {
#pragma unroll
            for (int a = 0; a < kAhead; ++a) {
#pragma unroll
                for (int k = 0; k < 9; ++k)
                    acc ^= v[a][k].x ^ v[a][k].y ^ v[a][k].z ^ v[a][k].w;
                load(v[a], t + kAhead + a);
            }
        }
    }
    if (acc == 0x12345678u)
        *sink = acc; // practically never: keeps the loads
}

__global__ void __launch_bounds__(kThreads)
    bulk_kernel(const uint8_t* ckv, const uint8_t* kpe, const int* idx, int tokens, int stages)
{
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ uint64_t full[8];
    const Run r = my_run(tokens);
    const int row = threadIdx.x >> 3, sub = threadIdx.x & 7;
    const int tiles = (r.end - r.begin + kTile - 1) / kTile;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(&full[s])), "r"(2 * kTile));
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    auto issue = [&](int tile) {
        if (tile >= tiles || sub > 1)
            return;
        const int pos = min(r.begin + tile * kTile + row, r.end - 1);
        const int64_t page = idx[pos];
        const uint32_t bar = smem_addr(&full[tile % stages]);
        const uint32_t dst = smem_addr(smem + (tile % stages) * kStageBytes)
            + (sub == 0 ? row * (kCkvBytes + kPad) : kTile * (kCkvBytes + kPad) + row * (kKpeBytes + kPad));
        const uint8_t* src = sub == 0 ? ckv + page * kCkvBytes : kpe + page * kKpeBytes;
        const int bytes = sub == 0 ? kCkvBytes : kKpeBytes;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
            "l"(src), "r"(bytes), "r"(bar)
            : "memory");
    };
    for (int s = 0; s < stages - 1; ++s)
        issue(s);
    for (int t = 0; t < tiles; ++t) {
        asm volatile("{\n.reg .pred done;\nWAIT_TILE:\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                     "@!done bra WAIT_TILE;\n}\n" ::"r"(smem_addr(&full[t % stages])),
                     "r"((t / stages) & 1)
                     : "memory");
        __syncthreads();
        issue(t + stages - 1);
    }
}

// Reads a buffer, so that the dirty lines the flush left in L2 are written back before the clock
// starts (the "clean" lead-in).
__global__ void read_kernel(const uint4* p, size_t n, unsigned* sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc ^= p[i].x;
    if (acc == 0x12345678u)
        *sink = acc;
}

} // namespace

int main(int argc, char** argv)
{
    const int tokens = argc > 1 ? std::atoi(argv[1]) : 600000;
    const int pages = argc > 2 ? std::atoi(argv[2]) : 989669;
    const bool clean = argc > 3 && std::string(argv[3]) == "clean"; // else the evaluator's dirty lead-in
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    uint8_t *ckv = nullptr, *kpe = nullptr, *flush = nullptr, *scratch = nullptr;
    const size_t scratch_bytes = 64u << 20;
    int* idx = nullptr;
    unsigned* sink = nullptr;
    const size_t flush_bytes = 256u << 20;
    CHECK(cudaMalloc(&ckv, (size_t)pages * kCkvBytes));
    CHECK(cudaMalloc(&kpe, (size_t)pages * kKpeBytes));
    CHECK(cudaMalloc(&idx, (size_t)tokens * sizeof(int)));
    CHECK(cudaMalloc(&flush, flush_bytes));
    CHECK(cudaMalloc(&scratch, scratch_bytes));
    CHECK(cudaMemset(scratch, 3, scratch_bytes));
    CHECK(cudaMalloc(&sink, sizeof(unsigned)));
    CHECK(cudaMemset(ckv, 1, (size_t)pages * kCkvBytes));
    CHECK(cudaMemset(kpe, 2, (size_t)pages * kKpeBytes));
    std::vector<int> h(tokens);
    std::mt19937 rng(29);
    std::uniform_int_distribution<int> pick(0, pages - 1);
    for (int& p : h)
        p = pick(rng);
    CHECK(cudaMemcpy(idx, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    auto time = [&](auto launch) {
        float best = 1e30f;
        for (int rep = 0; rep < 7; ++rep) {
            CHECK(cudaMemsetAsync(flush, rep, flush_bytes)); // L2 holds none of the rows
            if (clean)
                read_kernel<<<4 * sms, 512>>>(reinterpret_cast<const uint4*>(scratch), scratch_bytes / 16, sink);
            const float ms = event_ms(t0, t1, launch);
            if (rep > 0 && ms < best)
                best = ms;
        }
        return best * 1000.0f;
    };
    auto report = [&](const char* method, int per_sm, int stages, float us) {
        std::printf("%-8s %d CTA/SM  %d stages  %9.1f us  %7.0f GB/s\n", method, per_sm, stages, us,
            (double)tokens * kRowBytes / (us * 1e3));
    };
    const int max_smem = 227 * 1024 - 1024; // room for the static barriers
    CHECK(cudaFuncSetAttribute(cpasync_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem));
    CHECK(cudaFuncSetAttribute(cpasync_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem));
    CHECK(cudaFuncSetAttribute(bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem));
    std::printf("# %d tokens of %d bytes from %d pages, %d SMs, %s L2 at the start\n", tokens, kRowBytes, pages, sms,
        clean ? "clean" : "dirty");
    for (int per_sm : {1, 2, 4}) {
        const int grid = sms * per_sm;
        for (int stages : {2, 3, 4, 5}) {
            const int smem = stages * kStageBytes;
            if ((size_t)smem * per_sm > (size_t)max_smem)
                continue;
            report("cpasync", per_sm, stages,
                time([&] { cpasync_kernel<false><<<grid, kThreads, smem>>>(ckv, kpe, idx, tokens, stages); }));
            report("cp-ef", per_sm, stages,
                time([&] { cpasync_kernel<true><<<grid, kThreads, smem>>>(ckv, kpe, idx, tokens, stages); }));
            report("bulk", per_sm, stages,
                time([&] { bulk_kernel<<<grid, kThreads, smem>>>(ckv, kpe, idx, tokens, stages); }));
        }
        // a configuration whose CTAs do not all fit at once would run in waves: left out
        auto fits = [&](const void* kernel) {
            int n = 0;
            CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads, 0));
            return n >= per_sm;
        };
        if (fits((const void*)ldg_kernel<1>))
            report("ldg", per_sm, 1, time([&] { ldg_kernel<1><<<grid, kThreads>>>(ckv, kpe, idx, tokens, sink); }));
        if (fits((const void*)ldg_kernel<2>))
            report("ldg", per_sm, 2, time([&] { ldg_kernel<2><<<grid, kThreads>>>(ckv, kpe, idx, tokens, sink); }));
        if (fits((const void*)ldg_kernel<3>))
            report("ldg", per_sm, 3, time([&] { ldg_kernel<3><<<grid, kThreads>>>(ckv, kpe, idx, tokens, sink); }));
    }
    // DRAM's own rate for contiguous bytes, the yardstick
    const float us = time([&] { CHECK(cudaMemsetAsync(flush, 7, flush_bytes)); });
    std::printf("memset   %zu MB  %9.1f us  %7.0f GB/s (written)\n", flush_bytes >> 20, us, flush_bytes / (us * 1e3));
    return 0;
}
