// GPU reference GQA paged decode: one block per (request, query head), float math.
//
// Each warp walks every kWarps-th token of the request with its own online softmax (lane l owns
// dims 4l..4l+3), and the warps' states are merged at the end.  That is the textbook algorithm
// with nothing clever in it, so it is easy to check against reference.cpp; splitting the tokens
// over the warps only keeps 60K-token requests from taking a single warp's latency per token.
#include "ks_task.h"

#include <climits>
#include <math_constants.h>

namespace {

constexpr int kQoHeads = (int)KS_NUM_QO_HEADS;
constexpr int kKvHeads = (int)KS_NUM_KV_HEADS;
constexpr int kGroup = kQoHeads / kKvHeads;
constexpr int kDim = (int)KS_HEAD_DIM;
constexpr int kWarps = 8;
constexpr int kDimsPerLane = kDim / 32;
static_assert(kDim == 32 * kDimsPerLane, "each lane owns a whole number of dims");

__device__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void __launch_bounds__(kWarps * 32)
gqa_decode_reference_kernel(KsArgs a)
{
    const int64_t b = blockIdx.x / kQoHeads;
    const int h = (int)(blockIdx.x % kQoHeads);
    const int kv_head = h / kGroup;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int64_t begin = a.kv_indptr[b];
    const int64_t end = a.kv_indptr[b + 1];

    float q[kDimsPerLane];
    for (int j = 0; j < kDimsPerLane; ++j)
        q[j] = ks_to_float(a.q[(b * kQoHeads + h) * kDim + lane * kDimsPerLane + j]);

    // Online softmax: m is the running max, l the running sum of exp(logit - m), and acc the
    // running sum of exp(logit - m) * V; all three are rescaled whenever m grows.
    float m = -CUDART_INF_F, l = 0.0f;
    float acc[kDimsPerLane] = {};
    for (int64_t t = begin + warp; t < end; t += kWarps) {
        const int64_t row = ((int64_t)a.kv_indices[t] * kKvHeads + kv_head) * kDim + lane * kDimsPerLane;
        float dot = 0.0f;
        for (int j = 0; j < kDimsPerLane; ++j) dot += q[j] * ks_to_float(a.k_cache[row + j]);
        const float logit = warp_sum(dot) * a.sm_scale;

        const float m_new = fmaxf(m, logit);
        const float correction = expf(m - m_new);  // 0 on the first token, since m = -inf
        const float p = expf(logit - m_new);
        l = l * correction + p;
        for (int j = 0; j < kDimsPerLane; ++j)
            acc[j] = acc[j] * correction + p * ks_to_float(a.v_cache[row + j]);
        m = m_new;
    }

    __shared__ float s_m[kWarps], s_l[kWarps];
    __shared__ float s_acc[kWarps][kDim];
    if (lane == 0) {
        s_m[warp] = m;
        s_l[warp] = l;
    }
    for (int j = 0; j < kDimsPerLane; ++j) s_acc[warp][lane * kDimsPerLane + j] = acc[j];
    __syncthreads();

    // Merge the warps: rescale each to the common max.  A warp that saw no token has m = -inf
    // and weight 0; when no warp saw one the request is empty.
    float m_all = -CUDART_INF_F;
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, s_m[w]);
    float weight[kWarps];
    float l_all = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
        weight[w] = s_m[w] == -CUDART_INF_F ? 0.0f : expf(s_m[w] - m_all);
        l_all += s_l[w] * weight[w];
    }

    ks_bf16_t* out = a.output + (b * kQoHeads + h) * kDim;
    for (int d = threadIdx.x; d < kDim; d += blockDim.x) {
        float o = 0.0f;
        for (int w = 0; w < kWarps; ++w) o += s_acc[w][d] * weight[w];
        out[d] = ks_from_float_bf16(l_all > 0.0f ? o / l_all : 0.0f);
    }
    if (threadIdx.x == 0)
        a.lse[b * kQoHeads + h] = l_all > 0.0f ? (m_all + logf(l_all)) * CUDART_L2E_F : -CUDART_INF_F;
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/,
                      ks_stream_t stream)
{
    if (!args || args->batch_size < 0 || args->len_indptr != args->batch_size + 1)
        return (int)cudaErrorInvalidValue;
    if (args->batch_size == 0) return 0;
    if (args->batch_size > INT_MAX / kQoHeads) return (int)cudaErrorInvalidValue;
    if (!args->q || !args->k_cache || !args->v_cache || !args->kv_indptr || !args->output ||
        !args->lse || (args->num_kv_indices > 0 && !args->kv_indices))
        return (int)cudaErrorInvalidValue;

    const unsigned blocks = (unsigned)(args->batch_size * kQoHeads);
    gqa_decode_reference_kernel<<<blocks, kWarps * 32, 0, stream>>>(*args);
    return (int)cudaGetLastError();
}
