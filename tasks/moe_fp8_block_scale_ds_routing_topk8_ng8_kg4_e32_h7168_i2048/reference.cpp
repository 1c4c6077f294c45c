// Ground-truth FP8 block-scale MoE with DeepSeek-V3 routing on the host, in double.
//
// Every fp8 value is dequantised with its block scale on the fly (the weights are 1.4 GB, too
// many to hold in double), the routing follows the definition step by step, and a token's local
// experts are applied one after the other.  Tokens run in parallel; nothing is shared between
// them but the read-only inputs.  Slow by design: the evaluator uses reference.cu for the rest.
#include "ks_task.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

constexpr int kExperts = (int)KS_NUM_EXPERTS;
constexpr int kLocal = (int)KS_NUM_LOCAL_EXPERTS;
constexpr int64_t kHidden = KS_HIDDEN_SIZE;
constexpr int64_t kInter = KS_INTERMEDIATE_SIZE;
constexpr int64_t kGemm1Out = KS_GEMM1_OUT_SIZE;
constexpr int64_t kHiddenBlocks = KS_NUM_HIDDEN_BLOCKS;
constexpr int64_t kInterBlocks = KS_NUM_INTERMEDIATE_BLOCKS;
constexpr int64_t kGemm1Blocks = KS_NUM_GEMM1_OUT_BLOCKS;
constexpr int kGroups = 8, kGroupSize = kExperts / kGroups, kKeptGroups = 4, kTopK = 8;
constexpr int64_t kBlock = 128;

// The 256 values of an e4m3 byte: decoding through a table keeps the weight loops cheap.
struct Fp8Table {
    float value[256];
    Fp8Table()
    {
        for (int b = 0; b < 256; ++b) {
            ks_f8e4m3_t v;
            v.bits = (uint8_t)b;
            value[b] = ks_to_float(v);
        }
    }
    double operator()(ks_f8e4m3_t v) const { return value[v.bits]; }
};
const Fp8Table kFp8;

// sum over h of x[h] * w[h] * scale[h / 128]: one row of a block-scaled fp8 matrix.
double scaled_dot(const double* x, const ks_f8e4m3_t* w, const float* scale, int64_t n)
{
    double total = 0.0;
    for (int64_t b = 0; b < n / kBlock; ++b) {
        double part = 0.0;
        for (int64_t h = b * kBlock; h < (b + 1) * kBlock; ++h) part += x[h] * kFp8(w[h]);
        total += part * (double)scale[b];
    }
    return total;
}

struct Route {
    int expert[kTopK];
    double weight[kTopK];
};

Route route(const KsArgs& a, int64_t t)
{
    double s[kExperts], biased[kExperts];
    for (int e = 0; e < kExperts; ++e) {
        s[e] = 1.0 / (1.0 + std::exp(-(double)a.routing_logits[t * kExperts + e]));
        biased[e] = s[e] + (double)ks_to_float(a.routing_bias[e]);
    }
    // Group score: the sum of the group's two largest biased scores.
    double group_score[kGroups];
    for (int g = 0; g < kGroups; ++g) {
        double top[2] = {-INFINITY, -INFINITY};
        for (int e = g * kGroupSize; e < (g + 1) * kGroupSize; ++e) {
            if (biased[e] > top[0]) {
                top[1] = top[0];
                top[0] = biased[e];
            } else if (biased[e] > top[1]) {
                top[1] = biased[e];
            }
        }
        group_score[g] = top[0] + top[1];
    }
    // The best groups (ties to the lower index), then the best experts in them.
    bool kept[kGroups] = {};
    for (int n = 0; n < kKeptGroups; ++n) {
        int best = -1;
        for (int g = 0; g < kGroups; ++g)
            if (!kept[g] && (best < 0 || group_score[g] > group_score[best])) best = g;
        kept[best] = true;
    }
    Route r;
    bool taken[kExperts] = {};
    double sum = 0.0;
    for (int k = 0; k < kTopK; ++k) {
        int best = -1;
        for (int e = 0; e < kExperts; ++e)
            if (kept[e / kGroupSize] && !taken[e] && (best < 0 || biased[e] > biased[best])) best = e;
        taken[best] = true;
        r.expert[k] = best;
        r.weight[k] = s[best];  // the weight leaves the bias out
        sum += s[best];
    }
    for (int k = 0; k < kTopK; ++k) r.weight[k] = r.weight[k] / (sum + 1e-20) * (double)a.routed_scaling_factor;
    return r;
}

// output += weight * W2[le] (silu(gate) * up), with up/gate = W1[le] a.
void apply_expert(const KsArgs& a, const std::vector<double>& act, int le, double weight, std::vector<double>& out)
{
    const ks_f8e4m3_t* w1 = a.gemm1_weights + (int64_t)le * kGemm1Out * kHidden;
    const float* s1 = a.gemm1_weights_scale + (int64_t)le * kGemm1Blocks * kHiddenBlocks;
    std::vector<double> g(kGemm1Out);
    for (int64_t o = 0; o < kGemm1Out; ++o)
        g[o] = scaled_dot(act.data(), w1 + o * kHidden, s1 + (o / kBlock) * kHiddenBlocks, kHidden);
    std::vector<double> c(kInter);
    for (int64_t i = 0; i < kInter; ++i) {
        const double gate = g[kInter + i];  // the second half is the gate
        c[i] = gate / (1.0 + std::exp(-gate)) * g[i];
    }
    const ks_f8e4m3_t* w2 = a.gemm2_weights + (int64_t)le * kHidden * kInter;
    const float* s2 = a.gemm2_weights_scale + (int64_t)le * kHiddenBlocks * kInterBlocks;
    for (int64_t h = 0; h < kHidden; ++h)
        out[h] += weight * scaled_dot(c.data(), w2 + h * kInter, s2 + (h / kBlock) * kInterBlocks, kInter);
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/, ks_stream_t /*stream*/)
{
    if (!args || args->seq_len < 0) return 1;
    const KsArgs& a = *args;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t t = 0; t < a.seq_len; ++t) {
        const Route r = route(a, t);
        std::vector<double> act(kHidden), out(kHidden, 0.0);
        for (int64_t h = 0; h < kHidden; ++h)
            act[h] = kFp8(a.hidden_states[t * kHidden + h]) *
                     (double)a.hidden_states_scale[(h / kBlock) * a.seq_len + t];
        for (int k = 0; k < kTopK; ++k) {
            const int le = r.expert[k] - a.local_expert_offset;
            if (le >= 0 && le < kLocal) apply_expert(a, act, le, r.weight[k], out);
        }
        for (int64_t h = 0; h < kHidden; ++h) a.output[t * kHidden + h] = ks_from_float_bf16((float)out[h]);
    }
    return 0;
}
