/* SPDX-License-Identifier: MIT */
/* cpu-transpose_tmpl.c - the transpose kernel of a CPU plugin, y (n x m) =
 * a (m x n)^T, written once over the plugin's block transpose.  The plugin
 * defines, then includes this file:
 *   TRANSPOSE_BLOCK                  the side of its block (4, 8, 16)
 *   transpose_block(a, lda, y, ldy)  that block at a (rows lda apart) to y
 *                                    (rows ldy apart), transposed
 *   TRANSPOSE_TILE                   the side of a cache tile (a multiple of
 *                                    the block; default 32: 4 KiB each way,
 *                                    they stay in L1 both ways)
 *   TRANSPOSE_COST                   the cost of one element (CPU_RUN_ITEMS's
 *                                    unit; default 1)
 * a in tiles, blocks inside a tile, the ragged edges element by element;
 * bands of TRANSPOSE_TILE rows of a are the items spread over the pool.
 */
#ifndef CPU_RUN_ITEMS
#define CPU_RUN_ITEMS cpu_run_items
#endif
#ifndef TRANSPOSE_TILE
#define TRANSPOSE_TILE 32
#endif
#ifndef TRANSPOSE_COST
#define TRANSPOSE_COST 1
#endif

static void transpose_tile(const float *a, float *y, size_t m, size_t n, size_t i0, size_t i1,
                           size_t j0, size_t j1)
{
    const size_t b = TRANSPOSE_BLOCK;
    size_t ib = i0 + (i1 - i0) / b * b, jb = j0 + (j1 - j0) / b * b;
    for (size_t i = i0; i < ib; i += b)
        for (size_t j = j0; j < jb; j += b)
            transpose_block(a + i * n + j, n, y + j * m + i, m);
    for (size_t j = jb; j < j1; j++) /* the ragged right columns */
        for (size_t i = i0; i < i1; i++)
            y[j * m + i] = a[i * n + j];
    for (size_t j = j0; j < jb; j++) /* and bottom rows */
        for (size_t i = ib; i < i1; i++)
            y[j * m + i] = a[i * n + j];
}

static void transpose_bands(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    const size_t m = c->m, n = c->n, tile = TRANSPOSE_TILE;
    (void)st;
    for (size_t band = lo; band < hi; band++) {
        size_t i0 = band * tile, i1 = m - i0 > tile ? i0 + tile : m;
        for (size_t j0 = 0; j0 < n; j0 += tile)
            transpose_tile(c->a, c->y, m, n, i0, i1, j0, n - j0 > tile ? j0 + tile : n);
    }
}

CPU_KERNEL_FN(transpose)
{
    size_t bands = (call->m + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE;
    CPU_RUN_ITEMS(state, call, bands, TRANSPOSE_TILE * (call->n ? call->n : 1), TRANSPOSE_COST,
                  transpose_bands);
    return RAYO_OK;
}
