/* transpose.c - y (n x m) = a (m x n)^T.
 *
 * Cache-blocked: TB x TB tiles (4 KiB each way) so that both the rows read
 * and the columns written of a tile stay in L1.  Bands of TB rows of a are
 * independent and run on the pool when the matrix is large.
 */
#include "plugin.h"

#define TB 32

static void transpose_tile(const float *a, float *y, size_t m, size_t n, size_t i0, size_t i1,
                           size_t j0, size_t j1)
{
    for (size_t j = j0; j < j1; j++)
        for (size_t i = i0; i < i1; i++)
            y[j * m + i] = a[i * n + j];
}

/* Items of the range are bands of TB rows of a. */
static void transpose_bands(const rayo_call *c, size_t lo, size_t hi)
{
    size_t m = c->m, n = c->n;
    for (size_t band = lo; band < hi; band++) {
        size_t i0 = band * TB, i1 = i0 + TB < m ? i0 + TB : m;
        for (size_t j0 = 0; j0 < n; j0 += TB)
            transpose_tile(c->a, c->y, m, n, i0, i1, j0, j0 + TB < n ? j0 + TB : n);
    }
}

SCALAR_KERNEL(transpose)
{
    cpu_run_ranges(state, call, (call->m + TB - 1) / TB, TB * call->n, transpose_bands);
    return RAYO_OK;
}
