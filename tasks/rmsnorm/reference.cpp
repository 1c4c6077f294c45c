// Ground-truth RMSNorm on the host.  Everything is computed in double so the only rounding
// that matters is the final conversion to bf16; speed is deliberately not a goal.
#include "ks_task.h"

#include <cmath>

extern "C" int ks_run(const KsArgs* args, void* /*workspace*/, size_t /*workspace_bytes*/,
                      ks_stream_t /*stream*/)
{
    if (!args || args->batch_size < 0 || args->hidden_size < 0) return 1;
    const int64_t batch = args->batch_size;
    const int64_t hidden = args->hidden_size;
    if (batch == 0 || hidden == 0) return 0;
    if (!args->hidden_states || !args->weight || !args->output) return 1;

    for (int64_t b = 0; b < batch; ++b) {
        const ks_bf16_t* x = args->hidden_states + b * hidden;
        ks_bf16_t* y = args->output + b * hidden;

        double sum_sq = 0.0;
        for (int64_t j = 0; j < hidden; ++j) {
            const double v = ks_to_float(x[j]);
            sum_sq += v * v;
        }
        const double inv_rms = 1.0 / std::sqrt(sum_sq / (double)hidden + (double)args->eps);

        for (int64_t j = 0; j < hidden; ++j) {
            const double v = (double)ks_to_float(x[j]) * inv_rms * (double)ks_to_float(args->weight[j]);
            y[j] = ks_from_float_bf16((float)v);
        }
    }
    return 0;
}
