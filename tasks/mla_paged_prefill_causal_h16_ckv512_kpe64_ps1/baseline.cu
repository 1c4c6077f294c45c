// Causal MLA paged prefill for H200 (sm_90a), absorbed layout, on Hopper's warpgroup tensor
// cores (wgmma, bf16 in, fp32 accumulation).  Knob (-D): MLA_PREFILL_STAGES (KV ring depth, 2 or
// 3, default 2).
//
// The 16 heads of a query token share every KV token and its causal mask, so a CTA takes four
// consecutive query tokens of one request as the 64 rows (query-major, head-minor) of one wgmma
// M tile, and every KV element it reads from shared memory serves all 64 rows (the mma.sync
// kernel this replaces gave each warp its own 16 rows, so each K and V element was read from
// shared memory four times as often, and Q once a tile besides):
//
//  * Two warpgroups share the 64 rows.  For S = Q.K^T (576 dims) warpgroup w takes dims
//    [288 w, 288 w + 288): 18 wgmma.m64n32k16 with Q and K both read from shared memory; the two
//    partial sums meet through shared memory, and each warpgroup adds the other's to its own.
//    Float addition commutes, so both hold the same S bit for bit and run the same online softmax
//    (base 2) to the same m, l and P: no other exchange is needed.
//  * For O += P.V warpgroup w owns output dims [256 w, 256 w + 256): P goes from the S
//    accumulators straight into wgmma's register A fragments (the accumulator layout of a warp's
//    16 rows is the m16n8k16 A layout), and V is the latent part of the same shared KV tile, read
//    MN-major (transposed) by the descriptor: 2 x 2 wgmma.m64n128k16 a tile, 128 fp32
//    accumulators a thread.  P.V is left in flight while the loop turns and the next tile's S
//    starts; the accumulators are rescaled only when a row's maximum moved.
//  * KV is gathered a token row at a time (page size 1) by cp.async into a ring of 32-token
//    tiles, the next tile issued as soon as the exchange shows that both warpgroups are done
//    with the stage it reuses (two stages measured 1-2 % faster than three on an H100).  Q, K
//    and V live in panels of 64 dims (128-byte rows) whose 16-byte chunks are XOR-swizzled by
//    (row & 7): the hardware's 128-byte swizzle, so wgmma reads them without bank conflicts.
//  * The causal mask is aligned to the bottom right: query i (0-based in its request) sees KV
//    positions 0 .. kv_len - q_len + i; a CTA reads tiles up to its last query's limit only.
//  * Request b owns CTA slots [P(b), P(b+1)) with P(b) = qo_indptr[b] / kQueries + b, so the grid
//    is sized from total_q and the batch alone; spare slots exit at once.  Slots are handed out
//    last-query-first, so the CTAs with the most KV start first.
#include "ks_task.h"

#include <climits>
#include <cstdint>
#include <math_constants.h>

#ifndef MLA_PREFILL_STAGES
#define MLA_PREFILL_STAGES 2
#endif

namespace {

constexpr int kHeads = (int)KS_NUM_QO_HEADS;
constexpr int kCkv = (int)KS_HEAD_DIM_CKV;
constexpr int kKpe = (int)KS_HEAD_DIM_KPE;
static_assert(kHeads == 16 && kCkv == 512 && kKpe == 64, "the tiling assumes 16 heads, 512 + 64 dims");
static_assert(KS_PAGE_SIZE == 1, "one token per page");

constexpr int kQueries = 4; // query tokens per CTA
constexpr int kRows = kQueries * kHeads; // 64: one wgmma M tile
constexpr int kThreads = 256; // two warpgroups
constexpr int kTile = 32; // KV tokens per tile
constexpr int kStages = MLA_PREFILL_STAGES;
static_assert(kStages == 2 || kStages == 3, "two or three tiles fit beside Q");
constexpr int kPanels = (kCkv + kKpe) / 64; // 9 panels of 64 dims
constexpr int kQPanelBytes = kRows * 128; // 8 KB
constexpr int kKvPanelBytes = kTile * 128; // 4 KB
constexpr int kQBytes = kPanels * kQPanelBytes;
constexpr int kStageBytes = kPanels * kKvPanelBytes;
constexpr int kKSteps = (kCkv + kKpe) / 16; // 36 k-steps of 16 dims for S
constexpr int kGroupKSteps = kKSteps / 2; // 18 a warpgroup
constexpr int kSAcc = kRows * kTile / 128; // 16 S accumulators a thread
constexpr int kGroupDims = kCkv / 2; // 256 output dims a warpgroup
constexpr float kLog2e = 1.4426950408889634f;

constexpr int kOffStages = kQBytes;
constexpr int kOffExchange = kOffStages + kStages * kStageBytes; // float [2][kSAcc][128]
constexpr int kAlignSlack = 1024; // the swizzle needs 1024-byte panels
constexpr int kSmemBytes = kOffExchange + 2 * kSAcc * 128 * 4 + kAlignSlack;
static_assert(kSmemBytes <= 227 * 1024, "over the sm_90 shared memory per block");
static_assert(kQBytes % 1024 == 0 && kStageBytes % 1024 == 0, "panels start on 1024-byte boundaries");

// ------------------------------------------------------------------ PTX wrappers

__device__ __forceinline__ uint32_t smem_u32(const void* p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// 16-byte async copy; with valid == false it writes zeros and reads nothing.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template<int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Shared memory written by cp.async or ordinary stores, made visible to wgmma's reads.
__device__ __forceinline__ void fence_to_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_wait_all()
{
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

// Keeps the compiler from moving accumulator traffic across an asynchronous wgmma.
template<int N> __device__ __forceinline__ void fence_operands(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+f"(r[i])::"memory");
}

// A 128-byte-swizzled operand.  K-major (Q, and K for S): rows of 64 dims, 8-row groups 1024
// bytes apart (lbo unused).  MN-major (V for P.V): lbo is the distance between 64-wide column
// panels, sbo between groups of 8 rows (tokens).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16)
        | ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | ((uint64_t)1 << 62);
}

// d (+)= A[64 x 16] * B[16 x 32] with both operands in shared memory (K-major, 128-byte swizzle).
__device__ __forceinline__ void wgmma_m64n32k16_ss(float (&d)[16], uint64_t da, uint64_t db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                 "%16, %17, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(da), "l"(db), "r"(scale_d));
}

// d += A[64 x 16] * B[16 x 128], A in registers (the m16n8k16 fragment of each warp's 16 rows),
// B in shared memory MN-major (the 128 columns contiguous in 64-wide swizzled panels).
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi)
{
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` in a swizzled panel.
__device__ __forceinline__ uint32_t swz(int row, int chunk)
{
    return (uint32_t)(row * 128 + ((chunk ^ (row & 7)) << 4));
}

// ------------------------------------------------------------------ work items

struct Block {
    int request;
    int q_begin, q_count; // this CTA's query rows (global) and how many of kQueries are real
    int q_local; // index of the first one within the request
    int kv_begin, kv_len, prefix;
};

// The largest b with P(b) = qo_indptr[b] / kQueries + b <= slot, by a 32-way search that every
// warp runs for itself.  Returns false for a spare slot.
__device__ bool find_block(const KsArgs& a, int slot, Block& blk)
{
    const int32_t* __restrict__ indptr = a.qo_indptr;
    const int lane = threadIdx.x & 31;
    int lo = 0, n = (int)a.len_indptr - 1;
    for (;;) {
        const int step = (n + 31) / 32;
        const int probe = lo + lane * step;
        const int v = lane * step <= n ? __ldg(indptr + probe) : 0;
        const bool owned = lane * step < n && v / kQueries + probe <= slot;
        const int k = __popc(__ballot_sync(0xffffffffu, owned)) - 1;
        if (k < 0)
            return false;
        if (step == 1) {
            const int b = lo + k;
            const int q_begin = __shfl_sync(0xffffffffu, v, k);
            const int q_end = __shfl_sync(0xffffffffu, v, k + 1);
            const int j = slot - (q_begin / kQueries + b);
            if (q_end <= q_begin || j * kQueries >= q_end - q_begin)
                return false;
            blk.request = b;
            blk.q_local = j * kQueries;
            blk.q_begin = q_begin + blk.q_local;
            blk.q_count = min(kQueries, q_end - blk.q_begin);
            blk.kv_begin = __ldg(a.kv_indptr + b);
            blk.kv_len = __ldg(a.kv_indptr + b + 1) - blk.kv_begin;
            blk.prefix = blk.kv_len - (q_end - q_begin);
            return blk.prefix >= 0;
        }
        lo += k * step;
        n = min(step, n - k * step);
    }
}

// ------------------------------------------------------------------ kernel

__global__ void __launch_bounds__(kThreads, 1) mla_prefill_kernel(KsArgs a)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((kAlignSlack - (smem_u32(smem_raw) & (kAlignSlack - 1))) & (kAlignSlack - 1));
    const int tid = threadIdx.x, lane = tid & 31;
    const int wg = tid >> 7, wt = tid & 127; // warpgroup, thread within it
    const int wq = wt >> 5; // this warp's query (its 16 rows are its heads)
    const int g = lane >> 2, t = lane & 3; // accumulator row g (and g + 8), columns 2 t

    Block blk;
    if (!find_block(a, (int)(gridDim.x - 1 - blockIdx.x), blk))
        return;
    const int kv_needed = blk.prefix + blk.q_local + blk.q_count; // up to the last query's limit
    const int tiles = (kv_needed + kTile - 1) / kTile;
    const int visible = wq < blk.q_count ? blk.prefix + blk.q_local + wq + 1 : 0;

    const uint32_t q_smem = smem_u32(smem);
    const uint32_t stage_smem = q_smem + kOffStages;
    float* exchange = reinterpret_cast<float*>(smem + kOffExchange);

    // Q: row q * 16 + h, panel c / 8, chunk c % 8; padding queries read as zeros.
    for (int i = tid; i < kRows * kPanels * 8; i += kThreads) {
        const int row = i / (kPanels * 8), c = i % (kPanels * 8);
        const int q = row / kHeads, h = row % kHeads;
        const bool ok = q < blk.q_count;
        const int64_t qh = ok ? ((int64_t)(blk.q_begin + q) * kHeads + h) : 0;
        const ks_bf16_t* src = c < kCkv / 8 ? a.q_nope + qh * kCkv + c * 8 : a.q_pe + qh * kKpe + (c - kCkv / 8) * 8;
        cp_async_16(q_smem + (c >> 3) * kQPanelBytes + swz(row, c & 7), src, ok);
    }

    // KV: thread tid copies chunk (tid & 7) of every panel of token row tid >> 3; rows past
    // kv_needed are zeros (their logits are masked).
    const int crow = tid >> 3, csub = tid & 7;
    auto page_of = [&](int tile) {
        const int pos = tile * kTile + crow;
        return pos < kv_needed ? __ldg(a.kv_indices + blk.kv_begin + pos) : -1;
    };
    auto issue_tile = [&](int tile, int page) {
        const uint32_t dst = stage_smem + (tile % kStages) * kStageBytes + swz(crow, csub);
        const bool ok = page >= 0;
        const ks_bf16_t* ckv = a.ckv_cache + (ok ? (int64_t)page * kCkv : 0) + csub * 8;
#pragma unroll
        for (int p = 0; p < kCkv / 64; ++p)
            cp_async_16(dst + p * kKvPanelBytes, ckv + p * 64, ok);
        cp_async_16(dst + (kCkv / 64) * kKvPanelBytes, a.kpe_cache + (ok ? (int64_t)page * kKpe : 0) + csub * 8, ok);
    };
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < tiles)
            issue_tile(s, page_of(s));
        cp_async_commit(); // group 0 carries Q too
    }
    int next_page = kStages - 1 < tiles ? page_of(kStages - 1) : -1;

    const float scale_log2 = a.sm_scale * kLog2e;
    float m_lo = -CUDART_INF_F, m_hi = -CUDART_INF_F, l_lo = 0.0f, l_hi = 0.0f;
    float o[2][64];
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 0; e < 64; ++e)
            o[n][e] = 0.0f;

    for (int j = 0; j < tiles; ++j) {
        cp_async_wait<kStages - 2>();
        fence_to_async();
        __syncthreads(); // tile j is visible

        const uint32_t kv = stage_smem + (j % kStages) * kStageBytes;

        // This warpgroup's half of the 576 dims of S (the wait also retires P.V of tile j - 1).
        float s[kSAcc] = {};
        fence_operands(s);
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < kGroupKSteps; ++k) {
            const int ks = wg * kGroupKSteps + k;
            const uint32_t off = (ks & 3) * 32;
            wgmma_m64n32k16_ss(s, smem_desc(q_smem + (ks >> 2) * kQPanelBytes + off, 16, 1024),
                smem_desc(kv + (ks >> 2) * kKvPanelBytes + off, 16, 1024), k > 0);
        }
        wgmma_commit();
        wgmma_wait_all();
        fence_operands(s);
        fence_operands(o[0]);
        fence_operands(o[1]);

        // Each warpgroup adds the other's half: thread wt of both holds the same elements.
#pragma unroll
        for (int e = 0; e < kSAcc; ++e)
            exchange[(wg * kSAcc + e) * 128 + wt] = s[e];
        __syncthreads();
        // Both warpgroups' P.V of tile j - 1 is complete (the wait above retired it), so its
        // stage takes tile j + kStages - 1.  Issued here rather than at the top of the loop so
        // that P.V runs on while the loop turns.
        if (j + kStages - 1 < tiles) {
            issue_tile(j + kStages - 1, next_page);
            if (j + kStages < tiles)
                next_page = page_of(j + kStages);
        }
        cp_async_commit();
#pragma unroll
        for (int e = 0; e < kSAcc; ++e)
            s[e] += exchange[((wg ^ 1) * kSAcc + e) * 128 + wt];

        // Causal mask and online softmax for rows g (lo) and g + 8 (hi) of this warp's query.
        const int pos0 = j * kTile + 2 * t;
        float mx_lo = -CUDART_INF_F, mx_hi = -CUDART_INF_F;
#pragma unroll
        for (int e = 0; e < kSAcc; ++e) {
            const bool in = pos0 + 8 * (e >> 2) + (e & 1) < visible;
            s[e] = in ? s[e] * scale_log2 : -CUDART_INF_F;
            if (e & 2)
                mx_hi = fmaxf(mx_hi, s[e]);
            else
                mx_lo = fmaxf(mx_lo, s[e]);
        }
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
        const float new_lo = fmaxf(m_lo, mx_lo), new_hi = fmaxf(m_hi, mx_hi);
        // A row that has seen nothing yet keeps m = -inf: exp2 must not see -inf - -inf.
        const float ref_lo = new_lo == -CUDART_INF_F ? 0.0f : new_lo;
        const float ref_hi = new_hi == -CUDART_INF_F ? 0.0f : new_hi;
        const float corr_lo = exp2f(m_lo - ref_lo), corr_hi = exp2f(m_hi - ref_hi);
        m_lo = new_lo;
        m_hi = new_hi;
        float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
        for (int e = 0; e < kSAcc; ++e) {
            s[e] = exp2f(s[e] - ((e & 2) ? ref_hi : ref_lo));
            if (e & 2)
                sum_hi += s[e];
            else
                sum_lo += s[e];
        }
        l_lo = l_lo * corr_lo + sum_lo;
        l_hi = l_hi * corr_hi + sum_hi;
        // P as the A fragments of the two 16-token k-steps.
        uint32_t pa[2][4];
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
            pa[kk][0] = pack_bf16x2(s[8 * kk + 0], s[8 * kk + 1]);
            pa[kk][1] = pack_bf16x2(s[8 * kk + 2], s[8 * kk + 3]);
            pa[kk][2] = pack_bf16x2(s[8 * kk + 4], s[8 * kk + 5]);
            pa[kk][3] = pack_bf16x2(s[8 * kk + 6], s[8 * kk + 7]);
        }
        // Once the maxima settle most tiles leave them alone: skip multiplying by 1.
        if (__any_sync(0xffffffffu, corr_lo != 1.0f || corr_hi != 1.0f)) {
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int e = 0; e < 64; ++e)
                    o[n][e] *= (e & 2) ? corr_hi : corr_lo;
        }

        // O[:, this warpgroup's 256 dims] += P.V over the tile's 32 tokens.
        fence_operands(o[0]);
        fence_operands(o[1]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 2; ++kk)
#pragma unroll
            for (int n = 0; n < 2; ++n)
                wgmma_m64n128k16_rs(o[n], pa[kk],
                    smem_desc(kv + (wg * 4 + n * 2) * kKvPanelBytes + kk * 16 * 128, kKvPanelBytes, 1024));
        wgmma_commit();
        // Left in flight: the next tile's wait for S retires it.
        fence_operands(o[0]);
        fence_operands(o[1]);
    }
    wgmma_wait_all();
    fence_operands(o[0]);
    fence_operands(o[1]);
    cp_async_wait<0>();

    if (wq >= blk.q_count)
        return;
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
    const float inv_lo = l_lo > 0.0f ? 1.0f / l_lo : 0.0f, inv_hi = l_hi > 0.0f ? 1.0f / l_hi : 0.0f;
    const int64_t row = blk.q_begin + wq;
    ks_bf16_t* out_lo = a.output + (row * kHeads + g) * kCkv + wg * kGroupDims + 2 * t;
    ks_bf16_t* out_hi = out_lo + 8 * kCkv;
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            *reinterpret_cast<uint32_t*>(out_lo + n * 128 + 8 * i) =
                pack_bf16x2(o[n][4 * i] * inv_lo, o[n][4 * i + 1] * inv_lo);
            *reinterpret_cast<uint32_t*>(out_hi + n * 128 + 8 * i) =
                pack_bf16x2(o[n][4 * i + 2] * inv_hi, o[n][4 * i + 3] * inv_hi);
        }
    if (wg == 0 && t == 0) {
        a.lse[row * kHeads + g] = l_lo > 0.0f ? m_lo + log2f(l_lo) : -CUDART_INF_F;
        a.lse[row * kHeads + g + 8] = l_hi > 0.0f ? m_hi + log2f(l_hi) : -CUDART_INF_F;
    }
}

bool aligned(const void* p, uintptr_t bytes)
{
    return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

} // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/, ks_stream_t stream)
{
    if (!args || args->len_indptr < 2 || !args->qo_indptr || !args->kv_indptr || args->total_q < 0
        || args->num_kv_indices < 0 || args->num_kv_indices > INT_MAX || args->total_q > INT_MAX / kHeads)
        return (int)cudaErrorInvalidValue;
    if (args->total_q == 0)
        return 0;
    if (!args->q_nope || !args->q_pe || !args->ckv_cache || !args->kpe_cache || !args->output || !args->lse
        || (args->num_kv_indices > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;
    if (!aligned(args->ckv_cache, 16) || !aligned(args->kpe_cache, 16) || !aligned(args->q_nope, 16)
        || !aligned(args->q_pe, 16) || !aligned(args->output, 8))
        return (int)cudaErrorMisalignedAddress;

    static bool configured = false;
    if (!configured) {
        const cudaError_t err =
            cudaFuncSetAttribute(mla_prefill_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
        if (err != cudaSuccess)
            return (int)err;
        configured = true;
    }
    const int64_t slots = args->total_q / kQueries + (args->len_indptr - 1);
    if (slots > INT_MAX)
        return (int)cudaErrorInvalidValue;
    mla_prefill_kernel<<<(unsigned)slots, kThreads, kSmemBytes, stream>>>(*args);
    return (int)cudaGetLastError();
}
