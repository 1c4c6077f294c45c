// Ground-truth GQA paged decode on the host.
//
// Everything is computed in double so that the only rounding that matters is the final
// conversion of the output to bf16 (and of lse to float).  The softmax takes two passes, the
// maximum first, so that no exponent can overflow however large the logits are.  Speed is not
// a goal, but the largest workloads hold ~60K tokens x 32 heads, so the cost stays
// O(tokens * heads * head_dim) and the (request, head) pairs run in parallel.
#include "ks_task.h"

#include <cmath>
#include <limits>
#include <vector>

namespace {

constexpr int64_t kQoHeads = KS_NUM_QO_HEADS;
constexpr int64_t kKvHeads = KS_NUM_KV_HEADS;
constexpr int64_t kGroup = kQoHeads / kKvHeads;  // query heads sharing one KV head
constexpr int64_t kDim = KS_HEAD_DIM;
constexpr double kLn2 = 0.69314718055994530941723212145817656807550013436026;

// One (request, query head).  `logits` is scratch owned by the calling thread, so that it is
// allocated once per thread rather than once per head.
void attend_one_head(const KsArgs& a, int64_t b, int64_t h, std::vector<double>& logits)
{
    const int64_t begin = a.kv_indptr[b];
    const int64_t end = a.kv_indptr[b + 1];
    const int64_t len = end - begin;
    ks_bf16_t* out = a.output + (b * kQoHeads + h) * kDim;
    float* lse = a.lse + b * kQoHeads + h;

    if (len <= 0) {
        for (int64_t d = 0; d < kDim; ++d) out[d] = ks_from_float_bf16(0.0f);
        *lse = -std::numeric_limits<float>::infinity();
        return;
    }

    double q[kDim];
    const ks_bf16_t* q_row = a.q + (b * kQoHeads + h) * kDim;
    for (int64_t d = 0; d < kDim; ++d) q[d] = ks_to_float(q_row[d]);

    // Row offset of this head's KV head inside one page: [page][page_size=1][kv_head][dim].
    const int64_t kv_head = h / kGroup;
    auto kv_row = [&](const ks_bf16_t* cache, int64_t t) {
        const int64_t page = a.kv_indices[t];
        return cache + (page * kKvHeads + kv_head) * kDim;
    };

    // Pass 1: the scaled logits and their maximum.
    logits.resize((size_t)len);
    double max_logit = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < len; ++i) {
        const ks_bf16_t* k = kv_row(a.k_cache, begin + i);
        double dot = 0.0;
        for (int64_t d = 0; d < kDim; ++d) dot += q[d] * (double)ks_to_float(k[d]);
        logits[(size_t)i] = (double)a.sm_scale * dot;
        if (logits[(size_t)i] > max_logit) max_logit = logits[(size_t)i];
    }

    // Pass 2: the softmax weights relative to the maximum, applied to V.
    double acc[kDim] = {};
    double sum = 0.0;
    for (int64_t i = 0; i < len; ++i) {
        const double w = std::exp(logits[(size_t)i] - max_logit);
        sum += w;
        const ks_bf16_t* v = kv_row(a.v_cache, begin + i);
        for (int64_t d = 0; d < kDim; ++d) acc[d] += w * (double)ks_to_float(v[d]);
    }

    for (int64_t d = 0; d < kDim; ++d) out[d] = ks_from_float_bf16((float)(acc[d] / sum));
    // lse is base 2: log2(sum_t exp(logit_t)) = (max + ln(sum of shifted weights)) / ln 2.
    *lse = (float)((max_logit + std::log(sum)) / kLn2);
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/,
                      ks_stream_t /*stream*/)
{
    if (!args || args->batch_size < 0 || args->len_indptr != args->batch_size + 1) return 1;
    const int64_t batch = args->batch_size;
    if (batch == 0) return 0;
    if (!args->q || !args->k_cache || !args->v_cache || !args->kv_indptr || !args->output ||
        !args->lse)
        return 1;
    if (args->num_kv_indices > 0 && !args->kv_indices) return 1;

    const KsArgs& a = *args;
    const int64_t pairs = batch * kQoHeads;
    // Requests differ in length, so hand out (request, head) pairs dynamically.
#pragma omp parallel
    {
        std::vector<double> logits;
#pragma omp for schedule(dynamic, 4)
        for (int64_t i = 0; i < pairs; ++i) attend_one_head(a, i / kQoHeads, i % kQoHeads, logits);
    }
    return 0;
}
