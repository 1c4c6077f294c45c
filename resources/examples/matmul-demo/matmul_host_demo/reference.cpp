// Ground truth: every dot product accumulated in double.
#include "ks_task.h"

extern "C" int ks_run(const KsArgs* p, void*, size_t, ks_stream_t)
{
    for (int64_t i = 0; i < p->m; ++i)
        for (int64_t j = 0; j < p->n; ++j) {
            double sum = 0.0;
            for (int64_t t = 0; t < p->k; ++t)
                sum += (double)p->a[i * p->k + t] * (double)p->b[t * p->n + j];
            p->c[i * p->n + j] = (float)sum;
        }
    return 0;
}
