// Hand-written causal MLA paged prefill for H200 (sm_90a), absorbed layout, on tensor cores.
//
// The 16 heads of one query token share every KV token and its causal mask, so they are the
// M = 16 rows of one mma.m16n8k16 tile (bf16 in, fp32 accumulate), and a CTA serves kQueries
// consecutive query tokens of one request with two warps each:
//
//  * KV is read in tiles of kTile tokens (latent 1,024 bytes + RoPE 128 bytes a token) with
//    cp.async, one tile ahead of the one being computed, and shared by all kQueries * 16 rows.
//  * Warp (r, half) computes the logits of query r against tokens 16 half .. +15 of the tile
//    over all 576 dims, the pair exchanges its per-head maxima through shared memory, both
//    rescale with the same maximum, write P (bf16) to shared memory, and then warp (r, half)
//    accumulates output dims 256 half .. +255 over all the tile's tokens: 128 fp32 accumulators
//    a thread, where one warp holding all 512 dims would need 256.
//  * The causal mask is aligned to the bottom right: query i (0-based in its request) sees KV
//    positions 0 .. kv_len - q_len + i.  A CTA reads tiles up to its last query's limit only.
//  * Q rows and KV rows live in shared memory with their 16-byte chunks XOR-swizzled by
//    (row & 7), so the eight rows an ldmatrix phase reads fall in eight bank groups.
//  * Request b owns CTA slots [P(b), P(b+1)) with P(b) = qo_indptr[b] / kQueries + b, so the
//    grid is sized from total_q and the batch alone; spare slots exit at once.  Slots are
//    handed out last-query-first, so the CTAs with the most KV start first.
#include "ks_task.h"

#include <climits>
#include <cstdint>
#include <math_constants.h>

namespace {

constexpr int kHeads = (int)KS_NUM_QO_HEADS;
constexpr int kCkv = (int)KS_HEAD_DIM_CKV;
constexpr int kKpe = (int)KS_HEAD_DIM_KPE;
static_assert(kHeads == 16 && kCkv == 512 && kKpe == 64, "the mma tiling assumes 16 heads, 512 + 64 dims");
static_assert(KS_PAGE_SIZE == 1, "one token per page");

constexpr int kQueries = 4;                  // query tokens per CTA
constexpr int kWarps = 2 * kQueries;         // two warps per query token
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 32;                    // KV tokens per tile: 16 per warp of a pair
constexpr int kHalfDims = kCkv / 2;          // output dims per warp
constexpr int kCkvChunks = kCkv / 8;         // 16-byte chunks of a latent row (64)
constexpr int kKpeChunks = kKpe / 8;         // 8
constexpr int kQChunks = kCkvChunks + kKpeChunks;
constexpr int kPRowChunks = 8;               // P rows padded to 128 bytes (the swizzle's span)
constexpr float kLog2e = 1.4426950408889634f;

constexpr int kQRows = kQueries * kHeads;
constexpr int kQBytes = kQRows * kQChunks * 16;
constexpr int kCkvTileBytes = kTile * kCkvChunks * 16;
constexpr int kStageBytes = kCkvTileBytes + kTile * kKpeChunks * 16;
constexpr int kOffStages = kQBytes;
constexpr int kOffP = kOffStages + 2 * kStageBytes;
constexpr int kOffMax = kOffP + kQRows * kPRowChunks * 16;  // float [kWarps][kHeads]
constexpr int kOffSum = kOffMax + kWarps * kHeads * 4;      // float [kWarps][kHeads]
constexpr int kOffPages = kOffSum + kWarps * kHeads * 4;    // int [2][kTile]
constexpr int kSmemBytes = kOffPages + 2 * kTile * 4;
static_assert(kSmemBytes <= 227 * 1024, "over the sm_90 shared memory per block");

// ------------------------------------------------------------------ PTX wrappers

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// 16-byte async copy; with valid == false it writes zeros and reads nothing.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// c += a.b for one m16n8k16 tile (bf16 in, fp32 accumulate).
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi)
{
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

// Byte offset of chunk `chunk` of row `row` in a swizzled array of rows of `row_chunks` chunks.
__device__ __forceinline__ uint32_t swz(int row, int chunk, int row_chunks)
{
    return (uint32_t)((row * row_chunks + (chunk ^ (row & 7))) << 4);
}

// ------------------------------------------------------------------ work items

struct Block {
    int request;
    int q_begin, q_count;  // this CTA's query rows (global) and how many of kQueries are real
    int q_local;           // index of the first one within the request
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
        if (k < 0) return false;
        if (step == 1) {
            const int b = lo + k;
            const int q_begin = __shfl_sync(0xffffffffu, v, k);
            const int q_end = __shfl_sync(0xffffffffu, v, k + 1);
            const int j = slot - (q_begin / kQueries + b);
            if (q_end <= q_begin || j * kQueries >= q_end - q_begin) return false;
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
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int r = warp >> 1, half = warp & 1;  // query r of the CTA; token and dim half

    Block blk;
    if (!find_block(a, (int)(gridDim.x - 1 - blockIdx.x), blk)) return;
    // KV positions this CTA needs: up to its last query's causal limit.
    const int kv_needed = blk.prefix + blk.q_local + blk.q_count;
    const int tiles = (kv_needed + kTile - 1) / kTile;
    // This warp's query sees positions < visible (0 for the padding queries of a short block).
    const int visible = r < blk.q_count ? blk.prefix + blk.q_local + r + 1 : 0;

    const uint32_t q_smem = smem_u32(smem);
    const uint32_t stage_smem = q_smem + kOffStages;
    const uint32_t p_smem = q_smem + kOffP;
    float* s_max = reinterpret_cast<float*>(smem + kOffMax);
    float* s_sum = reinterpret_cast<float*>(smem + kOffSum);
    int* s_pages = reinterpret_cast<int*>(smem + kOffPages);

    for (int i = tid; i < kQRows * kQChunks; i += kThreads) {
        const int row = i / kQChunks, c = i % kQChunks;
        const int q = row / kHeads, h = row % kHeads;
        const bool ok = q < blk.q_count;
        const int64_t qh = ok ? ((int64_t)(blk.q_begin + q) * kHeads + h) : 0;
        const ks_bf16_t* src = c < kCkvChunks ? a.q_nope + qh * kCkv + c * 8 : a.q_pe + qh * kKpe + (c - kCkvChunks) * 8;
        cp_async_16(q_smem + swz(row, c, kQChunks), src, ok);
    }
    auto load_pages = [&](int tile) {
        if (tid < kTile && tile < tiles) {
            const int pos = tile * kTile + tid;
            s_pages[(tile & 1) * kTile + tid] = pos < kv_needed ? __ldg(a.kv_indices + blk.kv_begin + pos) : 0;
        }
    };
    auto issue_tile = [&](int tile) {
        const uint32_t ckv_dst = stage_smem + (tile & 1) * kStageBytes;
        const uint32_t kpe_dst = ckv_dst + kCkvTileBytes;
        const int valid = kv_needed - tile * kTile;
        const int* pages = s_pages + (tile & 1) * kTile;
        for (int i = tid; i < kTile * kQChunks; i += kThreads) {
            if (i < kTile * kCkvChunks) {
                const int row = i / kCkvChunks, c = i % kCkvChunks;
                const bool ok = row < valid;
                cp_async_16(ckv_dst + swz(row, c, kCkvChunks), a.ckv_cache + (ok ? (int64_t)pages[row] * kCkv + c * 8 : 0), ok);
            } else {
                const int k = i - kTile * kCkvChunks;
                const int row = k / kKpeChunks, c = k % kKpeChunks;
                const bool ok = row < valid;
                cp_async_16(kpe_dst + swz(row, c, kKpeChunks), a.kpe_cache + (ok ? (int64_t)pages[row] * kKpe + c * 8 : 0), ok);
            }
        }
    };

    load_pages(0);
    load_pages(1);
    __syncthreads();
    if (tiles > 0) issue_tile(0);
    cp_async_commit();

    // Online softmax in base 2; both warps of a pair hold the same m.
    const float scale_log2 = a.sm_scale * kLog2e;
    float m_lo = -CUDART_INF_F, m_hi = -CUDART_INF_F, l_lo = 0.0f, l_hi = 0.0f;
    float o[kHalfDims / 8][4];
#pragma unroll
    for (int n = 0; n < kHalfDims / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

    const int mrow = lane & 7, mat = lane >> 3;
    const int qrow = r * kHeads + (lane & 15);  // the Q / P row this lane addresses for ldmatrix
    for (int j = 0; j < tiles; ++j) {
        cp_async_wait_all();
        __syncthreads();
        if (j + 1 < tiles) issue_tile(j + 1);
        cp_async_commit();
        load_pages(j + 2);

        const uint32_t ckv_tile = stage_smem + (j & 1) * kStageBytes;
        const uint32_t kpe_tile = ckv_tile + kCkvTileBytes;

        // S = Q.K^T: tokens 16 half + 0..7 (s[0]) and + 8..15 (s[1]), 36 k-steps of 16 dims.
        float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
        const int krow = 16 * half + (mat >> 1) * 8 + mrow;
#pragma unroll 4
        for (int ks = 0; ks < kQChunks / 2; ++ks) {
            uint32_t b[4], qa[4];
            const bool rope = ks >= kCkvChunks / 2;
            const int kc = rope ? 2 * ks - kCkvChunks : 2 * ks;
            ldmatrix_x4(rope ? kpe_tile + swz(krow, kc + (mat & 1), kKpeChunks) : ckv_tile + swz(krow, kc + (mat & 1), kCkvChunks), b);
            ldmatrix_x4(q_smem + swz(qrow, 2 * ks + (lane >> 4), kQChunks), qa);
            mma_16816(s[0], qa, b[0], b[1]);
            mma_16816(s[1], qa, b[2], b[3]);
        }

        // Causal mask, then this warp's per-head maximum, exchanged with the other half.
        const int pos0 = j * kTile + 16 * half + 2 * t;
        float mx_lo = -CUDART_INF_F, mx_hi = -CUDART_INF_F;
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const bool in = pos0 + 8 * n + (c & 1) < visible;
                s[n][c] = in ? s[n][c] * scale_log2 : -CUDART_INF_F;
                if (c < 2) mx_lo = fmaxf(mx_lo, s[n][c]);
                else mx_hi = fmaxf(mx_hi, s[n][c]);
            }
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
        if (t == 0) {
            s_max[warp * kHeads + g] = mx_lo;
            s_max[warp * kHeads + g + 8] = mx_hi;
        }
        __syncthreads();

        const int other = warp ^ 1;
        const float new_lo = fmaxf(m_lo, fmaxf(mx_lo, s_max[other * kHeads + g]));
        const float new_hi = fmaxf(m_hi, fmaxf(mx_hi, s_max[other * kHeads + g + 8]));
        // A padding query sees nothing and keeps m = -inf: exp2 must not see -inf - -inf.
        const float ref_lo = new_lo == -CUDART_INF_F ? 0.0f : new_lo;
        const float ref_hi = new_hi == -CUDART_INF_F ? 0.0f : new_hi;
        const float corr_lo = exp2f(m_lo - ref_lo), corr_hi = exp2f(m_hi - ref_hi);
        m_lo = new_lo;
        m_hi = new_hi;
        float p[2][4];
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            p[n][0] = exp2f(s[n][0] - ref_lo);
            p[n][1] = exp2f(s[n][1] - ref_lo);
            p[n][2] = exp2f(s[n][2] - ref_hi);
            p[n][3] = exp2f(s[n][3] - ref_hi);
            *reinterpret_cast<uint32_t*>(smem + kOffP + swz(r * kHeads + g, 2 * half + n, kPRowChunks) + 4 * t) =
                pack_bf16x2(p[n][0], p[n][1]);
            *reinterpret_cast<uint32_t*>(smem + kOffP + swz(r * kHeads + g + 8, 2 * half + n, kPRowChunks) + 4 * t) =
                pack_bf16x2(p[n][2], p[n][3]);
        }
        l_lo = l_lo * corr_lo + (p[0][0] + p[0][1]) + (p[1][0] + p[1][1]);
        l_hi = l_hi * corr_hi + (p[0][2] + p[0][3]) + (p[1][2] + p[1][3]);
#pragma unroll
        for (int n = 0; n < kHalfDims / 8; ++n) {
            o[n][0] *= corr_lo;
            o[n][1] *= corr_lo;
            o[n][2] *= corr_hi;
            o[n][3] *= corr_hi;
        }
        __syncthreads();

        // O[:, this half's dims] += P.V over the tile's 32 tokens.
#pragma unroll
        for (int kk = 0; kk < kTile / 16; ++kk) {
            uint32_t pa[4];
            ldmatrix_x4(p_smem + swz(qrow, 2 * kk + (lane >> 4), kPRowChunks), pa);
            const int vrow = 16 * kk + (mat & 1) * 8 + mrow;
#pragma unroll
            for (int n = 0; n < kHalfDims / 8; n += 2) {
                uint32_t b[4];
                ldmatrix_x4_trans(ckv_tile + swz(vrow, half * (kHalfDims / 8) + n + (mat >> 1), kCkvChunks), b);
                mma_16816(o[n], pa, b[0], b[1]);
                mma_16816(o[n + 1], pa, b[2], b[3]);
            }
        }
    }
    cp_async_wait_all();

    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
    if (t == 0) {
        s_sum[warp * kHeads + g] = l_lo;
        s_sum[warp * kHeads + g + 8] = l_hi;
    }
    __syncthreads();
    if (r >= blk.q_count) return;
    const float sum_lo = l_lo + s_sum[(warp ^ 1) * kHeads + g];
    const float sum_hi = l_hi + s_sum[(warp ^ 1) * kHeads + g + 8];
    const float inv_lo = sum_lo > 0.0f ? 1.0f / sum_lo : 0.0f, inv_hi = sum_hi > 0.0f ? 1.0f / sum_hi : 0.0f;
    const int64_t row = blk.q_begin + r;
    ks_bf16_t* out_lo = a.output + (row * kHeads + g) * kCkv + half * kHalfDims + 2 * t;
    ks_bf16_t* out_hi = out_lo + 8 * kCkv;
#pragma unroll
    for (int n = 0; n < kHalfDims / 8; ++n) {
        *reinterpret_cast<uint32_t*>(out_lo + 8 * n) = pack_bf16x2(o[n][0] * inv_lo, o[n][1] * inv_lo);
        *reinterpret_cast<uint32_t*>(out_hi + 8 * n) = pack_bf16x2(o[n][2] * inv_hi, o[n][3] * inv_hi);
    }
    if (half == 0 && t == 0) {
        a.lse[row * kHeads + g] = sum_lo > 0.0f ? m_lo + log2f(sum_lo) : -CUDART_INF_F;
        a.lse[row * kHeads + g + 8] = sum_hi > 0.0f ? m_hi + log2f(sum_hi) : -CUDART_INF_F;
    }
}

bool aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/, ks_stream_t stream)
{
    if (!args || args->len_indptr < 2 || !args->qo_indptr || !args->kv_indptr || args->total_q < 0 ||
        args->num_kv_indices < 0 || args->num_kv_indices > INT_MAX || args->total_q > INT_MAX / kHeads)
        return (int)cudaErrorInvalidValue;
    if (args->total_q == 0) return 0;
    if (!args->q_nope || !args->q_pe || !args->ckv_cache || !args->kpe_cache || !args->output || !args->lse ||
        (args->num_kv_indices > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;
    if (!aligned(args->ckv_cache, 16) || !aligned(args->kpe_cache, 16) || !aligned(args->q_nope, 16) ||
        !aligned(args->q_pe, 16) || !aligned(args->output, 8))
        return (int)cudaErrorMisalignedAddress;

    static bool configured = false;
    if (!configured) {
        const cudaError_t err =
            cudaFuncSetAttribute(mla_prefill_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
        if (err != cudaSuccess) return (int)err;
        configured = true;
    }
    const int64_t slots = args->total_q / kQueries + (args->len_indptr - 1);
    if (slots > INT_MAX) return (int)cudaErrorInvalidValue;
    mla_prefill_kernel<<<(unsigned)slots, kThreads, kSmemBytes, stream>>>(*args);
    return (int)cudaGetLastError();
}
