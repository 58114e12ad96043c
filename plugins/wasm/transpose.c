/* transpose.c - y (n x m) = a (m x n)^T, SIMD128.
 *
 * Cache-blocked like the scalar backend (TB x TB tiles that stay in L1),
 * and inside a tile 4 x 4 blocks are transposed in registers with eight
 * shuffles; the edges of the matrix (m or n not a multiple of 4) are
 * copied element by element.  Bands of TB rows run on the pool.
 */
#include "plugin.h"

#define TB 32

/* the 4 x 4 block at a (row stride n) to y (row stride m), transposed */
static inline void transpose4(const float *a, size_t n, float *y, size_t m)
{
    vf32 r0 = wasm_v128_load(a), r1 = wasm_v128_load(a + n);
    vf32 r2 = wasm_v128_load(a + 2 * n), r3 = wasm_v128_load(a + 3 * n);
    vf32 t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5); /* a00 a10 a01 a11 */
    vf32 t1 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5); /* a20 a30 a21 a31 */
    vf32 t2 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7); /* a02 a12 a03 a13 */
    vf32 t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7); /* a22 a32 a23 a33 */
    wasm_v128_store(y, wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5));
    wasm_v128_store(y + m, wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));
    wasm_v128_store(y + 2 * m, wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5));
    wasm_v128_store(y + 3 * m, wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7));
}

static void transpose_tile(const float *a, float *y, size_t m, size_t n, size_t i0, size_t i1,
                           size_t j0, size_t j1)
{
    size_t i4 = i0 + (i1 - i0) / 4 * 4, j4 = j0 + (j1 - j0) / 4 * 4;
    for (size_t i = i0; i < i4; i += 4)
        for (size_t j = j0; j < j4; j += 4)
            transpose4(a + i * n + j, n, y + j * m + i, m);
    /* the ragged right and bottom edges */
    for (size_t j = j4; j < j1; j++)
        for (size_t i = i0; i < i1; i++)
            y[j * m + i] = a[i * n + j];
    for (size_t j = j0; j < j4; j++)
        for (size_t i = i4; i < i1; i++)
            y[j * m + i] = a[i * n + j];
}

static void transpose_bands(const rayo_call *c, size_t lo, size_t hi)
{
    size_t m = c->m, n = c->n;
    for (size_t band = lo; band < hi; band++) {
        size_t i0 = band * TB, i1 = i0 + TB < m ? i0 + TB : m;
        for (size_t j0 = 0; j0 < n; j0 += TB)
            transpose_tile(c->a, c->y, m, n, i0, i1, j0, j0 + TB < n ? j0 + TB : n);
    }
}

WASM_KERNEL(transpose)
{
    cpu_run_ranges(state, call, (call->m + TB - 1) / TB, TB * call->n, transpose_bands);
    return RAYO_OK;
}
