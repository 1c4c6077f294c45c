// FP8 block-scale MoE with DeepSeek-V3 routing for H200 (sm_90a): warp-parallel routing, a
// per-expert token permutation, and both grouped GEMMs on Hopper's fp8 warpgroup tensor cores
// (wgmma.m64n128k32, e4m3 operands, fp32 accumulation).
//
//   1. route      a warp per token, the logits by two 16-byte loads a lane: sigmoid, biased group
//                 scores (top-2 of each group of 32 by shuffles), 4 of 8 groups and then 8
//                 experts, each choice by two warp reductions (redux.sync: the largest order key,
//                 then the smallest index among the lanes that hold it), weights normalised
//                 without the bias and scaled.  A local expert's slot takes the next row of that
//                 expert by atomicAdd.
//   2. plan       one warp: each expert's first row (a scan of the counts) and the list of
//                 128-row tiles, so the GEMM grids need no host round trip.
//   3. scatter    each local slot's row: its token and weight; each slot learns its row.
//                 (Calls of up to MOE_FRONT_T tokens run 1-3 in one CTA: front_kernel.)
//   4. gemm1      per (expert tile of 128 rows, 64 intermediate columns): the token rows, gathered
//                 straight from hidden_states, against W1's 64 up rows and the matching 64 gate
//                 rows in one 128-row B panel, so one thread holds an up value and its gate.  Each
//                 128-wide k block's products go to a second set of accumulators, which is then
//                 multiplied by the two block scales in fp32 and added (the scales are random and
//                 signed, so they cannot be folded into the operands).  fp8 wgmma keeps only about
//                 14 bits of its running sum; promoting every 128 k bounds what that costs.
//                 C = silu(gate) * up leaves as three e4m3 planes with one scale per row and 64
//                 columns: C ~ s (q0 + q1 + q2), each plane the rounding residual of the ones
//                 before.  One plane (what fp8 serving kernels keep) fails the task's 95 % rule on
//                 about 72 % of the elements, two on about 3.3 %; three miss 0.06 %, or 0.7 % with
//                 a 14-bit model of the accumulator, as the bf16 hi + lo pair does (a host model
//                 of the task's draws, bench/moe_c_precision.cpp, docs/perf.md); on an H100 they
//                 missed 0.8-1.3 % on the host-checked workloads.
//   5. gemm2      per (expert tile, 128 hidden columns): O = C W2^T, the three planes against the
//                 same W2 panel into one accumulator, smallest plane first (2.1 % and 1.5 % of
//                 misses with plane 0 first), folded per 64-wide k half with C's scale and W2's
//                 block scale, times the slot's weight, fp32.
//   6. combine    output[t] = the sum of O over the token's local slots in slot order (no atomics:
//                 the result is the same on every run), bf16.
//
// Tiles: 128 x 128, shared panels of 128 rows x one 128-wide k block of e4m3 (128-byte rows, 16-byte
// chunks XOR-swizzled by row & 7: the hardware's 128-byte swizzle on 1024-byte boundaries), a
// cp.async ring (three stages of two k blocks for gemm1, three of four panels for gemm2) whose
// slots are handed over by mbarriers, one wgmma chain per warpgroup.  The GEMMs walk their (tile, column block)
// items from one CTA an SM, column blocks fastest.  Each thread copies the same four rows of every
// panel, so its row addresses are worked out once an item; a k block's scales travel through the
// ring with its panels (cp.async into a small area of the slot), and the next copies are issued
// after the current products.  The ring's barriers are set up once a CTA and carried across items.
// What each of these gave, and what was tried and dropped: docs/perf.md (sessions 23-27).
//
// Knobs (-D), measured side by side in the kernel lab (bench/kernel_lab.sh):
//   MOE_SPLIT_K   (4) where the plan's (tile, column) pairs leave SMs idle (one or two used
//                 experts), each pair's k blocks are cut into up to this many ranges, one CTA
//                 each; the CTA that finishes last adds the partial sums in range order
//                 (gather_splits) and runs the epilogue.  One-expert calls 148 -> 84 us (H100).
//   MOE_STAGES1   (4) GEMM 1's ring depth, 32 KB a stage: 5 to 7 measured no faster (session 26);
//                 with the C staging area (session 27) at most 6 fit.
//   MOE_TMA1      (off) 1: GEMM 1's W1 panel by TMA (two 64-row boxes, up and gate rows), one
//                 thread a k block; its A rows, gathered by token, stay cp.async.  2: the A rows
//                 too, from a copy of the local rows' hidden states in expert order
//                 (permute_rows_kernel; T x 8 x 7 KB of the workspace).  Lab (H100, session 27):
//                 2 matched and ran 0.953x (the copy alone takes 86 us of T11948's lab draw).
//   MOE_TMA2      (off) GEMM 2's panels (the C planes and W2, whose rows are contiguous) come by
//                 TMA through tensor maps, one thread issuing the copies of a k block, instead
//                 of every thread's cp.async: the consumers keep only the scales' copies.  C in
//                 128-row boxes for tiles over 64 rows, else 32-row boxes as far as the rows
//                 reach.  Lab (H100): matched; 0.988x and 0.992x (session 27), 1.002-1.014x for
//                 the box sizes alone (session 26).
//   MOE_CLUSTER2  (off; needs MOE_TMA2) GEMM 2 in clusters of two CTAs on neighbouring column
//                 blocks of one tile: each brings half of the tile's C boxes and multicasts them
//                 to both, so C crosses L2 once for two column blocks; a slot is refilled once
//                 the warps of both CTAs have read it.  Lab (H100, session 27): matched, 0.879x
//                 (T11948's GEMM 2 1489 -> 2236 us: the two CTAs wait on each other every block).
//   MOE_KPAIR     (1) GEMM 1's ring stages hold two k blocks (three 64 KB stages, whatever
//                 MOE_STAGES1 says, instead of four of 32 KB), so that a stage's barriers, fence
//                 and copies serve eight wgmmas a warpgroup instead of four.  Lab (H100): session
//                 27, one pass: matched, 1.006x (GEMM 1 of T11948 -2 %, of T901 -4 %; three 32 KB
//                 stages alone: 0.978x); session 35, five rounds: 1.009x, the calls of 52 to 203
//                 tokens 1.2-2.8 % faster, the smallest unchanged.  0: MOE_STAGES1 stages of one.
//   (Measured and removed in session 29, code in 50ce187: MOE_RUNNING_ADDR, the copies' source
//   addresses advanced in place a block at a time, after per-line ncu found 8-10 % of the GEMMs'
//   warp samples on instructions rewriting registers a queued cp.async had not yet read:
//   0.991x, then 1.007x and 1.005x, within the lab's spread; ptxas moved each address into one
//   shared register before its copy, so the waits stayed, on those moves.)
//   (Measured and removed in session 27, code in 22bfd98: a producer warpgroup issuing every copy
//   by TMA, setmaxnreg 56 / 224: 0.951-0.960x.)
//   (Modelled and removed in session 32, code in 0d759c4, never run: MOE_O_BF16, GEMM 2's
//   per-slot outputs stored as bf16 to halve the combine's reads.  The host model
//   (bench/moe_c_precision.cpp) puts it at 6.1 % misses against the shipped 0.06 %: where a
//   token's experts' outputs cancel, each term's bf16 rounding is large against the sum.)
//   (Measured and removed in session 32, code in 7126b30: MOE_C16, C as one f16 plane with a
//   scale a row and 64 columns, and GEMM 2 as O^T = W2 C^T on f16 wgmma with W2 widened from
//   e4m3 in registers: 0.928x, and 0.940x with W2's fragment loads free of bank conflicts
//   (T11948's draw: GEMM 1 397 -> 385 us, GEMM 2 404 -> 508 us).  Per 64-wide k half a thread
//   then widens 32 bytes of W2 and reads 32 C scales, one per accumulator column, besides the
//   planes' scaling: the tensor work saved goes to those instructions.)
//   MOE_WIDE2     (on) GEMM 2's items are 64 rows of a tile against 256 hidden columns instead of
//                 128 against 128: both warpgroups multiply the same C rows, each by its own 128
//                 rows of W2, so an item brings 3 x 64 + 256 rows a k block instead of 3 x 128 +
//                 128 (12.5 % fewer bytes from L2 for the same products, and a tile's last rows
//                 waste half as much).  The C planes' panels are then 64 rows (8 KB) and a
//                 stage 56 KB.  Only in the calls with f16 outputs (MOE_O_F16_MIN_T tokens or
//                 more): a small call's tiles of 64 rows or fewer would leave half the items
//                 empty.  Lab (H100, session 37, five rounds beside a copy of base): GEMM 2 of
//                 the four f16 calls 3.5-8 % faster by kernel time (T11948 1486 -> 1419 us),
//                 1.006x over all sixteen workloads (the copy 1.003x).  With it, `tasks check
//                 --backend cuda` and the task's tst_gpuevaluator rows (the baseline and its
//                 four cheats) passed on an H100 in session 39.
//   MOE_FRONT_T   (16) a call of at most this many tokens routes, plans and scatters in one CTA
//                 of 1,024 threads (front_kernel, which zeroes the counts too): one launch
//                 instead of a memset and three kernels.  Lab (H100, session 35, five rounds):
//                 T1 13.9 -> 11.3 us, T7 14.4 -> 11.9, T16 14.2 -> 12.7, T14 and T15 -3.5 %, but
//                 T32 14.2 -> 15.0 and T62 14.6 -> 21.4: one SM issues every token's routing, about
//                 0.15 us a token.  0: never.
//   MOE_PDL       (1) every kernel after route is launched as a programmatic dependent of the
//                 one before and waits for it (griddepcontrol.wait) before anything else, so that
//                 its launch overlaps its predecessor's tail instead of following it (the small
//                 calls spent about 2 us a kernel boundary).  Every kernel waits, so each one's
//                 wait covers all kernels before it.  Lab (H100, session 33, with the routing
//                 below): 1.246x in the geomean of the 16 workloads (small calls 22.9 -> 13.8
//                 us); releasing each dependent at its predecessor's start as well
//                 (griddepcontrol.launch_dependents; removed) ran 1.210x, behind.  0 launches
//                 every kernel plainly (the TMA knobs need it).
//   MOE_O_F16     (1) in calls of MOE_O_F16_MIN_T (128) tokens or more, GEMM 2 stores each slot's
//                 weighted output as f16 with one scale a row and 128 columns (the row's largest
//                 there at 2^15) instead of fp32, and the combine reads it so: half the bytes of
//                 the largest calls' heaviest memory traffic (T11948's balanced call writes and
//                 reads about 340 MB of it).  The tile's rows are staged in the idle ring after a
//                 CTA-wide barrier and leave as 16-byte pieces.  The host model
//                 (bench/moe_c_precision.cpp) puts its misses at 0.74 / 0.90 / 3.00 % in its three
//                 accumulator models against fp32's 0.06 / 0.58 / 3.00 % (bf16 there: 6.1 %).
//                 Lab (H100, session 35, five rounds in alternating order, f16 in every call):
//                 T11948's draw 3,232 -> 3,057 us, T14107's 202.0 -> 187.0, T901's 434.9 -> 421.5,
//                 T203's 167.8 -> 167.3, but the calls of 80 tokens or fewer 0.3-2.0 % slower (the
//                 barrier and staging on a critical path of one or two items a CTA), hence the
//                 threshold.  Stores straight from the accumulators (4-byte pairs, session 34)
//                 made GEMM 2 up to 8 % slower.  0: fp32 in every call.
//   (Measured and removed in session 34, code in ba7ff83: MOE_PREFETCH, a GEMM CTA issuing its
//   next item's first copies right after its current item's products, before the epilogue.
//   Lab (H100): 0.992x, matched everywhere; T11948's draw 3,172 -> 3,482 us, GEMM 1 and GEMM 2
//   3 % and 2 % slower by the profiler.  Not measured, but likely: the warpgroup that finishes
//   first waits for the other's last slot before its own epilogue, and the epilogue's stores
//   meet the new copies.)
//   (Measured and removed in session 34, code in 02be852: MOE_ROUTE_PLAN, the route CTA that
//   finishes last (a ticket counter zeroed with the counts) laying out the plan so that
//   plan_kernel is not launched.  Lab (H100): 0.992x, matched everywhere; route_kernel grew by
//   0.9-3.9 us (4.3 -> 6.2 us on a small call: every CTA's fence and ticket, then the plan after
//   the last), more than the 1.5-2.7 us plan_kernel took.)
//   (Measured and settled in session 33: routing's choices by warp reductions instead of five
//   shuffle rounds of (value, weight, index) an expert, 1.08x alone in the lab, route_kernel
//   7.8 -> 4.2 us on a small call and 51 -> 25 us on T11948's draw.  The same choices for
//   finite scores, ties and signed zeros included (a NaN's key is its bits' order); the
//   shuffle path is at ac95170.)
//   MOE_PROBE     (0) lab probes, wrong answers by design: 1 streams the GEMMs' copies without
//                 products or scaling (the copy path's ceiling), 2 runs products and scaling on
//                 whatever shared memory holds, with no copies (the arithmetic's ceiling).
#include "ks_task.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cuda.h> // CUtensorMap and its encoder's signature (reached through the runtime)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <math_constants.h>

#ifndef MOE_SPLIT_K
#define MOE_SPLIT_K 4
#endif
#ifndef MOE_STAGES1
#define MOE_STAGES1 4
#endif
#ifndef MOE_TMA1
#define MOE_TMA1 0
#endif
#ifndef MOE_TMA2
#define MOE_TMA2 0
#endif
static_assert(MOE_TMA1 >= 0 && MOE_TMA1 <= 2, "MOE_TMA1: 0, 1 (W1 by TMA) or 2 (W1 and the A rows)");
#ifndef MOE_PROBE
#define MOE_PROBE 0
#endif
#ifndef MOE_CLUSTER2
#define MOE_CLUSTER2 0
#endif
#ifndef MOE_KPAIR
#define MOE_KPAIR 1
#endif
#ifndef MOE_PDL
#define MOE_PDL 1
#endif
#ifndef MOE_O_F16
#define MOE_O_F16 1
#endif
#ifndef MOE_WIDE2
#define MOE_WIDE2 1
#endif
static_assert(!MOE_WIDE2 || (!MOE_TMA2 && !MOE_CLUSTER2), "MOE_WIDE2's panels are cp.async");
#ifndef MOE_FRONT_T
#define MOE_FRONT_T 16
#endif
#ifndef MOE_O_F16_MIN_T
#define MOE_O_F16_MIN_T 128
#endif
static_assert(MOE_O_F16 == 0 || MOE_O_F16 == 1, "MOE_O_F16: 0 (fp32 slot outputs) or 1 (f16 from MOE_O_F16_MIN_T on)");
static_assert(!MOE_O_F16 || !MOE_CLUSTER2,
    "MOE_O_F16 stages its rows in the ring, which the other CTA of a cluster fills: add -DMOE_O_F16=0");
static_assert(MOE_PDL == 0 || MOE_PDL == 1, "MOE_PDL: 0 (plain launches) or 1 (dependent launches)");
static_assert(
    !MOE_PDL || (!MOE_TMA1 && !MOE_TMA2), "the TMA knobs need -DMOE_PDL=0: its launch path takes the cp.async kernels");
static_assert(!MOE_KPAIR || !MOE_TMA1, "MOE_KPAIR's stages are cp.async: add -DMOE_KPAIR=0");
constexpr int kPair1 = MOE_KPAIR ? 2 : 1; // gemm1's k blocks a ring stage
static_assert(!MOE_CLUSTER2 || MOE_TMA2, "MOE_CLUSTER2 multicasts MOE_TMA2's C boxes");
constexpr int kCluster2 = MOE_CLUSTER2 ? 2 : 1; // gemm2's CTAs a cluster

namespace {

using bf16 = __nv_bfloat16;
using u8 = unsigned char;

constexpr int kExperts = (int)KS_NUM_EXPERTS;
constexpr int kLocal = (int)KS_NUM_LOCAL_EXPERTS;
constexpr int kHidden = (int)KS_HIDDEN_SIZE;
constexpr int kInter = (int)KS_INTERMEDIATE_SIZE;
constexpr int kGemm1Out = (int)KS_GEMM1_OUT_SIZE;
constexpr int kHiddenBlocks = (int)KS_NUM_HIDDEN_BLOCKS;
constexpr int kInterBlocks = (int)KS_NUM_INTERMEDIATE_BLOCKS;
constexpr int kGemm1Blocks = (int)KS_NUM_GEMM1_OUT_BLOCKS;
constexpr int kGroups = 8, kGroupSize = kExperts / kGroups, kKeptGroups = 4, kTopK = 8;
constexpr int kBlock = 128;
static_assert(kExperts == 256 && kLocal == 32 && kGemm1Out == 2 * kInter, "routing and tiling assume these");
static_assert(kHidden % 128 == 0 && kInter % 128 == 0, "tiling");

constexpr int kThreads = 256; // two warpgroups
constexpr int kTile = 128;
constexpr int kPanelBytes = kTile * kBlock; // 128 rows x one k block of e4m3: 16 KB
constexpr int kUpCols = 64; // gemm1: 64 up and 64 gate columns a tile
constexpr int kCPlanes = 3; // C ~ s (q0 + q1 + q2)
constexpr int kCHalf = 64; // C's scale covers 64 columns (one gemm1 tile)
constexpr int kCScales = kInter / kCHalf; // 32 a row
constexpr int kOScales = kHidden / kTile; // f16 slot outputs: 56 scales a row, one a GEMM 2 column block
constexpr int kCRowBytes = kInter * kCPlanes; // a row of C: per k block, its three planes
constexpr int kCBoxRows = 32; // TMA knobs: the rows a copy brings to a small tile
constexpr int kStages1 = MOE_KPAIR ? 3 : MOE_STAGES1, kStages2 = 3; // gemm2's three 64 KB stages fill shared memory
constexpr int kAlignSlack = 1024;
constexpr int kMaxSplitItems = 1024; // split items run in one wave: at most one an SM
// A stage's scales, after the ring's panels: gemm1 the 128 rows' token scales, then the up and gate
// blocks' weight scales; gemm2 the 128 rows' two C scales (one a 64-wide half), then W2's.
constexpr int kScaleBytes1 = kPair1 * (kTile + 4) * 4, kScaleBytes2 = (2 * kTile + 4) * 4;
constexpr int kGemm1Ring = kStages1 * (2 * kPair1 * kPanelBytes + kScaleBytes1); // A, B and the scales
// The tile's C rows are staged after the ring: three 64-byte plane pieces a row, rows 208 bytes
// apart so that the eight rows of an accumulator store fall in eight bank groups.
constexpr int kStageRow = 208;
constexpr int kGemm1Smem = kGemm1Ring + kTile * kStageRow + kAlignSlack;
static_assert(kStages1 >= 2 && kGemm1Smem + 1024 <= 227 * 1024, "gemm1's ring and its static arrays must fit");
constexpr int kGemm2Smem = kStages2 * ((kCPlanes + 1) * kPanelBytes + kScaleBytes2) + kAlignSlack; // 3 planes, B
static_assert(kGemm2Smem + 1024 <= 227 * 1024, "gemm2's ring and its static arrays must fit");
constexpr float kE4m3Max = 448.0f;
constexpr float kTinyC = 1e-30f;

// ------------------------------------------------------------------ PTX wrappers

__device__ __forceinline__ uint32_t smem_u32(const void* p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// MOE_PDL: the start of every kernel.  The wait returns once the kernel before has finished and
// its writes are visible (at once for a kernel not launched as a dependent); it comes before
// any early return, as a kernel that finishes counts for the ones after it only if it waited.
__device__ __forceinline__ void kernel_start()
{
    if constexpr (MOE_PDL)
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

__device__ __forceinline__ u8* align1024(u8* p)
{
    return p + ((kAlignSlack - (smem_u32(p) & (kAlignSlack - 1))) & (kAlignSlack - 1));
}

__device__ __forceinline__ uint32_t swz(int row, int chunk)
{
    return row * 128 + ((chunk ^ (row & 7)) << 4);
}

// Copies `bytes` (16 or 0) of src and zero-fills the rest of the 16.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
// The same for a scale: `bytes` (N or 0) of src, zeros for the rest (cp.async's 4- and 8-byte
// forms go through L1, .ca).
template<int N> __device__ __forceinline__ void cp_async_small(uint32_t dst, const void* src, int bytes)
{
    static_assert(N == 4 || N == 8, "cp.async.ca copies 4, 8 or 16 bytes");
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(N), "r"(bytes));
}
[[maybe_unused]] __device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// The box of `map` at (x, y) into shared memory at dst (1024-byte aligned for the 128-byte
// swizzle), completing `bytes` of bar's transaction count.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
            "r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
        : "memory");
}
// Clusters (MOE_CLUSTER2): this CTA's rank, its cluster and how many there are.
[[maybe_unused]] __device__ __forceinline__ int cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return (int)r;
}
[[maybe_unused]] __device__ __forceinline__ int cluster_index()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
    return (int)r;
}
[[maybe_unused]] __device__ __forceinline__ int cluster_count()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
    return (int)r;
}
// Every thread of every CTA of the cluster; what each wrote to shared memory before is seen after.
[[maybe_unused]] __device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Arrives on the barrier at CTA `rank`'s copy of this CTA's shared address bar.
[[maybe_unused]] __device__ __forceinline__ void mbar_arrive_at(uint32_t bar, int rank)
{
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
                 "r"(rank)
                 : "memory");
}
// tma_load_2d into the same offsets of every CTA in `mask`, completing bytes on each one's bar.
[[maybe_unused]] __device__ __forceinline__ void tma_load_2d_multicast(
    uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar, uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], "
                 "[%1, {%2, "
                 "%3}], [%4], %5;\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
                 : "memory");
}
__device__ __forceinline__ void fence_to_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrives on bar once every cp.async this thread has issued so far has landed.
__device__ __forceinline__ void mbar_arrive_on_copies(uint32_t bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Returns once the phase of bar with this parity has completed (a fresh barrier counts its phase
// before the first as complete).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred done;\nWAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
    __syncwarp(); // the warpgroup's wgmma needs its warps converged
}

using Acc = float[64];

// Thread t of warpgroup t / 128 holds acc[4 i + e] at row 64 (t / 128) + 16 ((t / 32) % 4) +
// (t % 32) / 4 + 8 (e / 2) and column 8 i + 2 (t % 4) + e % 2 of the 128 x 128 tile.
__device__ __forceinline__ int acc_row(int e)
{
    const int t = threadIdx.x;
    return 64 * (t >> 7) + 16 * ((t >> 5) & 3) + ((t & 31) >> 2) + 8 * ((e >> 1) & 1);
}
__device__ __forceinline__ int acc_col(int e)
{
    return 8 * (e >> 2) + 2 * (threadIdx.x & 3) + (e & 1);
}

// The largest of v over the four threads of a quad, which hold one accumulator row between them.
__device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

// A row's largest |value| from each thread's (quad_max), as the epilogues scale by it: zero below
// kTinyC, where a scale's inverse (448 / amax for C, 32768 / amax for the f16 outputs) would
// overflow, so that such a row counts as zero.
__device__ __forceinline__ float row_amax(float thread_amax)
{
    const float amax = quad_max(thread_amax);
    return amax < kTinyC ? 0.0f : amax;
}

__device__ __forceinline__ uint64_t smem_desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32)
        | ((uint64_t)1 << 62);
}

// fp8 operands must be k-major (no transpose immediates): both panels are, k contiguous in a row.
// accumulate false: d = A B^T, whatever d held (scale-d 0).
__device__ __forceinline__ void wgmma_e4m3_m64n128k32(Acc& d, uint64_t da, uint64_t db, bool accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "%64, %65, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"((int)accumulate));
}

// Ties the accumulator registers to this point of the program.  Neither the fence nor the wait
// names them, so without it the compiler may sink their zeroing below the fence (ptxas then
// injects a warpgroup.arrive of its own) or hoist their reads above the wait.
__device__ __forceinline__ void pin(Acc& d)
{
#pragma unroll
    for (int e = 0; e < 64; ++e)
        asm volatile("" : "+f"(d[e])::"memory");
}

// Readies the product set for a k block's first issue(), which overwrites it (a wgmma with
// scale-d 0: zeroing it first costs 64 moves a thread, which ptxas sometimes leaves in); the
// fence orders the scaling's reads of it before the wgmma.
__device__ __forceinline__ void ready(Acc& part)
{
    pin(part);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

// part += A B^T over kSteps k steps of 32 from byte k0 of the panels (this warpgroup's 64 A rows);
// fresh: part = A B^T.
// A k step moves both descriptors' start address by 32 bytes, 2 in their 16-byte units; the
// field cannot carry over, as shared memory ends below 2^18 bytes.
// kShareA (MOE_WIDE2): both warpgroups read the same 64 A rows, each its own 128-row B panel.
template<int kSteps, bool kShareA = false>
__device__ __forceinline__ void issue(Acc& part, uint32_t a_panel, uint32_t b_panel, int k0, bool fresh)
{
    const uint64_t da = smem_desc(a_panel + (kShareA ? 0 : (threadIdx.x >> 7) * 64 * 128) + k0),
                   db = smem_desc(b_panel + (kShareA ? (threadIdx.x >> 7) * kPanelBytes : 0) + k0);
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks)
        wgmma_e4m3_m64n128k32(part, da + 2 * ks, db + 2 * ks, !(fresh && ks == 0));
}

// This warpgroup's barrier (named barrier 1 + w; 0 is __syncthreads').
__device__ __forceinline__ void warpgroup_sync()
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + (threadIdx.x >> 7)) : "memory");
}

// Committed right after the wgmmas: committed later, past other code, the group gets an arrive
// and an empty wgmma of its own from ptxas (C7519).
__device__ __forceinline__ void commit_products()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wait_products(Acc& part)
{
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    pin(part);
}

// Streams k blocks [first, last) (each kBPanels x 128 wide) through a kStages ring; a stage holds
// kAPanels A panels and kBPanels B panels.  row_a(r) and row_b(r) give the start of row r at k block 0 (row_a:
// nullptr for a zero row); A panel p of block kb is kAStride kb + 128 p bytes on, B panel q
// 128 (kBPanels kb + q) (stage() gets the first of each; the A panels follow every kARows x 128
// bytes, the B panels every kPanelBytes).
// copy_scales(kb, dst) issues this thread's cp.async of block kb's scales (if any) into the
// slot's kScaleBytes at dst.  kTma 1 brings the B panel by TMA, 2 every panel: thread 0 calls
// tma(kb, dst, bar) to copy those panels of block kb to the stage at dst, completing bar's
// transaction count by tma_bytes (what those copies bring); the rest are every thread's cp.async.  stage(kb, a0, b,
// scales, next) runs when block kb is in shared memory (a0: the first A panel, b: the first B panel;
// scales: the block's); every thread calls it, and it calls next() once, after issuing its first products: that issues
// the copies of block kb + kStages - 1 into the slot of block kb - 1, once every thread has waited for its products on
// it (the slot's empty barrier).
//
// Each thread copies the 16-byte chunk tid % 8 of rows tid / 8 + 32 i (i < 4) of every panel.
// Those rows share row & 7, so in the swizzled layout they lie 4 KB apart: the row addresses are
// worked out once an item, and a k block's copies are one add each.
//
// `used` counts the blocks this CTA has streamed through the ring before this item: the barriers
// are set up by the CTA's first item and carried on (block kb is the ring's use used + kb -
// first), as setting up a live barrier again is undefined.
// kARows (MOE_WIDE2: 64) is the A panels' rows, kBRows (256) the B panels': B rows 128 q + r are
// panel q's (each B panel still 128 rows of one k block), after the A panels (kARows x 128 bytes
// each).
template<int kStages, int kAPanels, int kAStride, int kScaleBytes, int kTma = 0, int kCluster = 1, int kBPanels = 1,
    int kARows = kTile, int kBRows = kTile, class RowA, class RowB, class CopyScales, class Stage, class Tma = int>
__device__ __forceinline__ void gemm_pipeline(u8* smem, int first, int last, int& used, RowA row_a, RowB row_b,
    CopyScales copy_scales, Stage stage, Tma tma = 0, uint32_t tma_bytes = 0)
{
    constexpr int kRowsEach = kTile * 8 / kThreads, kRowStep = kThreads / 8;
    constexpr int kARowsEach = kARows / kRowStep, kBRowPanels = kBRows / kTile;
    constexpr int kAPanelBytes = kARows * 128;
    constexpr int kSlotBytes = kAPanels * kAPanelBytes + kBPanels * kBRowPanels * kPanelBytes;
    static_assert(kBPanels == 1 || kTma == 0, "B panels by TMA come one a stage");
    static_assert(kRowsEach == 4 && kRowStep % 8 == 0, "a thread's rows must share their swizzle");
    static_assert((kARows == kTile && kBRows == kTile) || (kTma == 0 && kBPanels == 1 && kARowsEach >= 1),
        "A panels of other than 128 rows, or B panels stacked by rows, are cp.async only");
    const int chunk = threadIdx.x & 7, r0 = threadIdx.x >> 3;
    const uint32_t ring = smem_u32(smem), mine = swz(r0, chunk);
    // A zero row copies no bytes, from row 0 (which every item has) so that the address is real.
    const u8* a_row[kRowsEach];
    const u8* b_row[kBRowPanels][kRowsEach];
    int a_bytes[kRowsEach];
#pragma unroll
    for (int i = 0; i < (kTma == 2 ? 0 : kRowsEach); ++i) {
        const u8* row = i < kARowsEach ? row_a(r0 + kRowStep * i) : nullptr;
        a_bytes[i] = row ? 16 : 0;
        a_row[i] = (row ? row : row_a(0)) + chunk * 16;
#pragma unroll
        for (int q = 0; q < kBRowPanels; ++q)
            b_row[q][i] = kTma ? nullptr : row_b(kTile * q + r0 + kRowStep * i) + chunk * 16;
        // Opaque from here: ptxas would otherwise work the addresses out again every k block.
        asm volatile("" : "+l"(a_row[i]), "+l"(b_row[0][i]), "+r"(a_bytes[i]));
#pragma unroll
        for (int q = 1; q < kBRowPanels; ++q)
            asm volatile("" : "+l"(b_row[q][i]));
    }
    const int u0 = used - first; // block kb is the ring's use u0 + kb
    const uint32_t scale_area = ring + kStages * kSlotBytes;
    // full[s]: every thread's copies into slot s have landed; empty[s]: every thread has waited
    // for its products on slot s (with MOE_CLUSTER2, every warp of both CTAs, one arrival a warp).
    __shared__ uint64_t bars[2 * kStages];
    const uint32_t full = smem_u32(bars), empty = full + 8 * kStages;
    static_assert(MOE_SPLIT_K <= kInterBlocks, "a CTA's first item must have k blocks: it sets the barriers up");
    if (used == 0) {
        if (threadIdx.x == 0) {
            // A slot is free once every thread has read it (every warp of both CTAs of a cluster,
            // one arrival a warp, as the other CTA's copies fill it too).
            for (int b = 0; b < 2 * kStages; ++b)
                mbar_init(full + 8 * b,
                    b < kStages         ? kThreads + (kTma > 0)
                        : kCluster == 1 ? kThreads
                                        : kCluster * kThreads / 32);
            // The TMA unit completes transactions on these barriers: it must see them set up.
            if constexpr (kTma > 0)
                asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        }
        if constexpr (kCluster > 1)
            cluster_sync(); // the other CTA's barriers are set up too
        else
            __syncthreads();
    }
    auto load = [&](int kb) {
        if (kb >= last)
            return;
        const int slot = (u0 + kb) % kStages;
        // The slot's previous block, use (u0 + kb) / kStages - 1, must be read by all.
        if (u0 + kb >= kStages)
            mbar_wait(empty + 8 * slot, ((u0 + kb) / kStages - 1) & 1);
        const uint32_t st = ring + slot * kSlotBytes + mine;
        if constexpr (kTma > 0) {
            if (MOE_PROBE != 2 && threadIdx.x == 0) {
                mbar_expect_tx(full + 8 * slot, tma_bytes);
                tma(kb, st - mine, full + 8 * slot);
            } else if (threadIdx.x == 0) {
                mbar_arrive(full + 8 * slot); // the arrival the transaction would have made
            }
        }
#pragma unroll
        for (int i = 0; i < (MOE_PROBE == 2 || kTma == 2 ? 0 : kRowsEach); ++i) {
            const uint32_t dst = st + i * kRowStep * 128;
            const u8* a = a_row[i] + (unsigned)(kb * kAStride);
#pragma unroll
            for (int panel = 0; panel < (i < kARowsEach ? kAPanels : 0); ++panel)
                cp_async16(dst + panel * kAPanelBytes, a + panel * kBlock, a_bytes[i]);
#pragma unroll
            for (int q = 0; q < kBRowPanels; ++q)
#pragma unroll
                for (int panel = 0; panel < (kTma == 0 ? kBPanels : 0); ++panel)
                    cp_async16(dst + kAPanels * kAPanelBytes + (q * kBPanels + panel) * kPanelBytes,
                        b_row[q][i] + (unsigned)((kb * kBPanels + panel) * kBlock), 16);
        }
        copy_scales(kb, scale_area + slot * kScaleBytes);
        if (MOE_PROBE == 2)
            mbar_arrive(full + 8 * slot); // no copies were issued
        else
            mbar_arrive_on_copies(full + 8 * slot);
    };
    for (int s = 0; s < kStages - 1; ++s)
        load(first + s);
    for (int kb = first; kb < last; ++kb) {
        const int slot = (u0 + kb) % kStages;
        // No block-wide barrier: a warpgroup goes on as soon as the block is in, so one's
        // scaling of its products runs under the other's.
        mbar_wait(full + 8 * slot, ((u0 + kb) / kStages) & 1);
        fence_to_async();
        const uint32_t st = ring + slot * kSlotBytes;
        auto next = [&] { load(kb + kStages - 1); };
        if (MOE_PROBE == 1)
            next(); // copies only: no products, no scaling
        else
            stage(kb, st, st + kAPanels * kAPanelBytes,
                reinterpret_cast<const float*>(smem + kStages * kSlotBytes + slot * kScaleBytes), next);
        // stage() waited for its products: the slot may be refilled
        if constexpr (kCluster > 1) {
            __syncwarp();
            if ((threadIdx.x & 31) == 0)
                for (int rank = 0; rank < kCluster; ++rank)
                    mbar_arrive_at(empty + 8 * slot, rank);
        } else {
            mbar_arrive(empty + 8 * slot);
        }
    }
    used += last - first;
}

// ------------------------------------------------------------------ workspace

struct Plan {
    int* counts; // [32] rows of each local expert
    int* offsets; // [33] first row of each expert
    int* tiles; // [max_tiles][2] (expert, first row within it)
    int* num_tiles; // [1]
    int* slot_local; // [T * 8] local expert of the slot, or -1
    int* slot_row; // [T * 8] its row within the expert, then its global row
    float* slot_weight; // [T * 8]
    int* row_token; // [T * 8] token of each row
    float* row_weight; // [T * 8]
    u8* c; // [T * 8][16 k blocks][3 planes][128] C's e4m3 planes
    float* c_scale; // [T * 8][32] C's scale per 64 columns
    float* o; // [T * 8][7168] weighted expert outputs
    __half* o_half; // the same bytes, in the calls whose outputs are f16: over their scales
    float* o_scale; // [T * 8][56] their scale per 128 columns (MOE_O_F16)
#if MOE_TMA1 == 2
    u8* xa; // [T * 8][7168] each row's hidden states (GEMM 1's A), rows in expert order
#endif
#if MOE_SPLIT_K > 1
    int* arrivals; // [2][kMaxSplitItems] split CTAs done per (tile, column) pair, per GEMM; plan zeroes
    float4* partial; // [kMaxSplitItems][16][256 threads] a split CTA's partial sums
#endif
};

// ------------------------------------------------------------------ 1. routing

// A float's order as an unsigned (larger float, larger key; -0 is counted as +0 by the caller).
__device__ __forceinline__ unsigned order_key(float f)
{
    const unsigned u = __float_as_uint(f);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}

// Routes token t: one warp.
__device__ __forceinline__ void route_token(const KsArgs& a, const Plan& p, int64_t t)
{
    const int lane = threadIdx.x & 31;
    float s[8], b[8]; // lane l holds experts 8 l .. 8 l + 7; a group is 4 lanes
    {
        const float4* logits = reinterpret_cast<const float4*>(a.routing_logits + t * kExperts + lane * 8);
        const float4 l0 = logits[0], l1 = logits[1];
        const float l[8] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            s[j] = 1.0f / (1.0f + expf(-l[j]));
            b[j] = s[j] + ks_to_float(a.routing_bias[lane * 8 + j]);
        }
    }
    float top0 = -CUDART_INF_F, top1 = -CUDART_INF_F;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        if (b[j] > top0) {
            top1 = top0;
            top0 = b[j];
        } else if (b[j] > top1) {
            top1 = b[j];
        }
    }
#pragma unroll
    for (int off = 1; off < 4; off *= 2) { // merge the group's four top-2 pairs
        const float o0 = __shfl_xor_sync(0xffffffffu, top0, off), o1 = __shfl_xor_sync(0xffffffffu, top1, off);
        const float hi = fmaxf(top0, o0);
        top1 = fmaxf(fminf(top0, o0), fmaxf(top1, o1));
        top0 = hi;
    }
    // Each round takes the largest key still in play, and among lanes holding it the smallest
    // group or expert index, in two reductions.
    const unsigned group = lane * 8 / kGroupSize;
    const unsigned group_key = order_key(top0 + top1 + 0.0f); // the same in the group's four lanes
    unsigned kept = 0;
    for (int n = 0; n < kKeptGroups; ++n) {
        const unsigned key = kept >> group & 1u ? 0u : group_key;
        const unsigned top = __reduce_max_sync(0xffffffffu, key);
        kept |= 1u << __reduce_min_sync(0xffffffffu, key == top ? group : ~0u);
    }
    const bool mine = kept >> group & 1u;
    unsigned key[8]; // 0: not in play (a kept group's finite score has a larger key)
#pragma unroll
    for (int j = 0; j < 8; ++j)
        key[j] = mine ? order_key(b[j] + 0.0f) : 0u;
    int chosen = -1;
    float chosen_s = 0.0f, sum = 0.0f;
    for (int k = 0; k < kTopK; ++k) {
        unsigned best = 0;
        int best_j = 0;
        float best_s = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j)
            if (key[j] > best) { // strictly: the lowest j among equals
                best = key[j];
                best_j = j;
                best_s = s[j];
            }
        const unsigned top = __reduce_max_sync(0xffffffffu, best);
        const unsigned winner = __reduce_min_sync(0xffffffffu, best == top ? (unsigned)(lane * 8 + best_j) : ~0u);
        const float winner_s = __shfl_sync(0xffffffffu, best_s, (int)winner / 8);
#pragma unroll
        for (int j = 0; j < 8; ++j)
            if ((unsigned)(lane * 8 + j) == winner)
                key[j] = 0u;
        if (lane == k) {
            chosen = (int)winner;
            chosen_s = winner_s;
        }
        sum += winner_s;
    }
    if (lane >= kTopK)
        return;
    const int64_t slot = t * kTopK + lane;
    const int le = chosen - a.local_expert_offset;
    p.slot_weight[slot] = chosen_s / (sum + 1e-20f) * a.routed_scaling_factor;
    if (le >= 0 && le < kLocal) {
        p.slot_local[slot] = le;
        p.slot_row[slot] = atomicAdd(&p.counts[le], 1);
    } else {
        p.slot_local[slot] = -1;
    }
}

__global__ void __launch_bounds__(256) route_kernel(KsArgs a, Plan p)
{
    kernel_start();
    const int64_t t = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    if (t < a.seq_len)
        route_token(a, p, t);
}

// ------------------------------------------------------------------ 2. plan, 3. scatter

// Lays out each expert's first row and the tiles: one warp, a lane per local expert.
__device__ __forceinline__ void plan_tiles(const Plan& p)
{
    const int lane = threadIdx.x & 31;
    const int count = p.counts[lane], tiles = (count + kTile - 1) / kTile;
    int rows = count, first_tile = tiles;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
        const int r = __shfl_up_sync(0xffffffffu, rows, off), f = __shfl_up_sync(0xffffffffu, first_tile, off);
        if (lane >= off) {
            rows += r;
            first_tile += f;
        }
    }
    p.offsets[lane] = rows - count;
    first_tile -= tiles;
    for (int m = 0; m < tiles; ++m) {
        p.tiles[2 * (first_tile + m)] = lane;
        p.tiles[2 * (first_tile + m) + 1] = m * kTile;
    }
    if (lane == 31) {
        p.offsets[kLocal] = rows;
        *p.num_tiles = first_tile + tiles;
    }
#if MOE_SPLIT_K > 1
    // The split GEMMs count arrivals from zero; here rather than a memset, which costs a launch.
    for (int i = lane; i < 2 * kMaxSplitItems; i += 32)
        p.arrivals[i] = 0;
#endif
}

__global__ void plan_kernel(Plan p)
{
    kernel_start();
    plan_tiles(p);
}

// Slot i's row: its token and weight; the slot learns its global row.
__device__ __forceinline__ void scatter_slot(const Plan& p, int64_t i)
{
    const int le = p.slot_local[i];
    if (le < 0)
        return;
    const int row = p.offsets[le] + p.slot_row[i];
    p.row_token[row] = (int)(i / kTopK);
    p.row_weight[row] = p.slot_weight[i];
    p.slot_row[i] = row;
}

__global__ void scatter_kernel(Plan p, int64_t slots)
{
    kernel_start();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < slots)
        scatter_slot(p, i);
}

// MOE_FRONT_T: the three steps above in one CTA for a call of at most MOE_FRONT_T tokens, with
// the counts zeroed here too: one launch instead of a memset and three kernels.  The block's
// barriers order the steps (each makes the global writes before it visible to the whole block).
__global__ void __launch_bounds__(1024) front_kernel(KsArgs a, Plan p)
{
    kernel_start();
    if (threadIdx.x < kLocal)
        p.counts[threadIdx.x] = 0;
    __syncthreads();
    for (int64_t t = threadIdx.x >> 5; t < a.seq_len; t += 32)
        route_token(a, p, t);
    __syncthreads();
    if (threadIdx.x < 32)
        plan_tiles(p);
    __syncthreads();
    for (int64_t i = threadIdx.x; i < a.seq_len * kTopK; i += 1024)
        scatter_slot(p, i);
}

#if MOE_TMA1 == 2
// GEMM 1's A rows copied into expert order, so that a tile's rows are contiguous for a tensor map.
__global__ void permute_rows_kernel(KsArgs a, Plan p)
{
    constexpr int kChunks = kHidden / 16;
    const int64_t chunks = (int64_t)p.offsets[kLocal] * kChunks;
    const uint4* x = reinterpret_cast<const uint4*>(a.hidden_states);
    uint4* xa = reinterpret_cast<uint4*>(p.xa);
    for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < chunks; v += (int64_t)gridDim.x * blockDim.x)
        xa[v] = x[(int64_t)p.row_token[v / kChunks] * kChunks + v % kChunks];
}
#endif

// ------------------------------------------------------------------ 4., 5. the grouped GEMMs

// How a tile's rows come by TMA: one 128-row box for a tile of more than 64 rows, else boxes of
// kCBoxRows rows as far as its rows reach (a 128-row box would read up to 127 rows for nothing).
// The rows past the tile's keep what the slot held (at first whatever shared memory held, NaN
// patterns included) or are the rows after the tile's: their products are never stored.
struct RowBoxes {
    bool small;
    int rows, count;
    // big: the box of a tile over 2 kCBoxRows rows (kTile; MOE_CLUSTER2: kTile / 2, one a CTA).
    __device__ explicit RowBoxes(int tile_rows, int big = kTile)
        : small(tile_rows <= 2 * kCBoxRows)
        , rows(small ? kCBoxRows : big)
        , count((tile_rows + rows - 1) / rows)
    {
    }
    __device__ uint32_t bytes(int panels) const { return (uint32_t)(panels * count * rows * 128); }
};

// Two e4m3 values, rounded to nearest, and what they stand for.
__device__ __forceinline__ uint16_t to_e4m3x2(float2 v, float2& back)
{
    const __nv_fp8x2_storage_t q = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3);
    back = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(q, __NV_E4M3)));
    return q;
}

// One unit of a GEMM: column block `col` of tile `tile`, k range `split` of `splits`.
struct Item {
    int tile, col, split, splits;
    __device__ int pair(int columns) const { return tile * columns + col; }
    __device__ int first(int blocks) const { return blocks * split / splits; }
    __device__ int last(int blocks) const { return blocks * (split + 1) / splits; }
};

// Runs body(Item) for every tile of the plan and each of `columns` column blocks: a grid of one
// CTA an SM walks the items with the column block fastest, so the CTAs at work at any time share
// the rows of a few tiles and one expert's weights, all of which stay in L2 (a grid of (max
// tiles, columns) CTAs re-read every tile's rows in every column block's wave and launched CTAs
// past the plan's tiles).  Where the pairs would leave SMs idle, each pair's k range is cut into
// up to MOE_SPLIT_K splits (all items then fit in one wave).
template<class Body> __device__ __forceinline__ void walk_items(const Plan& p, int columns, Body body)
{
    const int pairs = *p.num_tiles * columns;
    const int wave = min((int)gridDim.x, kMaxSplitItems);
    const int splits = pairs > 0 ? max(1, min(MOE_SPLIT_K, wave / pairs)) : 1;
    const int items = pairs * splits;
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
        __syncthreads(); // the previous item's last readers of shared memory are done
        const int pair = w / splits;
        body(Item {pair / columns, pair % columns, w % splits, splits});
    }
}

// walk_items for clusters of two CTAs (MOE_CLUSTER2): a cluster walks (tile, column pair) items,
// its CTA of rank r taking column 2 j + r of pair j, so both stream the same tile's rows.
template<class Body>
[[maybe_unused]] __device__ __forceinline__ void walk_item_pairs(const Plan& p, int columns, Body body)
{
    const int rank = cluster_rank(), clusters = cluster_count(), half = columns / 2;
    const int pairs = *p.num_tiles * half;
    const int wave = min(clusters, kMaxSplitItems / 2);
    const int splits = pairs > 0 ? max(1, min(MOE_SPLIT_K, wave / pairs)) : 1;
    const int items = pairs * splits;
    for (int w = cluster_index(); w < items; w += clusters) {
        __syncthreads(); // the previous item's last readers of shared memory are done
        const int pair = w / splits;
        body(Item {pair / half, 2 * (pair % half) + rank, w % splits, splits});
    }
}

// For a split item: leaves this CTA's partial sums for the others of its pair and returns true
// in the CTA that arrives last, with acc the sum of every split's partial in split order (so the
// result does not depend on which CTA finishes last); the others return false and skip the
// epilogue.  plan_kernel zeroes `arrivals` before the GEMMs run.
__device__ __forceinline__ bool gather_splits(Acc& acc, const Plan& p, const Item& it, int gemm, int pair)
{
#if MOE_SPLIT_K > 1
    if (it.splits == 1)
        return true;
    int* arrivals = p.arrivals + gemm * kMaxSplitItems;
    __shared__ int last;
    const int base = pair * it.splits;
#pragma unroll
    for (int j = 0; j < 16; ++j)
        p.partial[((base + it.split) * 16 + j) * kThreads + threadIdx.x] =
            make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(arrivals + pair, 1) == it.splits - 1;
    __syncthreads();
    if (!last)
        return false;
    __threadfence();
#pragma unroll
    for (int e = 0; e < 64; ++e)
        acc[e] = 0.0f;
    for (int s = 0; s < it.splits; ++s) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const float4 v = __ldcg(&p.partial[((base + s) * 16 + j) * kThreads + threadIdx.x]);
            acc[4 * j] += v.x;
            acc[4 * j + 1] += v.y;
            acc[4 * j + 2] += v.z;
            acc[4 * j + 3] += v.w;
        }
    }
#endif
    return true;
}

dim3 items_grid(int64_t max_tiles, int columns)
{
    static const int sms = [] {
        int device = 0, count = 0;
        if (cudaGetDevice(&device) != cudaSuccess
            || cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
            count = 132;
        return count;
    }();
    return dim3((unsigned)std::min<int64_t>(max_tiles * columns, std::min(sms, kMaxSplitItems)));
}

// Column block `col`: B panel rows 0..63 are up rows n0.., rows 64..127 gate rows 2048 + n0..
// Where tile `tile`'s rows lie: its local expert, its first row and how many it has (up to 128).
struct TileRows {
    int le, first, rows;
};
__device__ __forceinline__ TileRows tile_rows(const Plan& p, int tile)
{
    const int le = p.tiles[2 * tile], first = p.offsets[le] + p.tiles[2 * tile + 1];
    return TileRows {le, first, min(kTile, p.offsets[le + 1] - first)};
}

// GEMM 1's tensor maps (MOE_TMA1; else null): W1's in 64-row boxes; with MOE_TMA1 2 the
// permuted A rows' in 128-row and kCBoxRows-row boxes.
struct Gemm1Maps {
    const CUtensorMap *w1, *xa, *xa_small;
};

__device__ __forceinline__ void gemm1_item(
    const KsArgs& a, const Plan& p, const Item& it, u8* smem, int* token, int& used, const Gemm1Maps& maps)
{
    const TileRows tr = tile_rows(p, it.tile);
    const int le = tr.le, first = tr.first, rows = tr.rows;
    const int n0 = it.col * kUpCols;
    // The ring's blocks: kPair1 k blocks each.
    const int k_first = it.first(kHiddenBlocks / kPair1), k_last = it.last(kHiddenBlocks / kPair1);
    if (threadIdx.x < kTile)
        token[threadIdx.x] = (int)threadIdx.x < rows ? p.row_token[first + threadIdx.x] : -1;
    __syncthreads();
    const u8* x = reinterpret_cast<const u8*>(a.hidden_states);
    const u8* w1 = reinterpret_cast<const u8*>(a.gemm1_weights) + (int64_t)le * kGemm1Out * kHidden;
    // A stage's scales: thread r < 128 copies row r's token scale (zeros for a zero row), threads
    // 128 and 129 the up and gate blocks' weight scales; block kb's lie `step` floats on.
    const int t = threadIdx.x;
    const float* s1 = a.gemm1_weights_scale + (int64_t)le * kGemm1Blocks * kHiddenBlocks;
    const int tok = t < kTile ? token[t] : -1;
    const float* scale_src = t < kTile ? a.hidden_states_scale + max(tok, 0)
                                       : s1 + (t == kTile ? n0 / kBlock : (kInter + n0) / kBlock) * kHiddenBlocks;
    const int64_t step = t < kTile ? a.seq_len : 1;
    const int scale_bytes = t < kTile ? (tok >= 0 ? 4 : 0) : 4;
    Acc acc, part; // part too: a fresh wgmma still names it as an input
#pragma unroll
    for (int e = 0; e < 64; ++e)
        acc[e] = part[e] = 0.0f;
    const RowBoxes boxes(rows);
    gemm_pipeline<kStages1, kPair1, kPair1 * kBlock, kScaleBytes1, MOE_TMA1, 1, kPair1>(
        smem, k_first, k_last, used,
        [&](int r) -> const u8* { return token[r] >= 0 ? x + (int64_t)token[r] * kHidden : nullptr; },
        [&](int r) -> const u8* { return w1 + (int64_t)(r < kUpCols ? n0 + r : kInter + n0 + r - kUpCols) * kHidden; },
        [&](int kb, uint32_t dst) {
#pragma unroll
            for (int j = 0; j < kPair1; ++j)
                if (t < kTile + 2)
                    cp_async_small<4>(
                        dst + 4 * (j * (kTile + 4) + t), scale_src + (kPair1 * kb + j) * step, scale_bytes);
        },
        [&](int, uint32_t a_panel, uint32_t b_panel, const float* scales, auto next) {
#pragma unroll
            for (int j = 0; j < kPair1; ++j) { // k block j of the stage
                const float* sj = scales + j * (kTile + 4);
                const float4 sc = make_float4(sj[acc_row(0)], sj[acc_row(2)], sj[kTile], sj[kTile + 1]);
                ready(part);
                issue<kBlock / 32>(part, a_panel + j * kPanelBytes, b_panel + j * kPanelBytes, 0, true);
                commit_products();
                if (j == 0)
                    next();
                wait_products(part);
                // The four (row, up or gate) products of the scales, one FFMA an element.
                const float s00 = sc.x * sc.z, s01 = sc.x * sc.w, s10 = sc.y * sc.z, s11 = sc.y * sc.w;
#pragma unroll
                for (int e = 0; e < 64; ++e)
                    acc[e] += part[e] * ((e >> 1) & 1 ? (e < 32 ? s10 : s11) : (e < 32 ? s00 : s01));
            }
        },
        [&](int kb, uint32_t dst, uint32_t bar) { // (A's rows,) then B: 64 up rows, the 64 gate rows
            if (MOE_TMA1 == 2)
                for (int box = 0; box < boxes.count; ++box)
                    tma_load_2d(dst + box * boxes.rows * 128, boxes.small ? maps.xa_small : maps.xa, kb * kBlock,
                        first + box * boxes.rows, bar);
            const int w_row = le * kGemm1Out + n0;
            tma_load_2d(dst + kPanelBytes, maps.w1, kb * kBlock, w_row, bar);
            tma_load_2d(dst + kPanelBytes + kUpCols * 128, maps.w1, kb * kBlock, w_row + kInter, bar);
        },
        (MOE_TMA1 == 2 ? boxes.bytes(1) : 0u) + kPanelBytes);
    if (!gather_splits(acc, p, it, 0, it.pair(kInter / kUpCols)))
        return;
    // Columns 0..63 are up, the gate of column c is c + 64.  A row's 64 columns lie in the four
    // threads of a quad: one scale per row from their largest |C|.
    float cv[32], amax[2] = {0.0f, 0.0f};
#pragma unroll
    for (int idx = 0; idx < 32; ++idx) {
        const float g = acc[idx + 32];
        // The accurate expf and division cost T11948's gemm1 1,529 -> 1,708 us in the lab.
        cv[idx] = __fdividef(g, 1.0f + __expf(-g)) * acc[idx];
        amax[(idx >> 1) & 1] = fmaxf(amax[(idx >> 1) & 1], fabsf(cv[idx]));
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        amax[h] = row_amax(amax[h]);
        const int r = acc_row(2 * h);
        if (r < rows && (threadIdx.x & 3) == 0)
            p.c_scale[(int64_t)(first + r) * kCScales + n0 / kCHalf] = amax[h] / kE4m3Max;
    }
    const int kb = n0 / kBlock, in_block = n0 % kBlock;
#pragma unroll
    for (int idx = 0; idx < 32; idx += 2) {
        const int r = acc_row(idx);
        if (r >= rows)
            continue;
        const float m = amax[(idx >> 1) & 1], inv = m > 0.0f ? kE4m3Max / m : 0.0f;
        float2 v = make_float2(cv[idx] * inv, cv[idx + 1] * inv), back;
        u8* out = smem + kGemm1Ring + r * kStageRow + acc_col(idx);
#pragma unroll
        for (int plane = 0; plane < kCPlanes; ++plane) {
            *reinterpret_cast<uint16_t*>(out + plane * kUpCols) = to_e4m3x2(v, back);
            v = make_float2(v.x - back.x, v.y - back.y);
        }
    }
    // This warpgroup's 64 rows leave as 16-byte pieces, 12 a row (4 per plane): 2-byte stores
    // straight from the accumulators took T11948's gemm1 from 1,636 to 1,708 us in the lab.
    // walk_items' barrier keeps the next item's staging behind these reads.
    warpgroup_sync();
    constexpr int kPieces = kCPlanes * kUpCols / 16;
#pragma unroll
    for (int j = 0; j < 64 * kPieces / 128; ++j) {
        const int c = (threadIdx.x & 127) + 128 * j, row = 64 * (threadIdx.x >> 7) + c / kPieces;
        const int plane = c % kPieces / 4, q = c % 4;
        if (row >= rows)
            continue;
        const uint4 v = *reinterpret_cast<const uint4*>(smem + kGemm1Ring + row * kStageRow + plane * kUpCols + 16 * q);
        *reinterpret_cast<uint4*>(p.c + (int64_t)(first + row) * kCRowBytes + kb * kCPlanes * kBlock + plane * kBlock
            + in_block + 16 * q) = v;
    }
}

// Column block `col`: hidden columns 128 col... (MOE_WIDE2: below).
// The tensor maps (MOE_TMA2; else null): C's in 128-row and in kCBoxRows-row boxes, W2's.
template<bool kHalfOut>
__device__ __forceinline__ void gemm2_item(const KsArgs& a, const Plan& p, const Item& it, u8* smem, int& used,
    const CUtensorMap* map_c, const CUtensorMap* map_c_small, const CUtensorMap* map_w2)
{
    // MOE_WIDE2, in the calls whose outputs are f16 (from MOE_O_F16_MIN_T tokens on, where the
    // tiles are mostly full): column `col` is half col / 28 (64 rows) of the tile against hidden
    // columns 256 (col % 28)...: both warpgroups read the same C rows, each its own 128 columns
    // of W2.  The half is the slow index, so that a tile's empty second half spreads over many
    // CTAs instead of falling on the odd ones of an even grid.
    constexpr bool kWide = MOE_WIDE2 && kHalfOut;
    constexpr int kRowsA = kWide ? kTile / 2 : kTile, kColsB = kWide ? 2 * kTile : kTile;
    const int t = threadIdx.x, wg = t >> 7;
    const TileRows tr = tile_rows(p, it.tile);
    constexpr int kBlocksB = kHidden / (kWide ? 2 * kTile : kTile); // 256-column blocks (28) with MOE_WIDE2
    const int half = kWide ? it.col / kBlocksB : 0;
    const int le = tr.le, first = kWide ? tr.first + kRowsA * half : tr.first;
    const int rows = kWide ? min(kRowsA, tr.rows - kRowsA * half) : tr.rows;
    if (kWide && rows <= 0)
        return; // a tile of 64 rows or fewer has no second half
    const int n0 = kWide ? it.col % kBlocksB * kColsB : it.col * kTile;
    const int col0 = kWide ? kTile * wg : 0; // this warpgroup's first column of the item
    const auto row_of = [&](int e) { return kWide ? acc_row(e) - 64 * wg : acc_row(e); };
    const int k_first = it.first(kInterBlocks), k_last = it.last(kInterBlocks);
    const u8* w2 = reinterpret_cast<const u8*>(a.gemm2_weights) + (int64_t)le * kHidden * kInter;
    const float* s2 = a.gemm2_weights_scale + ((int64_t)le * kHiddenBlocks + n0 / kBlock) * kInterBlocks;
    // A stage's scales: thread r < kRowsA copies row r's two C scales of the block (zeros past the
    // tile's rows), the next thread (two with MOE_WIDE2) W2's block scale.
    const float* scale_src = t < kRowsA ? p.c_scale + (int64_t)(first + min(t, rows - 1)) * kCScales
        : kWide                         ? s2 + (t - kRowsA) * kInterBlocks
                                        : s2;
    const int scale_bytes = t < kRowsA ? (t < rows ? 8 : 0) : 4;
    // The slot weights of this thread's two rows, read now so that the epilogue does not wait.
    const float weight0 = row_of(0) < rows ? p.row_weight[first + row_of(0)] : 0.0f;
    const float weight1 = row_of(2) < rows ? p.row_weight[first + row_of(2)] : 0.0f;
    Acc acc, part; // part too: a fresh wgmma still names it as an input
#pragma unroll
    for (int e = 0; e < 64; ++e)
        acc[e] = part[e] = 0.0f;
    const RowBoxes boxes(rows, kTile / kCluster2);
    const CUtensorMap* c_map = boxes.small ? map_c_small : map_c;
    gemm_pipeline<kStages2, kCPlanes, kCPlanes * kBlock, kScaleBytes2, MOE_TMA2 ? 2 : 0, kCluster2, 1, kRowsA, kColsB>(
        smem, k_first, k_last, used,
        [&](int r) -> const u8* { return r < rows ? p.c + (int64_t)(first + r) * kCRowBytes : nullptr; },
        [&](int r) -> const u8* { return w2 + (int64_t)(n0 + r) * kInter; },
        [&](int kb, uint32_t dst) {
            if (t < kRowsA)
                cp_async_small<8>(dst + 8 * t, scale_src + 2 * kb, scale_bytes);
            else if (t < kRowsA + kColsB / kTile)
                cp_async_small<4>(dst + 8 * kRowsA + (kWide ? 4 * (t - kRowsA) : 0), scale_src + kb, 4);
        },
        [&](int, uint32_t a_panel, uint32_t b_panel, const float* scales, auto next) {
            // C's scales times W2's: row 0's halves 0 and 1, then row 1's.
            const float w = scales[2 * kRowsA + (kWide ? wg : 0)];
            const float2 c0 = reinterpret_cast<const float2*>(scales)[row_of(0)];
            const float2 c1 = reinterpret_cast<const float2*>(scales)[row_of(2)];
            const float4 sc = make_float4(c0.x * w, c0.y * w, c1.x * w, c1.y * w);
            static_assert(kBlock / kCHalf == 2, "the scales cover two halves of a k block");
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                ready(part);
            // Smallest plane first: each wgmma cuts its products and the running sum to about
            // 13 bits below the largest of them, so plane 0 last costs the small planes nothing.
#pragma unroll
                for (int plane = kCPlanes - 1; plane >= 0; --plane)
                    issue<kCHalf / 32, kWide>(
                        part, a_panel + plane * kRowsA * 128, b_panel, h * kCHalf, plane == kCPlanes - 1);
                commit_products();
                if (h == 0)
                    next();
                wait_products(part);
                const float x0 = h ? sc.y : sc.x, x1 = h ? sc.w : sc.z;
#pragma unroll
                for (int e = 0; e < 64; ++e)
                    acc[e] += part[e] * ((e >> 1) & 1 ? x1 : x0);
            }
        },
        [&](int kb, uint32_t dst, uint32_t bar) { // block kb's three C planes, then W2's panel
            if (MOE_CLUSTER2) { // box r from the CTA of rank r, to both (a tile has one or two)
                const int box = cluster_rank();
                if (box < boxes.count)
#pragma unroll
                    for (int plane = 0; plane < kCPlanes; ++plane)
                        tma_load_2d_multicast(dst + plane * kPanelBytes + box * boxes.rows * 128, c_map,
                            kb * kCPlanes * kBlock + plane * kBlock, first + box * boxes.rows, bar, 3);
            } else {
                for (int box = 0; box < boxes.count; ++box)
#pragma unroll
                    for (int plane = 0; plane < kCPlanes; ++plane)
                        tma_load_2d(dst + plane * kPanelBytes + box * boxes.rows * 128, c_map,
                            kb * kCPlanes * kBlock + plane * kBlock, first + box * boxes.rows, bar);
            }
            tma_load_2d(dst + kCPlanes * kPanelBytes, map_w2, kb * kBlock, le * kHidden + n0, bar);
        },
        boxes.bytes(kCPlanes) + kPanelBytes);
    if (!gather_splits(acc, p, it, 1, it.pair(kHidden / kTile)))
        return;
    if constexpr (kHalfOut) {
        // A row's 128 columns lie in the four threads of a quad: one scale per row from their largest.
        float amax[2] = {0.0f, 0.0f};
#pragma unroll
        for (int idx = 0; idx < 64; ++idx) {
            acc[idx] *= (idx >> 1) & 1 ? weight1 : weight0;
            amax[(idx >> 1) & 1] = fmaxf(amax[(idx >> 1) & 1], fabsf(acc[idx]));
        }
        float inv[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            amax[h] = row_amax(amax[h]);
            inv[h] = amax[h] > 0.0f ? 32768.0f / amax[h] : 0.0f;
            const int r = row_of(2 * h);
            if (r < rows && (threadIdx.x & 3) == 0)
                p.o_scale[(int64_t)(first + r) * kOScales + (n0 + col0) / kTile] = amax[h] / 32768.0f;
        }
        // Through the ring, idle once every thread is past its last products (walk_items' barrier
        // keeps the next item's copies behind the reads below).  Rows 272 (MOE_WIDE2: 528) bytes apart: the eight
        // rows of an accumulator store fall in eight bank groups.  (Pairs stored straight from the
        // accumulators made GEMM 2 up to 8 % slower, session 35.)
        constexpr int kORow = 2 * kColsB + 16;
        __syncthreads();
#pragma unroll
        for (int idx = 0; idx < 64; idx += 2) {
            const float x = inv[(idx >> 1) & 1];
            *reinterpret_cast<__half2*>(smem + row_of(idx) * kORow + 2 * (col0 + acc_col(idx))) =
                __floats2half2_rn(acc[idx] * x, acc[idx + 1] * x);
        }
        constexpr int kPieces = 2 * kColsB / 16; // a row's 16-byte pieces
        if constexpr (kWide) { // the warpgroups share rows
            __syncthreads();
#pragma unroll
            for (int j = 0; j < kRowsA * kPieces / kThreads; ++j) {
                const int c = threadIdx.x + kThreads * j, row = c / kPieces, q = c % kPieces;
                if (row < rows)
                    *reinterpret_cast<uint4*>(p.o_half + (int64_t)(first + row) * kHidden + n0 + 8 * q) =
                        *reinterpret_cast<const uint4*>(smem + row * kORow + 16 * q);
            }
        } else {
            warpgroup_sync();
#pragma unroll
            for (int j = 0; j < 64 * kPieces / 128; ++j) {
                const int c = (threadIdx.x & 127) + 128 * j, row = 64 * (threadIdx.x >> 7) + c / kPieces;
                const int q = c % kPieces;
                if (row < rows)
                    *reinterpret_cast<uint4*>(p.o_half + (int64_t)(first + row) * kHidden + n0 + 8 * q) =
                        *reinterpret_cast<const uint4*>(smem + row * kORow + 16 * q);
            }
        }
        if constexpr (MOE_TMA2)
            fence_to_async(); // the next item's tensor copies write where these threads wrote and read
    } else {
#pragma unroll
        for (int idx = 0; idx < 64; idx += 2) {
            const int r = row_of(idx), c = col0 + acc_col(idx);
            if (r >= rows)
                continue;
            const float w = (idx >> 1) & 1 ? weight1 : weight0;
            *reinterpret_cast<float2*>(p.o + (int64_t)(first + r) * kHidden + n0 + c) =
                make_float2(acc[idx] * w, acc[idx + 1] * w);
        }
    }
}

#if MOE_TMA1
__global__ void __launch_bounds__(kThreads) gemm1_kernel(KsArgs a, Plan p, const __grid_constant__ CUtensorMap map_w1,
    const __grid_constant__ CUtensorMap map_xa, const __grid_constant__ CUtensorMap map_xa_small)
{
    const Gemm1Maps maps {&map_w1, &map_xa, &map_xa_small};
#else
__global__ void __launch_bounds__(kThreads) gemm1_kernel(KsArgs a, Plan p)
{
    const Gemm1Maps maps {nullptr, nullptr, nullptr};
#endif
    kernel_start();
    extern __shared__ u8 smem_raw[];
    __shared__ int token[kTile];
    u8* smem = align1024(smem_raw);
    int used = 0; // blocks streamed through the ring so far
    walk_items(p, kInter / kUpCols, [&](const Item& it) { gemm1_item(a, p, it, smem, token, used, maps); });
}

#if MOE_CLUSTER2
#define MOE_GEMM2_CLUSTER __cluster_dims__(2, 1, 1)
#else
#define MOE_GEMM2_CLUSTER
#endif
#if MOE_TMA2
template<bool kHalfOut>
__global__ void __launch_bounds__(kThreads) MOE_GEMM2_CLUSTER
    gemm2_kernel(KsArgs a, Plan p, const __grid_constant__ CUtensorMap map_c,
        const __grid_constant__ CUtensorMap map_c_small, const __grid_constant__ CUtensorMap map_w2)
{
    const CUtensorMap *c = &map_c, *c_small = &map_c_small, *w2 = &map_w2;
#else
template<bool kHalfOut> __global__ void __launch_bounds__(kThreads) gemm2_kernel(KsArgs a, Plan p)
{
    const CUtensorMap *c = nullptr, *c_small = nullptr, *w2 = nullptr;
#endif
    kernel_start();
    extern __shared__ u8 smem_raw[];
    u8* smem = align1024(smem_raw);
    int used = 0; // blocks streamed through the ring so far
#if MOE_CLUSTER2
    walk_item_pairs(
        p, kHidden / kTile, [&](const Item& it) { gemm2_item<kHalfOut>(a, p, it, smem, used, c, c_small, w2); });
    cluster_sync(); // no CTA leaves while the other may still copy into it or arrive on its barriers
#else
    walk_items(p, kHidden / kTile, [&](const Item& it) { gemm2_item<kHalfOut>(a, p, it, smem, used, c, c_small, w2); });
#endif
}

// ------------------------------------------------------------------ 6. combine

template<bool kHalfOut> __global__ void combine_kernel(KsArgs a, Plan p)
{
    kernel_start();
    const int64_t total = a.seq_len * (kHidden / 8);
    for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < total; v += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = v / (kHidden / 8);
        const int h = (int)(v % (kHidden / 8)) * 8;
        float sum[8] = {};
        for (int k = 0; k < kTopK; ++k) {
            if (p.slot_local[t * kTopK + k] < 0)
                continue;
            if constexpr (kHalfOut) {
                const int64_t row = p.slot_row[t * kTopK + k];
                const float scale = p.o_scale[row * kOScales + h / kTile];
                const uint4 raw = *reinterpret_cast<const uint4*>(p.o_half + row * kHidden + h);
                const __half2* pairs = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float2 v = __half22float2(pairs[j]);
                    sum[2 * j] += v.x * scale;
                    sum[2 * j + 1] += v.y * scale;
                }
            } else {
                const float4* o =
                    reinterpret_cast<const float4*>(p.o + (int64_t)p.slot_row[t * kTopK + k] * kHidden + h);
                const float4 lo = o[0], hi = o[1];
                sum[0] += lo.x;
                sum[1] += lo.y;
                sum[2] += lo.z;
                sum[3] += lo.w;
                sum[4] += hi.x;
                sum[5] += hi.y;
                sum[6] += hi.z;
                sum[7] += hi.w;
            }
        }
        __align__(16) __nv_bfloat162 out[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
            out[j] = __floats2bfloat162_rn(sum[2 * j], sum[2 * j + 1]);
        *reinterpret_cast<uint4*>(a.output + t * kHidden + h) = *reinterpret_cast<const uint4*>(out);
    }
}

#if MOE_TMA1 || MOE_TMA2
// cuTensorMapEncodeTiled through the runtime (no -lcuda); null where the driver lacks it.
decltype(&cuTensorMapEncodeTiled) tensor_map_encoder()
{
    static const auto encoder = [] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found {};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found)
                != cudaSuccess
            || found != cudaDriverEntryPointSuccess)
            fn = nullptr;
        return reinterpret_cast<decltype(&cuTensorMapEncodeTiled)>(fn);
    }();
    return encoder;
}

// A row-major [rows][row_bytes] byte matrix read in boxes of box_rows rows x 128 bytes, written
// to shared memory with the 128-byte swizzle the panels use (past the last row: zeros).
bool panel_map(CUtensorMap& map, const void* base, uint64_t rows, uint64_t row_bytes, uint32_t box_rows)
{
    const auto encode = tensor_map_encoder();
    const cuuint64_t dims[2] = {row_bytes, rows};
    const cuuint64_t strides[1] = {row_bytes};
    const cuuint32_t box[2] = {(cuuint32_t)kBlock, box_rows};
    const cuuint32_t steps[2] = {1, 1};
    return encode
        && encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides, box, steps,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
        == CUDA_SUCCESS;
}
#endif

size_t align256(size_t v)
{
    return (v + 255) / 256 * 256;
}

unsigned grid_of(int64_t items, int64_t cap)
{
    return (unsigned)(items < cap ? (items > 0 ? items : 1) : cap);
}

// Carves the workspace; returns the bytes it needs (nothing is written when base is null).
size_t carve(unsigned char* base, int64_t T, int64_t max_tiles, Plan& p)
{
    size_t at = 0;
    auto take = [&](size_t bytes) {
        unsigned char* here = base ? base + at : nullptr;
        at += align256(bytes);
        return here;
    };
    const size_t slots = (size_t)T * kTopK;
    p.counts = reinterpret_cast<int*>(take(kLocal * sizeof(int)));
    p.offsets = reinterpret_cast<int*>(take((kLocal + 1) * sizeof(int)));
    p.tiles = reinterpret_cast<int*>(take((size_t)max_tiles * 2 * sizeof(int)));
    p.num_tiles = reinterpret_cast<int*>(take(sizeof(int)));
    p.slot_local = reinterpret_cast<int*>(take(slots * sizeof(int)));
    p.slot_row = reinterpret_cast<int*>(take(slots * sizeof(int)));
    p.slot_weight = reinterpret_cast<float*>(take(slots * sizeof(float)));
    p.row_token = reinterpret_cast<int*>(take(slots * sizeof(int)));
    p.row_weight = reinterpret_cast<float*>(take(slots * sizeof(float)));
    p.c = take(slots * kCRowBytes);
    p.c_scale = reinterpret_cast<float*>(take(slots * kCScales * sizeof(float)));
    p.o = reinterpret_cast<float*>(take(slots * kHidden * sizeof(float)));
    p.o_half = reinterpret_cast<__half*>(p.o);
    if (MOE_O_F16)
        p.o_scale = reinterpret_cast<float*>(take(slots * kOScales * sizeof(float)));
#if MOE_TMA1 == 2
    p.xa = take(slots * kHidden);
#endif
#if MOE_SPLIT_K > 1
    p.arrivals = reinterpret_cast<int*>(take(2 * kMaxSplitItems * sizeof(int)));
    p.partial = reinterpret_cast<float4*>(take((size_t)kMaxSplitItems * 16 * kThreads * sizeof(float4)));
#endif
    return at;
}

} // namespace

extern "C" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream)
{
    if (!args || args->seq_len < 0)
        return (int)cudaErrorInvalidValue;
    const int64_t T = args->seq_len;
    if (T == 0)
        return 0;
    const int64_t max_tiles = (T * kTopK + kTile - 1) / kTile + kLocal; // each expert wastes under a tile
    Plan p {};
    if (T * kTopK > INT_MAX / 2 || max_tiles > 65535 || !workspace || workspace_bytes < carve(nullptr, T, max_tiles, p))
        return (int)cudaErrorInvalidValue;
    carve(static_cast<unsigned char*>(workspace), T, max_tiles, p);
#if MOE_TMA1
    CUtensorMap map_w1, map_xa {}, map_xa_small {}; // the A maps stay unused below MOE_TMA1 2
    if (!panel_map(map_w1, args->gemm1_weights, (uint64_t)kLocal * kGemm1Out, kHidden, kUpCols))
        return (int)cudaErrorNotSupported;
#if MOE_TMA1 == 2
    if (!panel_map(map_xa, p.xa, (uint64_t)T * kTopK, kHidden, kTile)
        || !panel_map(map_xa_small, p.xa, (uint64_t)T * kTopK, kHidden, kCBoxRows))
        return (int)cudaErrorNotSupported;
#endif
#endif
#if MOE_TMA2
    // Rows of a box past its tile's read the rows after them: C rows of the next expert, rows of
    // the workspace no tile has written, or (past the last slot) zeros.  Their products land in
    // rows the epilogue does not store.
    CUtensorMap map_c, map_c_small, map_w2;
    if (!panel_map(map_c, p.c, (uint64_t)T * kTopK, kCRowBytes, kTile / kCluster2)
        || !panel_map(map_c_small, p.c, (uint64_t)T * kTopK, kCRowBytes, kCBoxRows)
        || !panel_map(map_w2, args->gemm2_weights, (uint64_t)kLocal * kHidden, kInter, kTile))
        return (int)cudaErrorNotSupported;
#endif // the maps are made before the first launch, so that a failure leaves nothing queued

    static const cudaError_t configured = [] {
        cudaError_t err = cudaFuncSetAttribute(gemm1_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kGemm1Smem);
        for (auto gemm2 : {gemm2_kernel<false>, gemm2_kernel<true>})
            if (err == cudaSuccess)
                err = cudaFuncSetAttribute(gemm2, cudaFuncAttributeMaxDynamicSharedMemorySize, kGemm2Smem);
        return err;
    }();
    if (configured != cudaSuccess)
        return (int)configured;

    // Slot outputs in f16 halve the combine's reads and GEMM 2's writes, which the large calls feel;
    // the small ones lose a little to the epilogue's staging (header, MOE_O_F16).
    const bool half_out = MOE_O_F16 && T >= MOE_O_F16_MIN_T;
    const auto gemm2 = half_out ? gemm2_kernel<true> : gemm2_kernel<false>;
    const auto combine = half_out ? combine_kernel<true> : combine_kernel<false>;
    const bool front = T <= MOE_FRONT_T; // routing, plan and scatter in one CTA (front_kernel)
    const cudaError_t err = front ? cudaSuccess : cudaMemsetAsync(p.counts, 0, kLocal * sizeof(int), stream);
    if (err != cudaSuccess)
        return (int)err;
    const dim3 scatter_grid((unsigned)((T * kTopK + 255) / 256)),
        gemm1_grid = items_grid(max_tiles, kInter / kUpCols), gemm2_grid = items_grid(max_tiles, kHidden / kTile),
        combine_grid(grid_of((T * (kHidden / 8) + 255) / 256, 8192));
    if (front)
        front_kernel<<<1, 1024, 0, stream>>>(*args, p);
    else
        route_kernel<<<(unsigned)((T + 7) / 8), 256, 0, stream>>>(*args, p);
#if MOE_PDL
    // Each a programmatic dependent of the kernel before (see kernel_start).
    const auto after = [&](auto kernel, dim3 grid, int threads, int smem_bytes, auto... params) {
        cudaLaunchConfig_t config {};
        config.gridDim = grid;
        config.blockDim = dim3(threads);
        config.dynamicSmemBytes = smem_bytes;
        config.stream = stream;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        config.attrs = attr;
        config.numAttrs = 1;
        return cudaLaunchKernelEx(&config, kernel, params...);
    };
    cudaError_t launched = cudaGetLastError();
    if (launched == cudaSuccess && !front)
        launched = after(plan_kernel, dim3(1), 32, 0, p);
    if (launched == cudaSuccess && !front)
        launched = after(scatter_kernel, scatter_grid, 256, 0, p, T * kTopK);
    if (launched == cudaSuccess)
        launched = after(gemm1_kernel, gemm1_grid, kThreads, kGemm1Smem, *args, p);
    if (launched == cudaSuccess)
        launched = after(gemm2, gemm2_grid, kThreads, kGemm2Smem, *args, p);
    if (launched == cudaSuccess)
        launched = after(combine, combine_grid, 256, 0, *args, p);
    return (int)launched;
#else
    if (!front) {
        plan_kernel<<<1, 32, 0, stream>>>(p);
        scatter_kernel<<<scatter_grid, 256, 0, stream>>>(p, T * kTopK);
    }
#if MOE_TMA1
#if MOE_TMA1 == 2
    permute_rows_kernel<<<grid_of((T * kTopK * (kHidden / 16) + 255) / 256, 2048), 256, 0, stream>>>(*args, p);
#endif
    gemm1_kernel<<<gemm1_grid, kThreads, kGemm1Smem, stream>>>(*args, p, map_w1, map_xa, map_xa_small);
#else
    gemm1_kernel<<<gemm1_grid, kThreads, kGemm1Smem, stream>>>(*args, p);
#endif
#if MOE_CLUSTER2
    // Whole clusters, no more than fit at once (a GPC with an odd number of free SMs leaves one).
    static const int max_clusters = [] {
        cudaLaunchConfig_t config {};
        config.gridDim = dim3(2 * 66);
        config.blockDim = dim3(kThreads);
        config.dynamicSmemBytes = kGemm2Smem;
        int n = 0;
        return cudaOccupancyMaxActiveClusters(&n, gemm2_kernel<false>, &config) == cudaSuccess && n > 0 ? n : 1;
    }();
    const unsigned grid2 = std::max(2u, std::min(gemm2_grid.x / 2 * 2, 2u * max_clusters));
    gemm2<<<grid2, kThreads, kGemm2Smem, stream>>>(*args, p, map_c, map_c_small, map_w2);
#elif MOE_TMA2
    gemm2<<<gemm2_grid, kThreads, kGemm2Smem, stream>>>(*args, p, map_c, map_c_small, map_w2);
#else
    gemm2<<<gemm2_grid, kThreads, kGemm2Smem, stream>>>(*args, p);
#endif
    combine<<<combine_grid, 256, 0, stream>>>(*args, p);
    return (int)cudaGetLastError();
#endif
}
