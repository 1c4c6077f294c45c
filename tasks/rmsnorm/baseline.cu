// Hand-written RMSNorm baseline for H200 (sm_90a).
//
// The op is purely memory bound (2 bytes read + 2 written per element), so the design is about
// moving bytes: one block per row, 128-bit accesses of 8 bf16, and the row held in registers
// between the reduction and the scaling pass so that x is read from DRAM exactly once.
// Rows that are not 16-byte friendly (hidden % 8 != 0, misaligned pointers) or too long for
// registers take a simple scalar two-pass kernel instead.
#include "ks_task.h"

#include <climits>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kVec = 8;               // bf16 elements per 128-bit access
constexpr int kMaxThreads = 1024;
constexpr int kMaxVpt = 4;            // vectors per thread; 8 would spill under the 64-register cap
constexpr int kGenericThreads = 512;

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Every thread gets the total, which saves a second barrier for a broadcast.  Needs
// blockDim.x % 32 == 0 and all threads of the block to take part.
__device__ __forceinline__ float block_sum(float v, float* warp_sums)
{
    v = warp_sum(v);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
    return warp_sum(v);
}

// bf16 -> f32 is exact as a 16-bit shift; doing it on the packed word avoids unpacking moves.
__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }

__device__ __forceinline__ float sum_sq8(uint4 v)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        s = fmaf(bf16_lo(w[i]), bf16_lo(w[i]), s);
        s = fmaf(bf16_hi(w[i]), bf16_hi(w[i]), s);
    }
    return s;
}

// Same multiplication order as the reference: (x * inv_rms) * weight.
__device__ __forceinline__ uint32_t scale2(uint32_t x, uint32_t w, float r)
{
    const __nv_bfloat162 h =
        __floats2bfloat162_rn(bf16_lo(x) * r * bf16_lo(w), bf16_hi(x) * r * bf16_hi(w));
    uint32_t u;
    memcpy(&u, &h, sizeof(u));
    return u;
}

__device__ __forceinline__ uint4 scale8(uint4 x, uint4 w, float r)
{
    return make_uint4(scale2(x.x, w.x, r), scale2(x.y, w.y, r), scale2(x.z, w.z, r),
                      scale2(x.w, w.w, r));
}

// Thread t owns vectors t, t + blockDim, ..., so each of the VPT loads is fully coalesced.
template <int VPT>
__global__ void __launch_bounds__(kMaxThreads)
rmsnorm_vec_kernel(const uint4* __restrict__ x, const uint4* __restrict__ weight,
                   uint4* __restrict__ out, int nvec, float inv_hidden, float eps)
{
    // Fetching the weights together with x hides their latency behind the reduction, which
    // matters for the few-row (small VPT) launches.  With many rows other blocks hide it, and
    // loading them late saves the registers (64 at most for a 1024-thread block).
    constexpr bool kEarlyWeight = VPT <= 2;
    __shared__ float warp_sums[32];
    const int64_t base = (int64_t)blockIdx.x * nvec;

    uint4 xv[VPT], wv[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        xv[k] = make_uint4(0u, 0u, 0u, 0u);  // idle slots add nothing to the sum of squares
        wv[k] = xv[k];
        if (i < nvec) {
            xv[k] = __ldg(x + base + i);
            if (kEarlyWeight) wv[k] = __ldg(weight + i);
        }
    }

    float sum_sq = 0.0f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) sum_sq += sum_sq8(xv[k]);
    sum_sq = block_sum(sum_sq, warp_sums);
    const float inv_rms = rsqrtf(sum_sq * inv_hidden + eps);

#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < nvec) {
            if (!kEarlyWeight) wv[k] = __ldg(weight + i);
            out[base + i] = scale8(xv[k], wv[k], inv_rms);
        }
    }
}

// Fallback for any shape/alignment: scalar loads, x re-read in the second pass (from L1/L2).
__global__ void __launch_bounds__(kGenericThreads)
rmsnorm_generic_kernel(const ks_bf16_t* __restrict__ x, const ks_bf16_t* __restrict__ weight,
                       ks_bf16_t* __restrict__ out, int64_t hidden, float inv_hidden, float eps)
{
    __shared__ float warp_sums[32];
    const ks_bf16_t* xr = x + (int64_t)blockIdx.x * hidden;
    ks_bf16_t* yr = out + (int64_t)blockIdx.x * hidden;

    float sum_sq = 0.0f;
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
        const float v = __bfloat162float(xr[j]);
        sum_sq = fmaf(v, v, sum_sq);
    }
    sum_sq = block_sum(sum_sq, warp_sums);
    const float inv_rms = rsqrtf(sum_sq * inv_hidden + eps);

    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x)
        yr[j] = __float2bfloat16_rn(__bfloat162float(xr[j]) * inv_rms * __bfloat162float(weight[j]));
}

template <int VPT>
void launch_vec(const KsArgs* a, int nvec, float inv_hidden, cudaStream_t stream)
{
    const int threads = (nvec + VPT - 1) / VPT;
    const int block = (threads + 31) / 32 * 32;  // block_sum needs whole warps
    rmsnorm_vec_kernel<VPT><<<(unsigned)a->batch_size, block, 0, stream>>>(
        reinterpret_cast<const uint4*>(a->hidden_states), reinterpret_cast<const uint4*>(a->weight),
        reinterpret_cast<uint4*>(a->output), nvec, inv_hidden, a->eps);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Smallest vectors-per-thread whose block fits under max_threads; 0 if none does.
int pick_vpt(int64_t nvec, int64_t max_threads)
{
    for (int vpt = 1; vpt <= kMaxVpt; vpt *= 2)
        if ((nvec + vpt - 1) / vpt <= max_threads) return vpt;
    return 0;
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/,
                      ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->hidden_size < 0) return (int)cudaErrorInvalidValue;
    const int64_t batch = args->batch_size;
    const int64_t hidden = args->hidden_size;
    if (batch == 0 || hidden == 0) return 0;
    if (!args->hidden_states || !args->weight || !args->output) return (int)cudaErrorInvalidValue;
    if (batch > INT_MAX) return (int)cudaErrorInvalidValue;  // one block per row: grid.x limit

    const float inv_hidden = (float)(1.0 / (double)hidden);
    const bool vec_ok = hidden % kVec == 0 && aligned16(args->hidden_states) &&
                        aligned16(args->weight) && aligned16(args->output);
    const int64_t nvec = hidden / kVec;

    int vpt = 0;
    if (vec_ok && nvec <= (int64_t)kMaxThreads * kMaxVpt) {
        int device = 0, sms = 0;
        cudaError_t err = cudaGetDevice(&device);
        if (err == cudaSuccess)
            err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) return (int)err;
        // Few rows: spread each row over as many threads as possible, since latency of a single
        // row is all there is.  Many rows: the SMs are full anyway, and ~256-thread blocks with
        // several vectors per thread keep more bytes in flight per barrier and stagger better.
        const int64_t preferred = batch >= 2 * (int64_t)sms ? 256 : kMaxThreads;
        vpt = pick_vpt(nvec, preferred);
        if (vpt == 0) vpt = pick_vpt(nvec, kMaxThreads);
    }

    switch (vpt) {
    case 1: launch_vec<1>(args, (int)nvec, inv_hidden, stream); break;
    case 2: launch_vec<2>(args, (int)nvec, inv_hidden, stream); break;
    case 4: launch_vec<4>(args, (int)nvec, inv_hidden, stream); break;
    default: {
        const int block = hidden >= kGenericThreads ? kGenericThreads : (int)((hidden + 31) / 32 * 32);
        rmsnorm_generic_kernel<<<(unsigned)batch, block, 0, stream>>>(
            args->hidden_states, args->weight, args->output, hidden, inv_hidden, args->eps);
    }
    }
    return (int)cudaGetLastError();
}
