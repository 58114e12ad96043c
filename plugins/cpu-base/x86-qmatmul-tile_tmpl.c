/* SPDX-License-Identifier: MIT */
/* x86-qmatmul-tile_tmpl.c - the tile of the integer matmul (x86-qmatmul.c
 * includes it once per vector width and way of summing the products of 4
 * codes with 4 values of A into 32-bit lanes; never compiled alone).
 * Before including:
 *   TILE_BITS            256 or 512: the vectors, 8 or 16 columns of B
 *   TILE_ROWS            rows of A per tile
 *   TILE_NAME            the function's name
 *   TILE_SUM(s, w, x)    s plus the products of w (u8 codes) and x (s8),
 *                        summed by 4 into 32-bit lanes, or by pairs into
 *                        16-bit lanes that TILE_WIDEN sums by pairs
 *   TILE_WIDEN(s)        the int32 lane sums of s
 *
 * out[COLS_MAX t + j] = row t of A (x[t]: its codes, d[t], dsum[t]) times
 * column j of the panel, t < TILE_ROWS, the panel's block pb against A's
 * block pb >> shift, its minimums against dsum[t][pb] (A's sums per 32
 * values, or per 16 for Q6_K, whose panel blocks are 16 values each, shift
 * 1: block pb's scale and min, the codes of half pb & 1 of block pb & ~1,
 * which holds all 32).  The
 * row loops are unrolled so that the integer and float sums stay in
 * registers; the group loop only by 2: unrolled by 8, GCC regrouped the
 * 16-bit sums into a tree and spilled half of them (68 against 89
 * GFLOP/s, 128 x 2048 x 2048 q4_0 on one AVX2 thread). */
#define TILE_CAT_(a, b) a##b
#define TILE_CAT(a, b) TILE_CAT_(a, b)
#define TILE_V(op) TILE_CAT(TILE_CAT(_mm, TILE_BITS), op) /* TILE_V(_add_ps): _mm256_add_ps */
#define TILE_COLS (TILE_BITS / 32)

static void TILE_NAME(const panel_block *panel, size_t blocks, int shift, const int8_t *const x[ROWS_MAX],
                      const float *const d[ROWS_MAX], const float *const dsum[ROWS_MAX], float *out)
{
    TILE_CAT(__m, TILE_BITS) a[TILE_ROWS];
#pragma GCC unroll 8
    for (int t = 0; t < TILE_ROWS; t++)
        a[t] = TILE_V(_setzero_ps)();
    for (size_t pb = 0; pb < blocks << shift; pb++) {
        size_t b = pb >> shift;
        /* shift 1: the half pb & 1 of the codes in block pb & ~1 */
        int g0 = shift ? 4 * (int)(pb & 1) : 0, g1 = shift ? g0 + 4 : BLOCK / 4;
        const uint8_t *codes = panel[pb >> shift << shift].codes;
        TILE_CAT(TILE_CAT(__m, TILE_BITS), i) sums[TILE_ROWS];
#pragma GCC unroll 8
        for (int t = 0; t < TILE_ROWS; t++)
            sums[t] = TILE_V(_set1_epi32)(0);
#pragma GCC unroll 2
        for (int g = g0; g < g1; g++) {
            TILE_CAT(TILE_CAT(__m, TILE_BITS), i) w = TILE_CAT(TILE_V(_loadu_si), TILE_BITS)(
                (const void *)(codes + 4 * TILE_COLS * g));
#pragma GCC unroll 8
            for (int t = 0; t < TILE_ROWS; t++) {
                int32_t x4;
                memcpy(&x4, x[t] + b * BLOCK + 4 * g, 4);
                sums[t] = TILE_SUM(sums[t], w, TILE_V(_set1_epi32)(x4));
            }
        }
        TILE_CAT(__m, TILE_BITS) scale = TILE_V(_loadu_ps)(panel[pb].scale), min = TILE_V(_loadu_ps)(panel[pb].min);
#pragma GCC unroll 8
        for (int t = 0; t < TILE_ROWS; t++) {
            TILE_CAT(__m, TILE_BITS) dot = TILE_V(_mul_ps)(TILE_V(_cvtepi32_ps)(TILE_WIDEN(sums[t])), scale);
            a[t] = TILE_V(_fmadd_ps)(dot, TILE_V(_set1_ps)(d[t][b]), a[t]);
            a[t] = TILE_V(_fnmadd_ps)(min, TILE_V(_set1_ps)(dsum[t][pb]), a[t]);
        }
    }
    for (int t = 0; t < TILE_ROWS; t++)
        TILE_V(_storeu_ps)(out + COLS_MAX * t, a[t]);
}

#undef TILE_CAT_
#undef TILE_CAT
#undef TILE_V
#undef TILE_COLS
#undef TILE_NAME
#undef TILE_SUM
#undef TILE_WIDEN
