#include "ks_task.h"
// A 4x16 block of C in registers per step.
extern "C" int ks_run(const KsArgs* p, void*, size_t, ks_stream_t)
{
    const int64_t m = p->m, n = p->n, k = p->k;
    float acc[4][16] = {0}
    for (int64_t i = 0; i < m; i += 4)
        for (int64_t j = 0; j < n; j += 16) {
            float acc[4][16] = {};
            for (int64_t t = 0; t < k; ++t)
                for (int r = 0; r < 4; ++r)
                    for (int s = 0; s < 16; ++s)
                        acc[r][s] += p->a[(i + r) * k + t] * p->b[t * k + j + s];
            for (int r = 0; r < 4; ++r)
                for (int s = 0; s < 16; ++s)
                    p->c[(i + r) * n + j + s] = acc[r][s];
        }
    return 0;
}
