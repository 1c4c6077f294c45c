// TriMul for H200 (sm_90a): the three matrix products on Hopper's warpgroup tensor cores
// (wgmma, fp16 in, fp32 accumulation), every element-wise step but the input LayerNorm fused into
// a prologue or an epilogue of one of them.
//
// Session 16 (2026-12-05) kept two changes of the session-14 rewrite (bench/kernels/trimul_next.cu)
// and dropped the rest, after the kernel lab timed each alone on the H200 on GPU MODE's seven
// scored shapes (docs/perf.md, "TriMul, session 16"): the LayerNorm with float4 loads
// (TRIMUL_LN_VEC; 1.18-1.52x faster than the row kernel) and 64-row output tiles at three CTAs an
// SM (TRIMUL_OUTPUT_ROWS 64; 1.05-1.16x) went in; the projections with the weights resident in
// shared memory were 1.2-1.7x slower than the pipelined GEMM kept below, and the 128 x 256
// contraction tiles are a knob left off (TRIMUL_CONTRACT_WIDE=1: 1 % slower in the geometric
// mean, 8 % on the largest shape). Geometric mean over the seven: 1,332.6 -> 1,296.4 us.
//
// Session 23 (2026-12-06, H100, docs/perf.md "TriMul, session 23") turned on three bulk-copy
// stages written in session 22 (TRIMUL_PROJ_PP, TRIMUL_CONTRACT_PP, TRIMUL_OUTPUT_RESIDENT; each
// described where it is defined): 1,374.6 -> 1,089.8 us in the kernel lab's geometric mean.  Where
// a shape does not meet a stage's conditions (dim 128/256/384 with no padding; n a multiple of
// 256; dim small enough to keep to_out resident), the session-16 path below runs.
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
//                 128 x 128 tiles, 64-wide k steps, a three-stage cp.async ring (128 x 256 tiles
//                 on m64n256k16 with TRIMUL_CONTRACT_WIDE=1 where n % 8 == 0).
//   3. output     64 rows (b, i, j) per CTA (TRIMUL_OUTPUT_ROWS; 128 possible), a thread per (row, half of the 128 channels): the
//                 [b, h, i, j] planes read so that neighbouring threads read neighbouring j,
//                 LayerNorm over the channels, the gate, fp16 into shared memory, then
//                 [rows x 128] x [128 x dim] to the fp32 output.
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
#ifndef TRIMUL_OUTPUT64_MIN_BLOCKS
#define TRIMUL_OUTPUT64_MIN_BLOCKS 3
#endif
#ifndef TRIMUL_OUTPUT_ROWS
#define TRIMUL_OUTPUT_ROWS 64
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

// scale_d == 0 overwrites d instead of accumulating into it (the first product of a tile).
__device__ __forceinline__ void wgmma_m64n128k16(Acc& d, uint64_t da, uint64_t db, int scale_d = 1)
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
        : "l"(da), "l"(db), "r"(scale_d));
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
    for (int e = threadIdx.x; e < kTile * 8; e += blockDim.x) {
        const int r = e >> 3, c = e & 7;
        const bool ok = row0 + r < rows && k0 + c * 8 < cols;
        cp_async16(dst + swz(r, c), ok ? m + (row0 + r) * cols + k0 + c * 8 : m, ok);
    }
}

// Writes `channels` staged channels of 128 rows to planes [b, h, p] (p = row mod nn): 16-byte
// stores where eight rows are contiguous in one plane, single elements elsewhere.
// `tid` of `threads` threads share the work.  With image_n (n, a multiple of 128) every plane is
// written as the panel images of its n x n matrix [i][k] instead (image_off), for the bulk-copy
// contraction.
__device__ __forceinline__ int64_t image_off(int64_t row, int k, int steps);
__device__ void store_staged(const unsigned char* stage, int channels, f16* plane, int h0, int64_t row0, int64_t rows, int64_t nn,
                             int tid = threadIdx.x, int threads = kThreads, int image_n = 0)
{
    for (int e = tid; e < channels * 16; e += threads) {
        const int h = e >> 4, g = e & 15;
        const uint4 v = *reinterpret_cast<const uint4*>(stage + stage_off(h, g));
        const int64_t row = row0 + g * 8;
        if (row >= rows) continue;
        const int64_t b = row / nn, p = row - b * nn;
        if (image_n > 0) {  // rows is a multiple of 128 here, and p .. p + 7 share i
            const int64_t i = p / image_n;
            unsigned char* m = reinterpret_cast<unsigned char*>(plane + (b * kHidden + h0 + h) * nn);
            *reinterpret_cast<uint4*>(m + image_off(i, (int)(p - i * image_n), image_n / kPanel)) = v;
        } else if (nn % 8 == 0 && row + 7 < rows) {
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

// Panel images: a matrix of `steps` 64-wide k panels stored as 16 KB blocks [128-row tile][k
// panel], each byte for byte the swizzled shared panel, so that one bulk copy loads a panel.
// Byte offset of element (row, k).
__device__ __forceinline__ int64_t image_off(int64_t row, int k, int steps)
{
    return ((row >> 7) * steps + (k >> 6)) * kPanelBytes + swz((int)(row & (kTile - 1)), (k & (kPanel - 1)) >> 3) + (k & 7) * 2;
}

__device__ __forceinline__ void stage_put(unsigned char* stage, int h, int r, float v)
{
    *reinterpret_cast<f16*>(stage + stage_off(h, r >> 3) + (r & 7) * 2) = __float2half_rn(v);
}

// ------------------------------------------------------------------ 0. weights to fp16

// wp: [640][cp]; row n < 512 is projection (n / 256: left, right) group (n % 256) / 32, whose
// first 16 rows are projection channels 16 g .. 16 g + 15 and last 16 their gates; rows 512 ..
// 639 are the output gate.  wo: [c128][128], to_out padded with zero rows.
// With `image`, wp is written as panel images (image_off) for the ping-pong projection.
__global__ void prep_weights(KsArgs a, f16* wp, f16* wo, int cp, int c128, bool image)
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
            const f16 v = __float2half_rn(c < dim ? src[h * dim + c] : 0.0f);
            if (image)
                *reinterpret_cast<f16*>(reinterpret_cast<unsigned char*>(wp) + image_off(n, c, cp / kPanel)) = v;
            else
                wp[e] = v;
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

// The same LayerNorm for dim = 128 kVec4 (every GPU MODE shape): a lane reads float4s and writes
// four halves at a time, a quarter of the instructions of the scalar kernel for the same bytes.
#ifndef TRIMUL_LN_VEC
#define TRIMUL_LN_VEC 1
#endif
// kImage: xn as panel images (image_off) for the ping-pong projection, else row-major.
template <int kVec4, int kRowsPerWarp, bool kImage>
__global__ void __launch_bounds__(kThreads) ln_vec_kernel(KsArgs a, f16* xn)
{
    constexpr int kDim = 128 * kVec4;
    const int lane = threadIdx.x & 31;
    const int64_t rows = a.batch_size * a.seq_len * a.seq_len;
    const int64_t first = ((int64_t)blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5)) * kRowsPerWarp;
    float4 v[kRowsPerWarp][kVec4];
#pragma unroll
    for (int q = 0; q < kRowsPerWarp; ++q) {
        const int64_t row = first + q;
#pragma unroll
        for (int t = 0; t < kVec4; ++t)
            v[q][t] = row < rows ? __ldcs(reinterpret_cast<const float4*>(a.input + row * kDim) + lane + 32 * t)
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float4 w[kVec4], bias[kVec4];
#pragma unroll
    for (int t = 0; t < kVec4; ++t) {
        w[t] = __ldg(reinterpret_cast<const float4*>(a.norm_weight) + lane + 32 * t);
        bias[t] = __ldg(reinterpret_cast<const float4*>(a.norm_bias) + lane + 32 * t);
    }
#pragma unroll
    for (int q = 0; q < kRowsPerWarp; ++q) {
        const int64_t row = first + q;
        if (row >= rows) break;
        float s = 0.0f;
#pragma unroll
        for (int t = 0; t < kVec4; ++t) s += (v[q][t].x + v[q][t].y) + (v[q][t].z + v[q][t].w);
        const float mean = warp_sum(s) * (1.0f / kDim);
        float d2 = 0.0f;
#pragma unroll
        for (int t = 0; t < kVec4; ++t) {
            const float dx = v[q][t].x - mean, dy = v[q][t].y - mean, dz = v[q][t].z - mean, dw = v[q][t].w - mean;
            d2 += (dx * dx + dy * dy) + (dz * dz + dw * dw);
        }
        const float inv = rsqrtf(warp_sum(d2) * (1.0f / kDim) + kEps);
#pragma unroll
        for (int t = 0; t < kVec4; ++t) {
            const __half2 lo = __floats2half2_rn((v[q][t].x - mean) * inv * w[t].x + bias[t].x, (v[q][t].y - mean) * inv * w[t].y + bias[t].y);
            const __half2 hi = __floats2half2_rn((v[q][t].z - mean) * inv * w[t].z + bias[t].z, (v[q][t].w - mean) * inv * w[t].w + bias[t].w);
            uint2 packed;
            packed.x = *reinterpret_cast<const uint32_t*>(&lo);
            packed.y = *reinterpret_cast<const uint32_t*>(&hi);
            if constexpr (kImage)
                *reinterpret_cast<uint2*>(reinterpret_cast<unsigned char*>(xn) + image_off(row, 4 * (lane + 32 * t), kDim / kPanel)) = packed;
            else
                reinterpret_cast<uint2*>(xn + row * kDim)[lane + 32 * t] = packed;
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

// ------------------------------------------------------------------ 1b. projections, ping-pong

// The pipelined GEMM above streams both operands from L2 for every 128 x 128 tile, 32 KB per 2
// MFLOP, and L2 cannot feed that at the tensor cores' rate; two CTAs an SM hide its epilogue.
// With TRIMUL_PROJ_PP a persistent CTA keeps a 128-row tile of the normalised input resident
// and runs all five chunks over it (the rows are read once, not five times), the operands
// arriving as whole panel images by bulk copy from one producer thread.  Its two consumer
// warpgroups take turns: each computes a whole 128 x 128 chunk (two m64 chains) while the other
// runs the previous chunk's epilogue, so the tensor cores wait on neither the epilogue nor the
// one CTA an SM.  dim 128, 256 or 384 (cp = dim; the input LayerNorm writes the images).
#ifndef TRIMUL_PROJ_PP
#define TRIMUL_PROJ_PP 1
#endif

__device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Returns once the phase of parity `parity` has completed (a fresh barrier counts parity 1 done).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile(
        "{\n.reg .pred done;\nretry:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra retry;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst), "l"(src),
                 "r"(bytes), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void wg_barrier(int wg) { asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory"); }

// One 64-wide k step of a warpgroup's 128 x 128 tile: A rows 0-63 into acc0 and 64-127 into acc1
// (both from the swizzled panel at `a`) against the B panel at `b`, committed as one group and
// left in flight.  `first`: the tile's first step, which overwrites the accumulators.
__device__ __forceinline__ void two_chain_step(Acc& acc0, Acc& acc1, uint32_t a, uint32_t b, bool first)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < kPanel / 16; ++ks) {
        const int accumulate = !first || ks > 0;
        wgmma_m64n128k16(acc0, smem_desc(a + ks * 32), smem_desc(b + ks * 32), accumulate);
        wgmma_m64n128k16(acc1, smem_desc(a + 64 * 128 + ks * 32), smem_desc(b + ks * 32), accumulate);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// One MUFU operation instead of two; its error (about 2^-11) is that of the fp16 planes.
__device__ __forceinline__ float sigmoid_tanh(float v)
{
    float t;
    asm("tanh.approx.f32 %0, %1;\n" : "=f"(t) : "f"(0.5f * v));
    return fmaf(0.5f, t, 0.5f);
}

constexpr int kStageBytes = 64 * 2 * kTile;  // 64 channels of 128 rows
// Two consumer warpgroups and a producer warpgroup (one thread of it works): registers are
// handed over by whole warpgroups (setmaxnreg), 168 each at launch, then 232 / 232 / 40.
constexpr int kPpThreads = 3 * 128;

template <int kSteps> struct PpShape {
    static_assert(kSteps == 2 || kSteps == 4 || kSteps == 6, "cp of 128, 256 or 384");
    // A tile's A panels are refilled once its last chunk has read them; with one buffer that is
    // (5 - 4) * kSteps panels before the first chunk of the next tile needs them, so the ring is
    // no deeper than that (else the producer would wait on A and starve the ring).
    static constexpr int kABufs = kSteps == 2 ? 2 : 1;
    static constexpr int kRing = kSteps == 2 ? 6 : (kSteps == 4 ? 4 : 5);
    static constexpr int kABytes = kABufs * kSteps * kPanelBytes;
    static constexpr int kSmem = kABytes + kRing * kPanelBytes + 2 * kStageBytes + kAlignSlack;
    static_assert((5 * kABufs - 4) * kSteps >= kRing, "the producer must not wait on A panels");
};

// The epilogue values of one warpgroup's half tile, as fp16 pairs: for a projection chunk the 32
// gated projections of thread `tw` (the gate of column col sits at col + 16), else its 64 sigmoid
// gates.  Packing first frees the accumulators before any shared-memory address is formed, which
// keeps the epilogue within the 168 registers of a 384-thread CTA.
template <bool kGated>
__device__ __forceinline__ void pp_pack(const Acc& acc, float keep0, float keep1, uint32_t* packed)
{
    int n = 0;
#pragma unroll
    for (int idx = 0; idx < 64; idx += 2) {
        if (kGated && (idx >> 2) % 4 >= 2) continue;
        __half2 h2;
        if (kGated) {
            const float k = (idx >> 1) & 1 ? keep1 : keep0;
            h2 = __floats2half2_rn(acc[idx] * k * sigmoid_tanh(acc[idx + 8]), acc[idx + 1] * k * sigmoid_tanh(acc[idx + 9]));
        } else {
            h2 = __floats2half2_rn(sigmoid_tanh(acc[idx]), sigmoid_tanh(acc[idx + 1]));
        }
        packed[n++] = *reinterpret_cast<const uint32_t*>(&h2);
    }
}

// Writes pp_pack's values of half tile kM (rows 64 kM ..) into the [channel][128 rows] staging
// plane; for the gate chunk only the columns of `pass` (64 pass .. 64 pass + 63).  The address is
// stage_off(h, r / 8) + (r % 8) * 2 split into this thread's part and a constant per element
// (the swizzle's XOR falls on disjoint bits), so that the compiler keeps one base register
// instead of hoisting 64 addresses out of the chunk loop.
template <bool kGated, int kM>
__device__ __forceinline__ void pp_stage(unsigned char* stage, const uint32_t* packed, int pass, int tw)
{
    const int w = tw >> 5, quad = tw & 3;
    unsigned char* base = stage + 2 * quad * 256 + 32 * (w ^ quad) + 2 * ((tw & 31) >> 2);
    int n = 0;
#pragma unroll
    for (int idx = 0; idx < 64; idx += 2) {
        const int i = idx >> 2, hb = (idx >> 1) & 1;
        if (kGated && i % 4 >= 2) continue;
        const uint32_t v = packed[n++];
        if (!kGated && i / 8 != pass) continue;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int h = kGated ? 16 * (i / 4) + 8 * (i & 1) + e : 8 * (i - 8 * pass) + e;  // less this thread's 2 quad
            const int off = h * 256 + 16 * (8 * (kM ^ (i & 1)) + (hb ^ e));
            *reinterpret_cast<uint16_t*>(base + off) = (uint16_t)(e ? v >> 16 : v & 0xFFFFu);
        }
    }
}

template <int kSteps>
__global__ void __launch_bounds__(kPpThreads, 1)
    project_pp_kernel(KsArgs a, const unsigned char* xn_img, const unsigned char* wp_img, f16* left, f16* right, f16* gate, int lr_image_n)
{
    using Shape = PpShape<kSteps>;
    constexpr int kABufs = Shape::kABufs, kRing = Shape::kRing, kAPanels = kABufs * kSteps;
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t bars[2 * kAPanels + 2 * kRing + 2];
    unsigned char* smem = align1024(smem_raw);
    unsigned char* ring = smem + Shape::kABytes;
    const uint32_t full_a = smem_u32(bars), empty_a = full_a + 8 * kAPanels, full_b = empty_a + 8 * kAPanels,
                   empty_b = full_b + 8 * kRing, turn = empty_b + 8 * kRing;
    const int64_t nn = a.seq_len * a.seq_len, rows = a.batch_size * nn, tiles = (rows + kTile - 1) / kTile;
    const int my_tiles = (int)((tiles - blockIdx.x + gridDim.x - 1) / gridDim.x);  // the grid has no more CTAs than tiles
    if (threadIdx.x == 0) {
        // Consumers release a slot from each of their four warps once its products are done.
        // A panels: chunks 3 and 4 of a tile, the last two to read them, run on different
        // warpgroups, and nothing orders one warpgroup's products after the other's: both release.
        for (int i = 0; i < kAPanels; ++i) {
            mbar_init(full_a + 8 * i, 1);
            mbar_init(empty_a + 8 * i, 8);
        }
        for (int i = 0; i < kRing; ++i) {
            mbar_init(full_b + 8 * i, 1);
            mbar_init(empty_b + 8 * i, 4);
        }
        mbar_init(turn, 4);
        mbar_init(turn + 8, 4);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int wg = threadIdx.x >> 7;
    if (wg == 2) {  // the producer: tile j's A panels with its first chunk, then B panels in order
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x != 256) return;
        int64_t idx = 0;
        for (int j = 0; j < my_tiles; ++j) {
            const int64_t tile = blockIdx.x + (int64_t)j * gridDim.x;
            const int buf = j % kABufs;
            const uint32_t use = (uint32_t)(j / kABufs) & 1;
            for (int c = 0; c < 5; ++c) {
                for (int t = 0; t < kSteps; ++t, ++idx) {
                    if (c == 0) {
                        const int p = buf * kSteps + t;
                        mbar_wait(empty_a + 8 * p, use ^ 1);
                        mbar_expect_tx(full_a + 8 * p, kPanelBytes);
                        bulk_load(smem_u32(smem + p * kPanelBytes), xn_img + (tile * kSteps + t) * kPanelBytes, kPanelBytes, full_a + 8 * p);
                    }
                    const int slot = (int)(idx % kRing);
                    mbar_wait(empty_b + 8 * slot, (uint32_t)((idx / kRing) & 1) ^ 1);
                    mbar_expect_tx(full_b + 8 * slot, kPanelBytes);
                    bulk_load(smem_u32(ring + slot * kPanelBytes), wp_img + (int64_t)(c * kSteps + t) * kPanelBytes, kPanelBytes,
                              full_b + 8 * slot);
                }
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int tw = threadIdx.x & 127;
    const bool signal = (tw & 31) == 0;
    unsigned char* stage = ring + kRing * kPanelBytes + wg * kStageBytes;
    for (int q = wg, k = 0; q < 5 * my_tiles; q += 2, ++k) {
        const int j = q / 5, c = q % 5, buf = j % kABufs;
        const uint32_t use = (uint32_t)(j / kABufs) & 1;
        const int64_t row0 = (blockIdx.x + (int64_t)j * gridDim.x) * kTile;
        // Mainloops alternate: warpgroup 1's k-th after warpgroup 0's k-th, 0's after 1's (k-1)-th.
        if (wg == 1)
            mbar_wait(turn + 8, (uint32_t)k & 1);
        else if (k > 0)
            mbar_wait(turn, (uint32_t)(k - 1) & 1);
        Acc acc0, acc1;
        auto release = [&](int t) {
            if (!signal) return;
            mbar_arrive(empty_b + 8 * (int)(((int64_t)q * kSteps + t) % kRing));
            if (c >= 3) mbar_arrive(empty_a + 8 * (buf * kSteps + t));
        };
#pragma unroll 1
        for (int t = 0; t < kSteps; ++t) {
            const int64_t idx = (int64_t)q * kSteps + t;
            const int slot = (int)(idx % kRing);
            mbar_wait(full_a + 8 * (buf * kSteps + t), use);
            mbar_wait(full_b + 8 * slot, (uint32_t)(idx / kRing) & 1);
            two_chain_step(acc0, acc1, smem_u32(smem + (buf * kSteps + t) * kPanelBytes), smem_u32(ring + slot * kPanelBytes), t == 0);
            if (t > 0) {
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                release(t - 1);
            }
        }
        if (signal) mbar_arrive(turn + 8 * (1 - wg));
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        release(kSteps - 1);

        if (c < 4) {
            // The mask of this thread's rows: half tile m, row r or r + 8.
            const int64_t r = row0 + 16 * (tw >> 5) + ((tw & 31) >> 2);
            const auto keep = [&](int64_t row) { return row < rows && a.mask[row] ? 1.0f : 0.0f; };
            uint32_t p0[16], p1[16];
            pp_pack<true>(acc0, keep(r), keep(r + 8), p0);
            pp_pack<true>(acc1, keep(r + 64), keep(r + 72), p1);
            pp_stage<true, 0>(stage, p0, 0, tw);
            pp_stage<true, 1>(stage, p1, 0, tw);
            wg_barrier(wg);
            store_staged(stage, kHidden / 2, c < 2 ? left : right, (c & 1) * (kHidden / 2), row0, rows, nn, tw, 128, lr_image_n);
            wg_barrier(wg);  // the staging plane is written again by the next chunk
        } else {
            uint32_t p0[32], p1[32];
            pp_pack<false>(acc0, 1.0f, 1.0f, p0);
            pp_pack<false>(acc1, 1.0f, 1.0f, p1);
#pragma unroll
            for (int pass = 0; pass < 2; ++pass) {
                pp_stage<false, 0>(stage, p0, pass, tw);
                pp_stage<false, 1>(stage, p1, pass, tw);
                wg_barrier(wg);
                store_staged(stage, kHidden / 2, gate, 64 * pass, row0, rows, nn, tw, 128);
                wg_barrier(wg);
            }
        }
    }
}

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

// ------------------------------------------------------------------ 2b. the contraction, 128 x 256 tiles

// One CTA per 128 x 256 tile of out[b, h]: each warpgroup a 64 x 256 wgmma chain, so a k step
// reads 48 KB of operands for twice the products of a 128 x 128 tile's 32 KB (the contraction is
// bound by the operands' traffic from L2).  Four stages with loads two steps ahead and one
// product chain left in flight while the next step's operands are awaited.  n % 8 == 0 only.
#ifndef TRIMUL_CONTRACT_WIDE
#define TRIMUL_CONTRACT_WIDE 0
#endif
constexpr int kWide = 256;
constexpr int kWideStages = 4;
constexpr int kWideStageBytes = kPanelBytes + kWide * 128;
constexpr int kWideSmem = kWideStages * kWideStageBytes + kAlignSlack;
using WideAcc = float[128];

__device__ __forceinline__ void wgmma_m64n256k16(WideAcc& d, uint64_t da, uint64_t db, int scale_d)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 0;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

__global__ void __launch_bounds__(kThreads, 1) contract_wide_kernel(const f16* left, const f16* right, float* out, int n)
{
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = align1024(smem_raw);  // stages x (L panel of 128 rows, R panel of 256)
    const int64_t nn = (int64_t)n * n;
    const f16* L = left + blockIdx.z * nn;
    const f16* R = right + blockIdx.z * nn;
    const int64_t i0 = (int64_t)blockIdx.y * kTile, j0 = (int64_t)blockIdx.x * kWide;
    const int steps = (n + kPanel - 1) / kPanel;
    auto load = [&](int t) {
        if (t < steps) {
            const uint32_t st = smem_u32(smem + (t % kWideStages) * kWideStageBytes);
            load_panel(st, L, n, i0, n, t * kPanel);
            load_panel(st + kPanelBytes, R, n, j0, n, t * kPanel);
            load_panel(st + kPanelBytes + kPanelBytes, R, n, j0 + kTile, n, t * kPanel);
        }
        cp_async_commit();
    };
    load(0);
    load(1);
    WideAcc acc;
    const uint32_t wg_rows = (threadIdx.x >> 7) * 64 * 128;
    for (int t = 0; t < steps; ++t) {
        cp_async_wait<1>();
        fence_to_async();
        __syncthreads();  // step t's operands are in; every warpgroup has finished step t - 2's products
        load(t + 2);
        const uint32_t st = smem_u32(smem + (t % kWideStages) * kWideStageBytes);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int ks = 0; ks < kPanel / 16; ++ks)
            wgmma_m64n256k16(acc, smem_desc(st + wg_rows + ks * 32), smem_desc(st + kPanelBytes + ks * 32), t > 0 || ks > 0);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

    float* O = out + blockIdx.z * nn;
    const int tw = threadIdx.x & 127;
    const int64_t ibase = i0 + 64 * (threadIdx.x >> 7) + 16 * (tw >> 5) + ((tw & 31) >> 2);
#pragma unroll
    for (int idx = 0; idx < 128; idx += 2) {
        const int64_t i = ibase + 8 * ((idx >> 1) & 1), j = j0 + 8 * (idx >> 2) + 2 * (tw & 3);
        if (i < n && j < n) *reinterpret_cast<float2*>(O + i * n + j) = make_float2(acc[idx], acc[idx + 1]);
    }
}

// ------------------------------------------------------------------ 2c. the contraction, bulk copies

// TRIMUL_CONTRACT_PP (with TRIMUL_PROJ_PP, n a multiple of 256): the projection writes L and R as
// panel images, and a persistent CTA computes 256 x 128 tiles of out[b, h] from them: a producer
// thread bulk-copies two L panels and one R panel per 64-wide k step into a four-stage ring, and
// each consumer warpgroup runs two m64 chains (its 128 rows) against the shared R panel, one
// step's products left in flight.  A 256 x 128 tile reads 0.75x the operand bytes of two 128 x
// 128 tiles, which matters because the contraction is bound by what L2 delivers.
#ifndef TRIMUL_CONTRACT_PP
#define TRIMUL_CONTRACT_PP 1
#endif
constexpr int kCpStages = 4;
constexpr int kCpStageBytes = 3 * kPanelBytes;  // L rows i0 .. i0 + 127, i0 + 128 .., R rows j0 ..
constexpr int kCpSmem = kCpStages * kCpStageBytes + kAlignSlack;

__global__ void __launch_bounds__(kPpThreads, 1)
    contract_pp_kernel(const unsigned char* left_img, const unsigned char* right_img, float* out, int n, int64_t tiles)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t bars[2 * kCpStages];
    unsigned char* smem = align1024(smem_raw);
    const uint32_t full = smem_u32(bars), empty = full + 8 * kCpStages;
    const int ksteps = n / kPanel, jb_count = n / kTile;
    const int64_t per_bh = (int64_t)(n / 256) * jb_count, mat_bytes = (int64_t)n * n * 2;
    if (threadIdx.x == 0) {
        for (int i = 0; i < kCpStages; ++i) {
            mbar_init(full + 8 * i, 1);
            mbar_init(empty + 8 * i, 8);  // every consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int wg = threadIdx.x >> 7;
    if (wg == 2) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x != 256) return;
        int it = 0;
        for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int64_t bh = t / per_bh;
            const int rem = (int)(t - bh * per_bh), ib = rem / jb_count, jb = rem % jb_count;
            const unsigned char* l = left_img + bh * mat_bytes + (int64_t)(2 * ib) * ksteps * kPanelBytes;
            const unsigned char* r = right_img + bh * mat_bytes + (int64_t)jb * ksteps * kPanelBytes;
            for (int s = 0; s < ksteps; ++s, ++it) {
                const int slot = it % kCpStages;
                mbar_wait(empty + 8 * slot, (uint32_t)((it / kCpStages) & 1) ^ 1);
                mbar_expect_tx(full + 8 * slot, kCpStageBytes);
                const uint32_t st = smem_u32(smem + slot * kCpStageBytes);
                bulk_load(st, l + (int64_t)s * kPanelBytes, kPanelBytes, full + 8 * slot);
                bulk_load(st + kPanelBytes, l + (int64_t)(ksteps + s) * kPanelBytes, kPanelBytes, full + 8 * slot);
                bulk_load(st + 2 * kPanelBytes, r + (int64_t)s * kPanelBytes, kPanelBytes, full + 8 * slot);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int tw = threadIdx.x & 127;
    const bool signal = (tw & 31) == 0;
    int it = 0;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t bh = t / per_bh;
        const int rem = (int)(t - bh * per_bh), ib = rem / jb_count, jb = rem % jb_count;
        Acc acc0, acc1;
#pragma unroll 1
        for (int s = 0; s < ksteps; ++s, ++it) {
            const int slot = it % kCpStages;
            mbar_wait(full + 8 * slot, (uint32_t)(it / kCpStages) & 1);
            two_chain_step(acc0, acc1, smem_u32(smem + slot * kCpStageBytes + wg * kPanelBytes),
                           smem_u32(smem + slot * kCpStageBytes + 2 * kPanelBytes), s == 0);
            if (s > 0) {
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                if (signal) mbar_arrive(empty + 8 * ((it - 1) % kCpStages));
            }
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        if (signal) mbar_arrive(empty + 8 * ((it - 1) % kCpStages));

        // Rows 256 ib + 128 wg + 64 m + (this thread's row), columns 128 jb + (its column).
        const int64_t row = 256 * (int64_t)ib + 128 * wg + 16 * (tw >> 5) + ((tw & 31) >> 2);
        float* o = out + bh * (int64_t)n * n + row * n + 128 * jb + 2 * (tw & 3);
#pragma unroll
        for (int idx = 0; idx < 64; idx += 2) {
            const int64_t off = (int64_t)(8 * ((idx >> 1) & 1)) * n + 8 * (idx >> 2);
            *reinterpret_cast<float2*>(o + off) = make_float2(acc0[idx], acc0[idx + 1]);
            *reinterpret_cast<float2*>(o + 64 * (int64_t)n + off) = make_float2(acc1[idx], acc1[idx + 1]);
        }
    }
}

// ------------------------------------------------------------------ 3. output LayerNorm, gate, projection

// Thread (r, half) of a kRows-row tile: row r, channels 64 half .. 64 half + 63.  Normalises its
// rows of the [b, h, i, j] planes (neighbouring threads read neighbouring j), applies the gate and
// writes fp16 into the two [kRows rows][64 channels] panels of `a_tile`.  Ends with a barrier.
template <int kRows>
__device__ __forceinline__ void output_rows(const KsArgs& a, const float* out, const f16* gate, unsigned char* a_tile, float (*part)[kRows],
                                            int64_t row0, int64_t rows, int64_t nn)
{
    constexpr int kAPanelBytes = kRows * 128;
    const int r = threadIdx.x % kRows, half = threadIdx.x / kRows;
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
        *reinterpret_cast<uint4*>(a_tile + half * kAPanelBytes + swz(r, g)) = *reinterpret_cast<const uint4*>(y);
    }
    fence_to_async();
    __syncthreads();
}

// The fp32 results of output columns chunk * 128 .. + 127 of a tile's rows.
__device__ __forceinline__ void output_store(const KsArgs& a, const Acc& acc, int64_t row0, int64_t rows, int chunk)
{
    const int dim = (int)a.dim;
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

// kRows rows (b, i, j) per CTA, two threads a row: 128 rows and two warpgroups, or 64 rows and
// one, which lets several CTAs share an SM so that one's loads overlap another's products.
template <int kRows>
__global__ void __launch_bounds__(2 * kRows, kRows == 128 ? TRIMUL_OUTPUT_MIN_BLOCKS : TRIMUL_OUTPUT64_MIN_BLOCKS)
    output_kernel(KsArgs a, const float* out, const f16* gate, const f16* wo, int c128)
{
    constexpr int kAPanelBytes = kRows * 128;
    extern __shared__ unsigned char smem_raw[];
    __shared__ float part[2][kRows];
    unsigned char* a_tile = align1024(smem_raw);       // 2 panels: [kRows rows][128 channels]
    unsigned char* b_ring = a_tile + 2 * kAPanelBytes; // 2 stages of to_out
    const int64_t nn = a.seq_len * a.seq_len, rows = a.batch_size * nn, row0 = (int64_t)blockIdx.x * kRows;
    const int iters = c128 / kTile * 2;
    auto load_b = [&](int it) {
        if (it < iters)
            load_panel(smem_u32(b_ring + (it & 1) * kPanelBytes), wo, kHidden, (int64_t)(it / 2) * kTile, c128,
                       (it % 2) * kPanel);
        cp_async_commit();
    };
    load_b(0);
    output_rows<kRows>(a, out, gate, a_tile, part, row0, rows, nn);

    Acc acc;
    for (int it = 0; it < iters; ++it) {
        const int chunk = it / 2, panel = it % 2;
        if (panel == 0) zero(acc);
        cp_async_wait<0>();
        fence_to_async();
        __syncthreads();
        load_b(it + 1);  // into the stage read at it - 1
        panel_mma(acc, smem_u32(a_tile + panel * kAPanelBytes), smem_u32(b_ring + (it & 1) * kPanelBytes));
        if (panel == 1) output_store(a, acc, row0, rows, chunk);
    }
}

// TRIMUL_OUTPUT_RESIDENT: the same with to_out resident in shared memory.  The kernel above
// reloads all of to_out (c128 x 128 fp16, 96 KB at dim 384) from L2 for every 64 rows, as many
// bytes as the rows' own output; here a persistent CTA loads it once and loops over row tiles,
// several CTAs an SM so that one's plane loads overlap another's products.
#ifndef TRIMUL_OUTPUT_RESIDENT
#define TRIMUL_OUTPUT_RESIDENT 1
#endif
constexpr int kResidentMaxDim = 384;

constexpr int kResidentRows = 64;
// No alignment slack and no static shared memory, so that two CTAs fit an SM at dim 384: the
// dynamic window then starts on a 1024-byte boundary (checked: the kernel traps otherwise).
constexpr int resident_smem(int c128) { return 2 * kResidentRows * 128 + 2 * (c128 / kTile) * kPanelBytes + 2 * kResidentRows * 4; }

__global__ void __launch_bounds__(128) output_resident_kernel(KsArgs a, const float* out, const f16* gate, const f16* wo, int c128)
{
    constexpr int kRows = kResidentRows, kAPanelBytes = kRows * 128;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    if (smem_u32(smem_raw) & (kAlignSlack - 1)) __trap();
    unsigned char* a_tile = smem_raw;
    unsigned char* b_all = a_tile + 2 * kAPanelBytes;  // panel 2 c + p: columns 128 c .., k 64 p ..
    auto* part = reinterpret_cast<float(*)[kRows]>(b_all + 2 * (c128 / kTile) * kPanelBytes);
    const int64_t nn = a.seq_len * a.seq_len, rows = a.batch_size * nn, tiles = (rows + kRows - 1) / kRows;
    const int chunks = c128 / kTile;
    for (int pnl = 0; pnl < 2 * chunks; ++pnl)
        load_panel(smem_u32(b_all + pnl * kPanelBytes), wo, kHidden, (int64_t)(pnl / 2) * kTile, c128, (pnl % 2) * kPanel);
    cp_async_commit();
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int64_t row0 = tile * kRows;
        output_rows<kRows>(a, out, gate, a_tile, part, row0, rows, nn);
        cp_async_wait<0>();  // to_out, on the first tile
        fence_to_async();
        __syncthreads();
        for (int chunk = 0; chunk < chunks; ++chunk) {
            Acc acc;
            zero(acc);
            panel_mma(acc, smem_u32(a_tile), smem_u32(b_all + 2 * chunk * kPanelBytes));
            panel_mma(acc, smem_u32(a_tile + kAPanelBytes), smem_u32(b_all + (2 * chunk + 1) * kPanelBytes));
            output_store(a, acc, row0, rows, chunk);
        }
        __syncthreads();  // a_tile is written again by the next tile's rows
    }
}

size_t align256(size_t v) { return (v + 255) / 256 * 256; }

// The SM count of the current device, asked once (a process runs its kernels on one device).
int sm_count()
{
    static const int sms = [] {
        int device = 0, n = 0;
        if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
            return 0;
        return n;
    }();
    return sms;
}


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
    const int64_t row_tiles = (rows + kTile - 1) / kTile, n_tiles = (N + kTile - 1) / kTile;
    // The ping-pong projection reads images written by the vector LayerNorm: whole row tiles.
    const bool pp = TRIMUL_PROJ_PP && TRIMUL_LN_VEC && dim == cp && (dim == 128 || dim == 256 || dim == 384);
    const bool cpp = TRIMUL_CONTRACT_PP && pp && N % 256 == 0;  // then L and R are panel images
    const int lr_image_n = cpp ? (int)N : 0;
    const size_t xn_bytes = (size_t)(pp ? row_tiles * kTile : rows) * cp * sizeof(f16);
    const size_t need = 5 * plane + wp_bytes + align256((size_t)c128 * kHidden * sizeof(f16)) + xn_bytes;
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
    constexpr int kOutputRows = TRIMUL_OUTPUT_ROWS;
    static_assert(kOutputRows == 64 || kOutputRows == 128, "output tiles of 64 or 128 rows");
    constexpr int kOutputSmem = 2 * kOutputRows * 128 + 2 * kPanelBytes + kAlignSlack;
    static const cudaError_t configured = [] {
        cudaError_t err = cudaSuccess;
        const auto allow = [&err](const void* kernel, int bytes) {
            if (err == cudaSuccess) err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        };
        allow((const void*)contract_kernel<true>, kContractSmem);
        allow((const void*)contract_kernel<false>, kContractSmem);
        allow((const void*)output_kernel<TRIMUL_OUTPUT_ROWS>, kOutputSmem);
        allow((const void*)project_gemm_kernel, kContractSmem);
        allow((const void*)contract_wide_kernel, kWideSmem);
        allow((const void*)output_resident_kernel, resident_smem(kResidentMaxDim));
        allow((const void*)contract_pp_kernel, kCpSmem);
        allow((const void*)project_pp_kernel<2>, PpShape<2>::kSmem);
        allow((const void*)project_pp_kernel<4>, PpShape<4>::kSmem);
        allow((const void*)project_pp_kernel<6>, PpShape<6>::kSmem);
        return err;
    }();
    if (configured != cudaSuccess) return (int)configured;

    prep_weights<<<132, 256, 0, stream>>>(*args, wp, wo, cp, c128, pp);
    if (row_tiles > 65535) return (int)cudaErrorInvalidValue;  // the projection grid's y
    f16* xn = reinterpret_cast<f16*>(ws + 5 * plane + wp_bytes + align256((size_t)c128 * kHidden * sizeof(f16)));
    const unsigned tiles = (unsigned)row_tiles;
    const unsigned ln_blocks = (unsigned)((rows + 31) / 32);  // 8 warps, up to 8 rows each: enough blocks for any batch
    constexpr int kLnRows = 8 * 4;  // rows per block of the vector kernel: 8 warps x 4 rows
    const unsigned ln_vec_blocks = (unsigned)((rows + kLnRows - 1) / kLnRows);
    if (pp && dim == 128)
        ln_vec_kernel<1, 4, true><<<ln_vec_blocks, kThreads, 0, stream>>>(*args, xn);
    else if (pp && dim == 256)
        ln_vec_kernel<2, 4, true><<<ln_vec_blocks, kThreads, 0, stream>>>(*args, xn);
    else if (pp)
        ln_vec_kernel<3, 4, true><<<ln_vec_blocks, kThreads, 0, stream>>>(*args, xn);
    else if (TRIMUL_LN_VEC && dim == 128)
        ln_vec_kernel<1, 4, false><<<ln_vec_blocks, kThreads, 0, stream>>>(*args, xn);
    else if (TRIMUL_LN_VEC && dim == 256)
        ln_vec_kernel<2, 4, false><<<ln_vec_blocks, kThreads, 0, stream>>>(*args, xn);
    else if (TRIMUL_LN_VEC && dim == 384)
        ln_vec_kernel<3, 4, false><<<ln_vec_blocks, kThreads, 0, stream>>>(*args, xn);
    else if (TRIMUL_LN_VEC && dim == 768)
        ln_vec_kernel<6, 4, false><<<ln_vec_blocks, kThreads, 0, stream>>>(*args, xn);
    else if (dim <= 128)
        ln_kernel<128><<<(unsigned)((rows + 63) / 64), kThreads, 0, stream>>>(*args, xn, cp);
    else if (dim <= 384)
        ln_kernel<384><<<ln_blocks, kThreads, 0, stream>>>(*args, xn, cp);
    else
        ln_kernel<768><<<(unsigned)((rows + 15) / 16), kThreads, 0, stream>>>(*args, xn, cp);
    if (pp) {
        const int sms = sm_count();
        if (sms <= 0) return (int)cudaErrorInvalidDevice;
        const unsigned grid = (unsigned)(row_tiles < sms ? row_tiles : sms);
        const auto* xi = reinterpret_cast<const unsigned char*>(xn);
        const auto* wi = reinterpret_cast<const unsigned char*>(wp);
        if (dim == 128)
            project_pp_kernel<2><<<grid, kPpThreads, PpShape<2>::kSmem, stream>>>(*args, xi, wi, left, right, gate, lr_image_n);
        else if (dim == 256)
            project_pp_kernel<4><<<grid, kPpThreads, PpShape<4>::kSmem, stream>>>(*args, xi, wi, left, right, gate, lr_image_n);
        else
            project_pp_kernel<6><<<grid, kPpThreads, PpShape<6>::kSmem, stream>>>(*args, xi, wi, left, right, gate, lr_image_n);
    } else {
        project_gemm_kernel<<<dim3(kProjChunks, tiles), kThreads, kContractSmem, stream>>>(*args, xn, wp, cp, left, right, gate);
    }
    const dim3 grid((unsigned)n_tiles, (unsigned)n_tiles, (unsigned)(B * kHidden));
    if (cpp) {
        const int sms = sm_count();
        if (sms <= 0) return (int)cudaErrorInvalidDevice;
        const int64_t tiles = B * kHidden * (N / 256) * (N / kTile);
        contract_pp_kernel<<<(unsigned)(tiles < sms ? tiles : sms), kPpThreads, kCpSmem, stream>>>(
            reinterpret_cast<const unsigned char*>(left), reinterpret_cast<const unsigned char*>(right), out, (int)N, tiles);
    } else if (TRIMUL_CONTRACT_WIDE && N % 8 == 0)
        contract_wide_kernel<<<dim3((unsigned)((N + kWide - 1) / kWide), (unsigned)n_tiles, (unsigned)(B * kHidden)), kThreads, kWideSmem,
                               stream>>>(left, right, out, (int)N);
    else if (N % 8 == 0)
        contract_kernel<true><<<grid, kThreads, kContractSmem, stream>>>(left, right, out, (int)N);
    else
        contract_kernel<false><<<grid, kThreads, kContractSmem, stream>>>(left, right, out, (int)N);
    if (TRIMUL_OUTPUT_RESIDENT && dim <= kResidentMaxDim) {
        const int smem = resident_smem(c128), sms = sm_count();
        // CTAs an SM, asked once per to_out size (c128 is 128, 256 or 384 here).
        static int per_sm_of[kResidentMaxDim / kTile + 1] = {};
        int& per_sm = per_sm_of[c128 / kTile];
        if (per_sm == 0)
            if (const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, output_resident_kernel, 128, smem); err != cudaSuccess)
                return (int)err;
        if (sms <= 0) return (int)cudaErrorInvalidDevice;
        const int64_t tiles64 = (rows + kResidentRows - 1) / kResidentRows, most = (int64_t)sms * (per_sm > 0 ? per_sm : 1);
        output_resident_kernel<<<(unsigned)(tiles64 < most ? tiles64 : most), 128, smem, stream>>>(*args, out, gate, wo, c128);
    } else {
        output_kernel<kOutputRows><<<(unsigned)((rows + kOutputRows - 1) / kOutputRows), 2 * kOutputRows, kOutputSmem, stream>>>(
            *args, out, gate, wo, c128);
    }
    return (int)cudaGetLastError();
}
