// GPU reference causal MLA paged prefill: one block per (query row, head), float math.
//
// The block finds its request by a binary search over qo_indptr, then its warps walk every
// kWarps-th visible KV token with their own online softmax (lane l owns latent dims 16l .. 16l+15
// and RoPE dims 2l, 2l+1) and merge at the end.  Query row i of a request sees KV positions
// 0 .. kv_len - q_len + i (bottom-right aligned).  Checked against reference.cpp on every
// workload the host can run.
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

__global__ void __launch_bounds__(kWarps * 32) mla_prefill_reference_kernel(KsArgs a)
{
    const int64_t row = blockIdx.x / kHeads;
    const int h = (int)(blockIdx.x % kHeads);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    // The request owning this row: the last b with qo_indptr[b] <= row (empty requests skipped).
    int64_t lo = 0, hi = a.len_indptr - 2;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (a.qo_indptr[mid] <= row) lo = mid; else hi = mid - 1;
    }
    const int64_t b = lo;
    const int64_t q_len = a.qo_indptr[b + 1] - a.qo_indptr[b];
    const int64_t kv_begin = a.kv_indptr[b], kv_len = a.kv_indptr[b + 1] - kv_begin;
    const int64_t visible = kv_len - q_len + (row - a.qo_indptr[b]) + 1;

    float qn[kCkvPerLane], qp[kKpePerLane];
    for (int j = 0; j < kCkvPerLane; ++j) qn[j] = ks_to_float(a.q_nope[(row * kHeads + h) * kCkv + lane * kCkvPerLane + j]);
    for (int j = 0; j < kKpePerLane; ++j) qp[j] = ks_to_float(a.q_pe[(row * kHeads + h) * kKpe + lane * kKpePerLane + j]);

    float m = -CUDART_INF_F, l = 0.0f, acc[kCkvPerLane] = {};
    for (int64_t t = warp; t < visible; t += kWarps) {
        const int64_t page = a.kv_indices[kv_begin + t];
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
        const float correction = expf(m - m_new);
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

    float m_all = -CUDART_INF_F, l_all = 0.0f, weight[kWarps];
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, s_m[w]);
    for (int w = 0; w < kWarps; ++w) {
        weight[w] = s_m[w] == -CUDART_INF_F ? 0.0f : expf(s_m[w] - m_all);
        l_all += s_l[w] * weight[w];
    }
    ks_bf16_t* out = a.output + (row * kHeads + h) * kCkv;
    for (int d = threadIdx.x; d < kCkv; d += blockDim.x) {
        float o = 0.0f;
        for (int w = 0; w < kWarps; ++w) o += s_acc[w][d] * weight[w];
        out[d] = ks_from_float_bf16(l_all > 0.0f ? o / l_all : 0.0f);
    }
    if (threadIdx.x == 0)
        a.lse[row * kHeads + h] = l_all > 0.0f ? (m_all + logf(l_all)) * CUDART_L2E_F : -CUDART_INF_F;
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/, ks_stream_t stream)
{
    if (!args || args->len_indptr < 2 || !args->qo_indptr || !args->kv_indptr) return (int)cudaErrorInvalidValue;
    if (args->total_q == 0) return 0;
    if (args->total_q > INT_MAX / kHeads) return (int)cudaErrorInvalidValue;
    if (!args->q_nope || !args->q_pe || !args->ckv_cache || !args->kpe_cache || !args->output || !args->lse ||
        (args->num_kv_indices > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;
    mla_prefill_reference_kernel<<<(unsigned)(args->total_q * kHeads), kWarps * 32, 0, stream>>>(*args);
    return (int)cudaGetLastError();
}
