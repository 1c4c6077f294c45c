// Ground-truth MLA paged decode on the host (absorbed layout).
//
// Everything is computed in double so that the only rounding that matters is the final
// conversion of the output to bf16 (and of lse to float).  The softmax takes two passes, the
// maximum first, so no exponent can overflow however large the logits are.  A request's 16
// heads read the same latent rows, so they are converted to double once per request and shared.
#include "ks_task.h"

#include <cmath>
#include <limits>
#include <vector>

namespace {

constexpr int64_t kHeads = KS_NUM_QO_HEADS;
constexpr int64_t kCkv = KS_HEAD_DIM_CKV;  // latent dims: keys' first part and the values
constexpr int64_t kKpe = KS_HEAD_DIM_KPE;  // RoPE key dims
constexpr double kLn2 = 0.69314718055994530941723212145817656807550013436026;

// One request: its tokens' latents in double, then each head's two-pass softmax over them.
void attend_request(const KsArgs& a, int64_t b)
{
    const int64_t begin = a.kv_indptr[b];
    const int64_t len = a.kv_indptr[b + 1] - begin;
    if (len <= 0) {
        for (int64_t i = 0; i < kHeads * kCkv; ++i) a.output[b * kHeads * kCkv + i] = ks_from_float_bf16(0.0f);
        for (int64_t h = 0; h < kHeads; ++h) a.lse[b * kHeads + h] = -std::numeric_limits<float>::infinity();
        return;
    }

    std::vector<double> ckv((size_t)(len * kCkv)), kpe((size_t)(len * kKpe));
    for (int64_t t = 0; t < len; ++t) {
        const int64_t page = a.kv_indices[begin + t];
        for (int64_t d = 0; d < kCkv; ++d) ckv[(size_t)(t * kCkv + d)] = ks_to_float(a.ckv_cache[page * kCkv + d]);
        for (int64_t d = 0; d < kKpe; ++d) kpe[(size_t)(t * kKpe + d)] = ks_to_float(a.kpe_cache[page * kKpe + d]);
    }

    std::vector<double> logits((size_t)len);
    for (int64_t h = 0; h < kHeads; ++h) {
        const ks_bf16_t* qn = a.q_nope + (b * kHeads + h) * kCkv;
        const ks_bf16_t* qp = a.q_pe + (b * kHeads + h) * kKpe;
        double max_logit = -std::numeric_limits<double>::infinity();
        for (int64_t t = 0; t < len; ++t) {
            double dot = 0.0;
            for (int64_t d = 0; d < kCkv; ++d) dot += (double)ks_to_float(qn[d]) * ckv[(size_t)(t * kCkv + d)];
            for (int64_t d = 0; d < kKpe; ++d) dot += (double)ks_to_float(qp[d]) * kpe[(size_t)(t * kKpe + d)];
            logits[(size_t)t] = (double)a.sm_scale * dot;
            if (logits[(size_t)t] > max_logit) max_logit = logits[(size_t)t];
        }
        std::vector<double> acc((size_t)kCkv, 0.0);
        double sum = 0.0;
        for (int64_t t = 0; t < len; ++t) {
            const double w = std::exp(logits[(size_t)t] - max_logit);
            sum += w;
            for (int64_t d = 0; d < kCkv; ++d) acc[(size_t)d] += w * ckv[(size_t)(t * kCkv + d)];
        }
        ks_bf16_t* out = a.output + (b * kHeads + h) * kCkv;
        for (int64_t d = 0; d < kCkv; ++d) out[d] = ks_from_float_bf16((float)(acc[(size_t)d] / sum));
        // Base 2: log2(sum_t exp(logit_t)) = (max + ln(sum of shifted weights)) / ln 2.
        a.lse[b * kHeads + h] = (float)((max_logit + std::log(sum)) / kLn2);
    }
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/,
                      ks_stream_t /*stream*/)
{
    if (!args || args->batch_size < 0 || args->len_indptr != args->batch_size + 1) return 1;
    if (args->batch_size == 0) return 0;
    if (!args->q_nope || !args->q_pe || !args->ckv_cache || !args->kpe_cache || !args->kv_indptr ||
        !args->output || !args->lse || (args->num_kv_indices > 0 && !args->kv_indices))
        return 1;
    const KsArgs& a = *args;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t b = 0; b < a.batch_size; ++b) attend_request(a, b);
    return 0;
}
