// Hand-written GQA paged decode for H200 (sm_90a): one wave of CTAs over the flattened token
// list, a cp.async ring per CTA, tensor cores for both products.  Knobs (-D):
// GQA_DECODE_STAGES (ring depth, default 2: two CTAs per SM), GQA_DECODE_MIN_CHUNK (128 tokens
// per run at least), GQA_DECODE_Q_AHEAD (1: the first queries load with the first tiles; 2: and
// every later segment's one tile before it starts, instead of at its first tile, a stall of every
// warp), GQA_DECODE_EARLY_SETUP (1: a run starts its first copies before it writes the empty
// requests it holds, whose search and loads are round trips to memory; 2: and its first tile's
// copies leave before the search for its first request), GQA_DECODE_BRANCH_FIRST (1: a
// segment's first-tile set-up is a real branch, not selects run every tile; off, because with it
// ptxas spills),
// GQA_DECODE_WIDE_MERGE_RUNS (16: runs per request from which 8 warps merge each request),
// GQA_DECODE_NEIGHBOUR (1: in calls whose requests average at most GQA_DECODE_NEIGHBOUR_PCT % of a
// run (125), no second kernel: the piece of a split request that opens a later run publishes its
// state under a flag in the workspace early in that run, and the run before merges it when it
// ends; the launch is cooperative (GQA_DECODE_NEIGHBOUR_COOP 0: plain, a lab measure) because
// runs wait on each other.  Unlike session 30's counters, the usual two-run request costs its
// last run one read of a state published long before; a request over three runs still waits
// at the end for its middle run.  Off, not yet timed: no machine in session 41),
// GQA_DECODE_EVICT_FIRST (1: the K/V copies carry an L2 evict-first policy, so that rows read
// once make room for each other instead of forcing out lines earlier kernels wrote, whose
// write-back would share DRAM with the reads: 1.08x on an H100 in the kernel lab, session 27).
// Measured on an H100 in session 29 and removed (the code is in 50ce187): a run's page numbers in
// shared memory (0.995x), the merge kernel released at the main kernel's start (0.979x), the next
// page numbers loaded unconditionally (0.999x).  In session 30 the merge done by each split
// request's last run to finish, on device counters, instead of the second kernel: 0.990x (with
// 64-token runs 0.982x; the code is in f7cdc08).
//
// The op reads 512 bytes of K+V per (token, KV head) and does 8 query heads' worth of work on
// them, so the kernel is built to keep DRAM busy and to read K/V exactly once:
//
//  * Balance: the kv_indices positions are cut into equal runs of `chunk` tokens, and a CTA
//    takes one (run, KV head); there are at most as many runs as fit on the GPU in one wave, so
//    every SM streams the same number of rows however uneven the requests are.  A run may cross
//    request boundaries; each request it touches is a segment with its own softmax state.
//  * Depth: 64-token tiles in a ring of kStages stages (two CTAs per SM; measured on an H200,
//    two stages beat three and bulk-copy (TMA) rows of 256 bytes were slower), the tile sequence
//    running across segments so that a new request never drains the ring.  Each thread copies
//    128-byte row pieces of four rows and prefetches their page numbers one tile ahead.
//  * Warp w owns tokens 16 w .. 16 w + 15 of every tile with its own online softmax: Q.K^T and
//    P.V on mma.m16n8k16 with the 8 query heads as M rows 0..7 (rows 8..15 zero), Q in
//    registers (loaded once per segment), P straight from the logit registers (the accumulator
//    layout is the A-fragment layout), V^T through ldmatrix.trans.  No barrier inside a tile
//    beyond the ring's; the four warps merge once per segment through shared memory.
//  * A request inside one run writes its output directly; a request split over runs writes
//    (o / l, m, l) per head to workspace slot request + run, and a second kernel, launched as a
//    programmatic dependent so that its launch hides behind the first's tail, merges them.
//    Empty requests are written (zeros, lse -inf) by the run their position falls in.
#include "ks_task.h"

#include <atomic>
#include <climits>
#include <cstdint>
#include <math_constants.h>

#ifndef GQA_DECODE_STAGES
#define GQA_DECODE_STAGES 2
#endif
#ifndef GQA_DECODE_EVICT_FIRST
#define GQA_DECODE_EVICT_FIRST 1
#endif
#ifndef GQA_DECODE_MIN_CHUNK
#define GQA_DECODE_MIN_CHUNK 128
#endif
#ifndef GQA_DECODE_Q_AHEAD
#define GQA_DECODE_Q_AHEAD 2
#endif
#ifndef GQA_DECODE_BRANCH_FIRST
#define GQA_DECODE_BRANCH_FIRST 0
#endif
#ifndef GQA_DECODE_EARLY_SETUP
#define GQA_DECODE_EARLY_SETUP 2
#endif
#ifndef GQA_DECODE_NEIGHBOUR
#define GQA_DECODE_NEIGHBOUR 0
#endif
#ifndef GQA_DECODE_NEIGHBOUR_COOP
#define GQA_DECODE_NEIGHBOUR_COOP 1
#endif
#ifndef GQA_DECODE_NEIGHBOUR_PCT
#define GQA_DECODE_NEIGHBOUR_PCT 125
#endif
#ifndef GQA_DECODE_WIDE_MERGE_RUNS
#define GQA_DECODE_WIDE_MERGE_RUNS 16
#endif

namespace {

constexpr int kQoHeads = (int)KS_NUM_QO_HEADS;
constexpr int kKvHeads = (int)KS_NUM_KV_HEADS;
constexpr int kGroup = kQoHeads / kKvHeads;
constexpr int kDim = (int)KS_HEAD_DIM;
static_assert(kGroup == 8 && kDim == 128, "the mma tiling assumes 8 query heads of 128 dims per KV head");
static_assert(KS_PAGE_SIZE == 1, "one token per page");

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 16 * kWarps; // tokens per tile: 16 per warp
constexpr int kStages = GQA_DECODE_STAGES;
static_assert(kStages >= 2 && kStages <= 6, "ring of 2 to 6 stages");
constexpr int kRowChunks = kDim / 8; // 16-byte chunks per K (or V) row of one head
constexpr int kMinChunk = GQA_DECODE_MIN_CHUNK;
// Requests split over this many runs or more on average are merged by 8 warps each, the rest by
// one: wide merge CTAs cost more than they save when a request has only a few runs (measured on
// the H200: +15 % at batch 64, -15 % at batch 1 with 64 runs).
constexpr int kWideMergeRuns = GQA_DECODE_WIDE_MERGE_RUNS;
constexpr bool kQAhead = GQA_DECODE_Q_AHEAD != 0;
constexpr bool kQAheadAll = GQA_DECODE_Q_AHEAD >= 2; // every segment's Q a tile early
constexpr bool kBranchFirst = GQA_DECODE_BRANCH_FIRST != 0;
constexpr int kEarlySetup = GQA_DECODE_EARLY_SETUP;
static_assert(kEarlySetup >= 0 && kEarlySetup <= 2, "GQA_DECODE_EARLY_SETUP: 0, 1 or 2");
constexpr int kPartialStride = kDim + 2; // floats per (slot, head): o[128], m, l
constexpr bool kNeighbour = GQA_DECODE_NEIGHBOUR != 0;
constexpr float kLog2e = 1.4426950408889634f;

constexpr int kTileBytes = kTile * kDim * 2; // K (or V) of one tile
constexpr int kStageBytes = 2 * kTileBytes;
constexpr int kMergeStride = kDim + 4; // floats per (warp, head) row of the merge
constexpr int kOffMerge = kStages * kStageBytes; // float [kWarps][kGroup][kMergeStride]
constexpr int kOffMl = kOffMerge + kWarps * kGroup * kMergeStride * 4; // float2 [kWarps][kGroup]
constexpr int kSmemBytes = kOffMl + kWarps * kGroup * 8;
static_assert(kSmemBytes <= 113 * 1024, "two CTAs per SM");

__device__ __forceinline__ uint32_t smem_u32(const void* p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src)
{
#if GQA_DECODE_EVICT_FIRST
    // The KV rows are read once: they go first when L2 needs room, ahead of lines others wrote.
    // (Pages that several requests share would no longer wait in L2 for the second reader; the
    // results cannot change, only the time.)
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "l"(policy)
                 : "memory");
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template<int kPending> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
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
// c += a.b for one m16n8k16 tile (bf16 in, fp32 accumulate); rows 8..15 of a are zero.
__device__ __forceinline__ void mma_16816(float (&c)[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi)
{
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t swz(int row, int chunk)
{
    return (uint32_t)((row * kRowChunks + (chunk ^ (row & 7))) << 4);
}

// The neighbour merge's flags: a run's state of a split request is published with the call's
// epoch, so that flags left by earlier calls (or any bytes the workspace held) never read as set.
__device__ __forceinline__ unsigned long long ld_relaxed_u64(const unsigned long long* p)
{
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned long long ld_acquire_u64(const unsigned long long* p)
{
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release_u64(unsigned long long* p, unsigned long long v)
{
    asm volatile("st.release.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void merge_state(float& m, float& l, float m2, float l2)
{
    const float mn = fmaxf(m, m2);
    if (mn == -CUDART_INF_F)
        return;
    l = l * exp2f(m - mn) + l2 * exp2f(m2 - mn);
    m = mn;
}

// How many of the sorted indptr[0 .. n) are <= x (strict: < x), by a 32-way search that one
// warp runs: the answer is kept in [lo, lo + len].
__device__ int warp_count_le(const int32_t* __restrict__ indptr, int n, int x, bool strict)
{
    const int lane = threadIdx.x & 31;
    int lo = 0, len = n;
    while (len > 0) {
        const int step = (len + 31) / 32;
        const bool in = lane * step < len;
        const int v = in ? __ldg(indptr + lo + lane * step) : INT_MAX;
        const bool below = in && (strict ? v < x : v <= x);
        const int k = __popc(__ballot_sync(0xffffffffu, below));
        if (k == 0)
            return lo;
        const int hi = min(lo + k * step, lo + len);
        lo += (k - 1) * step + 1;
        len = hi - lo;
    }
    return lo;
}

// The run's walk over its tokens (see the MLA decode baseline): every thread keeps a copy.
struct Cursor {
    int b, pos, seg_begin, seg_end, req_begin, req_end;

    __device__ int tile_len() const { return min(kTile, seg_end - pos); }
    __device__ void start(const int32_t* __restrict__ indptr, int b0, int begin, int end)
    {
        b = b0;
        pos = seg_begin = begin;
        req_begin = __ldg(indptr + b);
        req_end = __ldg(indptr + b + 1);
        seg_end = min(req_end, end);
    }
    __device__ void advance(const int32_t* __restrict__ indptr, int end)
    {
        pos += tile_len();
        if (pos == seg_end && pos < end) {
            do {
                ++b;
                req_begin = req_end;
                req_end = __ldg(indptr + b + 1);
            } while (req_end <= pos);
            seg_begin = pos;
            seg_end = min(req_end, end);
        }
    }
};

// With `neighbour`, flags[(slot) * kKvHeads + kvh] (slot = request + run, as the partials) holds
// `epoch` once that run's state of the request, merged with every later run's, is in its slot.
__global__ void __launch_bounds__(kThreads) gqa_decode_kernel(KsArgs a, float* __restrict__ partials, int chunk,
    unsigned long long* flags, unsigned long long epoch, bool neighbour)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int batch = (int)a.batch_size, tokens = (int)a.num_kv_indices;
    const int run = blockIdx.x / kKvHeads, kvh = blockIdx.x % kKvHeads, runs = gridDim.x / kKvHeads;
    const int begin = min(run * chunk, tokens), end = min(begin + chunk, tokens);
    const int head_base = kvh * kGroup;

    // Empty requests whose position falls in this run: this KV head's 8 query heads.
    auto write_empty_requests = [&] {
        int b = warp_count_le(a.kv_indptr, batch, begin, true) + warp;
        for (; b < batch; b += kWarps) {
            const int lo = __ldg(a.kv_indptr + b);
            if (lo >= end && !(run == runs - 1 && lo == end))
                break;
            if (__ldg(a.kv_indptr + b + 1) != lo)
                continue;
            uint4* out = reinterpret_cast<uint4*>(a.output + ((int64_t)b * kQoHeads + head_base) * kDim);
            for (int i = lane; i < kGroup * kDim / 8; i += 32)
                out[i] = make_uint4(0, 0, 0, 0);
            if (lane < kGroup)
                a.lse[(int64_t)b * kQoHeads + head_base + lane] = -CUDART_INF_F;
        }
    };
    if (!kEarlySetup || begin >= end)
        write_empty_requests();
    if (begin >= end)
        return;

    const uint32_t stage_smem = smem_u32(smem);

    // Copies: thread tid moves chunks (tid & 7) and (tid & 7) + 8 of the K and V rows of tokens
    // (tid >> 3) + 16 p, p = 0..3.  Rows past the segment hold finite values whose logits are
    // masked (P = 0): the segment's last token repeated (one row read, not up to 63 more), except
    // in a tile 0 copied before its request is known, which reads the run's next tokens.
    const int csub = tid & 7, crow = tid >> 3;
    constexpr int kRows = kTile / (kThreads / 8); // rows per thread (4)
    int next_page[kRows];
    auto load_pages_at = [&](int pos, int last) {
#pragma unroll
        for (int p = 0; p < kRows; ++p)
            next_page[p] = __ldg(a.kv_indices + min(pos + crow + 16 * p, last));
    };
    auto load_pages_in_memory = [&](const Cursor& c) { load_pages_at(c.pos, c.pos + c.tile_len() - 1); };
    auto issue_tile = [&](int stage) {
        const uint32_t k_dst = stage_smem + stage * kStageBytes, v_dst = k_dst + kTileBytes;
#pragma unroll
        for (int p = 0; p < kRows; ++p) {
            const int row = crow + 16 * p;
            const int64_t src = ((int64_t)next_page[p] * kKvHeads + kvh) * kDim;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int c = csub + 8 * h;
                cp_async_16(k_dst + swz(row, c), a.k_cache + src + 8 * c);
                cp_async_16(v_dst + swz(row, c), a.v_cache + src + 8 * c);
            }
        }
    };

    // Tile 0 starts at `begin` whichever request that is in: at kEarlySetup 2 its copies leave
    // before the search for that request, a chain of round trips to kv_indptr.
    constexpr int kFirst = kEarlySetup >= 2 ? 1 : 0;
    if constexpr (kFirst == 1) {
        load_pages_at(begin, end - 1);
        issue_tile(0);
        cp_async_commit();
    }
    const int b0 = warp_count_le(a.kv_indptr, batch + 1, begin, false) - 1;
    Cursor issue, comp;
    issue.start(a.kv_indptr, b0, begin, end);
    comp = issue;
    if constexpr (kFirst == 1)
        issue.advance(a.kv_indptr, end);
#pragma unroll
    for (int s = kFirst; s < kStages - 1; ++s) {
        if (issue.pos < end) {
            load_pages_in_memory(issue);
            issue_tile(s);
            issue.advance(a.kv_indptr, end);
        }
        cp_async_commit();
    }
    if (issue.pos < end)
        load_pages_in_memory(issue);

    const float scale_log2 = a.sm_scale * kLog2e;
    const int mrow = lane & 7, mat = lane >> 3;
    uint32_t qa[kDim / 16][2]; // A fragments (rows 0..7) of the 8 query heads
    uint32_t qn[kDim / 16][2]; // with kQAheadAll: the next segment's, loaded a tile early
    float o[kDim / 8][4];
    float m = -CUDART_INF_F, l = 0.0f; // row g's running max and this thread's share of the sum
    float* merge = reinterpret_cast<float*>(smem + kOffMerge);
    float2* merge_ml = reinterpret_cast<float2*>(smem + kOffMl);
    auto load_q = [&](uint32_t(&dst)[kDim / 16][2], int b) {
        const ks_bf16_t* q = a.q + ((int64_t)b * kQoHeads + head_base + g) * kDim + 2 * t;
#pragma unroll
        for (int ks = 0; ks < kDim / 16; ++ks) {
            dst[ks][0] = __ldg(reinterpret_cast<const unsigned int*>(q + 16 * ks));
            dst[ks][1] = __ldg(reinterpret_cast<const unsigned int*>(q + 16 * ks + 8));
        }
    };
    // The first segment's queries travel with the first tiles instead of after them: a run of one
    // or two tiles would otherwise wait for a second round trip to DRAM.  With kQAheadAll,
    // `ahead` is the cursor of the tile after comp's, and each later segment's queries are asked
    // for while the tile before it is computed.
    Cursor ahead = comp;
    if constexpr (kQAheadAll) {
        load_q(qn, comp.b);
        ahead.advance(a.kv_indptr, end);
    } else if constexpr (kQAhead) {
        load_q(qa, comp.b);
    }
    if constexpr (kEarlySetup)
        write_empty_requests(); // under the first copies

    for (int j = 0; comp.pos < end; ++j) {
        cp_async_wait<kStages - 2>();
        __syncthreads(); // tile j is visible; every warp is done with tile j - 1 and the merge
        if (issue.pos < end) {
            issue_tile((j + kStages - 1) % kStages);
            issue.advance(a.kv_indptr, end);
            if (issue.pos < end)
                load_pages_in_memory(issue);
        }
        cp_async_commit();

        const int n = comp.tile_len();
        const bool first = comp.pos == comp.seg_begin, last = comp.pos + n == comp.seg_end;
        // A segment that runs on into run + 1 merges that run's state when it ends: its flag is read
        // now, under this tile's products, and made an acquire by a fence at the end.  (The last
        // run has no successor: an indptr past num_kv_indices, which the task forbids, must not
        // leave it waiting.)
        const bool takes_next = kNeighbour && neighbour && last && comp.req_end > end && end < tokens;
        unsigned long long peek = 0;
        if (takes_next)
            peek = ld_relaxed_u64(flags + ((int64_t)comp.b + run + 1) * kKvHeads + kvh);
        if (first) {
            // With kBranchFirst a real branch: if-converted into selects, the Q copy below runs every
            // tile and may wait on whatever global load shares its scoreboard (MLA's ncu, session 28).
            if constexpr (kBranchFirst)
                asm volatile("");
            if constexpr (kQAheadAll) {
#pragma unroll
                for (int ks = 0; ks < kDim / 16; ++ks) {
                    qa[ks][0] = qn[ks][0];
                    qa[ks][1] = qn[ks][1];
                }
            } else if (!kQAhead || j > 0) {
                load_q(qa, comp.b);
            }
#pragma unroll
            for (int i = 0; i < kDim / 8; ++i)
                o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
            m = -CUDART_INF_F;
            l = 0.0f;
        }
        if constexpr (kQAheadAll) {
            if (ahead.pos < end && ahead.pos == ahead.seg_begin)
                load_q(qn, ahead.b);
        }
        const uint32_t k_tile = stage_smem + (j % kStages) * kStageBytes, v_tile = k_tile + kTileBytes;
        const int tok0 = 16 * warp;
        if (tok0 < n) {
            float s[2][4] = {};
            const int krow = tok0 + (mat >> 1) * 8 + mrow;
#pragma unroll
            for (int ks = 0; ks < kDim / 16; ++ks) {
                uint32_t b[4];
                ldmatrix_x4(k_tile + swz(krow, 2 * ks + (mat & 1)), b);
                mma_16816(s[0], qa[ks][0], qa[ks][1], b[0], b[1]);
                mma_16816(s[1], qa[ks][0], qa[ks][1], b[2], b[3]);
            }
            float x[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int tok = tok0 + 8 * (i >> 1) + 2 * t + (i & 1);
                x[i] = tok < n ? s[i >> 1][i & 1] * scale_log2 : -CUDART_INF_F;
            }
            float mx = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m, mx); // finite: token tok0 < n is in the tile
            const float corr = exp2f(m - m_new);
            m = m_new;
            float p[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                p[i] = exp2f(x[i] - m);
            l = l * corr + (p[0] + p[1]) + (p[2] + p[3]);
            const uint32_t pa0 = pack_bf16x2(p[0], p[1]), pa2 = pack_bf16x2(p[2], p[3]);
            const int vrow = tok0 + (mat & 1) * 8 + mrow;
#pragma unroll
            for (int i = 0; i < kDim / 8; i += 2) {
                o[i][0] *= corr;
                o[i][1] *= corr;
                o[i + 1][0] *= corr;
                o[i + 1][1] *= corr;
                uint32_t b[4];
                ldmatrix_x4_trans(v_tile + swz(vrow, i + (mat >> 1)), b);
                mma_16816(o[i], pa0, pa2, b[0], b[1]);
                mma_16816(o[i + 1], pa0, pa2, b[2], b[3]);
            }
        }

        if (last) {
            // Merge the four warps' states of the 8 heads; a warp that saw no token is (-inf, 0).
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            float* mine = merge + (warp * kGroup + g) * kMergeStride + 2 * t;
#pragma unroll
            for (int i = 0; i < kDim / 8; ++i)
                *reinterpret_cast<float2*>(mine + 8 * i) = make_float2(o[i][0], o[i][1]);
            if (t == 0)
                merge_ml[warp * kGroup + g] = make_float2(m, l);
            __syncthreads();
            // Thread tid: head tid >> 4, dims 8 (tid & 15) .. + 7.
            const int h = tid >> 4, d0 = 8 * (tid & 15);
            float mm = -CUDART_INF_F, ll = 0.0f;
#pragma unroll
            for (int w = 0; w < kWarps; ++w)
                merge_state(mm, ll, merge_ml[w * kGroup + h].x, merge_ml[w * kGroup + h].y);
            float acc[8] = {};
#pragma unroll
            for (int w = 0; w < kWarps; ++w) {
                const float2 st = merge_ml[w * kGroup + h];
                const float wt = st.y > 0.0f ? exp2f(st.x - mm) : 0.0f;
                const float* src = merge + (w * kGroup + h) * kMergeStride + d0;
#pragma unroll
                for (int d = 0; d < 8; ++d)
                    acc[d] += wt * src[d];
            }
            const int64_t head = (int64_t)comp.b * kQoHeads + head_base + h;
            const float inv = 1.0f / ll; // ll >= 1
            const bool whole = comp.req_begin / chunk == (comp.req_end - 1) / chunk;
            if (whole) {
                uint4 packed;
                packed.x = pack_bf16x2(acc[0] * inv, acc[1] * inv);
                packed.y = pack_bf16x2(acc[2] * inv, acc[3] * inv);
                packed.z = pack_bf16x2(acc[4] * inv, acc[5] * inv);
                packed.w = pack_bf16x2(acc[6] * inv, acc[7] * inv);
                *reinterpret_cast<uint4*>(a.output + head * kDim + d0) = packed;
                if ((tid & 15) == 0)
                    a.lse[head] = mm + log2f(ll);
            } else if (!(kNeighbour && neighbour)) {
                float* part = partials + (((int64_t)comp.b + run) * kQoHeads + head_base + h) * kPartialStride;
#pragma unroll
                for (int d = 0; d < 8; d += 2)
                    *reinterpret_cast<float2*>(part + d0 + d) = make_float2(acc[d] * inv, acc[d + 1] * inv);
                if ((tid & 15) == 0)
                    *reinterpret_cast<float2*>(part + kDim) = make_float2(mm, ll);
            } else {
                // Neighbour merge: this run's state, then (if the request runs on) run + 1's, which
                // already holds every later run's; the run the request starts in writes the output,
                // any other publishes for run - 1.
#pragma unroll
                for (int d = 0; d < 8; ++d)
                    acc[d] *= inv;
                if (takes_next) {
                    unsigned long long* flag = flags + ((int64_t)comp.b + run + 1) * kKvHeads + kvh;
                    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
                    if (peek != epoch)
                        while (ld_acquire_u64(flag) != epoch) { }
                    const float* next =
                        partials + (((int64_t)comp.b + run + 1) * kQoHeads + head_base + h) * kPartialStride;
                    const float2 st = __ldcg(reinterpret_cast<const float2*>(next + kDim));
                    float2 v[4];
#pragma unroll
                    for (int d = 0; d < 4; ++d)
                        v[d] = __ldcg(reinterpret_cast<const float2*>(next + d0 + 2 * d));
                    const float mn = fmaxf(mm, st.x);
                    const float w1 = ll * exp2f(mm - mn), w2 = st.y * exp2f(st.x - mn), total = w1 + w2;
                    const float r1 = w1 / total, r2 = w2 / total;
#pragma unroll
                    for (int d = 0; d < 4; ++d) {
                        acc[2 * d] = acc[2 * d] * r1 + v[d].x * r2;
                        acc[2 * d + 1] = acc[2 * d + 1] * r1 + v[d].y * r2;
                    }
                    mm = mn;
                    ll = total;
                    // This run is the flag's only reader: once every thread has seen it, it is cleared,
                    // so that a call replayed with the same epoch (a captured CUDA graph) cannot take
                    // the state an earlier replay left for the new one.
                    __syncthreads();
                    if (tid == 0)
                        *flag = 0;
                }
                if (comp.req_begin >= begin) {
                    uint4 packed;
                    packed.x = pack_bf16x2(acc[0], acc[1]);
                    packed.y = pack_bf16x2(acc[2], acc[3]);
                    packed.z = pack_bf16x2(acc[4], acc[5]);
                    packed.w = pack_bf16x2(acc[6], acc[7]);
                    *reinterpret_cast<uint4*>(a.output + head * kDim + d0) = packed;
                    if ((tid & 15) == 0)
                        a.lse[head] = mm + log2f(ll);
                } else {
                    float* part = partials + (((int64_t)comp.b + run) * kQoHeads + head_base + h) * kPartialStride;
#pragma unroll
                    for (int d = 0; d < 8; d += 2)
                        *reinterpret_cast<float2*>(part + d0 + d) = make_float2(acc[d], acc[d + 1]);
                    if ((tid & 15) == 0)
                        *reinterpret_cast<float2*>(part + kDim) = make_float2(mm, ll);
                    __syncthreads(); // every thread's state is written before the flag is released
                    if (tid == 0)
                        st_release_u64(flags + ((int64_t)comp.b + run) * kKvHeads + kvh, epoch);
                }
            }
        }
        if constexpr (kQAheadAll) {
            comp = ahead;
            if (ahead.pos < end)
                ahead.advance(a.kv_indptr, end);
        } else {
            comp.advance(a.kv_indptr, end);
        }
    }
    cp_async_wait<0>();
}

// One CTA of kCombineWarps warps per (request, query head): the threads first find the largest
// of the run maxima and the total weight together, then warp w sums runs w, w + kCombineWarps,
// ... with lane i on dims 4i .. 4i+3, and the warps add up through shared memory.  A request of
// batch 1 is split over every run on the GPU (66 on an H200), so one warp walking them all in
// turn was a chain of dependent L2 reads at the end of every short call.
template<int kCombineWarps>
__global__ void __launch_bounds__(32 * kCombineWarps) gqa_decode_combine_kernel(const int32_t* __restrict__ indptr,
    const float* __restrict__ partials, ks_bf16_t* __restrict__ output, float* __restrict__ lse, int chunk)
{
    // Launched as a programmatic dependent of the main kernel: wait for its writes (kv_indptr is
    // an input, so it is read before the wait).
    const int b = blockIdx.x / kQoHeads, h = blockIdx.x % kQoHeads;
    const int lo = __ldg(indptr + b), hi = __ldg(indptr + b + 1);
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    if (hi == lo)
        return;
    const int first = lo / chunk, count = (hi - 1) / chunk - first + 1;
    if (count <= 1)
        return;
    constexpr int64_t kSlotFloats = (int64_t)kQoHeads * kPartialStride;
    const float* part = partials + ((int64_t)(b + first) * kQoHeads + h) * kPartialStride;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float m = -CUDART_INF_F, l = 0.0f;
    for (int i = tid; i < count; i += 32 * kCombineWarps) {
        const float2 st = *reinterpret_cast<const float2*>(part + i * kSlotFloats + kDim);
        merge_state(m, l, st.x, st.y);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, off), l2 = __shfl_xor_sync(0xffffffffu, l, off);
        merge_state(m, l, m2, l2);
    }
    __shared__ float2 warp_ml[kCombineWarps];
    __shared__ float4 warp_acc[kCombineWarps > 1 ? kCombineWarps - 1 : 1][32];
    if (kCombineWarps > 1) {
        if (lane == 0)
            warp_ml[warp] = make_float2(m, l);
        __syncthreads();
        m = -CUDART_INF_F;
        l = 0.0f;
#pragma unroll
        for (int w = 0; w < kCombineWarps; ++w)
            merge_state(m, l, warp_ml[w].x, warp_ml[w].y);
    }
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
    for (int i = warp; i < count; i += kCombineWarps) {
        const float* slot = part + i * kSlotFloats;
        const float2 st = *reinterpret_cast<const float2*>(slot + kDim);
        const float w = st.y * exp2f(st.x - m); // partials are normalised: weight l_i 2^(m_i - m)
        const float2 v0 = *reinterpret_cast<const float2*>(slot + 4 * lane);
        const float2 v1 = *reinterpret_cast<const float2*>(slot + 4 * lane + 2);
        acc.x += w * v0.x;
        acc.y += w * v0.y;
        acc.z += w * v1.x;
        acc.w += w * v1.y;
    }
    if (kCombineWarps > 1) {
        if (warp > 0)
            warp_acc[warp - 1][lane] = acc;
        __syncthreads();
        if (warp > 0)
            return;
#pragma unroll
        for (int w = 0; w < kCombineWarps - 1; ++w) {
            const float4 o = warp_acc[w][lane];
            acc.x += o.x;
            acc.y += o.y;
            acc.z += o.z;
            acc.w += o.w;
        }
    }
    const float inv = 1.0f / l;
    uint2 packed;
    packed.x = pack_bf16x2(acc.x * inv, acc.y * inv);
    packed.y = pack_bf16x2(acc.z * inv, acc.w * inv);
    *reinterpret_cast<uint2*>(output + ((int64_t)b * kQoHeads + h) * kDim + 4 * lane) = packed;
    if (lane == 0)
        lse[(int64_t)b * kQoHeads + h] = m + log2f(l);
}

bool aligned(const void* p, uintptr_t bytes)
{
    return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

} // namespace

extern "C" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->len_indptr != args->batch_size + 1 || args->num_kv_indices < 0
        || args->num_kv_indices > INT_MAX / 2)
        return (int)cudaErrorInvalidValue;
    const int64_t batch = args->batch_size, tokens = args->num_kv_indices;
    if (batch == 0)
        return 0;
    if (!args->q || !args->k_cache || !args->v_cache || !args->kv_indptr || !args->output || !args->lse
        || (tokens > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;
    if (batch > INT_MAX / kQoHeads)
        return (int)cudaErrorInvalidValue;
    if (!aligned(args->k_cache, 16) || !aligned(args->v_cache, 16) || !aligned(args->q, 4)
        || !aligned(args->output, 16))
        return (int)cudaErrorMisalignedAddress;

    static int resident = 0;
    if (resident == 0) {
        int device = 0, sms = 0, per_sm = 0;
        cudaError_t err = cudaGetDevice(&device);
        if (err == cudaSuccess)
            err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err == cudaSuccess)
            err = cudaFuncSetAttribute(gqa_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
        if (err == cudaSuccess)
            err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gqa_decode_kernel, kThreads, kSmemBytes);
        if (err != cudaSuccess)
            return (int)err;
        resident = sms * (per_sm > 0 ? per_sm : 1);
    }

    const int64_t capacity =
        workspace ? (int64_t)(workspace_bytes / ((size_t)kQoHeads * kPartialStride * sizeof(float))) : 0;
    int64_t max_runs = capacity - batch + 1;
    if (max_runs > resident / kKvHeads)
        max_runs = resident / kKvHeads;
    if (max_runs < 1)
        max_runs = 1;
    int64_t chunk = (tokens + max_runs - 1) / max_runs;
    if (chunk < kMinChunk)
        chunk = kMinChunk;
    if (max_runs == 1 || chunk >= tokens)
        chunk = tokens > 0 ? tokens : 1;
    const int64_t runs = tokens > 0 ? (tokens + chunk - 1) / chunk : 1;

    float* partials = static_cast<float*>(workspace);
    // The neighbour merge: where requests span about one run each, so that a split request's
    // later pieces are mostly done long before the run it starts in ends.  Its flags follow the
    // partials' slots in the workspace.  Its runs wait on each other, so the launch is cooperative:
    // every CTA resident at once, or an error and the second kernel instead.
    const size_t slot_bytes = (size_t)kQoHeads * kPartialStride * sizeof(float);
    const size_t flags_at = (size_t)(batch + runs) * slot_bytes;
    const size_t flags_bytes = (size_t)(batch + runs) * kKvHeads * sizeof(unsigned long long);
    const bool neighbour = kNeighbour && runs > 1 && workspace && flags_at + flags_bytes <= workspace_bytes
        && tokens * 100 <= batch * chunk * (int64_t)GQA_DECODE_NEIGHBOUR_PCT;
    cudaError_t err = cudaSuccess;
    if (neighbour) {
        // Calls on one workspace run in stream order; each consumer clears the flag it read, and the
        // epoch keeps flags of earlier calls (or whatever the workspace held) from reading as set.
        static std::atomic<unsigned long long> next_epoch {0x9e3779b97f4a7c15ull};
        unsigned long long* flags =
            reinterpret_cast<unsigned long long*>(static_cast<unsigned char*>(workspace) + flags_at);
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3((unsigned)(runs * kKvHeads));
        config.blockDim = dim3(kThreads);
        config.dynamicSmemBytes = kSmemBytes;
        config.stream = stream;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeCooperative;
        attr[0].val.cooperative = 1;
        config.attrs = attr;
        config.numAttrs = GQA_DECODE_NEIGHBOUR_COOP ? 1 : 0; // 0: a lab measure of what the guarantee costs
        err = cudaLaunchKernelEx(&config, gqa_decode_kernel, *args, partials, (int)chunk, flags,
            next_epoch.fetch_add(1, std::memory_order_relaxed), true);
        if (err == cudaSuccess)
            return 0;
        (void)cudaGetLastError();
    }
    gqa_decode_kernel<<<(unsigned)(runs * kKvHeads), kThreads, kSmemBytes, stream>>>(
        *args, partials, (int)chunk, nullptr, 0ull, false);
    err = cudaGetLastError();
    if (err == cudaSuccess && runs > 1) {
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3((unsigned)(batch * kQoHeads));
        const bool wide = runs >= kWideMergeRuns * batch;
        config.blockDim = dim3(wide ? 256 : 32);
        config.stream = stream;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        config.attrs = attr;
        config.numAttrs = 1;
        err = cudaLaunchKernelEx(&config, wide ? gqa_decode_combine_kernel<8> : gqa_decode_combine_kernel<1>,
            (const int32_t*)args->kv_indptr, (const float*)partials, args->output, args->lse, (int)chunk);
    }
    return (int)err;
}
