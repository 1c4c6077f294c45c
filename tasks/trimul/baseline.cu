// TriMul for H200 (sm_90a): the three matrix products on Hopper's warpgroup tensor cores
// (wgmma.m64n128k16, fp16 in, fp32 accumulation), every element-wise step but the input
// LayerNorm fused into a prologue or an epilogue of one of them.
//
//   0. prep       the six weight matrices to fp16 once per call (about a megabyte), the inner
//                 dimension padded to a multiple of 64 with zeros, and the four gated projections
//                 interleaved in groups of 16 rows (16 projection rows, then their 16 gate rows),
//                 so that one thread's accumulators hold a projection and its own gate.
//   1. normalise  LayerNorm in fp32, a warp per row group with many rows' loads in flight, into
//                 an fp16 [rows][cp] plane (cp: dim rounded up to 64, zero padded).
//      project    the five 128-column chunks of [rows x cp] x [cp x 640] (left, right, each with
//                 its gate, and the output gate), a pipelined GEMM with both operands streamed
//                 through a cp.async ring, two CTAs per SM.  Epilogues: mask * proj *
//                 sigmoid(gate) for left and right, sigmoid for the output gate, transposed
//                 through shared memory so that every plane is [b, h, i, k] (k contiguous).
//   2. contract   out[b, h, i, j] = sum_k L[b, h, i, k] R[b, h, j, k]: one TN GEMM per (b, h),
//                 128 x 128 tiles, 64-wide k steps, a three-stage cp.async ring.
//   3. output     128 rows (b, i, j) per CTA, a thread per (row, half of the 128 channels): the
//                 [b, h, i, j] planes read so that neighbouring threads read neighbouring j,
//                 LayerNorm over the channels, the gate, fp16 into shared memory, then
//                 [128 x 128] x [128 x dim] to the fp32 output.
// The planes: L, R and the gate in fp16, out in fp32 (10 bytes per row and channel), and the
// normalised input in fp16 (2 bytes per row and padded channel).
//
// Every GEMM tile is 128 x 128, one wgmma.m64n128k16 chain per warpgroup (64 rows each), read
// straight from shared panels of 128 rows x 64 halves: 128-byte rows whose 16-byte chunks are
// XOR-swizzled by (row & 7), which is the hardware's 128-byte swizzle when a panel starts on a
// 1024-byte boundary.  Staging planes are [channel][row] with 16-byte granules swizzled by
// (channel & 15), so the transposing writes and reads fall in distinct banks.
//
// Precision: fp16, not bf16, for the GEMM operands, and fp32 for the contraction's result.  With
// bf16 operands and a bf16 result the output missed the 2e-2 tolerance by up to 2x on the
// large shapes: LayerNorm over the channels subtracts their mean, which magnifies the result's
// rounding.  The operands stay far inside fp16's range (LayerNorm bounds |x| by sqrt(dim) times
// the norm weight), and the contraction's sums, which could overflow fp16, never leave fp32.
// Limits: dim <= 768 (the LayerNorm keeps a row in registers; GPU MODE's largest is 768) and
// batch * seq_len^2 < 8.4M rows (the projection grid).
#include "ks_task.h"

#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

namespace {

using f16 = __half;

constexpr int kHidden = (int)KS_HIDDEN_DIM;
static_assert(kHidden == 128, "the tiling assumes 128 hidden channels");
constexpr int kThreads = 256;                     // two warpgroups
constexpr int kTile = 128;                        // rows of a CTA, and the GEMM tiles' M and N
constexpr int kPanel = 64;                        // k extent of one shared panel (128 bytes a row)
constexpr int kPanelBytes = kTile * kPanel * 2;   // 16 KB
constexpr int kProjCols = 5 * kHidden;            // left and right (each with its gate), out gate
constexpr int kProjChunks = kProjCols / kTile;    // 5
constexpr int kMaxDim = 768;
constexpr int kContractStages = 3;
constexpr int kAlignSlack = 1024;                 // dynamic shared memory is rounded up to 1024
constexpr float kEps = 1e-5f;

// CTAs per SM that the register budget of the contraction and the output kernel is cut for
// (shared memory allows two of each; the output kernel spills at two, so it keeps one).
#ifndef TRIMUL_CONTRACT_MIN_BLOCKS
#define TRIMUL_CONTRACT_MIN_BLOCKS 2
#endif
#ifndef TRIMUL_OUTPUT_MIN_BLOCKS
#define TRIMUL_OUTPUT_MIN_BLOCKS 1
#endif

// ------------------------------------------------------------------ PTX wrappers

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ unsigned char* align1024(unsigned char* p)
{
    return p + ((kAlignSlack - (smem_u32(p) & (kAlignSlack - 1))) & (kAlignSlack - 1));
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled panel.
__device__ __forceinline__ uint32_t swz(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); }

// Byte offset of rows [8 g, 8 g + 8) of channel h in a [channel][128 rows] staging plane.
__device__ __forceinline__ uint32_t stage_off(int h, int g) { return h * 256 + ((g ^ (h & 15)) << 4); }

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Shared memory written by ordinary stores or cp.async, made visible to wgmma's reads.
__device__ __forceinline__ void fence_to_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ float sigmoidf(float v) { return 1.0f / (1.0f + __expf(-v)); }

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// ------------------------------------------------------------------ the shared warpgroup GEMM

// Thread t of warpgroup g = t / 128 holds acc[4 i + e] of the 128 x 128 tile at row
// 64 g + 16 ((t / 32) % 4) + (t % 32) / 4 + 8 (e / 2) and column 8 i + 2 (t % 4) + e % 2.
using Acc = float[64];

__device__ __forceinline__ int acc_row(int e)
{
    const int t = threadIdx.x;
    return 64 * (t >> 7) + 16 * ((t >> 5) & 3) + ((t & 31) >> 2) + 8 * ((e >> 1) & 1);
}
__device__ __forceinline__ int acc_col(int e) { return 8 * (e >> 2) + 2 * (threadIdx.x & 3) + (e & 1); }

__device__ __forceinline__ void zero(Acc& acc)
{
#pragma unroll
    for (int e = 0; e < 64; ++e) acc[e] = 0.0f;
}

// A K-major operand with the 128-byte swizzle: 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

__device__ __forceinline__ void wgmma_m64n128k16(Acc& d, uint64_t da, uint64_t db)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
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

// acc += A[128 rows, 64 k] * B[128 cols, 64 k]^T for one pair of swizzled, 1024-aligned panels;
// each warpgroup takes its 64 rows of A.  Returns with the products complete.
__device__ __forceinline__ void panel_mma(Acc& acc, uint32_t a_panel, uint32_t b_panel)
{
    const uint32_t a = a_panel + (threadIdx.x >> 7) * 64 * 128;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < kPanel / 16; ++ks) wgmma_m64n128k16(acc, smem_desc(a + ks * 32), smem_desc(b_panel + ks * 32));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

// Loads rows [row0, row0 + 128) x k [k0, k0 + 64) of a row-major fp16 matrix of `rows` x `cols`
// (`cols` elements a row, a multiple of 8) into a swizzled panel, zeros outside the matrix.  The
// caller commits the group.
__device__ __forceinline__ void load_panel(uint32_t dst, const f16* m, int64_t cols, int64_t row0, int64_t rows, int k0)
{
    for (int e = threadIdx.x; e < kTile * 8; e += kThreads) {
        const int r = e >> 3, c = e & 7;
        const bool ok = row0 + r < rows && k0 + c * 8 < cols;
        cp_async16(dst + swz(r, c), ok ? m + (row0 + r) * cols + k0 + c * 8 : m, ok);
    }
}

// Writes `channels` staged channels of 128 rows to planes [b, h, p] (p = row mod nn): 16-byte
// stores where eight rows are contiguous in one plane, single elements elsewhere.
__device__ void store_staged(const unsigned char* stage, int channels, f16* plane, int h0, int64_t row0, int64_t rows, int64_t nn)
{
    for (int e = threadIdx.x; e < channels * 16; e += kThreads) {
        const int h = e >> 4, g = e & 15;
        const uint4 v = *reinterpret_cast<const uint4*>(stage + stage_off(h, g));
        const int64_t row = row0 + g * 8;
        if (row >= rows) continue;
        const int64_t b = row / nn, p = row - b * nn;
        if (nn % 8 == 0 && row + 7 < rows) {
            *reinterpret_cast<uint4*>(plane + (b * kHidden + h0 + h) * nn + p) = v;
        } else {
            const f16* x = reinterpret_cast<const f16*>(&v);
            for (int u = 0; u < 8 && row + u < rows; ++u) {
                const int64_t bu = (row + u) / nn;
                plane[(bu * kHidden + h0 + h) * nn + (row + u - bu * nn)] = x[u];
            }
        }
    }
}

__device__ __forceinline__ void stage_put(unsigned char* stage, int h, int r, float v)
{
    *reinterpret_cast<f16*>(stage + stage_off(h, r >> 3) + (r & 7) * 2) = __float2half_rn(v);
}

// ------------------------------------------------------------------ 0. weights to fp16

// wp: [640][cp]; row n < 512 is projection (n / 256: left, right) group (n % 256) / 32, whose
// first 16 rows are projection channels 16 g .. 16 g + 15 and last 16 their gates; rows 512 ..
// 639 are the output gate.  wo: [c128][128], to_out padded with zero rows.
__global__ void prep_weights(KsArgs a, f16* wp, f16* wo, int cp, int c128)
{
    const int dim = (int)a.dim;
    const int64_t total_p = (int64_t)kProjCols * cp, total = total_p + (int64_t)c128 * kHidden;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        if (e < total_p) {
            const int n = (int)(e / cp), c = (int)(e % cp);
            const float* src = a.out_gate;
            int h = n - 4 * kHidden;
            if (n < 4 * kHidden) {
                const int within = n % (2 * kHidden), w = within % 32;
                const bool gate = w >= 16, right = n >= 2 * kHidden;
                h = within / 32 * 16 + (w & 15);
                src = right ? (gate ? a.right_gate : a.right_proj) : (gate ? a.left_gate : a.left_proj);
            }
            wp[e] = __float2half_rn(c < dim ? src[h * dim + c] : 0.0f);
        } else {
            const int64_t f = e - total_p;
            const int n = (int)(f / kHidden), k = (int)(f % kHidden);
            wo[f] = __float2half_rn(n < dim ? a.to_out[n * kHidden + k] : 0.0f);
        }
    }
}

// ------------------------------------------------------------------ 1. LayerNorm and projections

// LayerNorm as its own pass into an fp16 [rows][cp] plane (zeros from dim up to cp), then the
// five projections as a plain pipelined GEMM, one 128-column chunk per CTA, two CTAs per SM.
// Fusing the LayerNorm into the GEMM's prologue (one CTA normalising its 128 rows into shared
// memory, then streaming the weights) measured 1.2-2.0x slower on every workload: the GEMM
// waited on the normalisation, and the resident tile allowed one CTA per SM.
template <int kMaxDimOf>
__global__ void __launch_bounds__(kThreads) ln_kernel(KsArgs a, f16* xn, int cp)
{
    constexpr int kPer = kMaxDimOf / 32;
    constexpr int kBatch = kPer <= 4 ? 8 : (kPer <= 12 ? 4 : 2);
    const int lane = threadIdx.x & 31, dim = (int)a.dim;
    const int64_t rows = a.batch_size * a.seq_len * a.seq_len;
    const int64_t first = ((int64_t)blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5)) * kBatch;
    float v[kBatch][kPer];
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
        const int64_t row = first + q;
#pragma unroll
        for (int t = 0; t < kPer; ++t) {
            const int c = lane + 32 * t;
            v[q][t] = row < rows && c < dim ? __ldg(a.input + row * dim + c) : 0.0f;
        }
    }
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
        const int64_t row = first + q;
        if (row >= rows) break;
        float s = 0.0f;
#pragma unroll
        for (int t = 0; t < kPer; ++t) s += v[q][t];
        const float mean = warp_sum(s) / (float)dim;
        float d2 = 0.0f;
#pragma unroll
        for (int t = 0; t < kPer; ++t)
            if (lane + 32 * t < dim) d2 += (v[q][t] - mean) * (v[q][t] - mean);
        const float inv = rsqrtf(warp_sum(d2) / (float)dim + kEps);
#pragma unroll
        for (int t = 0; t < kPer; ++t) {
            const int c = lane + 32 * t;
            if (c >= cp) break;
            xn[row * cp + c] = __float2half_rn(c < dim ? (v[q][t] - mean) * inv * a.norm_weight[c] + a.norm_bias[c] : 0.0f);
        }
    }
}

// Grid (5 chunks, row tiles): the chunks of one row tile run side by side, so its A rows are
// read from L2 after the first.
__global__ void __launch_bounds__(kThreads, 2) project_gemm_kernel(KsArgs a, const f16* xn, const f16* wp, int cp,
                                                                   f16* left, f16* right, f16* gate)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ float mask_of[kTile];
    unsigned char* smem = align1024(smem_raw);
    const int chunk = blockIdx.x;
    const int64_t nn = a.seq_len * a.seq_len, rows = a.batch_size * nn, row0 = (int64_t)blockIdx.y * kTile;
    if (threadIdx.x < kTile) mask_of[threadIdx.x] = row0 + threadIdx.x < rows && a.mask[row0 + threadIdx.x] ? 1.0f : 0.0f;
    const int steps = cp / kPanel;
    // The tile's rows and the chunk's weights as their own matrices: fewer 64-bit values stay
    // live through the loop (at two CTAs per SM the kernel has 128 registers).
    const f16* a_src = xn + row0 * cp;
    const int a_rows = (int)(rows - row0 < kTile ? rows - row0 : kTile);
    const f16* b_src = wp + (int64_t)chunk * kTile * cp;
    auto load = [&](int t) {
        if (t < steps) {
            unsigned char* st = smem + (t % kContractStages) * 2 * kPanelBytes;
            load_panel(smem_u32(st), a_src, cp, 0, a_rows, t * kPanel);
            load_panel(smem_u32(st + kPanelBytes), b_src, cp, 0, kTile, t * kPanel);
        }
        cp_async_commit();
    };
    for (int s = 0; s < kContractStages - 1; ++s) load(s);
    Acc acc;
    zero(acc);
    for (int t = 0; t < steps; ++t) {
        cp_async_wait<kContractStages - 2>();
        fence_to_async();
        __syncthreads();
        load(t + kContractStages - 1);
        const unsigned char* st = smem + (t % kContractStages) * 2 * kPanelBytes;
        panel_mma(acc, smem_u32(st), smem_u32(st + kPanelBytes));
    }
    cp_async_wait<0>();
    __syncthreads();  // every warp is past its last panel: the ring becomes the staging plane
    unsigned char* stage = smem;
    if (chunk < 4) {
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            if (i % 4 >= 2) continue;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int idx = 4 * i + e, r = acc_row(idx), c = acc_col(idx);
                stage_put(stage, (c / 32) * 16 + (c % 16), r, acc[idx] * mask_of[r] * sigmoidf(acc[idx + 8]));
            }
        }
        __syncthreads();
        store_staged(stage, kHidden / 2, chunk < 2 ? left : right, (chunk & 1) * (kHidden / 2), row0, rows, nn);
    } else {
#pragma unroll
        for (int idx = 0; idx < 64; ++idx) stage_put(stage, acc_col(idx), acc_row(idx), sigmoidf(acc[idx]));
        __syncthreads();
        store_staged(stage, kHidden, gate, 0, row0, rows, nn);
    }
}

// ------------------------------------------------------------------ 2. the contraction

// Grid (j tiles, i tiles, batch * 128).  kAligned: rows are 16-byte aligned (n % 8 == 0), so
// tiles arrive by cp.async; otherwise element by element.
template <bool kAligned>
__global__ void __launch_bounds__(kThreads, TRIMUL_CONTRACT_MIN_BLOCKS) contract_kernel(const f16* left, const f16* right, float* out, int n)
{
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = align1024(smem_raw);  // stages x (L panel, R panel)
    const int64_t nn = (int64_t)n * n;
    const f16* L = left + blockIdx.z * nn;
    const f16* R = right + blockIdx.z * nn;
    const int64_t i0 = (int64_t)blockIdx.y * kTile, j0 = (int64_t)blockIdx.x * kTile;
    const int steps = (n + kPanel - 1) / kPanel;

    auto load = [&](int t) {
        if (t < steps) {
            unsigned char* st = smem + (t % kContractStages) * 2 * kPanelBytes;
            if constexpr (kAligned) {
                load_panel(smem_u32(st), L, n, i0, n, t * kPanel);
                load_panel(smem_u32(st + kPanelBytes), R, n, j0, n, t * kPanel);
            } else {
                for (int e = threadIdx.x; e < 2 * kTile * kPanel; e += kThreads) {
                    const int which = e / (kTile * kPanel), r = (e / kPanel) % kTile, k = e % kPanel;
                    const int64_t gr = (which ? j0 : i0) + r, gk = (int64_t)t * kPanel + k;
                    const f16 v = gr < n && gk < n ? (which ? R : L)[gr * n + gk] : __float2half_rn(0.0f);
                    *reinterpret_cast<f16*>(st + which * kPanelBytes + swz(r, k / 8) + (k % 8) * 2) = v;
                }
            }
        }
        cp_async_commit();  // possibly empty, which keeps the group count uniform
    };
    for (int s = 0; s < kContractStages - 1; ++s) load(s);

    Acc acc;
    zero(acc);
    for (int t = 0; t < steps; ++t) {
        cp_async_wait<kContractStages - 2>();
        fence_to_async();
        __syncthreads();
        load(t + kContractStages - 1);  // into the stage read at t - 1, which every warp has left
        const unsigned char* st = smem + (t % kContractStages) * 2 * kPanelBytes;
        panel_mma(acc, smem_u32(st), smem_u32(st + kPanelBytes));
    }

    float* O = out + blockIdx.z * nn;
#pragma unroll
    for (int idx = 0; idx < 64; idx += 2) {
        const int64_t i = i0 + acc_row(idx), j = j0 + acc_col(idx);
        if (i >= n || j >= n) continue;
        if (kAligned) {
            *reinterpret_cast<float2*>(O + i * n + j) = make_float2(acc[idx], acc[idx + 1]);
        } else {
            O[i * n + j] = acc[idx];
            if (j + 1 < n) O[i * n + j + 1] = acc[idx + 1];
        }
    }
}

// ------------------------------------------------------------------ 3. output LayerNorm, gate, projection

__global__ void __launch_bounds__(kThreads, TRIMUL_OUTPUT_MIN_BLOCKS) output_kernel(KsArgs a, const float* out, const f16* gate, const f16* wo, int c128)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ float part[2][kTile];
    unsigned char* a_tile = align1024(smem_raw);      // 2 panels: [128 rows][128 channels]
    unsigned char* b_ring = a_tile + 2 * kPanelBytes; // 2 stages of to_out
    const int dim = (int)a.dim;
    const int64_t nn = a.seq_len * a.seq_len, rows = a.batch_size * nn, row0 = (int64_t)blockIdx.x * kTile;
    const int iters = c128 / kTile * 2;
    auto load_b = [&](int it) {
        if (it < iters)
            load_panel(smem_u32(b_ring + (it & 1) * kPanelBytes), wo, kHidden, (int64_t)(it / 2) * kTile, c128,
                       (it % 2) * kPanel);
        cp_async_commit();
    };
    load_b(0);

    // Thread (r, half): row r of the tile, channels 64 half .. 64 half + 63.
    const int r = threadIdx.x % kTile, half = threadIdx.x / kTile;
    const int64_t row = row0 + r;
    const bool real = row < rows;
    const int64_t b = real ? row / nn : 0, base = real ? (b * kHidden + half * 64) * nn + (row - b * nn) : 0;
    float v[64];
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < 64; ++u) {
        v[u] = real ? out[base + u * nn] : 0.0f;
        s += v[u];
    }
    part[half][r] = s;
    __syncthreads();
    const float mean = (part[0][r] + part[1][r]) / (float)kHidden;
    __syncthreads();
    float q = 0.0f;
#pragma unroll
    for (int u = 0; u < 64; ++u) q += (v[u] - mean) * (v[u] - mean);
    part[half][r] = q;
    __syncthreads();
    const float inv = rsqrtf((part[0][r] + part[1][r]) / (float)kHidden + kEps);
#pragma unroll
    for (int g = 0; g < 8; ++g) {
        __align__(16) f16 y[8];
#pragma unroll
        for (int x = 0; x < 8; ++x) {
            const int u = g * 8 + x, h = half * 64 + u;
            const float gt = real ? __half2float(gate[base + u * nn]) : 0.0f;
            y[x] = __float2half_rn(((v[u] - mean) * inv * a.to_out_norm_weight[h] + a.to_out_norm_bias[h]) * gt);
        }
        *reinterpret_cast<uint4*>(a_tile + half * kPanelBytes + swz(r, g)) = *reinterpret_cast<const uint4*>(y);
    }
    fence_to_async();

    Acc acc;
    for (int it = 0; it < iters; ++it) {
        const int chunk = it / 2, panel = it % 2;
        if (panel == 0) zero(acc);
        cp_async_wait<0>();
        fence_to_async();
        __syncthreads();
        load_b(it + 1);  // into the stage read at it - 1
        panel_mma(acc, smem_u32(a_tile + panel * kPanelBytes), smem_u32(b_ring + (it & 1) * kPanelBytes));
        if (panel == 0) continue;
#pragma unroll
        for (int idx = 0; idx < 64; idx += 2) {
            const int64_t orow = row0 + acc_row(idx);
            const int c = chunk * kTile + acc_col(idx);
            if (orow >= rows || c >= dim) continue;
            float* dst = a.output + orow * dim + c;
            if (dim % 2 == 0) {
                *reinterpret_cast<float2*>(dst) = make_float2(acc[idx], acc[idx + 1]);
            } else {
                dst[0] = acc[idx];
                if (c + 1 < dim) dst[1] = acc[idx + 1];
            }
        }
    }
}

size_t align256(size_t v) { return (v + 255) / 256 * 256; }


}  // namespace

extern "C" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->seq_len < 0 || args->dim <= 0 || args->dim > kMaxDim)
        return (int)cudaErrorInvalidValue;
    const int64_t B = args->batch_size, N = args->seq_len, nn = N * N, rows = B * nn;
    if (rows == 0) return 0;
    const int dim = (int)args->dim, cp = (dim + kPanel - 1) / kPanel * kPanel, c128 = (dim + kTile - 1) / kTile * kTile;
    const size_t plane = align256((size_t)rows * kHidden * sizeof(f16));  // out's is twice as large
    const size_t wp_bytes = align256((size_t)kProjCols * cp * sizeof(f16));
    const size_t need = 5 * plane + wp_bytes + align256((size_t)c128 * kHidden * sizeof(f16)) + (size_t)rows * cp * sizeof(f16);
    const int64_t row_tiles = (rows + kTile - 1) / kTile, n_tiles = (N + kTile - 1) / kTile;
    if (!workspace || workspace_bytes < need || row_tiles > INT_MAX || N > INT_MAX || n_tiles > 65535 || B * kHidden > 65535)
        return (int)cudaErrorInvalidValue;
    auto* ws = static_cast<unsigned char*>(workspace);
    f16* left = reinterpret_cast<f16*>(ws);
    f16* right = reinterpret_cast<f16*>(ws + plane);
    f16* gate = reinterpret_cast<f16*>(ws + 2 * plane);
    float* out = reinterpret_cast<float*>(ws + 3 * plane);
    f16* wp = reinterpret_cast<f16*>(ws + 5 * plane);
    f16* wo = reinterpret_cast<f16*>(ws + 5 * plane + wp_bytes);

    constexpr int kContractSmem = kContractStages * 2 * kPanelBytes + kAlignSlack;
    constexpr int kOutputSmem = 4 * kPanelBytes + kAlignSlack;
    static const cudaError_t configured = [] {
        cudaError_t err = cudaSuccess;
        const auto allow = [&err](const void* kernel, int bytes) {
            if (err == cudaSuccess) err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        };
        allow((const void*)contract_kernel<true>, kContractSmem);
        allow((const void*)contract_kernel<false>, kContractSmem);
        allow((const void*)output_kernel, kOutputSmem);
        allow((const void*)project_gemm_kernel, kContractSmem);
        return err;
    }();
    if (configured != cudaSuccess) return (int)configured;

    prep_weights<<<132, 256, 0, stream>>>(*args, wp, wo, cp, c128);
    if (row_tiles > 65535) return (int)cudaErrorInvalidValue;  // the projection grid's y
    f16* xn = reinterpret_cast<f16*>(ws + 5 * plane + wp_bytes + align256((size_t)c128 * kHidden * sizeof(f16)));
    const unsigned tiles = (unsigned)row_tiles;
    const unsigned ln_blocks = (unsigned)((rows + 31) / 32);  // 8 warps, up to 8 rows each: enough blocks for any batch
    if (dim <= 128)
        ln_kernel<128><<<(unsigned)((rows + 63) / 64), kThreads, 0, stream>>>(*args, xn, cp);
    else if (dim <= 384)
        ln_kernel<384><<<ln_blocks, kThreads, 0, stream>>>(*args, xn, cp);
    else
        ln_kernel<768><<<(unsigned)((rows + 15) / 16), kThreads, 0, stream>>>(*args, xn, cp);
    project_gemm_kernel<<<dim3(kProjChunks, tiles), kThreads, kContractSmem, stream>>>(*args, xn, wp, cp, left, right, gate);
    const dim3 grid((unsigned)n_tiles, (unsigned)n_tiles, (unsigned)(B * kHidden));
    if (N % 8 == 0)
        contract_kernel<true><<<grid, kThreads, kContractSmem, stream>>>(left, right, out, (int)N);
    else
        contract_kernel<false><<<grid, kThreads, kContractSmem, stream>>>(left, right, out, (int)N);
    output_kernel<<<tiles, kThreads, kOutputSmem, stream>>>(*args, out, gate, wo, c128);
    return (int)cudaGetLastError();
}
