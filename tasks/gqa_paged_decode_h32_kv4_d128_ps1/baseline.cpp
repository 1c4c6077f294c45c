// Host baseline GQA paged decode: float math, one task per (request, KV head).
//
// The 8 query heads that share a KV head are processed together, so every K/V row is fetched
// and converted from bf16 once per group instead of once per head.  Tokens go in tiles: the
// logits of a whole tile are computed first, and the online-softmax rescale of the
// accumulators then happens once per tile rather than once per token.
#include "ks_task.h"

#include <cmath>
#include <limits>

namespace {

constexpr int kQoHeads = (int)KS_NUM_QO_HEADS;
constexpr int kKvHeads = (int)KS_NUM_KV_HEADS;
constexpr int kGroup = kQoHeads / kKvHeads;
constexpr int kDim = (int)KS_HEAD_DIM;
constexpr int kTile = 32;  // tokens per softmax update; K and V tiles are 16 KiB each, in L1/L2

void attend_group(const KsArgs& a, int64_t b, int kv_head)
{
    const int64_t begin = a.kv_indptr[b];
    const int64_t len = a.kv_indptr[b + 1] - begin;
    const int64_t head0 = b * kQoHeads + (int64_t)kv_head * kGroup;

    float q[kGroup][kDim];
    for (int h = 0; h < kGroup; ++h)
        for (int d = 0; d < kDim; ++d) q[h][d] = ks_to_float(a.q[(head0 + h) * kDim + d]);

    float acc[kGroup][kDim] = {};
    float row_max[kGroup], row_sum[kGroup];
    for (int h = 0; h < kGroup; ++h) {
        row_max[h] = -std::numeric_limits<float>::infinity();
        row_sum[h] = 0.0f;
    }

    float kv[kTile][kDim];
    float p[kGroup][kTile];
    for (int64_t t0 = 0; t0 < len; t0 += kTile) {
        const int n = (int)(len - t0 < kTile ? len - t0 : kTile);

        // Fetch K once for all heads of the group.
        for (int i = 0; i < n; ++i) {
            const ks_bf16_t* k =
                a.k_cache + ((int64_t)a.kv_indices[begin + t0 + i] * kKvHeads + kv_head) * kDim;
            for (int d = 0; d < kDim; ++d) kv[i][d] = ks_to_float(k[d]);
        }
        for (int h = 0; h < kGroup; ++h) {
            float tile_max = -std::numeric_limits<float>::infinity();
            for (int i = 0; i < n; ++i) {
                // Without -ffast-math the reduction only vectorises when reordering is allowed.
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int d = 0; d < kDim; ++d) dot += q[h][d] * kv[i][d];
                p[h][i] = dot * a.sm_scale;
                tile_max = std::fmax(tile_max, p[h][i]);
            }
            const float new_max = std::fmax(row_max[h], tile_max);
            const float correction = std::exp(row_max[h] - new_max);  // exp(-inf) = 0 at the start
            row_max[h] = new_max;
            float tile_sum = 0.0f;
            for (int i = 0; i < n; ++i) {
                p[h][i] = std::exp(p[h][i] - new_max);
                tile_sum += p[h][i];
            }
            row_sum[h] = row_sum[h] * correction + tile_sum;
            for (int d = 0; d < kDim; ++d) acc[h][d] *= correction;
        }

        // Same for V, reusing the tile buffer.
        for (int i = 0; i < n; ++i) {
            const ks_bf16_t* v =
                a.v_cache + ((int64_t)a.kv_indices[begin + t0 + i] * kKvHeads + kv_head) * kDim;
            for (int d = 0; d < kDim; ++d) kv[i][d] = ks_to_float(v[d]);
        }
        for (int h = 0; h < kGroup; ++h)
            for (int i = 0; i < n; ++i) {
                const float w = p[h][i];
#pragma omp simd
                for (int d = 0; d < kDim; ++d) acc[h][d] += w * kv[i][d];
            }
    }

    for (int h = 0; h < kGroup; ++h) {
        ks_bf16_t* out = a.output + (head0 + h) * kDim;
        float* lse = a.lse + head0 + h;
        if (len <= 0) {
            for (int d = 0; d < kDim; ++d) out[d] = ks_from_float_bf16(0.0f);
            *lse = -std::numeric_limits<float>::infinity();
            continue;
        }
        const float inv = 1.0f / row_sum[h];
        for (int d = 0; d < kDim; ++d) out[d] = ks_from_float_bf16(acc[h][d] * inv);
        // Base-2 lse of the scaled logits.
        *lse = (row_max[h] + std::log(row_sum[h])) * 1.4426950408889634f;
    }
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
    const int64_t tasks = batch * kKvHeads;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < tasks; ++i) attend_group(a, i / kKvHeads, (int)(i % kKvHeads));
    return 0;
}
