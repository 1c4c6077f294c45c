#include "ks_task.h"
// C = A x B, loops in i-k-j order: the inner loop is unit-stride in B and C.
extern "C" int ks_run(const KsArgs* p, void*, size_t, ks_stream_t)
{
    const int64_t m = p->m, n = p->n, k = p->k;
    for (int64_t i = 0; i < m; ++i) {
        float* c = p->c + i * n;
        for (int64_t j = 0; j < n; ++j)
            c[j] = 0.0f;
        for (int64_t t = 0; t < k; ++t) {
            const float av = p->a[i * k + t];
            const float* b = p->b + t * n;
            for (int64_t j = 0; j < n; ++j)
                c[j] += av * b[j];
        }
    }
    return 0;
}
