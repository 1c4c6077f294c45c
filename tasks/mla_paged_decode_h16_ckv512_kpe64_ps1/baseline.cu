// Hand-written split-KV MLA paged decode for H200 (sm_90a), absorbed layout.
//
// Per KV token the op reads 1,152 bytes (512 latent + 64 RoPE dims, bf16) and all 16 query
// heads use them twice (Q.K over 576 dims, P.V over 512), so the goal is to read every latent
// row once at close to DRAM bandwidth and to keep the tensor cores ahead of it:
//
//  * The 16 heads are exactly the M = 16 rows of mma.m16n8k16 (bf16 in, fp32 accumulate): no
//    padding rows, unlike GQA's 8 heads per KV head.
//  * One CTA per work item, a run of at most `chunk` tokens of one request.  Request b owns the
//    item slots [P(b), P(b+1)) with P(b) = kv_indptr[b] / chunk + b, so the host sizes the grid
//    from batch_size and num_kv_indices alone (no planning pass, no host read of kv_indptr);
//    the request's ceil(len / chunk) items split it evenly and the spare slots exit at once.
//  * A tile of kTile = 8 * kWarps tokens is copied to shared memory with cp.async, one tile
//    ahead of the one being computed.  Warp w computes the logits of tokens 8w .. 8w+7 for all
//    16 heads; the tile's per-head maximum goes through shared memory, every warp rescales with
//    the same maximum, P goes to shared memory as bf16, and warp w then accumulates output dims
//    [512 w / kWarps, 512 (w + 1) / kWarps) over all the tile's tokens.  Three barriers a tile.
//  * Q (16 x 576) stays in shared memory and reaches the tensor cores through ldmatrix; every
//    row is stored with its 16-byte chunks XOR-swizzled by (row & 7), so that the eight rows an
//    ldmatrix phase reads fall in eight different bank groups.
//  * A request that fits in one item writes its output directly.  Otherwise each item writes
//    its unnormalised output, running max and sum per head to the workspace, and a second
//    kernel merges a request's items.
#include "ks_task.h"

#include <climits>
#include <cstdint>
#include <math_constants.h>

// Tuning knob (overridable with -D): warps per CTA; the tile is 8 tokens per warp.  8 warps
// (64-token tiles, 1 CTA per SM) and 4 warps (32-token tiles, 2 CTAs per SM) are the two shapes
// docs/perf.md compares.
#ifndef MLA_DECODE_WARPS
#define MLA_DECODE_WARPS 8
#endif

namespace {

constexpr int kHeads = (int)KS_NUM_QO_HEADS;
constexpr int kCkv = (int)KS_HEAD_DIM_CKV;
constexpr int kKpe = (int)KS_HEAD_DIM_KPE;
static_assert(kHeads == 16 && kCkv == 512 && kKpe == 64, "the mma tiling assumes 16 heads, 512 + 64 dims");
static_assert(KS_PAGE_SIZE == 1, "one token per page");

constexpr int kWarps = MLA_DECODE_WARPS;
constexpr int kStages = 2;  // the tile being computed and the one being copied
static_assert(kWarps == 4 || kWarps == 8, "warp w owns 512 / kWarps output dims, a whole number of 16");
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 8 * kWarps;                 // tokens per tile: one n8 mma column per warp
constexpr int kDimsPerWarp = kCkv / kWarps;       // output dims each warp accumulates
constexpr int kCkvChunks = kCkv / 8;              // 16-byte chunks per latent row (64)
constexpr int kKpeChunks = kKpe / 8;              // 8
constexpr int kQChunks = kCkvChunks + kKpeChunks; // a Q row: latent part, then RoPE part
constexpr int kMinChunk = kTile;                  // shorter items cost more than they spread
constexpr int kPartialStride = kCkv + 4;          // floats per (item, head): o[512], m, l, pad
constexpr float kLog2e = 1.4426950408889634f;

// Shared memory, in bytes from the start of the dynamic buffer.
constexpr int kQBytes = kHeads * kQChunks * 16;
constexpr int kCkvTileBytes = kTile * kCkv * 2;
constexpr int kKpeTileBytes = kTile * kKpe * 2;
constexpr int kStageBytes = kCkvTileBytes + kKpeTileBytes;
constexpr int kPRowChunks = 8;  // P rows padded to 128 bytes, so the XOR swizzle stays in the row
static_assert(kTile / 8 <= kPRowChunks, "a P row holds the tile");
constexpr int kPBytes = kHeads * kPRowChunks * 16;
constexpr int kOffStages = kQBytes;
constexpr int kOffP = kOffStages + kStages * kStageBytes;
constexpr int kOffMax = kOffP + kPBytes;                    // float [kWarps][kHeads]
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

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled row-major array whose rows
// hold `row_chunks` chunks (a multiple of 8).
__device__ __forceinline__ uint32_t swz(int row, int chunk, int row_chunks)
{
    return (uint32_t)((row * row_chunks + (chunk ^ (row & 7))) << 4);
}

// (m, l) of two softmax partial states in base 2; an empty state is (-inf, 0).
__device__ __forceinline__ void merge_state(float& m, float& l, float m2, float l2)
{
    const float mn = fmaxf(m, m2);
    if (mn == -CUDART_INF_F) return;
    l = l * exp2f(m - mn) + l2 * exp2f(m2 - mn);
    m = mn;
}

// ------------------------------------------------------------------ work items

struct Item {
    int request;
    int begin, end;  // token range [begin, end) in kv_indices
    bool whole;      // the request's only item: write the final output
};

__device__ __forceinline__ int items_of(int len, int chunk) { return len <= chunk ? 1 : (len + chunk - 1) / chunk; }

// The largest b with P(b) = indptr[b] / chunk + b <= slot, by a 32-way search over kv_indptr
// that every warp runs for itself (the same latency as one warp, and no barrier).  Returns false
// for a spare slot.
__device__ bool find_item(const int32_t* __restrict__ indptr, int batch, int chunk, int slot, Item& it)
{
    const int lane = threadIdx.x & 31;
    int lo = 0, n = batch;
    for (;;) {
        const int step = (n + 31) / 32;
        const int probe = lo + lane * step;
        const int v = lane * step <= n ? __ldg(indptr + probe) : 0;
        const bool owned = lane * step < n && v / chunk + probe <= slot;
        const int k = __popc(__ballot_sync(0xffffffffu, owned)) - 1;
        if (k < 0) return false;
        if (step == 1) {
            const int b = lo + k;
            const int begin = __shfl_sync(0xffffffffu, v, k);
            const int end = __shfl_sync(0xffffffffu, v, k + 1);
            const int count = items_of(end - begin, chunk);
            const int j = slot - (begin / chunk + b);
            if (j >= count || end < begin) return false;
            const int64_t len = end - begin;
            it.request = b;
            it.begin = begin + (int)(len * j / count);
            it.end = begin + (int)(len * (j + 1) / count);
            it.whole = count == 1;
            return true;
        }
        lo += k * step;
        n = min(step, n - k * step);
    }
}

// ------------------------------------------------------------------ main kernel

__global__ void __launch_bounds__(kThreads) mla_decode_split_kernel(KsArgs a, float* __restrict__ partials, int chunk)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;  // mma groupID / threadID_in_group

    Item it;
    if (!find_item(a.kv_indptr, (int)a.batch_size, chunk, blockIdx.x, it)) return;
    const int len = it.end - it.begin;
    const int tiles = (len + kTile - 1) / kTile;
    const int64_t head0 = (int64_t)it.request * kHeads;

    const uint32_t q_smem = smem_u32(smem);
    const uint32_t stage_smem = q_smem + kOffStages;
    const uint32_t p_smem = q_smem + kOffP;
    float* s_max = reinterpret_cast<float*>(smem + kOffMax);
    float* s_sum = reinterpret_cast<float*>(smem + kOffSum);
    int* s_pages = reinterpret_cast<int*>(smem + kOffPages);

    // Q of the 16 heads, latent then RoPE part, swizzled rows of 72 chunks.
    for (int i = tid; i < kHeads * kQChunks; i += kThreads) {
        const int h = i / kQChunks, c = i % kQChunks;
        const ks_bf16_t* src = c < kCkvChunks ? a.q_nope + (head0 + h) * kCkv + c * 8
                                              : a.q_pe + (head0 + h) * kKpe + (c - kCkvChunks) * 8;
        cp_async_16(q_smem + swz(h, c, kQChunks), src, true);
    }
    auto load_pages = [&](int tile) {
        if (tid < kTile && tile < tiles) {
            const int tok = tile * kTile + tid;
            s_pages[(tile & 1) * kTile + tid] = tok < len ? __ldg(a.kv_indices + it.begin + tok) : 0;
        }
    };
    // Tile `tile` into its stage: kTile latent rows of 64 chunks and RoPE rows of 8.
    auto issue_tile = [&](int tile) {
        const uint32_t ckv_dst = stage_smem + (tile % kStages) * kStageBytes;
        const uint32_t kpe_dst = ckv_dst + kCkvTileBytes;
        const int valid = len - tile * kTile;
        const int* pages = s_pages + (tile & 1) * kTile;
        for (int i = tid; i < kTile * (kCkvChunks + kKpeChunks); i += kThreads) {
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

    // Online softmax in base 2, the same m in every warp: m = running max of logit * log2(e),
    // l = this thread's share of sum 2^(x - m) over its warp's tokens, o = unnormalised output
    // of heads g and g + 8 at this warp's dims.
    const float scale_log2 = a.sm_scale * kLog2e;
    float m_lo = -CUDART_INF_F, m_hi = -CUDART_INF_F, l_lo = 0.0f, l_hi = 0.0f;
    float o[kDimsPerWarp / 8][4];
#pragma unroll
    for (int n = 0; n < kDimsPerWarp / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

    const int mrow = lane & 7, mat = lane >> 3;  // ldmatrix: lane supplies row mrow of matrix mat
    for (int j = 0; j < tiles; ++j) {
        cp_async_wait_all();
        __syncthreads();  // tile j is visible; every warp is done with tile j - 1 and with P
        if (j + 1 < tiles) issue_tile(j + 1);
        cp_async_commit();
        load_pages(j + 2);  // s_pages[j & 1] was read by issue_tile(j) before the barrier

        const uint32_t ckv_tile = stage_smem + (j % kStages) * kStageBytes;
        const uint32_t kpe_tile = ckv_tile + kCkvTileBytes;

        // S = Q.K^T for tokens 8 warp .. +7: 36 k-steps of 16 dims, two per ldmatrix of K.
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        const int krow = warp * 8 + mrow;
#pragma unroll 4
        for (int kp = 0; kp < kQChunks / 4; ++kp) {
            uint32_t b[4], a0[4], a1[4];
            const bool rope = kp >= kCkvChunks / 4;
            const int kc = rope ? 4 * kp - kCkvChunks : 4 * kp;
            ldmatrix_x4(rope ? kpe_tile + swz(krow, kc + mat, kKpeChunks) : ckv_tile + swz(krow, kc + mat, kCkvChunks), b);
            ldmatrix_x4(q_smem + swz(lane & 15, 4 * kp + (lane >> 4), kQChunks), a0);
            ldmatrix_x4(q_smem + swz(lane & 15, 4 * kp + 2 + (lane >> 4), kQChunks), a1);
            mma_16816(s, a0, b[0], b[1]);
            mma_16816(s, a1, b[2], b[3]);
        }

        // Mask the tile's missing tokens, then the per-head maximum over this warp's tokens.
        const int valid = len - j * kTile;
        const int col = warp * 8 + 2 * t;
#pragma unroll
        for (int c = 0; c < 4; ++c) s[c] = col + (c & 1) < valid ? s[c] * scale_log2 : -CUDART_INF_F;
        float mx_lo = fmaxf(s[0], s[1]), mx_hi = fmaxf(s[2], s[3]);
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
        if (t == 0) {
            s_max[warp * kHeads + g] = mx_lo;
            s_max[warp * kHeads + g + 8] = mx_hi;
        }
        __syncthreads();

        float tile_lo = -CUDART_INF_F, tile_hi = -CUDART_INF_F;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            tile_lo = fmaxf(tile_lo, s_max[w * kHeads + g]);
            tile_hi = fmaxf(tile_hi, s_max[w * kHeads + g + 8]);
        }
        const float new_lo = fmaxf(m_lo, tile_lo), new_hi = fmaxf(m_hi, tile_hi);
        // A tile is never all-masked (valid >= 1), so new_* is finite from the first tile on.
        const float corr_lo = exp2f(m_lo - new_lo), corr_hi = exp2f(m_hi - new_hi);
        m_lo = new_lo;
        m_hi = new_hi;
        const float p0 = exp2f(s[0] - m_lo), p1 = exp2f(s[1] - m_lo);
        const float p2 = exp2f(s[2] - m_hi), p3 = exp2f(s[3] - m_hi);
        l_lo = l_lo * corr_lo + p0 + p1;
        l_hi = l_hi * corr_hi + p2 + p3;
        // P as bf16, row = head, column = token: this warp's 8 tokens are chunk `warp` of a row.
        *reinterpret_cast<uint32_t*>(smem + kOffP + swz(g, warp, kPRowChunks) + 4 * t) = pack_bf16x2(p0, p1);
        *reinterpret_cast<uint32_t*>(smem + kOffP + swz(g + 8, warp, kPRowChunks) + 4 * t) = pack_bf16x2(p2, p3);
#pragma unroll
        for (int n = 0; n < kDimsPerWarp / 8; ++n) {
            o[n][0] *= corr_lo;
            o[n][1] *= corr_lo;
            o[n][2] *= corr_hi;
            o[n][3] *= corr_hi;
        }
        __syncthreads();

        // O[:, this warp's dims] += P.V over the tile's tokens, 16 per k-step; V^T through
        // ldmatrix.trans from the token-major latent rows.
#pragma unroll
        for (int kk = 0; kk < kTile / 16; ++kk) {
            uint32_t pa[4];
            ldmatrix_x4(p_smem + swz(lane & 15, 2 * kk + (lane >> 4), kPRowChunks), pa);
            const int vrow = 16 * kk + (mat & 1) * 8 + mrow;
#pragma unroll
            for (int n = 0; n < kDimsPerWarp / 8; n += 2) {
                uint32_t b[4];
                ldmatrix_x4_trans(ckv_tile + swz(vrow, warp * (kDimsPerWarp / 8) + n + (mat >> 1), kCkvChunks), b);
                mma_16816(o[n], pa, b[0], b[1]);
                mma_16816(o[n + 1], pa, b[2], b[3]);
            }
        }
    }
    cp_async_wait_all();

    // Sum l over the quad, then over the warps (each saw a different eighth of every tile).
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
    if (t == 0) {
        s_sum[warp * kHeads + g] = l_lo;
        s_sum[warp * kHeads + g + 8] = l_hi;
    }
    __syncthreads();
    float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        sum_lo += s_sum[w * kHeads + g];
        sum_hi += s_sum[w * kHeads + g + 8];
    }

    const int dim0 = warp * kDimsPerWarp + 2 * t;
    if (it.whole) {
        const float inv_lo = sum_lo > 0.0f ? 1.0f / sum_lo : 0.0f, inv_hi = sum_hi > 0.0f ? 1.0f / sum_hi : 0.0f;
        ks_bf16_t* out_lo = a.output + (head0 + g) * kCkv + dim0;
        ks_bf16_t* out_hi = a.output + (head0 + g + 8) * kCkv + dim0;
#pragma unroll
        for (int n = 0; n < kDimsPerWarp / 8; ++n) {
            *reinterpret_cast<uint32_t*>(out_lo + 8 * n) = pack_bf16x2(o[n][0] * inv_lo, o[n][1] * inv_lo);
            *reinterpret_cast<uint32_t*>(out_hi + 8 * n) = pack_bf16x2(o[n][2] * inv_hi, o[n][3] * inv_hi);
        }
        if (warp == 0 && t == 0) {
            a.lse[head0 + g] = sum_lo > 0.0f ? m_lo + log2f(sum_lo) : -CUDART_INF_F;
            a.lse[head0 + g + 8] = sum_hi > 0.0f ? m_hi + log2f(sum_hi) : -CUDART_INF_F;
        }
    } else {
        float* part_lo = partials + ((int64_t)blockIdx.x * kHeads + g) * kPartialStride;
        float* part_hi = part_lo + 8 * kPartialStride;
#pragma unroll
        for (int n = 0; n < kDimsPerWarp / 8; ++n) {
            *reinterpret_cast<float2*>(part_lo + dim0 + 8 * n) = make_float2(o[n][0], o[n][1]);
            *reinterpret_cast<float2*>(part_hi + dim0 + 8 * n) = make_float2(o[n][2], o[n][3]);
        }
        if (warp == 0 && t == 0) {
            part_lo[kCkv] = m_lo;
            part_lo[kCkv + 1] = sum_lo;
            part_hi[kCkv] = m_hi;
            part_hi[kCkv + 1] = sum_hi;
        }
    }
}

// ------------------------------------------------------------------ combine kernel

// One block per (request, head); thread i merges dims 4i .. 4i+3 over the request's items.
__global__ void __launch_bounds__(kCkv / 4) mla_decode_combine_kernel(const int32_t* __restrict__ indptr,
    const float* __restrict__ partials, ks_bf16_t* __restrict__ output, float* __restrict__ lse, int chunk)
{
    const int b = blockIdx.x / kHeads, h = blockIdx.x % kHeads;
    const int begin = __ldg(indptr + b), end = __ldg(indptr + b + 1);
    const int count = items_of(end - begin, chunk);
    if (count <= 1) return;  // written by the main kernel
    const int64_t first = (int64_t)(begin / chunk) + b;
    const float* part = partials + (first * kHeads + h) * kPartialStride;
    constexpr int64_t kItemFloats = (int64_t)kHeads * kPartialStride;

    // Every warp reduces (m, l) over the items for itself, which saves a barrier.
    const int lane = threadIdx.x & 31;
    float m = -CUDART_INF_F, l = 0.0f;
    for (int i = lane; i < count; i += 32)
        merge_state(m, l, __ldg(part + i * kItemFloats + kCkv), __ldg(part + i * kItemFloats + kCkv + 1));
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
        const float l2 = __shfl_xor_sync(0xffffffffu, l, offset);
        merge_state(m, l, m2, l2);
    }
    const int d = 4 * threadIdx.x;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < count; ++i) {
        const float mi = __ldg(part + i * kItemFloats + kCkv);
        const float w = mi == -CUDART_INF_F ? 0.0f : exp2f(mi - m);
        const float4 v = __ldg(reinterpret_cast<const float4*>(part + i * kItemFloats + d));
        acc.x += w * v.x;
        acc.y += w * v.y;
        acc.z += w * v.z;
        acc.w += w * v.w;
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    uint2 packed;
    packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
    packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
    *reinterpret_cast<uint2*>(output + ((int64_t)b * kHeads + h) * kCkv + d) = packed;
    if (threadIdx.x == 0) lse[(int64_t)b * kHeads + h] = l > 0.0f ? m + log2f(l) : -CUDART_INF_F;
}

bool aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->len_indptr != args->batch_size + 1 || args->num_kv_indices < 0 ||
        args->num_kv_indices > INT_MAX / 2)
        return (int)cudaErrorInvalidValue;
    const int64_t batch = args->batch_size, tokens = args->num_kv_indices;
    if (batch == 0) return 0;
    if (!args->q_nope || !args->q_pe || !args->ckv_cache || !args->kpe_cache || !args->kv_indptr || !args->output ||
        !args->lse || (tokens > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;
    if (batch > INT_MAX / kHeads) return (int)cudaErrorInvalidValue;
    // 16-byte rows for cp.async; 4-byte pairs for the output stores.
    if (!aligned(args->ckv_cache, 16) || !aligned(args->kpe_cache, 16) || !aligned(args->q_nope, 16) ||
        !aligned(args->q_pe, 16) || !aligned(args->output, 8))
        return (int)cudaErrorMisalignedAddress;

    static int resident = 0;  // CTAs of the main kernel per SM times SMs: one wave's worth of items
    if (resident == 0) {
        int device = 0, sms = 0, per_sm = 0;
        cudaError_t err = cudaGetDevice(&device);
        if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err == cudaSuccess)
            err = cudaFuncSetAttribute(mla_decode_split_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
        if (err == cudaSuccess)
            err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mla_decode_split_kernel, kThreads, kSmemBytes);
        if (err != cudaSuccess) return (int)err;
        resident = sms * (per_sm > 0 ? per_sm : 1);
    }

    // Chunk: the tokens over one wave of CTAs, never under one tile, and never so small that the
    // item slots (tokens / chunk + batch) outgrow the workspace.  Without room for a single split
    // per request, nothing is split.
    int64_t chunk = (tokens + resident - 1) / resident;
    if (chunk < kMinChunk) chunk = kMinChunk;
    const int64_t capacity = workspace ? (int64_t)(workspace_bytes / ((size_t)kHeads * kPartialStride * sizeof(float))) : 0;
    if (capacity > batch) {
        const int64_t fit = (tokens + (capacity - batch) - 1) / (capacity - batch);
        if (chunk < fit) chunk = fit;
    } else {
        chunk = tokens + 1;
    }
    if (chunk > INT_MAX / 2) chunk = INT_MAX / 2;  // > tokens either way: one item per request
    const int64_t slots = tokens / chunk + batch;
    if (slots > INT_MAX) return (int)cudaErrorInvalidValue;

    float* partials = static_cast<float*>(workspace);
    mla_decode_split_kernel<<<(unsigned)slots, kThreads, kSmemBytes, stream>>>(*args, partials, (int)chunk);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && tokens > chunk) {
        mla_decode_combine_kernel<<<(unsigned)(batch * kHeads), kCkv / 4, 0, stream>>>(
            args->kv_indptr, partials, args->output, args->lse, (int)chunk);
        err = cudaGetLastError();
    }
    return (int)err;
}
