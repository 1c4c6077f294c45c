// Ground-truth TriMul (outgoing triangle multiplicative update) on the host, in double.
//
// The steps follow GPU MODE's reference module one to one: LayerNorm over dim, the five
// projections of the normalised input (left, right and their gates, the output gate), the mask,
// the contraction over k, LayerNorm over hidden_dim, the output gate and the output projection.
// Intermediates are kept whole in double, so this is for the small workloads only; the
// evaluator uses reference.cu for the rest.
#include "ks_task.h"

#include <cmath>
#include <vector>

namespace {

constexpr int64_t kHidden = KS_HIDDEN_DIM;
constexpr double kEps = 1e-5;  // torch.nn.LayerNorm's default

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// LayerNorm of n values (biased variance, as torch) with weight and bias.
void layer_norm(const double* in, int64_t n, const float* weight, const float* bias, double* out)
{
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += in[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; ++i) var += (in[i] - mean) * (in[i] - mean);
    var /= (double)n;
    const double inv = 1.0 / std::sqrt(var + kEps);
    for (int64_t i = 0; i < n; ++i) out[i] = (in[i] - mean) * inv * weight[i] + bias[i];
}

double dot(const double* x, const float* w, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += x[i] * (double)w[i];
    return s;
}

}  // namespace

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/, ks_stream_t /*stream*/)
{
    if (!args || args->batch_size < 0 || args->seq_len < 0 || args->dim <= 0) return 1;
    const KsArgs& a = *args;
    const int64_t N = a.seq_len, C = a.dim, H = kHidden;
    const int64_t pairs = N * N;
    std::vector<double> left((size_t)(pairs * H)), right((size_t)(pairs * H)), gate((size_t)(pairs * H));

    for (int64_t b = 0; b < a.batch_size; ++b) {
        // Per (i, k): normalise, project, gate and mask.
#pragma omp parallel for schedule(static)
        for (int64_t p = 0; p < pairs; ++p) {
            std::vector<double> x((size_t)C), xn((size_t)C);
            const float* row = a.input + (b * pairs + p) * C;
            for (int64_t c = 0; c < C; ++c) x[(size_t)c] = row[c];
            layer_norm(x.data(), C, a.norm_weight, a.norm_bias, xn.data());
            const double m = a.mask[b * pairs + p] ? 1.0 : 0.0;
            for (int64_t h = 0; h < H; ++h) {
                left[(size_t)(p * H + h)] = dot(xn.data(), a.left_proj + h * C, C) * m *
                                            sigmoid(dot(xn.data(), a.left_gate + h * C, C));
                right[(size_t)(p * H + h)] = dot(xn.data(), a.right_proj + h * C, C) * m *
                                             sigmoid(dot(xn.data(), a.right_gate + h * C, C));
                gate[(size_t)(p * H + h)] = sigmoid(dot(xn.data(), a.out_gate + h * C, C));
            }
        }
        // out[i, j, h] = sum_k left[i, k, h] * right[j, k, h]; then LayerNorm, gate, projection.
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < N; ++i) {
            std::vector<double> out((size_t)H), y((size_t)H);
            for (int64_t j = 0; j < N; ++j) {
                for (int64_t h = 0; h < H; ++h) out[(size_t)h] = 0.0;
                for (int64_t k = 0; k < N; ++k) {
                    const double* l = &left[(size_t)((i * N + k) * H)];
                    const double* r = &right[(size_t)((j * N + k) * H)];
                    for (int64_t h = 0; h < H; ++h) out[(size_t)h] += l[h] * r[h];
                }
                layer_norm(out.data(), H, a.to_out_norm_weight, a.to_out_norm_bias, y.data());
                for (int64_t h = 0; h < H; ++h) y[(size_t)h] *= gate[(size_t)((i * N + j) * H + h)];
                float* dst = a.output + ((b * N + i) * N + j) * C;
                for (int64_t c = 0; c < C; ++c) dst[c] = (float)dot(y.data(), a.to_out + c * H, H);
            }
        }
    }
    return 0;
}
