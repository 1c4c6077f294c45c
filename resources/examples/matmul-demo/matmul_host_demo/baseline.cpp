// The baseline: the textbook i-j-k loop (B is walked down its columns, one cache line per step).
#include "ks_task.h"

extern "C" int ks_run(const KsArgs* p, void*, size_t, ks_stream_t)
{
    const int64_t m = p->m, n = p->n, k = p->k;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (int64_t t = 0; t < k; ++t)
                sum += p->a[i * k + t] * p->b[t * n + j];
            p->c[i * n + j] = sum;
        }
    return 0;
}
