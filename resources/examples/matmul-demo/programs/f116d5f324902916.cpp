#include "ks_task.h"
// Threads own rows of C; the k loop walks B in 128-row panels that stay in cache.
extern "C" int ks_run(const KsArgs* p, void*, size_t, ks_stream_t)
{
    const int64_t m = p->m, n = p->n, k = p->k, panel = 128;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
    }
    for (int64_t t0 = 0; t0 < k; t0 += panel) {
        const int64_t t1 = t0 + panel < k ? t0 + panel : k;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < m; ++i) {
            float* c = p->c + i * n;
            for (int64_t t = t0; t < t1; ++t) {
                const float av = p->a[i * k + t];
                const float* b = p->b + t * n;
                for (int64_t j = 0; j < n; ++j)
                    c[j] += av * b[j];
            }
        }
    }
    return 0;
}
