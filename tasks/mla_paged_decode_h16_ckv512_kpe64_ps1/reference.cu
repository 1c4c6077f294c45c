// GPU reference MLA paged decode: one block per (request, head), float math, nothing clever.
//
// Each of the block's warps walks every kWarps-th token of the request with its own online
// softmax; lane l owns latent dims 16l .. 16l+15 and RoPE dims 2l, 2l+1.  The warps' states are
// merged at the end.  Checked against reference.cpp on every workload the host can run.
#include "ks_task.h"

#include <climits>
#include <math_constants.h>

namespace {

constexpr int kHeads = (int)KS_NUM_QO_HEADS;
constexpr int kCkv = (int)KS_HEAD_DIM_CKV;
constexpr int kKpe = (int)KS_HEAD_DIM_KPE;
constexpr int kWarps = 8;
constexpr int kCkvPerLane = kCkv / 32;
constexpr int kKpePerLane = kKpe / 32;
static_assert(kCkv == 32 * kCkvPerLane && kKpe == 32 * kKpePerLane, "each lane owns whole dims");

__device__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void __launch_bounds__(kWarps * 32) mla_decode_reference_kernel(KsArgs a)
{
    const int64_t b = blockIdx.x / kHeads;
    const int h = (int)(blockIdx.x % kHeads);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t begin = a.kv_indptr[b], end = a.kv_indptr[b + 1];

    float qn[kCkvPerLane], qp[kKpePerLane];
    for (int j = 0; j < kCkvPerLane; ++j) qn[j] = ks_to_float(a.q_nope[(b * kHeads + h) * kCkv + lane * kCkvPerLane + j]);
    for (int j = 0; j < kKpePerLane; ++j) qp[j] = ks_to_float(a.q_pe[(b * kHeads + h) * kKpe + lane * kKpePerLane + j]);

    // Online softmax: m the running max, l the running sum of exp(logit - m), acc the running
    // sum of exp(logit - m) * ckv; all three rescaled whenever m grows.
    float m = -CUDART_INF_F, l = 0.0f, acc[kCkvPerLane] = {};
    for (int64_t t = begin + warp; t < end; t += kWarps) {
        const int64_t page = a.kv_indices[t];
        const ks_bf16_t* ckv = a.ckv_cache + page * kCkv + lane * kCkvPerLane;
        const ks_bf16_t* kpe = a.kpe_cache + page * kKpe + lane * kKpePerLane;
        float v[kCkvPerLane], dot = 0.0f;
        for (int j = 0; j < kCkvPerLane; ++j) {
            v[j] = ks_to_float(ckv[j]);
            dot += qn[j] * v[j];
        }
        for (int j = 0; j < kKpePerLane; ++j) dot += qp[j] * ks_to_float(kpe[j]);
        const float logit = warp_sum(dot) * a.sm_scale;
        const float m_new = fmaxf(m, logit);
        const float correction = expf(m - m_new);  // 0 on the first token, since m = -inf
        const float p = expf(logit - m_new);
        l = l * correction + p;
        for (int j = 0; j < kCkvPerLane; ++j) acc[j] = acc[j] * correction + p * v[j];
        m = m_new;
    }

    __shared__ float s_m[kWarps], s_l[kWarps];
    __shared__ float s_acc[kWarps][kCkv];
    if (lane == 0) {
        s_m[warp] = m;
        s_l[warp] = l;
    }
    for (int j = 0; j < kCkvPerLane; ++j) s_acc[warp][lane * kCkvPerLane + j] = acc[j];
    __syncthreads();

    // Merge the warps at the common max; a warp that saw no token has weight 0.
    float m_all = -CUDART_INF_F, l_all = 0.0f, weight[kWarps];
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, s_m[w]);
    for (int w = 0; w < kWarps; ++w) {
        weight[w] = s_m[w] == -CUDART_INF_F ? 0.0f : expf(s_m[w] - m_all);
        l_all += s_l[w] * weight[w];
    }
    ks_bf16_t* out = a.output + (b * kHeads + h) * kCkv;
    for (int d = threadIdx.x; d < kCkv; d += blockDim.x) {
        float o = 0.0f;
        for (int w = 0; w < kWarps; ++w) o += s_acc[w][d] * weight[w];
        out[d] = ks_from_float_bf16(l_all > 0.0f ? o / l_all : 0.0f);
    }
    if (threadIdx.x == 0)
        a.lse[b * kHeads + h] = l_all > 0.0f ? (m_all + logf(l_all)) * CUDART_L2E_F : -CUDART_INF_F;
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/, ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->len_indptr != args->batch_size + 1) return (int)cudaErrorInvalidValue;
    if (args->batch_size == 0) return 0;
    if (args->batch_size > INT_MAX / kHeads) return (int)cudaErrorInvalidValue;
    if (!args->q_nope || !args->q_pe || !args->ckv_cache || !args->kpe_cache || !args->kv_indptr ||
        !args->output || !args->lse || (args->num_kv_indices > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;
    mla_decode_reference_kernel<<<(unsigned)(args->batch_size * kHeads), kWarps * 32, 0, stream>>>(*args);
    return (int)cudaGetLastError();
}
