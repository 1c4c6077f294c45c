// EXPERIMENT (bench/kernels, not shipped; not yet run on a GPU): the shipped baseline with its
// weight-widening pass removed: both GEMMs read the fp8 weights themselves, into registers one
// k step ahead, and widen them into the shared B panel (the products stay bf16 and exact).
// The workspace still holds the unused widened-weight planes (the task's formula is unchanged).
// Lab: `bash bench/kernel_lab.sh build TASK base=tasks/TASK/baseline.cu
// fp8w=bench/kernels/moe_fp8_weight_loads.cu` here, `LAB_ARGS=--kernels bash bench/kernel_lab.sh
// run TASK` there (TASK: moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048).
//
// FP8 block-scale MoE with DeepSeek-V3 routing for H200 (sm_90a): warp-parallel routing, a
// per-expert token permutation, and both grouped GEMMs on Hopper's warpgroup tensor cores
// (wgmma.m64n128k16, bf16 operands, fp32 accumulation).
//
//   1. route      a warp per token: sigmoid, biased group scores (top-2 of each group of 32 by
//                 shuffles), 4 of 8 groups, 8 experts by eight warp-wide arg-max rounds, weights
//                 normalised without the bias and scaled.  A local expert's slot takes the next
//                 row of that expert by atomicAdd.
//   2. plan       one warp: each expert's first row (a scan of the counts) and the list of
//                 128-row tiles, so the GEMM grids need no host round trip.
//   3. scatter    each local slot's row: its token and weight; each slot learns its row.
//   4. widen      the tokens (all of them) and the weights of every expert that got a token
//                 from fp8 to bf16, unscaled: every e4m3 value is exact in bf16, so the tensor
//                 cores' products are exact, and the block scales are applied in fp32 once per
//                 128-wide k block (each block's products go to a second set of accumulators,
//                 which is then scaled and added).  Scaling before rounding to bf16 would cost
//                 2^-9 relatively per operand; with the task's per-element 1e-2 tolerance that
//                 failed about 10 % of the elements (those near zero), over the 5 % allowed.
//   5. gemm1      per (expert tile of 128 rows, 64 intermediate columns): the rows gathered by
//                 token, W1's 64 up rows and the matching 64 gate rows in one 128-row B panel, so
//                 one thread holds an up value and its gate: C = silu(gate) * up, kept as two
//                 bf16 planes, hi = bf16(C) and lo = bf16(C - hi), 16 bits of C's mantissa.
//   6. gemm2      per (expert tile, 128 hidden columns): O = (C_hi + C_lo) W2^T, two products per
//                 k step, times the block scales and the slot's weight, fp32.
//   7. combine    output[t] = the sum of O over the token's local slots in slot order (no atomics:
//                 the result is the same on every run), bf16.
//
// The GEMM tiles are those of tasks/trimul's baseline: 128 x 128, shared panels of 128 rows x
// 64 bf16 (128-byte rows, 16-byte chunks XOR-swizzled by row & 7: the hardware's 128-byte
// swizzle on 1024-byte boundaries), a three-stage cp.async ring, one wgmma chain per warpgroup.
// Not yet: fp8 tensor cores (twice bf16's rate) with the scales applied per 128-wide k block,
// and a split-K path for the few-token workloads, which read each active expert's weights
// three times here (fp8, then bf16 written and read back).
#include "ks_task.h"

#include <cuda_bf16.h>

#include <climits>
#include <cstdint>
#include <math_constants.h>

namespace {

using bf16 = __nv_bfloat16;

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

constexpr int kThreads = 256;                    // two warpgroups
constexpr int kTile = 128;
constexpr int kPanel = 64;
constexpr int kPanelBytes = kTile * kPanel * 2;  // 16 KB
constexpr int kStages = 3;
constexpr int kAlignSlack = 1024;
constexpr int kGemmSmem = kStages * 3 * kPanelBytes + kAlignSlack;  // A (and A lo, gemm2) and B
constexpr int kUpCols = 64;                      // gemm1: 64 up and 64 gate columns a tile

// ------------------------------------------------------------------ PTX wrappers

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ unsigned char* align1024(unsigned char* p)
{
    return p + ((kAlignSlack - (smem_u32(p) & (kAlignSlack - 1))) & (kAlignSlack - 1));
}

__device__ __forceinline__ uint32_t swz(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); }

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ void fence_to_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

using Acc = float[64];

// Thread t of warpgroup t / 128 holds acc[4 i + e] at row 64 (t / 128) + 16 ((t / 32) % 4) +
// (t % 32) / 4 + 8 (e / 2) and column 8 i + 2 (t % 4) + e % 2 of the 128 x 128 tile.
__device__ __forceinline__ int acc_row(int e)
{
    const int t = threadIdx.x;
    return 64 * (t >> 7) + 16 * ((t >> 5) & 3) + ((t & 31) >> 2) + 8 * ((e >> 1) & 1);
}
__device__ __forceinline__ int acc_col(int e) { return 8 * (e >> 2) + 2 * (threadIdx.x & 3) + (e & 1); }

__device__ __forceinline__ uint64_t smem_desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

__device__ __forceinline__ void wgmma_bf16_m64n128k16(Acc& d, uint64_t da, uint64_t db)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1));
}

__device__ __forceinline__ void panel_mma(Acc& acc, uint32_t a_panel, uint32_t b_panel)
{
    const uint32_t a = a_panel + (threadIdx.x >> 7) * 64 * 128;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < kPanel / 16; ++ks) wgmma_bf16_m64n128k16(acc, smem_desc(a + ks * 32), smem_desc(b_panel + ks * 32));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

// Eight fp8 values to bf16, exactly.
__device__ __forceinline__ void widen8(bf16* dst, const ks_f8e4m3_t* src)
{
    const uint2 raw = *reinterpret_cast<const uint2*>(src);
    const ks_f8e4m3_t* q = reinterpret_cast<const ks_f8e4m3_t*>(&raw);
    __align__(16) __nv_bfloat162 out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) out[j] = __floats2bfloat162_rn(float(q[2 * j]), float(q[2 * j + 1]));
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);
}

// acc = sum over 128-wide k blocks kb of fold(kb, A_kb B_kb^T), over `blocks` blocks: each block's
// products are made in `part` and folded into acc with its scales in fp32.  row_a(r), row_a_lo(r)
// and row_b(r) give row r's element 0 (nullptr: a zero row); bf16, k contiguous.  kSplitA: A is
// the sum of two planes (row_a and row_a_lo), both multiplied by the same B panel.
template <bool kSplitA, bool kFp8B, class RowA, class RowALo, class RowB, class Fold>
__device__ __forceinline__ void gemm_blocks(Acc& acc, unsigned char* smem, int blocks, RowA row_a, RowALo row_a_lo, RowB row_b,
                                            Fold fold)
{
    constexpr int kPlanes = kSplitA ? 3 : 2;  // per stage: A, (A lo,) B
    constexpr int kCopied = kFp8B ? kPlanes - 1 : kPlanes;  // planes that cp.async fills
    const int steps = blocks * (kBlock / kPanel);
    auto load = [&](int t) {
        if (t < steps) {
            unsigned char* st = smem + (t % kStages) * kPlanes * kPanelBytes;
            for (int e = threadIdx.x; e < kCopied * kTile * 8; e += kThreads) {
                const int plane = e >> 10, r = (e >> 3) & (kTile - 1), c = e & 7;
                const void* row;
                if constexpr (kFp8B)
                    row = plane == 0 ? row_a(r) : row_a_lo(r);
                else
                    row = plane == kPlanes - 1 ? row_b(r) : (plane == 0 ? row_a(r) : row_a_lo(r));
                const bf16* rb = static_cast<const bf16*>(row);
                cp_async16(smem_u32(st + plane * kPanelBytes) + swz(r, c), rb ? rb + t * kPanel + c * 8 : static_cast<const void*>(row_b(0)),
                           row != nullptr);
            }
        }
        cp_async_commit();
    };
    // kFp8B: the B panel of step t is read as fp8 into registers one step ahead (fetch), and
    // widened into its stage at the top of the next step (store), after the barrier that frees it.
    uint2 b_raw[kTile * 8 / kThreads];
    auto fetch_b = [&](int t) {
        if (t < steps) {
#pragma unroll
            for (int i = 0; i < kTile * 8 / kThreads; ++i) {
                const int e = threadIdx.x + i * kThreads, r = e >> 3, c = e & 7;
                b_raw[i] = __ldg(reinterpret_cast<const uint2*>(row_b(r) + t * kPanel + c * 8));
            }
        }
    };
    auto store_b = [&](int t) {
        if (t < steps) {
            unsigned char* plane = smem + (t % kStages) * kPlanes * kPanelBytes + (kPlanes - 1) * kPanelBytes;
#pragma unroll
            for (int i = 0; i < kTile * 8 / kThreads; ++i) {
                const int e = threadIdx.x + i * kThreads, r = e >> 3, c = e & 7;
                widen8(reinterpret_cast<bf16*>(plane + swz(r, c)), reinterpret_cast<const ks_f8e4m3_t*>(&b_raw[i]));
            }
        }
    };
    for (int s = 0; s < kStages - 1; ++s) load(s);
    if constexpr (kFp8B) {
        fetch_b(0);
        store_b(0);
        fetch_b(1);
    }
    Acc part;
#pragma unroll
    for (int e = 0; e < 64; ++e) acc[e] = 0.0f;
    for (int t = 0; t < steps; ++t) {
        cp_async_wait<kStages - 2>();
        fence_to_async();
        __syncthreads();
        load(t + kStages - 1);
        if constexpr (kFp8B) {
            store_b(t + 1);  // its stage was last read by step t - 2's products
            fetch_b(t + 2);
        }
        if (t % (kBlock / kPanel) == 0) {
#pragma unroll
            for (int e = 0; e < 64; ++e) part[e] = 0.0f;
        }
        const unsigned char* st = smem + (t % kStages) * kPlanes * kPanelBytes;
        panel_mma(part, smem_u32(st), smem_u32(st + (kPlanes - 1) * kPanelBytes));
        if (kSplitA) panel_mma(part, smem_u32(st + kPanelBytes), smem_u32(st + 2 * kPanelBytes));
        if (t % (kBlock / kPanel) == kBlock / kPanel - 1) fold(t / (kBlock / kPanel), part);
    }
}

// ------------------------------------------------------------------ workspace

struct Plan {
    int* counts;        // [32] rows of each local expert
    int* offsets;       // [33] first row of each expert
    int* tiles;         // [max_tiles][2] (expert, first row within it)
    int* num_tiles;     // [1]
    int* slot_local;    // [T * 8] local expert of the slot, or -1
    int* slot_row;      // [T * 8] its row within the expert, then its global row
    float* slot_weight; // [T * 8]
    int* row_token;     // [T * 8] token of each row
    float* row_weight;  // [T * 8]
    bf16* x;            // [T][7168] the fp8 tokens, widened
    bf16* w1;           // [32][4096][7168] widened (experts with tokens only)
    bf16* w2;           // [32][7168][2048]
    bf16* c;            // [T * 8][2048] bf16(C)
    bf16* c_lo;         // [T * 8][2048] bf16(C - c)
    float* o;           // [T * 8][7168] weighted expert outputs
};

// ------------------------------------------------------------------ 1. routing

struct Best {
    float value, s;
    int index;
};

__device__ __forceinline__ bool better(const Best& a, const Best& b)
{
    return a.value > b.value || (a.value == b.value && a.index < b.index);
}

__global__ void __launch_bounds__(256) route_kernel(KsArgs a, Plan p)
{
    const int lane = threadIdx.x & 31;
    const int64_t t = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    if (t >= a.seq_len) return;
    float s[8], b[8];  // lane l holds experts 8 l .. 8 l + 7; a group is 4 lanes
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const int e = lane * 8 + j;
        s[j] = 1.0f / (1.0f + expf(-a.routing_logits[t * kExperts + e]));
        b[j] = s[j] + ks_to_float(a.routing_bias[e]);
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
    for (int off = 1; off < 4; off *= 2) {  // merge the group's four top-2 pairs
        const float o0 = __shfl_xor_sync(0xffffffffu, top0, off), o1 = __shfl_xor_sync(0xffffffffu, top1, off);
        const float hi = fmaxf(top0, o0);
        top1 = fmaxf(fminf(top0, o0), fmaxf(top1, o1));
        top0 = hi;
    }
    float score[kGroups];
#pragma unroll
    for (int g = 0; g < kGroups; ++g) score[g] = __shfl_sync(0xffffffffu, top0 + top1, g * 4);
    unsigned kept = 0;
    for (int n = 0; n < kKeptGroups; ++n) {
        int best = -1;
        for (int g = 0; g < kGroups; ++g)
            if (!(kept >> g & 1u) && (best < 0 || score[g] > score[best])) best = g;
        kept |= 1u << best;
    }
    const bool mine = kept >> (lane * 8 / kGroupSize) & 1u;
    unsigned taken = 0;
    int chosen = -1;
    float chosen_s = 0.0f, sum = 0.0f;
    for (int k = 0; k < kTopK; ++k) {
        Best own {-CUDART_INF_F, 0.0f, INT_MAX};
#pragma unroll
        for (int j = 0; j < 8; ++j)
            if (mine && !(taken >> j & 1u) && (own.index == INT_MAX || b[j] > own.value)) own = {b[j], s[j], lane * 8 + j};
#pragma unroll
        for (int off = 16; off > 0; off /= 2) {
            const Best other {__shfl_xor_sync(0xffffffffu, own.value, off), __shfl_xor_sync(0xffffffffu, own.s, off),
                              __shfl_xor_sync(0xffffffffu, own.index, off)};
            if (better(other, own)) own = other;
        }
        if (own.index / 8 == lane) taken |= 1u << (own.index % 8);
        if (lane == k) {
            chosen = own.index;
            chosen_s = own.s;
        }
        sum += own.s;
    }
    if (lane >= kTopK) return;
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

// ------------------------------------------------------------------ 2. plan, 3. scatter

__global__ void plan_kernel(Plan p)
{
    const int lane = threadIdx.x;  // one warp, one lane per local expert
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
}

__global__ void scatter_kernel(Plan p, int64_t slots)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= slots) return;
    const int le = p.slot_local[i];
    if (le < 0) return;
    const int row = p.offsets[le] + p.slot_row[i];
    p.row_token[row] = (int)(i / kTopK);
    p.row_weight[row] = p.slot_weight[i];
    p.slot_row[i] = row;
}

// ------------------------------------------------------------------ 4. dequantisation

__global__ void widen_tokens(KsArgs a, bf16* x)
{
    const int64_t total = a.seq_len * kHidden / 8;
    for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < total; v += (int64_t)gridDim.x * blockDim.x)
        widen8(x + v * 8, a.hidden_states + v * 8);
}

// ------------------------------------------------------------------ 5., 6. the grouped GEMMs

// Grid (max tiles, 2048 / 64).  B panel rows 0..63: up rows n0.., rows 64..127: gate rows 2048 + n0..
__global__ void __launch_bounds__(kThreads) gemm1_kernel(KsArgs a, Plan p)
{
    if ((int)blockIdx.x >= *p.num_tiles) return;
    extern __shared__ unsigned char smem_raw[];
    __shared__ int token[kTile];
    unsigned char* smem = align1024(smem_raw);
    const int le = p.tiles[2 * blockIdx.x], first = p.offsets[le] + p.tiles[2 * blockIdx.x + 1];
    const int rows = min(kTile, p.offsets[le + 1] - first);
    const int n0 = blockIdx.y * kUpCols;
    if (threadIdx.x < kTile) token[threadIdx.x] = (int)threadIdx.x < rows ? p.row_token[first + threadIdx.x] : -1;
    __syncthreads();
    const ks_f8e4m3_t* w1 = a.gemm1_weights + (int64_t)le * kGemm1Out * kHidden;
    // The block scales this thread needs: its two rows' token scales, the up and gate blocks'.
    const int t0 = token[acc_row(0)], t1 = token[acc_row(2)];
    const float* s1 = a.gemm1_weights_scale + (int64_t)le * kGemm1Blocks * kHiddenBlocks;
    const int up_block = n0 / kBlock, gate_block = (kInter + n0) / kBlock;
    Acc acc;
    gemm_blocks<false, true>(
        acc, smem, kHiddenBlocks,
        [&](int r) -> const bf16* { return token[r] >= 0 ? p.x + (int64_t)token[r] * kHidden : nullptr; },
        [&](int) -> const bf16* { return nullptr; },
        [&](int r) -> const ks_f8e4m3_t* { return w1 + (int64_t)(r < kUpCols ? n0 + r : kInter + n0 + r - kUpCols) * kHidden; },
        [&](int kb, const Acc& part) {
            const float x0 = t0 >= 0 ? a.hidden_states_scale[(int64_t)kb * a.seq_len + t0] : 0.0f;
            const float x1 = t1 >= 0 ? a.hidden_states_scale[(int64_t)kb * a.seq_len + t1] : 0.0f;
            const float up = s1[up_block * kHiddenBlocks + kb], gate = s1[gate_block * kHiddenBlocks + kb];
#pragma unroll
            for (int e = 0; e < 64; ++e) acc[e] += part[e] * ((e >> 1) & 1 ? x1 : x0) * (e < 32 ? up : gate);
        });
#pragma unroll
    for (int idx = 0; idx < 32; idx += 2) {  // columns 0..63: up; the gate of column c is c + 64
        const int r = acc_row(idx), c = acc_col(idx);
        if (r >= rows) continue;
        const float g0 = acc[idx + 32], g1 = acc[idx + 33];
        const float c0 = g0 / (1.0f + expf(-g0)) * acc[idx], c1 = g1 / (1.0f + expf(-g1)) * acc[idx + 1];
        const __nv_bfloat162 hi = __floats2bfloat162_rn(c0, c1);
        const int64_t at = (int64_t)(first + r) * kInter + n0 + c;
        *reinterpret_cast<__nv_bfloat162*>(p.c + at) = hi;
        *reinterpret_cast<__nv_bfloat162*>(p.c_lo + at) =
            __floats2bfloat162_rn(c0 - __bfloat162float(hi.x), c1 - __bfloat162float(hi.y));
    }
}

// Grid (max tiles, 7168 / 128).
__global__ void __launch_bounds__(kThreads) gemm2_kernel(KsArgs a, Plan p)
{
    if ((int)blockIdx.x >= *p.num_tiles) return;
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = align1024(smem_raw);
    const int le = p.tiles[2 * blockIdx.x], first = p.offsets[le] + p.tiles[2 * blockIdx.x + 1];
    const int rows = min(kTile, p.offsets[le + 1] - first);
    const int n0 = blockIdx.y * kTile;
    const ks_f8e4m3_t* w2 = a.gemm2_weights + (int64_t)le * kHidden * kInter;
    const float* s2 = a.gemm2_weights_scale + ((int64_t)le * kHiddenBlocks + n0 / kBlock) * kInterBlocks;
    Acc acc;
    gemm_blocks<true, true>(
        acc, smem, kInterBlocks,
        [&](int r) -> const bf16* { return r < rows ? p.c + (int64_t)(first + r) * kInter : nullptr; },
        [&](int r) -> const bf16* { return r < rows ? p.c_lo + (int64_t)(first + r) * kInter : nullptr; },
        [&](int r) -> const ks_f8e4m3_t* { return w2 + (int64_t)(n0 + r) * kInter; },
        [&](int kb, const Acc& part) {
            const float scale = s2[kb];
#pragma unroll
            for (int e = 0; e < 64; ++e) acc[e] += part[e] * scale;
        });
#pragma unroll
    for (int idx = 0; idx < 64; idx += 2) {
        const int r = acc_row(idx), c = acc_col(idx);
        if (r >= rows) continue;
        const float w = p.row_weight[first + r];
        *reinterpret_cast<float2*>(p.o + (int64_t)(first + r) * kHidden + n0 + c) = make_float2(acc[idx] * w, acc[idx + 1] * w);
    }
}

// ------------------------------------------------------------------ 7. combine

__global__ void combine_kernel(KsArgs a, Plan p)
{
    const int64_t total = a.seq_len * (kHidden / 8);
    for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < total; v += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = v / (kHidden / 8);
        const int h = (int)(v % (kHidden / 8)) * 8;
        float sum[8] = {};
        for (int k = 0; k < kTopK; ++k) {
            if (p.slot_local[t * kTopK + k] < 0) continue;
            const float4* o = reinterpret_cast<const float4*>(p.o + (int64_t)p.slot_row[t * kTopK + k] * kHidden + h);
            const float4 lo = o[0], hi = o[1];
            sum[0] += lo.x; sum[1] += lo.y; sum[2] += lo.z; sum[3] += lo.w;
            sum[4] += hi.x; sum[5] += hi.y; sum[6] += hi.z; sum[7] += hi.w;
        }
        __align__(16) __nv_bfloat162 out[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) out[j] = __floats2bfloat162_rn(sum[2 * j], sum[2 * j + 1]);
        *reinterpret_cast<uint4*>(a.output + t * kHidden + h) = *reinterpret_cast<const uint4*>(out);
    }
}

size_t align256(size_t v) { return (v + 255) / 256 * 256; }

unsigned grid_of(int64_t items, int64_t cap) { return (unsigned)(items < cap ? (items > 0 ? items : 1) : cap); }

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
    p.x = reinterpret_cast<bf16*>(take((size_t)T * kHidden * sizeof(bf16)));
    p.w1 = reinterpret_cast<bf16*>(take((size_t)kLocal * kGemm1Out * kHidden * sizeof(bf16)));
    p.w2 = reinterpret_cast<bf16*>(take((size_t)kLocal * kHidden * kInter * sizeof(bf16)));
    p.c = reinterpret_cast<bf16*>(take(slots * kInter * sizeof(bf16)));
    p.c_lo = reinterpret_cast<bf16*>(take(slots * kInter * sizeof(bf16)));
    p.o = reinterpret_cast<float*>(take(slots * kHidden * sizeof(float)));
    return at;
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream)
{
    if (!args || args->seq_len < 0) return (int)cudaErrorInvalidValue;
    const int64_t T = args->seq_len;
    if (T == 0) return 0;
    const int64_t max_tiles = (T * kTopK + kTile - 1) / kTile + kLocal;  // each expert wastes under a tile
    Plan p {};
    if (T * kTopK > INT_MAX / 2 || max_tiles > 65535 || !workspace ||
        workspace_bytes < carve(nullptr, T, max_tiles, p))
        return (int)cudaErrorInvalidValue;
    carve(static_cast<unsigned char*>(workspace), T, max_tiles, p);

    static const cudaError_t configured = [] {
        cudaError_t err = cudaFuncSetAttribute(gemm1_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kGemmSmem);
        if (err == cudaSuccess) err = cudaFuncSetAttribute(gemm2_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kGemmSmem);
        return err;
    }();
    if (configured != cudaSuccess) return (int)configured;

    cudaError_t err = cudaMemsetAsync(p.counts, 0, kLocal * sizeof(int), stream);
    if (err != cudaSuccess) return (int)err;
    route_kernel<<<(unsigned)((T + 7) / 8), 256, 0, stream>>>(*args, p);
    plan_kernel<<<1, 32, 0, stream>>>(p);
    scatter_kernel<<<(unsigned)((T * kTopK + 255) / 256), 256, 0, stream>>>(p, T * kTopK);
    widen_tokens<<<grid_of((T * (kHidden / 8) + 255) / 256, 4096), 256, 0, stream>>>(*args, p.x);
    gemm1_kernel<<<dim3((unsigned)max_tiles, kInter / kUpCols), kThreads, kGemmSmem, stream>>>(*args, p);
    gemm2_kernel<<<dim3((unsigned)max_tiles, kHidden / kTile), kThreads, kGemmSmem, stream>>>(*args, p);
    combine_kernel<<<grid_of((T * (kHidden / 8) + 255) / 256, 8192), 256, 0, stream>>>(*args, p);
    return (int)cudaGetLastError();
}
