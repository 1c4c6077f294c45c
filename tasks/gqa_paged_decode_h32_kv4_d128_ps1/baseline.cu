// Hand-written split-KV GQA paged decode for H200 (sm_90a).
//
// The op reads 512 bytes of K+V per (token, KV head) and does 8 query heads' worth of work on
// them, so the goal is to read K/V exactly once at close to DRAM bandwidth:
//
//  * One CTA per (work item, KV head).  A work item is a run of at most `chunk` tokens of one
//    request; the 8 query heads of the KV head share every K/V row the CTA loads.  The 4 KV
//    heads of an item are adjacent CTAs, so the 1 KiB of a page they read goes out together.
//  * Work items are cut at multiples of `chunk` in the global token numbering (kv_indices'
//    positions), clipped to the request.  Request b then owns items
//    [P(b), P(b+1)) with P(b) = kv_indptr[b] / chunk + b, so the host sizes the grid from
//    batch_size and num_kv_indices alone (kv_indptr stays on the device, no planning pass), a
//    CTA finds its request with one search over kv_indptr, and every item is at most `chunk`
//    tokens however uneven the requests are.
//  * Inside a CTA each warp takes every 4th 16-token tile and runs its own cp.async pipeline
//    and online softmax; the warps merge once at the end, so the main loop has no CTA barrier.
//  * Q.K^T and P.V run on tensor cores (mma.m16n8k16, bf16 in, fp32 accumulate) with the 8
//    heads as the M rows 0..7 (rows 8..15 are zero and their results dropped): the fp32 pipes
//    could not keep up with 4.8 TB/s of K/V at 8 heads per row, the tensor cores idle at it.
//  * A request that fits in one item writes its output directly.  Otherwise each item writes
//    (m, l, unnormalised o[128]) per head to the workspace and a small second kernel merges.
#include "ks_task.h"

#include <climits>
#include <cstdint>
#include <math_constants.h>

namespace {

constexpr int kQoHeads = (int)KS_NUM_QO_HEADS;
constexpr int kKvHeads = (int)KS_NUM_KV_HEADS;
constexpr int kGroup = kQoHeads / kKvHeads;
constexpr int kDim = (int)KS_HEAD_DIM;
static_assert(kGroup == 8 && kDim == 128, "the mma tiling assumes 8 query heads of 128 dims per KV head");
static_assert(KS_PAGE_SIZE == 1, "one token per page");

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 16;                        // tokens per warp step: one k-step of P.V
constexpr int kRowBytes = kDim * 2;              // one token's K (or V) row of one KV head
constexpr int kTileBytes = kTile * kRowBytes;    // 4 KiB
constexpr int kStageBytes = 2 * kTileBytes;      // K tile + V tile
// Two stages (64 KiB per CTA, three CTAs and 12 warps per SM, also the register limit at 168)
// measured 3-8% faster on an H200 than three (96 KiB, two CTAs) and 15% faster than four:
// more independent warps keep more bytes in flight than a deeper pipeline per warp.
constexpr int kMaxStages = 2;
constexpr int kItemsPerSm = 1;                   // ~4 CTAs per SM; 2 and 4 measured slower
constexpr int kMinChunk = 32;                    // below this the per-item overhead dominates
constexpr int kPartialStride = kDim + 2;         // floats per (item, head): o[128], m, l
constexpr int64_t kItemFloats = (int64_t)kQoHeads * kPartialStride;
constexpr int kMergeStride = kDim + 8;           // padded rows of the end-of-CTA warp merge
constexpr float kLog2e = 1.4426950408889634f;

// ------------------------------------------------------------------ PTX wrappers

__device__ __forceinline__ uint32_t smem_u32(const void* p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// 16-byte async copy; with valid == false it writes zeros and reads nothing, which keeps
// garbage (possibly NaN) out of the tiles' unused rows.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int kPending>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                            uint32_t& r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t& r0, uint32_t& r1,
                                                  uint32_t& r2, uint32_t& r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

// D = A.B + C for an m16n8k16 tile whose A rows 8..15 are zero: only rows 0..7 (this thread's
// c0, c1) are kept, the other two results go to scratch registers local to the asm block.
__device__ __forceinline__ void mma_top_rows(float& c0, float& c1, uint32_t a0, uint32_t a2,
                                             uint32_t b0, uint32_t b1)
{
    asm("{\n"
        ".reg .f32 unused0, unused1;\n"
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,unused0,unused1}, "
        "{%2,%3,%4,%3}, {%5,%6}, {%0,%1,%7,%7};\n"
        "}\n"
        : "+f"(c0), "+f"(c1)
        : "r"(a0), "r"(0u), "r"(a2), "r"(b0), "r"(b1), "f"(0.0f));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi)
{
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

// (m, l) of two softmax partial states, in base 2; an empty state is (-inf, 0).
__device__ __forceinline__ void merge_state(float& m, float& l, float m2, float l2)
{
    const float mn = fmaxf(m, m2);
    if (mn == -CUDART_INF_F) return;
    l = l * exp2f(m - mn) + l2 * exp2f(m2 - mn);
    m = mn;
}

// ------------------------------------------------------------------ work-item lookup

struct Segment {
    int request;
    int begin, end;  // token range [begin, end) in kv_indices
    bool whole;      // the item is its request's only one: write the final output
};

// Request b owns items [P(b), P(b+1)), P(b) = indptr[b] / chunk + b, which increases strictly
// with b.  A 32-way search over kv_indptr (one round up to 32 requests, two up to 1024)
// finds the largest b with P(b) <= item; every warp runs it for itself, which costs the same
// latency as one warp running it and needs no barrier.  Returns false for an item that no
// request owns (only possible with an inconsistent kv_indptr).
__device__ __forceinline__ bool find_segment(const int32_t* __restrict__ indptr, int batch,
                                             int chunk, int item, Segment& seg)
{
    const int lane = threadIdx.x & 31;
    int lo = 0, n = batch;  // the answer lies in [lo, lo + n)
    for (;;) {
        const int step = (n + 31) / 32;
        const int probe = lo + lane * step;
        // Lanes up to n load, so that in the last round lane k + 1 holds indptr[b + 1].
        const int v = lane * step <= n ? __ldg(indptr + probe) : 0;
        const bool owned = lane * step < n && v / chunk + probe <= item;
        const int k = __popc(__ballot_sync(0xffffffffu, owned)) - 1;
        if (k < 0) return false;
        if (step == 1) {
            const int begin = __shfl_sync(0xffffffffu, v, k);
            const int end = __shfl_sync(0xffffffffu, v, k + 1);
            const int64_t g = (int64_t)item - (lo + k);  // the item's chunk, globally
            seg.request = lo + k;
            seg.begin = (int)max((int64_t)begin, g * chunk);
            seg.end = (int)min((int64_t)end, (g + 1) * chunk);
            seg.whole = begin / chunk == end / chunk;
            return seg.begin <= seg.end;
        }
        lo += k * step;
        n = min(step, n - k * step);
    }
}

// ------------------------------------------------------------------ main kernel

// Tile layout in shared memory: 16 rows of 256 bytes, the 16-byte chunk c of row r stored at
// chunk c ^ (r & 7), so that the 8 rows an ldmatrix phase reads hit 8 different bank groups.
__device__ __forceinline__ uint32_t tile_offset(int row, int chunk)
{
    return (uint32_t)(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
}

template <int kStages>
__global__ void __launch_bounds__(kThreads)
gqa_decode_split_kernel(KsArgs a, float* __restrict__ partials, int chunk)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2;  // mma "groupID": the query head (row) this thread accumulates
    const int t = lane & 3;   // mma "threadID_in_group"
    const int kv_head = blockIdx.x % kKvHeads;
    const int item = blockIdx.x / kKvHeads;

    Segment seg;
    if (!find_segment(a.kv_indptr, (int)a.batch_size, chunk, item, seg)) return;
    const int64_t head0 = (int64_t)seg.request * kQoHeads + kv_head * kGroup;
    const int len = seg.end - seg.begin;
    const int num_tiles = (len + kTile - 1) / kTile;
    const int my_tiles = num_tiles > warp ? (num_tiles - warp + kWarps - 1) / kWarps : 0;

    // Q as the mma A operand, rows 0..7 = the group's heads: per 16-dim k-step this thread
    // holds Q[g][16kk + 2t, +1] and Q[g][16kk + 8 + 2t, +1].
    uint32_t qa[kDim / 16][2];
    {
        const uint32_t* q32 = reinterpret_cast<const uint32_t*>(a.q + (head0 + g) * kDim);
#pragma unroll
        for (int kk = 0; kk < kDim / 16; ++kk) {
            qa[kk][0] = __ldg(q32 + 8 * kk + t);
            qa[kk][1] = __ldg(q32 + 8 * kk + 4 + t);
        }
    }

    unsigned char* warp_smem = smem + warp * kStages * kStageBytes;
    const uint32_t warp_base = smem_u32(warp_smem);
    const ks_bf16_t* k_base = a.k_cache + (int64_t)kv_head * kDim;
    const ks_bf16_t* v_base = a.v_cache + (int64_t)kv_head * kDim;

    // Lanes 0..15 fetch the page of token `lane` of the warp's j-th tile (0 past the end).
    // This runs one step ahead of the tile's copies, so a tile waits for two dependent DRAM
    // round trips; more warps per SM (kMaxStages above) hide that better than deeper stages.
    auto load_pages = [&](int j) {
        const int tok = (warp + j * kWarps) * kTile + lane;
        return j < my_tiles && lane < kTile && tok < len ? __ldg(a.kv_indices + seg.begin + tok) : 0;
    };

    // Each lane copies chunk (lane & 15) of rows (lane >> 4) + 2i: 16 lanes per 256-byte row.
    auto issue_tile = [&](int j, int pages) {
        const int valid = len - (warp + j * kWarps) * kTile;
        const uint32_t k_dst = warp_base + (j % kStages) * kStageBytes;
        const uint32_t v_dst = k_dst + kTileBytes;
        const int chunk16 = lane & 15;
#pragma unroll
        for (int i = 0; i < kTile / 2; ++i) {
            const int row = (lane >> 4) + 2 * i;
            const int page = __shfl_sync(0xffffffffu, pages, row);
            const bool ok = row < valid;
            const int64_t off = ok ? (int64_t)page * (kKvHeads * kDim) + chunk16 * 8 : 0;
            cp_async_16(k_dst + tile_offset(row, chunk16), k_base + off, ok);
            cp_async_16(v_dst + tile_offset(row, chunk16), v_base + off, ok);
        }
    };

    // Online softmax in base 2: m = running max of logit * log2(e), l = this thread's share of
    // sum 2^(x - m) (reduced over the quad at the end), o = unnormalised output of head g at
    // dims 8n + 2t, +1.
    const float scale_log2 = a.sm_scale * kLog2e;
    float m = -CUDART_INF_F, l = 0.0f;
    float o[kDim / 8][2];
#pragma unroll
    for (int n = 0; n < kDim / 8; ++n) o[n][0] = o[n][1] = 0.0f;

    int pages[kStages];
#pragma unroll
    for (int s = 0; s < kStages; ++s) pages[s] = load_pages(s);
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
        if (s < my_tiles) issue_tile(s, pages[s]);
        cp_async_commit();
    }
    int next_pages = pages[kStages - 1];

    for (int j = 0; j < my_tiles; ++j) {
        // Keep kStages - 1 tiles in flight; one group per step, empty or not, keeps the
        // wait_group count right.
        const int ahead = j + kStages - 1;
        if (ahead < my_tiles) issue_tile(ahead, next_pages);
        cp_async_commit();
        next_pages = load_pages(ahead + 1);
        cp_async_wait<kStages - 1>();
        __syncwarp();

        const uint32_t k_tile = warp_base + (j % kStages) * kStageBytes;
        const uint32_t v_tile = k_tile + kTileBytes;
        const int mrow = lane & 7;  // ldmatrix: lane supplies row (lane & 7) of matrix lane >> 3
        const int mat = lane >> 3;

        // S = Q.K^T for tokens 0..7 (s[0]) and 8..15 (s[1]); this thread gets head g,
        // tokens 2t and 2t + 1 of each.
        float s[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
        for (int kk = 0; kk < kDim / 16; ++kk) {
            uint32_t b0, b1, b2, b3;
            ldmatrix_x4(k_tile + tile_offset((mat >> 1) * 8 + mrow, 2 * kk + (mat & 1)), b0, b1, b2, b3);
            mma_top_rows(s[0][0], s[0][1], qa[kk][0], qa[kk][1], b0, b1);
            mma_top_rows(s[1][0], s[1][1], qa[kk][0], qa[kk][1], b2, b3);
        }

        const int valid = len - (warp + j * kWarps) * kTile;
        float tile_max = -CUDART_INF_F;
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int c = 0; c < 2; ++c) {
                const bool in = 8 * n + 2 * t + c < valid;
                s[n][c] = in ? s[n][c] * scale_log2 : -CUDART_INF_F;
                tile_max = fmaxf(tile_max, s[n][c]);
            }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        const float m_new = fmaxf(m, tile_max);
        // Only -inf logits so far (not reachable with finite inputs): keep exp2 away from NaN.
        const float m_ref = m_new == -CUDART_INF_F ? 0.0f : m_new;
        const float correction = exp2f(m - m_ref);
        m = m_new;

        float p[2][2];
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int c = 0; c < 2; ++c) p[n][c] = exp2f(s[n][c] - m_ref);
        l = l * correction + (p[0][0] + p[0][1]) + (p[1][0] + p[1][1]);
#pragma unroll
        for (int n = 0; n < kDim / 8; ++n) {
            o[n][0] *= correction;
            o[n][1] *= correction;
        }

        // O += P.V: P (bf16) is the A operand straight from the S accumulators, V^T comes from
        // the token-major tile through ldmatrix.trans.
        const uint32_t pa0 = pack_bf16x2(p[0][0], p[0][1]);
        const uint32_t pa2 = pack_bf16x2(p[1][0], p[1][1]);
#pragma unroll
        for (int u = 0; u < kDim / 16; ++u) {
            uint32_t b0, b1, b2, b3;
            ldmatrix_x4_trans(v_tile + tile_offset((mat & 1) * 8 + mrow, 2 * u + (mat >> 1)), b0, b1, b2, b3);
            mma_top_rows(o[2 * u][0], o[2 * u][1], pa0, pa2, b0, b1);
            mma_top_rows(o[2 * u + 1][0], o[2 * u + 1][1], pa0, pa2, b2, b3);
        }
        __syncwarp();  // every lane's ldmatrix is done before this stage is refilled
    }

    // Hand the warp's state to the CTA through the warp's own (now idle) stage buffers.
    cp_async_wait<0>();
    __syncwarp();
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    float* merge_o = reinterpret_cast<float*>(warp_smem);
    float* merge_ml = merge_o + kGroup * kMergeStride;
#pragma unroll
    for (int n = 0; n < kDim / 8; ++n)
        *reinterpret_cast<float2*>(merge_o + g * kMergeStride + 8 * n + 2 * t) = make_float2(o[n][0], o[n][1]);
    if (t == 0) {
        merge_ml[g] = m;
        merge_ml[kGroup + g] = l;
    }
    __syncthreads();

    // Thread d merges dim d of all 8 heads over the 4 warps.
    const int d = threadIdx.x;
#pragma unroll 1
    for (int h = 0; h < kGroup; ++h) {
        float mw[kWarps], lw[kWarps], ow[kWarps];
        float m_all = -CUDART_INF_F;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            const float* wo = reinterpret_cast<const float*>(smem + w * kStages * kStageBytes);
            ow[w] = wo[h * kMergeStride + d];
            mw[w] = wo[kGroup * kMergeStride + h];
            lw[w] = wo[kGroup * kMergeStride + kGroup + h];
            m_all = fmaxf(m_all, mw[w]);
        }
        float l_all = 0.0f, o_all = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            const float e = mw[w] == -CUDART_INF_F ? 0.0f : exp2f(mw[w] - m_all);
            l_all += lw[w] * e;
            o_all += ow[w] * e;
        }
        if (seg.whole) {
            a.output[(head0 + h) * kDim + d] = ks_from_float_bf16(l_all > 0.0f ? o_all / l_all : 0.0f);
            if (d == 0) a.lse[head0 + h] = l_all > 0.0f ? m_all + log2f(l_all) : -CUDART_INF_F;
        } else {
            float* part = partials + ((int64_t)item * kQoHeads + kv_head * kGroup + h) * kPartialStride;
            part[d] = o_all;
            if (d == 0) {
                part[kDim] = m_all;
                part[kDim + 1] = l_all;
            }
        }
    }
}

// ------------------------------------------------------------------ combine kernel

// One block per (request, query head), thread d = dim d: merges the request's items.
__global__ void __launch_bounds__(kDim)
gqa_decode_combine_kernel(const int32_t* __restrict__ indptr, const float* __restrict__ partials,
                          ks_bf16_t* __restrict__ output, float* __restrict__ lse, int chunk)
{
    const int b = blockIdx.x / kQoHeads;
    const int h = blockIdx.x % kQoHeads;
    const int begin = __ldg(indptr + b);
    const int end = __ldg(indptr + b + 1);
    const int count = end / chunk - begin / chunk + 1;
    if (count <= 1) return;  // written by the main kernel

    const int64_t first = (int64_t)(begin / chunk) + b;
    const float* part = partials + first * kItemFloats + (int64_t)h * kPartialStride;

    // Every warp reduces (m, l) over all items for itself, which saves a barrier.
    const int lane = threadIdx.x & 31;
    float m = -CUDART_INF_F, l = 0.0f;
    for (int i = lane; i < count; i += 32)
        merge_state(m, l, __ldg(part + i * kItemFloats + kDim), __ldg(part + i * kItemFloats + kDim + 1));
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
        const float l2 = __shfl_xor_sync(0xffffffffu, l, offset);
        merge_state(m, l, m2, l2);
    }

    const int d = threadIdx.x;
    float acc = 0.0f;
#pragma unroll 4
    for (int i = 0; i < count; ++i) {
        const float mi = __ldg(part + i * kItemFloats + kDim);
        const float w = mi == -CUDART_INF_F ? 0.0f : exp2f(mi - m);
        acc += w * __ldg(part + i * kItemFloats + d);
    }
    output[((int64_t)b * kQoHeads + h) * kDim + d] = ks_from_float_bf16(l > 0.0f ? acc / l : 0.0f);
    if (d == 0) lse[(int64_t)b * kQoHeads + h] = l > 0.0f ? m + log2f(l) : -CUDART_INF_F;
}

// ------------------------------------------------------------------ host side

template <int kStages>
cudaError_t launch_split(const KsArgs& a, float* partials, int chunk, int64_t items, cudaStream_t stream)
{
    const int smem = kWarps * kStages * kStageBytes;
    cudaError_t err = cudaFuncSetAttribute(gqa_decode_split_kernel<kStages>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (err != cudaSuccess) return err;
    gqa_decode_split_kernel<kStages><<<(unsigned)(items * kKvHeads), kThreads, smem, stream>>>(a, partials, chunk);
    return cudaGetLastError();
}

bool aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->len_indptr != args->batch_size + 1 ||
        args->num_kv_indices < 0 || args->num_kv_indices > INT_MAX)
        return (int)cudaErrorInvalidValue;
    const int64_t batch = args->batch_size;
    const int64_t tokens = args->num_kv_indices;
    if (batch == 0) return 0;
    if (!args->q || !args->k_cache || !args->v_cache || !args->kv_indptr || !args->output ||
        !args->lse || (tokens > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;
    if (batch > INT_MAX / kQoHeads) return (int)cudaErrorInvalidValue;
    // 16-byte rows for cp.async, 4-byte pairs for the Q fragments.
    if (!aligned(args->k_cache, 16) || !aligned(args->v_cache, 16) || !aligned(args->q, 4))
        return (int)cudaErrorMisalignedAddress;

    int device = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) return (int)err;

    // Chunk size: about kItemsPerSm items per SM over the whole batch, never below kMinChunk,
    // and never so small that the items (tokens / chunk + batch of them) outgrow the
    // workspace.  Without room for even one split per request, nothing is split.
    int64_t chunk = (tokens + (int64_t)sms * kItemsPerSm - 1) / ((int64_t)sms * kItemsPerSm);
    if (chunk < kMinChunk) chunk = kMinChunk;
    const int64_t capacity = workspace ? (int64_t)(workspace_bytes / (kItemFloats * sizeof(float))) : 0;
    if (capacity > batch) {
        const int64_t room = capacity - batch;
        const int64_t fit = (tokens + room - 1) / room;
        if (chunk < fit) chunk = fit;
    } else {
        chunk = tokens + 1;
    }
    chunk = (chunk + kTile - 1) / kTile * kTile;
    if (chunk > INT_MAX) chunk = INT_MAX;  // > tokens either way: one item per request

    const int64_t items = tokens / chunk + batch;
    if (items * kKvHeads > INT_MAX) return (int)cudaErrorInvalidValue;
    const bool split = tokens >= chunk;

    // Pipeline depth: no deeper than the most tiles a warp can get, so that short items take
    // less shared memory and more CTAs fit on an SM.
    const int64_t longest = chunk < tokens ? chunk : tokens;
    const int64_t tiles_per_warp = ((longest + kTile - 1) / kTile + kWarps - 1) / kWarps;
    const KsArgs& a = *args;
    float* partials = static_cast<float*>(workspace);
    const int c = (int)chunk;
    static_assert(kMaxStages == 2, "the dispatch below picks between 2 stages and 1");
    if (tiles_per_warp >= 2) err = launch_split<kMaxStages>(a, partials, c, items, stream);
    else err = launch_split<1>(a, partials, c, items, stream);
    if (err != cudaSuccess) return (int)err;

    if (split) {
        gqa_decode_combine_kernel<<<(unsigned)(batch * kQoHeads), kDim, 0, stream>>>(
            args->kv_indptr, partials, args->output, args->lse, c);
        err = cudaGetLastError();
    }
    return (int)err;
}
