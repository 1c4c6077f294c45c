#include "ks_task.h"
// C = A x B, loops in i-k-j order: the inner loop is unit-stride in B and C.
extern "C" int ks_run(const KsArgs* p, void*, size_t, ks_stream_t)
{
    const int64_t m = p->m, n = p->n, k = p->k;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
        float* c = p->c + i * n;
        for (int64_t j = 0; j < n; ++j)
            c[j] = 0.0f;
        int64_t t = 0;
        for (; t + 4 <= k; t += 4) {
            const float a0 = p->a[i * k + t], a1 = p->a[i * k + t + 1], a2 = p->a[i * k + t + 2], a3 = p->a[i * k + t + 3];
            const float* b0 = p->b + t * n;
            const float* b1 = b0 + n;
            const float* b2 = b1 + n;
            const float* b3 = b2 + n;
            for (int64_t j = 0; j < n; ++j)
                c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
        }
        for (; t < k; ++t) {
            const float av = p->a[i * k + t];
            const float* b = p->b + t * n;
            for (int64_t j = 0; j < n; ++j)
                c[j] += av * b[j];
        }
    }
    return 0;
}
