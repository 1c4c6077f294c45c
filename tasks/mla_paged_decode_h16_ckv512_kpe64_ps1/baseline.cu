// Hand-written MLA paged decode for H200 (sm_90a), absorbed layout: one wave of CTAs over the
// flattened token list, a deep cp.async pipeline, Q held in registers.  Knobs (-D):
// MLA_DECODE_STAGES (ring depth, 2..5, default 3), MLA_DECODE_MIN_CHUNK (shortest run, 64),
// MLA_DECODE_EVICT_FIRST (1: the latent and RoPE copies carry an L2 evict-first policy, so that
// rows read once make room for each other instead of forcing out lines earlier kernels wrote,
// whose write-back would share DRAM with the reads: 1.04x on an H100 in the kernel lab, session 27),
// MLA_DECODE_EARLY_SETUP (1: a run finds its first request, loads its first pages together and
// starts its first copies before it writes the empty requests it holds; 2: and its first tile's
// copies leave before that search; 0: one search and page load after another, each a round trip
// to memory ahead of the first byte), MLA_DECODE_Q_AHEAD (1: the next segment's Q is loaded
// during the tile before it; 0: at its first tile, a stall of every warp), MLA_DECODE_LATE_PAGE
// (1: the next tile's page numbers are loaded after the Q.K barrier instead of beside the copies,
// where the Q.K products waited on them), MLA_DECODE_MERGE_WARPS (warps that share a request's
// runs in the merge when requests span 16 runs or more on average, e.g. 132 at batch 1; 1: one
// walks them all; MLA_DECODE_NARROW_SLICE: the output dims of each CTA of the one-warp merge used
// otherwise, 128, 256 or 512),
// MLA_DECODE_BRANCH_FIRST (1: a segment's first-tile set-up is a real branch, not selects run
// every tile), MLA_DECODE_PROBE (0; lab probes, wrong answers by design: 1 streams the copies
// with the barriers and the softmax but without the Q.K and P.V products, 2 runs everything but
// the K/V copies (and the page-number loads that only feed them), on whatever shared memory
// holds).
// Measured on an H100 in session 29 and removed (the code is in 50ce187): a run's page numbers
// in shared memory (0.992x), the merge kernel released at the main kernel's start (0.993x), rows
// by bulk copies on per-stage mbarriers (0.93-0.95x), the next page numbers loaded
// unconditionally (0.994x).  In session 30: the next tile loaded into registers and stored to
// shared memory at the iteration's end instead of cp.async (0.985x with 2 stages; the code is in
// 8b0818a), though bench/gather_probe.cu, without the stores and barriers, had gathered these rows
// 12 % faster that way; and the merge done by each split request's last run to finish, counted on
// per-request device counters, instead of the second kernel (0.893x: a request over nine runs is
// then merged by one SM; the code is in f7cdc08).  In session 32: 64-token tiles with 2 stages,
// half the barriers and shared-memory passes a token (0.945x; 2 stages of 32-token tiles alone
// 1.003x; the code is in 7126b30).  In session 35: two CTAs an SM (launch bounds of 2 blocks,
// so 128 registers, and 2 stages to fit both rings): 0.856x, the largest row's main kernel 41.1
// -> 48.6 us (never committed: one line of launch bounds).
//
// Per KV token the op reads 1,152 bytes (512 latent + 64 RoPE dims, bf16) and the 16 heads use
// them twice (Q.K over 576 dims, P.V over 512), so the kernel is built to keep DRAM busy:
//
//  * Balance: the kv_indices positions are cut into equal runs of `chunk` tokens, one per CTA,
//    and there are at most as many CTAs as fit on the GPU at once, so every SM streams the same
//    number of rows in a single wave however uneven the requests are.  A run may cross request
//    boundaries; each request it touches is a segment with its own softmax state.
//  * Depth: 32-token tiles in a ring of kStages shared-memory stages, kStages - 1 of them in
//    flight while one is computed (3, 4 and 5 stages measured alike on an H200 in session 6;
//    with the session-28 kernel 3 stages are 1.8-1.9 % faster than 4 on an H100, three labs;
//    bulk-copy (TMA) rows were slower, sessions 6 and 29).  The tile sequence runs across segments, so a new request
//    never drains the pipeline.  Each thread copies one row's eighth and prefetches that row's
//    page number one tile ahead, so no copy waits on a dependent load.
//  * Shared-memory traffic: warp (dg, th) computes the logits of 16 tokens over one quarter of
//    the 576 dims, with that quarter of Q held in registers (36 per thread, loaded once per
//    segment), so every K element is read from shared memory once and Q never is.  The four
//    quarters are summed through shared memory by the softmax step, in which a half-warp owns a
//    head: the tile's maximum is a shuffle reduction, and the running max and sum live in the
//    owner's registers.  P.V gives warp w output dims [64 w, 64 w + 64) for all 16 heads (the M
//    rows of mma.m16n8k16), V^T through ldmatrix.trans.  Three barriers a tile.
//  * Rows are stored with their 16-byte chunks XOR-swizzled by (row & 7): the eight rows an
//    ldmatrix phase reads fall in eight bank groups.
//  * A request inside one run writes its output directly; a request split over runs writes
//    (unnormalised o, m, l) per head to workspace slot request + run, and a second kernel,
//    launched as a programmatic dependent so that its launch hides behind the first's tail,
//    merges them.
//    Empty requests are written (zeros, lse -inf) by the run their position falls in.
#include "ks_task.h"

#include <climits>
#include <cstdint>
#include <math_constants.h>

#ifndef MLA_DECODE_STAGES
#define MLA_DECODE_STAGES 3
#endif
#ifndef MLA_DECODE_EVICT_FIRST
#define MLA_DECODE_EVICT_FIRST 1
#endif
#ifndef MLA_DECODE_MIN_CHUNK
#define MLA_DECODE_MIN_CHUNK 64
#endif
#ifndef MLA_DECODE_BRANCH_FIRST
#define MLA_DECODE_BRANCH_FIRST 1
#endif
#ifndef MLA_DECODE_EARLY_SETUP
#define MLA_DECODE_EARLY_SETUP 2
#endif
#ifndef MLA_DECODE_Q_AHEAD
#define MLA_DECODE_Q_AHEAD 1
#endif
#ifndef MLA_DECODE_LATE_PAGE
#define MLA_DECODE_LATE_PAGE 1
#endif
#ifndef MLA_DECODE_NARROW_SLICE
#define MLA_DECODE_NARROW_SLICE 128
#endif
#ifndef MLA_DECODE_PROBE
#define MLA_DECODE_PROBE 0
#endif
#ifndef MLA_DECODE_MERGE_WARPS
#define MLA_DECODE_MERGE_WARPS 8
#endif

namespace {

constexpr int kHeads = (int)KS_NUM_QO_HEADS;
constexpr int kCkv = (int)KS_HEAD_DIM_CKV;
constexpr int kKpe = (int)KS_HEAD_DIM_KPE;
static_assert(kHeads == 16 && kCkv == 512 && kKpe == 64, "the mma tiling assumes 16 heads, 512 + 64 dims");
static_assert(KS_PAGE_SIZE == 1, "one token per page");

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 32; // tokens per tile: 8 threads copy each row
constexpr int kStages = MLA_DECODE_STAGES;
static_assert(kStages >= 2 && kStages <= 5, "ring of 2 to 5 stages (shared memory)");
constexpr int kCkvChunks = kCkv / 8; // 16-byte chunks per latent row (64)
constexpr int kKpeChunks = kKpe / 8; // 8
constexpr int kQuarterSteps = (kCkv + kKpe) / 16 / 4; // k-steps of 16 dims per dim quarter (9)
constexpr int kDimsPerWarp = kCkv / kWarps; // P.V output dims per warp (64)
constexpr int kMinChunk = MLA_DECODE_MIN_CHUNK; // shorter runs cost more than they spread
constexpr bool kBranchFirst = MLA_DECODE_BRANCH_FIRST != 0;
constexpr int kEarlySetup = MLA_DECODE_EARLY_SETUP;
static_assert(kEarlySetup >= 0 && kEarlySetup <= 2, "MLA_DECODE_EARLY_SETUP: 0, 1 or 2");
constexpr bool kQAhead = MLA_DECODE_Q_AHEAD != 0;
constexpr int kMergeWarps = MLA_DECODE_MERGE_WARPS;
constexpr bool kLatePage = MLA_DECODE_LATE_PAGE != 0;
constexpr int kNarrowSlice = MLA_DECODE_NARROW_SLICE; // output dims a one-warp merge CTA takes
static_assert(kMergeWarps >= 1 && kMergeWarps <= 32, "1 to 32 merge warps");
constexpr int kProbe = MLA_DECODE_PROBE;
static_assert(kProbe >= 0 && kProbe <= 2, "MLA_DECODE_PROBE: 0, 1 or 2");
constexpr int kWideMergeRuns = 16; // runs a request, on average, from which the merge is shared
constexpr int kPartialStride = kCkv + 4; // floats per (slot, head): o[512], m, l, pad
constexpr float kLog2e = 1.4426950408889634f;

// Shared memory, bytes from the start of the dynamic buffer.
constexpr int kCkvTileBytes = kTile * kCkv * 2;
constexpr int kStageBytes = kTile * (kCkv + kKpe) * 2;
constexpr int kSStride = kTile + 8; // floats per row of a logit quarter (padded)
constexpr int kPStride = 5; // 16-byte chunks per P row: 4 used, 1 pad
constexpr int kOffS = kStages * kStageBytes; // float [4][kHeads][kSStride]
constexpr int kOffP = kOffS + 4 * kHeads * kSStride * 4; // bf16 [kHeads][kPStride * 8]
constexpr int kOffCorr = kOffP + kHeads * kPStride * 16; // float [kHeads]
constexpr int kOffM = kOffCorr + kHeads * 4; // float [kHeads]
constexpr int kOffL = kOffM + kHeads * 4; // float [kHeads]
constexpr int kSmemBytes = kOffL + kHeads * 4;
static_assert(kSmemBytes <= 227 * 1024, "over the sm_90 shared memory per block");

// ------------------------------------------------------------------ PTX wrappers

__device__ __forceinline__ uint32_t smem_u32(const void* p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src)
{
#if MLA_DECODE_EVICT_FIRST
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

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled array of rows of `row_chunks`
// chunks (a multiple of 8).
__device__ __forceinline__ uint32_t swz(int row, int chunk, int row_chunks)
{
    return (uint32_t)((row * row_chunks + (chunk ^ (row & 7))) << 4);
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
        const int k = __popc(__ballot_sync(0xffffffffu, below)); // probes below x: a prefix
        if (k == 0)
            return lo;
        const int hi = min(lo + k * step, lo + len);
        lo += (k - 1) * step + 1;
        len = hi - lo;
    }
    return lo;
}

// The run's walk over its tokens: the request b it is in, the position, and the segment (the
// run's part of request b).  Every thread keeps its own copy; all copies move in step.
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
            } while (req_end <= pos); // empty requests
            seg_begin = pos;
            seg_end = min(req_end, end);
        }
    }
};

// ------------------------------------------------------------------ main kernel

__global__ void __launch_bounds__(kThreads, 1) mla_decode_kernel(KsArgs a, float* __restrict__ partials, int chunk)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3; // mma groupID / threadID_in_group
    const int batch = (int)a.batch_size, tokens = (int)a.num_kv_indices;
    const int run = blockIdx.x, runs = gridDim.x;
    const int begin = min(run * chunk, tokens), end = min(begin + chunk, tokens);
    const bool last_run = run == runs - 1;

    // Empty requests whose position falls in this run (the last run also takes those at the end).
    auto write_empty_requests = [&] {
        int b = warp_count_le(a.kv_indptr, batch, begin, true) + warp;
        for (; b < batch; b += kWarps) {
            const int lo = __ldg(a.kv_indptr + b);
            if (lo >= end && !(last_run && lo == end))
                break;
            if (__ldg(a.kv_indptr + b + 1) != lo)
                continue;
            uint4* out = reinterpret_cast<uint4*>(a.output + (int64_t)b * kHeads * kCkv);
            for (int i = lane; i < kHeads * kCkv / 8; i += 32)
                out[i] = make_uint4(0, 0, 0, 0);
            if (lane < kHeads)
                a.lse[(int64_t)b * kHeads + lane] = -CUDART_INF_F;
        }
    };
    if (!kEarlySetup || begin >= end)
        write_empty_requests();
    if (begin >= end)
        return;

    const uint32_t stage_smem = smem_u32(smem);
    float* s_part = reinterpret_cast<float*>(smem + kOffS);
    float* s_corr = reinterpret_cast<float*>(smem + kOffCorr);
    float* s_m = reinterpret_cast<float*>(smem + kOffM);
    float* s_l = reinterpret_cast<float*>(smem + kOffL);
    const uint32_t p_smem = stage_smem + kOffP;

    // Copies: thread tid moves chunks (tid & 7) + 8 k of latent row tid >> 3, and RoPE chunk
    // tid & 7 of that row.  Rows past the segment's end hold finite values whose logits are masked
    // (P = 0): the segment's last token repeated (one row read, not up to 31 more), except in a
    // tile 0 copied before its request is known, which reads the run's next tokens.
    const int crow = tid >> 3, csub = tid & 7;
    auto page_in_memory = [&](const Cursor& c) { return __ldg(a.kv_indices + c.pos + min(crow, c.tile_len() - 1)); };
    auto issue_tile = [&](int stage, int page) {
        if constexpr (kProbe == 2)
            return;
        const uint32_t dst = stage_smem + stage * kStageBytes;
        const ks_bf16_t* ckv = a.ckv_cache + (int64_t)page * kCkv;
#pragma unroll
        for (int k = 0; k < kCkvChunks / 8; ++k)
            cp_async_16(dst + swz(crow, csub + 8 * k, kCkvChunks), ckv + (csub + 8 * k) * 8);
        cp_async_16(dst + kCkvTileBytes + swz(crow, csub, kKpeChunks), a.kpe_cache + (int64_t)page * kKpe + csub * 8);
    };

    // Tile 0 starts at `begin` whichever request that is in: at kEarlySetup 2 its copies leave
    // before the search for that request, a chain of round trips to kv_indptr.
    if constexpr (kEarlySetup >= 2) {
        issue_tile(0, __ldg(a.kv_indices + min(begin + crow, end - 1)));
        cp_async_commit();
    }
    const int b0 = warp_count_le(a.kv_indptr, batch + 1, begin, false) - 1; // indptr[b0] <= begin < indptr[b0+1]
    Cursor issue, comp;
    issue.start(a.kv_indptr, b0, begin, end);
    comp = issue;

    // Prologue: tiles 0 .. kStages - 2 in flight, the page of tile kStages - 1 on its way.
    int next_page = 0;
    if constexpr (kEarlySetup) {
        // Every prologue page is asked for before the first is used: one round trip to memory
        // ahead of the first copy instead of one a tile.
        constexpr int kFirst = kEarlySetup >= 2 ? 1 : 0; // tile 0 already on its way
        if constexpr (kFirst == 1)
            issue.advance(a.kv_indptr, end);
        int pages[kStages - 1];
        int tiles = kFirst;
#pragma unroll
        for (int s = kFirst; s < kStages - 1; ++s) {
            if (issue.pos < end) {
                pages[s] = page_in_memory(issue);
                issue.advance(a.kv_indptr, end);
                tiles = s + 1;
            }
        }
        next_page = issue.pos < end ? page_in_memory(issue) : 0;
#pragma unroll
        for (int s = kFirst; s < kStages - 1; ++s) {
            if (s < tiles)
                issue_tile(s, pages[s]);
            cp_async_commit();
        }
    } else {
#pragma unroll
        for (int s = 0; s < kStages - 1; ++s) {
            if (issue.pos < end) {
                issue_tile(s, page_in_memory(issue));
                issue.advance(a.kv_indptr, end);
            }
            cp_async_commit();
        }
        next_page = issue.pos < end ? page_in_memory(issue) : 0;
    }

    const float scale_log2 = a.sm_scale * kLog2e;
    const int dg = warp & 3, th = warp >> 2; // Q.K: dim quarter, token half
    const int sh = tid >> 4, stp = tid & 15; // softmax: head, token pair
    const int mrow = lane & 7, mat = lane >> 3;
    uint32_t qa[kQuarterSteps][4];
    float o[kDimsPerWarp / 8][4];
    float run_m = -CUDART_INF_F, run_l = 0.0f; // softmax owner's state of head sh

    // Request b's quarter dg of Q, as mma A fragments (rows g, g + 8).
    auto load_q = [&](uint32_t(&q)[kQuarterSteps][4], int b) {
        const int64_t row0 = (int64_t)b * kHeads + g;
#pragma unroll
        for (int ks = 0; ks < kQuarterSteps; ++ks) {
            const int d = (dg * kQuarterSteps + ks) * 16 + 2 * t;
            const ks_bf16_t* src = d < kCkv ? a.q_nope + row0 * kCkv + d : a.q_pe + row0 * kKpe + (d - kCkv);
            const int64_t row8 = d < kCkv ? 8 * kCkv : 8 * kKpe;
            q[ks][0] = __ldg(reinterpret_cast<const unsigned int*>(src));
            q[ks][1] = __ldg(reinterpret_cast<const unsigned int*>(src + row8));
            q[ks][2] = __ldg(reinterpret_cast<const unsigned int*>(src + 8));
            q[ks][3] = __ldg(reinterpret_cast<const unsigned int*>(src + row8 + 8));
        }
    };
    // With kQAhead, `ahead` is the cursor of the tile after comp's, and qn holds the Q of the
    // next segment to start, loaded one tile before it is needed.
    uint32_t qn[kQuarterSteps][4];
    Cursor ahead = comp;
    if constexpr (kQAhead) {
        load_q(qn, comp.b);
        ahead.advance(a.kv_indptr, end);
    }
    if constexpr (kEarlySetup)
        write_empty_requests(); // under the first copies

    for (int j = 0; comp.pos < end; ++j) {
        cp_async_wait<kStages - 2>();
        __syncthreads(); // tile j is visible; every warp is done with tile j - 1
        if (issue.pos < end) {
            issue_tile((j + kStages - 1) % kStages, next_page);
            if constexpr (!kLatePage) {
                issue.advance(a.kv_indptr, end);
                if (issue.pos < end)
                    next_page = page_in_memory(issue);
            }
        }
        cp_async_commit();

        const int n = comp.tile_len();
        const bool first = comp.pos == comp.seg_begin, last = comp.pos + n == comp.seg_end;
        if (first) {
            // A real branch: if-converted into selects, the Q copy below ran every tile and waited
            // on whatever global load shared its scoreboard (ncu, session 28).
            if constexpr (kBranchFirst)
                asm volatile("");
            if constexpr (kQAhead) {
#pragma unroll
                for (int ks = 0; ks < kQuarterSteps; ++ks)
#pragma unroll
                    for (int r = 0; r < 4; ++r)
                        qa[ks][r] = qn[ks][r];
            } else {
                load_q(qa, comp.b);
            }
#pragma unroll
            for (int i = 0; i < kDimsPerWarp / 8; ++i)
                o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
            run_m = -CUDART_INF_F;
            run_l = 0.0f;
        }
        if constexpr (kQAhead) {
            if (ahead.pos < end && ahead.pos == ahead.seg_begin)
                load_q(qn, ahead.b);
        }

        const uint32_t tile = stage_smem + (j % kStages) * kStageBytes;
        // Q.K^T over this warp's quarter for tokens 16 th .. 16 th + 15 (two n8 tiles).
        if constexpr (kProbe != 1) {
            float s[2][4] = {};
            const int krow = 16 * th + (mat >> 1) * 8 + mrow;
#pragma unroll
            for (int ks = 0; ks < kQuarterSteps; ++ks) {
                const int c = (dg * kQuarterSteps + ks) * 2 + (mat & 1);
                uint32_t b[4];
                ldmatrix_x4(c < kCkvChunks ? tile + swz(krow, c, kCkvChunks)
                                           : tile + kCkvTileBytes + swz(krow, c - kCkvChunks, kKpeChunks),
                    b);
                mma_16816(s[0], qa[ks], b[0], b[1]);
                mma_16816(s[1], qa[ks], b[2], b[3]);
            }
            float* part = s_part + dg * kHeads * kSStride;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int tok = 16 * th + 8 * h + 2 * t;
                *reinterpret_cast<float2*>(part + g * kSStride + tok) = make_float2(s[h][0], s[h][1]);
                *reinterpret_cast<float2*>(part + (g + 8) * kSStride + tok) = make_float2(s[h][2], s[h][3]);
            }
        }
        __syncthreads();
        if constexpr (kLatePage) {
            // The next tile's page numbers are asked for here, after the barrier, not beside the
            // copies: loads share the warp's few scoreboards, and one issued just before the Q.K
            // products made them wait a round trip to memory every tile (ncu, session 28).
            if (issue.pos < end) {
                issue.advance(a.kv_indptr, end);
                if (issue.pos < end)
                    next_page = page_in_memory(issue);
            }
        }

        // Softmax: half-warp per head, two tokens per thread.
        {
            float2 x = make_float2(0.0f, 0.0f);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const float2 v = *reinterpret_cast<const float2*>(s_part + (q * kHeads + sh) * kSStride + 2 * stp);
                x.x += v.x;
                x.y += v.y;
            }
            x.x = 2 * stp < n ? x.x * scale_log2 : -CUDART_INF_F;
            x.y = 2 * stp + 1 < n ? x.y * scale_log2 : -CUDART_INF_F;
            float mx = fmaxf(x.x, x.y);
#pragma unroll
            for (int off = 8; off > 0; off >>= 1)
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            const float m_new = fmaxf(run_m, mx); // finite: a tile has at least one token
            const float corr = exp2f(run_m - m_new);
            const float p0 = exp2f(x.x - m_new), p1 = exp2f(x.y - m_new);
            run_m = m_new;
            run_l = run_l * corr + p0 + p1;
            *reinterpret_cast<uint32_t*>(smem + kOffP + sh * kPStride * 16 + stp * 4) = pack_bf16x2(p0, p1);
            if (stp == 0)
                s_corr[sh] = corr;
            if (last) {
                float l = run_l;
#pragma unroll
                for (int off = 8; off > 0; off >>= 1)
                    l += __shfl_xor_sync(0xffffffffu, l, off);
                if (stp == 0) {
                    s_m[sh] = run_m;
                    s_l[sh] = l;
                }
            }
        }
        __syncthreads();

        // O[:, this warp's 64 dims] = O * corr + P.V over the tile's 32 tokens.
        if constexpr (kProbe != 1) {
            const float c_lo = s_corr[g], c_hi = s_corr[g + 8];
#pragma unroll
            for (int i = 0; i < kDimsPerWarp / 8; ++i) {
                o[i][0] *= c_lo;
                o[i][1] *= c_lo;
                o[i][2] *= c_hi;
                o[i][3] *= c_hi;
            }
#pragma unroll
            for (int kk = 0; kk < kTile / 16; ++kk) {
                uint32_t pa[4];
                ldmatrix_x4(p_smem + (lane & 15) * kPStride * 16 + (2 * kk + (lane >> 4)) * 16, pa);
                const int vrow = 16 * kk + (mat & 1) * 8 + mrow;
#pragma unroll
                for (int i = 0; i < kDimsPerWarp / 8; i += 2) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(tile + swz(vrow, warp * (kDimsPerWarp / 8) + i + (mat >> 1), kCkvChunks), b);
                    mma_16816(o[i], pa, b[0], b[1]);
                    mma_16816(o[i + 1], pa, b[2], b[3]);
                }
            }
        }

        if (last) {
            const float m_lo = s_m[g], m_hi = s_m[g + 8], l_lo = s_l[g], l_hi = s_l[g + 8];
            const int dim0 = warp * kDimsPerWarp + 2 * t;
            const int64_t head0 = (int64_t)comp.b * kHeads;
            const bool whole = comp.req_begin / chunk == (comp.req_end - 1) / chunk;
            if (whole) {
                const float inv_lo = 1.0f / l_lo, inv_hi = 1.0f / l_hi; // l >= 1: the max term is 2^0
                ks_bf16_t* out_lo = a.output + (head0 + g) * kCkv + dim0;
                ks_bf16_t* out_hi = a.output + (head0 + g + 8) * kCkv + dim0;
#pragma unroll
                for (int i = 0; i < kDimsPerWarp / 8; ++i) {
                    *reinterpret_cast<uint32_t*>(out_lo + 8 * i) = pack_bf16x2(o[i][0] * inv_lo, o[i][1] * inv_lo);
                    *reinterpret_cast<uint32_t*>(out_hi + 8 * i) = pack_bf16x2(o[i][2] * inv_hi, o[i][3] * inv_hi);
                }
                if (warp == 0 && t == 0) {
                    a.lse[head0 + g] = m_lo + log2f(l_lo);
                    a.lse[head0 + g + 8] = m_hi + log2f(l_hi);
                }
            } else {
                const int64_t slot = (int64_t)comp.b + run;
                float* part_lo = partials + (slot * kHeads + g) * kPartialStride;
                float* part_hi = part_lo + 8 * kPartialStride;
#pragma unroll
                for (int i = 0; i < kDimsPerWarp / 8; ++i) {
                    *reinterpret_cast<float2*>(part_lo + dim0 + 8 * i) = make_float2(o[i][0], o[i][1]);
                    *reinterpret_cast<float2*>(part_hi + dim0 + 8 * i) = make_float2(o[i][2], o[i][3]);
                }
                if (warp == 0 && t == 0) {
                    part_lo[kCkv] = m_lo;
                    part_lo[kCkv + 1] = l_lo;
                    part_hi[kCkv] = m_hi;
                    part_hi[kCkv + 1] = l_hi;
                }
            }
        }
        if constexpr (kQAhead) {
            comp = ahead;
            if (ahead.pos < end)
                ahead.advance(a.kv_indptr, end);
        } else {
            comp.advance(a.kv_indptr, end);
        }
    }
    cp_async_wait<0>();
}

// ------------------------------------------------------------------ combine kernel

// One CTA of kWarps warps per (request, head, kSliceDims output dims): warp w merges runs w,
// w + kWarps, ... as an online softmax (each run's state rescaled to the running maximum as it
// comes, so that the maxima need no pass of their own), lane i on dims 4i .. 4i+3 of each 128 of
// the slice, and warp 0 merges the warps' states through shared memory.  At batch 1 a request
// spans every run on the GPU (132 on an H100): one thread walking them all is a chain of L2
// round trips at the end of the call, so there kMergeWarps warps share the runs.  Either way the
// dims are cut into slices (128 wide by default), several CTAs a head.
template<int kWarps, int kSliceDims>
__global__ void __launch_bounds__(32 * kWarps) mla_decode_combine_kernel(const int32_t* __restrict__ indptr,
    const float* __restrict__ partials, ks_bf16_t* __restrict__ output, float* __restrict__ lse, int chunk)
{
    static_assert(kCkv % kSliceDims == 0 && kSliceDims % 128 == 0, "slices of whole 128-dim groups");
    constexpr int kSlices = kCkv / kSliceDims, kVecs = kSliceDims / 128; // float4s a lane, a run
    const int slice = blockIdx.x % kSlices, b = blockIdx.x / kSlices / kHeads, h = blockIdx.x / kSlices % kHeads;
    // kv_indptr is an input, so it is read before the wait: only the partials come from the
    // main kernel, which this one is launched as a programmatic dependent of (its launch overlaps
    // the main kernel's tail).
    const int lo = __ldg(indptr + b), hi = __ldg(indptr + b + 1);
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    if (hi == lo)
        return;
    const int first = lo / chunk, count = (hi - 1) / chunk - first + 1;
    if (count <= 1)
        return; // written by the main kernel
    constexpr int64_t kSlotFloats = (int64_t)kHeads * kPartialStride;
    const float* part = partials + ((int64_t)(b + first) * kHeads + h) * kPartialStride;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int d0 = slice * kSliceDims + 4 * lane;

    float m = -CUDART_INF_F, l = 0.0f;
    float4 acc[kVecs] = {};
#pragma unroll 4
    for (int i = warp; i < count; i += kWarps) {
        const float* slot = part + i * kSlotFloats;
        const float2 st = __ldg(reinterpret_cast<const float2*>(slot + kCkv)); // finite m: a run has tokens
        float4 x[kVecs];
#pragma unroll
        for (int v = 0; v < kVecs; ++v)
            x[v] = __ldg(reinterpret_cast<const float4*>(slot + d0 + 128 * v));
        const float mn = fmaxf(m, st.x), keep = exp2f(m - mn), w = exp2f(st.x - mn);
        l = l * keep + st.y * w;
        m = mn;
#pragma unroll
        for (int v = 0; v < kVecs; ++v) {
            acc[v].x = acc[v].x * keep + w * x[v].x;
            acc[v].y = acc[v].y * keep + w * x[v].y;
            acc[v].z = acc[v].z * keep + w * x[v].z;
            acc[v].w = acc[v].w * keep + w * x[v].w;
        }
    }
    if constexpr (kWarps > 1) {
        __shared__ float2 warp_ml[kWarps];
        __shared__ float4 warp_acc[kWarps][kVecs][32];
        if (lane == 0)
            warp_ml[warp] = make_float2(m, l); // (-inf, 0) for a warp without runs
#pragma unroll
        for (int v = 0; v < kVecs; ++v)
            warp_acc[warp][v][lane] = acc[v];
        __syncthreads();
        if (warp > 0)
            return;
        m = -CUDART_INF_F;
#pragma unroll
        for (int w = 0; w < kWarps; ++w)
            m = fmaxf(m, warp_ml[w].x);
        l = 0.0f;
#pragma unroll
        for (int v = 0; v < kVecs; ++v)
            acc[v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            const float2 st = warp_ml[w];
            const float scale = st.y > 0.0f ? exp2f(st.x - m) : 0.0f;
            l += st.y * scale;
#pragma unroll
            for (int v = 0; v < kVecs; ++v) {
                const float4 x = warp_acc[w][v][lane];
                acc[v].x += scale * x.x;
                acc[v].y += scale * x.y;
                acc[v].z += scale * x.z;
                acc[v].w += scale * x.w;
            }
        }
    }
    const float inv = 1.0f / l;
    ks_bf16_t* out = output + ((int64_t)b * kHeads + h) * kCkv + d0;
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
        uint2 packed;
        packed.x = pack_bf16x2(acc[v].x * inv, acc[v].y * inv);
        packed.y = pack_bf16x2(acc[v].z * inv, acc[v].w * inv);
        *reinterpret_cast<uint2*>(out + 128 * v) = packed;
    }
    if (slice == 0 && threadIdx.x == 0)
        lse[(int64_t)b * kHeads + h] = m + log2f(l);
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
    if (!args->q_nope || !args->q_pe || !args->ckv_cache || !args->kpe_cache || !args->kv_indptr || !args->output
        || !args->lse || (tokens > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;
    if (batch > INT_MAX / kHeads)
        return (int)cudaErrorInvalidValue;
    // 16-byte rows for cp.async; 4-byte Q pairs; 16-byte stores of empty outputs.
    if (!aligned(args->ckv_cache, 16) || !aligned(args->kpe_cache, 16) || !aligned(args->q_nope, 4)
        || !aligned(args->q_pe, 4) || !aligned(args->output, 16))
        return (int)cudaErrorMisalignedAddress;

    static int resident = 0; // CTAs of the main kernel that fit on the GPU at once
    if (resident == 0) {
        int device = 0, sms = 0, per_sm = 0;
        cudaError_t err = cudaGetDevice(&device);
        if (err == cudaSuccess)
            err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err == cudaSuccess)
            err = cudaFuncSetAttribute(mla_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
        if (err == cudaSuccess)
            err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mla_decode_kernel, kThreads, kSmemBytes);
        if (err != cudaSuccess)
            return (int)err;
        resident = sms * (per_sm > 0 ? per_sm : 1);
    }

    // Runs: one wave of equal runs, never shorter than kMinChunk, and never more than the
    // workspace has slots for (a split request's segments use slots request + run, at most
    // batch + runs - 1 of them).  Without room for one extra slot nothing is split.
    const int64_t capacity =
        workspace ? (int64_t)(workspace_bytes / ((size_t)kHeads * kPartialStride * sizeof(float))) : 0;
    int64_t max_runs = capacity - batch + 1;
    if (max_runs > resident)
        max_runs = resident;
    if (max_runs < 1)
        max_runs = 1;
    int64_t chunk = (tokens + max_runs - 1) / max_runs;
    if (chunk < kMinChunk)
        chunk = kMinChunk;
    if (max_runs == 1 || chunk >= tokens)
        chunk = tokens > 0 ? tokens : 1;
    const int64_t runs = tokens > 0 ? (tokens + chunk - 1) / chunk : 1;

    float* partials = static_cast<float*>(workspace);
    mla_decode_kernel<<<(unsigned)runs, kThreads, kSmemBytes, stream>>>(*args, partials, (int)chunk);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && runs > 1) {
        cudaLaunchConfig_t config = {};
        // Many runs a request (batch 1 spans them all): warps share the runs, 128-dim slices.
        const bool wide = kMergeWarps > 1 && runs >= kWideMergeRuns * batch;
        config.gridDim = dim3((unsigned)(batch * kHeads * (kCkv / (wide ? 128 : kNarrowSlice))));
        config.blockDim = dim3(32 * (wide ? kMergeWarps : 1));
        config.stream = stream;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        config.attrs = attr;
        config.numAttrs = 1;
        err = cudaLaunchKernelEx(&config,
            wide ? mla_decode_combine_kernel<kMergeWarps, 128> : mla_decode_combine_kernel<1, kNarrowSlice>,
            (const int32_t*)args->kv_indptr, (const float*)partials, args->output, args->lse, (int)chunk);
    }
    return (int)err;
}
