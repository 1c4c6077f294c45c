// GPU reference FP8 block-scale MoE: plain fp32 kernels, written to be checked, not to be fast.
//
//   1. one block per token: the DeepSeek-V3 routing (sigmoid, biased group scores, 4 of 8
//      groups, 8 experts, normalised and scaled weights) into the workspace;
//   2. one block per (token, routing slot, 64 intermediate columns), a warp per column: the up
//      and gate rows of W1 dotted with the dequantised token (lanes stride the hidden dims, so
//      the fp8 rows are read coalesced), then C = silu(gate) * up into the workspace;
//   3. one block per (token, 64 hidden columns), a warp per column: W2 rows dotted with C for
//      each of the token's local slots, weighted and summed, then written as bf16.
// Checked against reference.cpp on the workloads the host can compute.
#include "ks_task.h"

#include <climits>
#include <math_constants.h>

namespace {

constexpr int kExperts = (int)KS_NUM_EXPERTS;
constexpr int kLocal = (int)KS_NUM_LOCAL_EXPERTS;
constexpr int kHidden = (int)KS_HIDDEN_SIZE;
constexpr int kInter = (int)KS_INTERMEDIATE_SIZE;
constexpr int kHiddenBlocks = (int)KS_NUM_HIDDEN_BLOCKS;
constexpr int kInterBlocks = (int)KS_NUM_INTERMEDIATE_BLOCKS;
constexpr int kGemm1Blocks = (int)KS_NUM_GEMM1_OUT_BLOCKS;
constexpr int kGroups = 8, kGroupSize = kExperts / kGroups, kKeptGroups = 4, kTopK = 8;
constexpr int kBlock = 128;
constexpr int kColumns = 64;  // output columns per block of kernels 2 and 3, 8 per warp
static_assert(kExperts == 256 && kInter % kColumns == 0 && kHidden % kColumns == 0, "tiling");

__global__ void __launch_bounds__(kExperts) route_kernel(KsArgs a, int* ids, float* weights)
{
    __shared__ float s[kExperts], biased[kExperts], group_score[kGroups];
    const int64_t t = blockIdx.x;
    const int e = threadIdx.x;
    s[e] = 1.0f / (1.0f + expf(-a.routing_logits[t * kExperts + e]));
    biased[e] = s[e] + ks_to_float(a.routing_bias[e]);
    __syncthreads();
    if (e < kGroups) {
        float top0 = -CUDART_INF_F, top1 = -CUDART_INF_F;
        for (int i = e * kGroupSize; i < (e + 1) * kGroupSize; ++i) {
            const float v = biased[i];
            if (v > top0) {
                top1 = top0;
                top0 = v;
            } else if (v > top1) {
                top1 = v;
            }
        }
        group_score[e] = top0 + top1;
    }
    __syncthreads();
    if (e != 0) return;
    bool kept[kGroups] = {};
    for (int n = 0; n < kKeptGroups; ++n) {
        int best = -1;
        for (int g = 0; g < kGroups; ++g)
            if (!kept[g] && (best < 0 || group_score[g] > group_score[best])) best = g;
        kept[best] = true;
    }
    int chosen[kTopK];
    float sum = 0.0f;
    for (int k = 0; k < kTopK; ++k) {
        int best = -1;
        for (int i = 0; i < kExperts; ++i) {
            bool taken = false;
            for (int j = 0; j < k; ++j) taken |= chosen[j] == i;
            if (kept[i / kGroupSize] && !taken && (best < 0 || biased[i] > biased[best])) best = i;
        }
        chosen[k] = best;
        sum += s[best];
    }
    for (int k = 0; k < kTopK; ++k) {
        ids[t * kTopK + k] = chosen[k];
        weights[t * kTopK + k] = s[chosen[k]] / (sum + 1e-20f) * a.routed_scaling_factor;
    }
}

// Lanes stride the row: lane l takes elements 4l .. 4l+3 of every 128-element block.
__device__ float scaled_row_dot(const float* x, const ks_f8e4m3_t* w, const float* scale, int n)
{
    const int lane = threadIdx.x & 31;
    float total = 0.0f;
    for (int b = 0; b < n / kBlock; ++b) {
        float part = 0.0f;
        for (int j = 0; j < 4; ++j) {
            const int h = b * kBlock + 4 * lane + j;
            part += x[h] * ks_to_float(w[h]);
        }
        total += part * scale[b];
    }
    for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_xor_sync(0xffffffffu, total, offset);
    return total;
}

__global__ void __launch_bounds__(256) gemm1_kernel(KsArgs a, const int* ids, float* c)
{
    __shared__ float act[kHidden];
    const int64_t t = blockIdx.x / kTopK;
    const int slot = blockIdx.x % kTopK;
    const int le = ids[t * kTopK + slot] - a.local_expert_offset;
    if (le < 0 || le >= kLocal) return;  // another rank's expert
    for (int h = threadIdx.x; h < kHidden; h += blockDim.x)
        act[h] = ks_to_float(a.hidden_states[t * kHidden + h]) * a.hidden_states_scale[(int64_t)(h / kBlock) * a.seq_len + t];
    __syncthreads();
    const ks_f8e4m3_t* w1 = a.gemm1_weights + (int64_t)le * (2 * kInter) * kHidden;
    const float* s1 = a.gemm1_weights_scale + (int64_t)le * kGemm1Blocks * kHiddenBlocks;
    const int warp = threadIdx.x / 32;
    for (int n = 0; n < kColumns / 8; ++n) {
        const int i = blockIdx.y * kColumns + warp * (kColumns / 8) + n;
        const float up = scaled_row_dot(act, w1 + (int64_t)i * kHidden, s1 + (i / kBlock) * kHiddenBlocks, kHidden);
        const int gi = kInter + i;  // the gate is the second half
        const float gate = scaled_row_dot(act, w1 + (int64_t)gi * kHidden, s1 + (gi / kBlock) * kHiddenBlocks, kHidden);
        if ((threadIdx.x & 31) == 0) c[(t * kTopK + slot) * kInter + i] = gate / (1.0f + expf(-gate)) * up;
    }
}

__global__ void __launch_bounds__(256) gemm2_kernel(KsArgs a, const int* ids, const float* weights, const float* c)
{
    __shared__ float ci[kInter];
    const int64_t t = blockIdx.x;
    const int warp = threadIdx.x / 32;
    float acc[kColumns / 8] = {};
    for (int slot = 0; slot < kTopK; ++slot) {
        const int le = ids[t * kTopK + slot] - a.local_expert_offset;
        if (le < 0 || le >= kLocal) continue;  // the same for every thread of the block
        __syncthreads();
        for (int i = threadIdx.x; i < kInter; i += blockDim.x) ci[i] = c[(t * kTopK + slot) * kInter + i];
        __syncthreads();
        const ks_f8e4m3_t* w2 = a.gemm2_weights + (int64_t)le * kHidden * kInter;
        const float* s2 = a.gemm2_weights_scale + (int64_t)le * kHiddenBlocks * kInterBlocks;
        const float w = weights[t * kTopK + slot];
        for (int n = 0; n < kColumns / 8; ++n) {
            const int h = blockIdx.y * kColumns + warp * (kColumns / 8) + n;
            acc[n] += w * scaled_row_dot(ci, w2 + (int64_t)h * kInter, s2 + (h / kBlock) * kInterBlocks, kInter);
        }
    }
    if ((threadIdx.x & 31) == 0)
        for (int n = 0; n < kColumns / 8; ++n)
            a.output[t * kHidden + blockIdx.y * kColumns + warp * (kColumns / 8) + n] = ks_from_float_bf16(acc[n]);
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* workspace, size_t workspace_bytes, ks_stream_t stream)
{
    if (!args || args->seq_len < 0) return (int)cudaErrorInvalidValue;
    const int64_t T = args->seq_len;
    if (T == 0) return 0;
    const size_t need = (size_t)T * kTopK * (2 + kInter) * sizeof(float);
    if (!workspace || workspace_bytes < need || T * kTopK > INT_MAX) return (int)cudaErrorInvalidValue;
    int* ids = static_cast<int*>(workspace);
    float* weights = reinterpret_cast<float*>(ids + T * kTopK);
    float* c = weights + T * kTopK;
    route_kernel<<<(unsigned)T, kExperts, 0, stream>>>(*args, ids, weights);
    gemm1_kernel<<<dim3((unsigned)(T * kTopK), kInter / kColumns), 256, 0, stream>>>(*args, ids, c);
    gemm2_kernel<<<dim3((unsigned)T, kHidden / kColumns), 256, 0, stream>>>(*args, ids, weights, c);
    return (int)cudaGetLastError();
}
