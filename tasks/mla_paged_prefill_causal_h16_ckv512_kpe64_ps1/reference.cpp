// Ground-truth causal MLA paged prefill on the host (absorbed layout).
//
// Everything is computed in double, with a two-pass softmax (maximum first), so that the only
// rounding that matters is the final conversion of the output to bf16 and of lse to float.
// The causal mask is aligned to the bottom right: with prefix = kv_len - q_len, query row i of a
// request sees KV positions 0 .. prefix + i.  Slow by design; the evaluator uses reference.cu
// for workloads too large for the host.
#include "ks_task.h"

#include <cmath>
#include <limits>
#include <vector>

namespace {

constexpr int64_t kHeads = KS_NUM_QO_HEADS;
constexpr int64_t kCkv = KS_HEAD_DIM_CKV;
constexpr int64_t kKpe = KS_HEAD_DIM_KPE;
constexpr double kLn2 = 0.69314718055994530941723212145817656807550013436026;

// The latents of one request's KV tokens, in double, shared by all its query rows and heads.
struct RequestKv {
    std::vector<double> ckv, kpe;
};

RequestKv load_request(const KsArgs& a, int64_t begin, int64_t len)
{
    RequestKv kv{std::vector<double>((size_t)(len * kCkv)), std::vector<double>((size_t)(len * kKpe))};
    for (int64_t t = 0; t < len; ++t) {
        const int64_t page = a.kv_indices[begin + t];
        for (int64_t d = 0; d < kCkv; ++d) kv.ckv[(size_t)(t * kCkv + d)] = ks_to_float(a.ckv_cache[page * kCkv + d]);
        for (int64_t d = 0; d < kKpe; ++d) kv.kpe[(size_t)(t * kKpe + d)] = ks_to_float(a.kpe_cache[page * kKpe + d]);
    }
    return kv;
}

// Query row `row` (global) and head h over the first `visible` tokens of its request.
void attend_row(const KsArgs& a, const RequestKv& kv, int64_t row, int64_t h, int64_t visible,
                std::vector<double>& logits)
{
    const ks_bf16_t* qn = a.q_nope + (row * kHeads + h) * kCkv;
    const ks_bf16_t* qp = a.q_pe + (row * kHeads + h) * kKpe;
    ks_bf16_t* out = a.output + (row * kHeads + h) * kCkv;
    if (visible <= 0) {  // not reachable with kv_len >= q_len, kept for malformed inputs
        for (int64_t d = 0; d < kCkv; ++d) out[d] = ks_from_float_bf16(0.0f);
        a.lse[row * kHeads + h] = -std::numeric_limits<float>::infinity();
        return;
    }
    logits.resize((size_t)visible);
    double max_logit = -std::numeric_limits<double>::infinity();
    for (int64_t t = 0; t < visible; ++t) {
        double dot = 0.0;
        for (int64_t d = 0; d < kCkv; ++d) dot += (double)ks_to_float(qn[d]) * kv.ckv[(size_t)(t * kCkv + d)];
        for (int64_t d = 0; d < kKpe; ++d) dot += (double)ks_to_float(qp[d]) * kv.kpe[(size_t)(t * kKpe + d)];
        logits[(size_t)t] = (double)a.sm_scale * dot;
        if (logits[(size_t)t] > max_logit) max_logit = logits[(size_t)t];
    }
    double acc[kCkv] = {};
    double sum = 0.0;
    for (int64_t t = 0; t < visible; ++t) {
        const double w = std::exp(logits[(size_t)t] - max_logit);
        sum += w;
        for (int64_t d = 0; d < kCkv; ++d) acc[d] += w * kv.ckv[(size_t)(t * kCkv + d)];
    }
    for (int64_t d = 0; d < kCkv; ++d) out[d] = ks_from_float_bf16((float)(acc[d] / sum));
    a.lse[row * kHeads + h] = (float)((max_logit + std::log(sum)) / kLn2);
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/,
                      ks_stream_t /*stream*/)
{
    if (!args || args->len_indptr < 1 || !args->qo_indptr || !args->kv_indptr) return 1;
    if (args->total_q == 0) return 0;
    if (!args->q_nope || !args->q_pe || !args->ckv_cache || !args->kpe_cache || !args->output ||
        !args->lse || (args->num_kv_indices > 0 && !args->kv_indices))
        return 1;
    const KsArgs& a = *args;
    for (int64_t b = 0; b + 1 < a.len_indptr; ++b) {
        const int64_t q_begin = a.qo_indptr[b], q_len = a.qo_indptr[b + 1] - q_begin;
        const int64_t kv_begin = a.kv_indptr[b], kv_len = a.kv_indptr[b + 1] - kv_begin;
        if (q_len <= 0) continue;
        const RequestKv kv = load_request(a, kv_begin, kv_len);
        const int64_t prefix = kv_len - q_len;
#pragma omp parallel
        {
            std::vector<double> logits;
#pragma omp for schedule(dynamic, 4)
            for (int64_t i = 0; i < q_len * kHeads; ++i) {
                const int64_t row = i / kHeads;
                attend_row(a, kv, q_begin + row, i % kHeads, prefix + row + 1, logits);
            }
        }
    }
    return 0;
}
