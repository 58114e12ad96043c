/* SPDX-License-Identifier: MIT */
/* x86-qmatmul-tile_tmpl.c - the tile of the integer matmul (x86-qmatmul.c
 * includes it once per way of summing the products of 4 codes with 4
 * values of A into 32-bit lanes; never compiled alone).  Before including:
 *   TILE_NAME            the function's name
 *   TILE_SUM(s, w, x)    s plus the products of w (u8 codes) and x (s8),
 *                        summed by 4 into 32-bit lanes, or by pairs into
 *                        16-bit lanes that TILE_WIDEN sums by pairs
 *   TILE_WIDEN(s)        the 8 int32 lane sums of s
 *
 * acc[t] (8 columns) = row t of A (x[t]: its codes, d[t], dsum[t]) times
 * the panel, t < 4, the panel's block pb against A's block pb >> shift,
 * its minimums against dsum[t][pb] (A's sums per 32 values, or per 16
 * for Q6_K, whose panel blocks are 16 values each).  The row loops are unrolled so that the 4 integer and
 * 4 float sums stay in registers; the group loop only by 2: unrolled by 8,
 * GCC regrouped the 16-bit sums into a tree and spilled half of them (68
 * against 89 GFLOP/s, 128 x 2048 x 2048 q4_0 on one AVX2 thread). */
static void TILE_NAME(const panel_block *panel, size_t blocks, int shift, const int8_t *const x[TILE_ROWS],
                      const float *const d[TILE_ROWS], const float *const dsum[TILE_ROWS], __m256 acc[TILE_ROWS])
{
    __m256 a[TILE_ROWS] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (size_t pb = 0; pb < blocks << shift; pb++) {
        size_t b = pb >> shift;
        __m256i sums[TILE_ROWS] = { _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                                    _mm256_setzero_si256() };
#pragma GCC unroll 2
        for (int g = 0; g < BLOCK / 4; g++) {
            __m256i w = x86_load256(panel[pb].codes + 32 * g);
#pragma GCC unroll 4
            for (int t = 0; t < TILE_ROWS; t++) {
                int32_t x4;
                memcpy(&x4, x[t] + b * BLOCK + 4 * g, 4);
                sums[t] = TILE_SUM(sums[t], w, _mm256_set1_epi32(x4));
            }
        }
        __m256 scale = _mm256_loadu_ps(panel[pb].scale), min = _mm256_loadu_ps(panel[pb].min);
#pragma GCC unroll 4
        for (int t = 0; t < TILE_ROWS; t++) {
            __m256 dot = _mm256_mul_ps(_mm256_cvtepi32_ps(TILE_WIDEN(sums[t])), scale);
            a[t] = _mm256_fmadd_ps(dot, _mm256_set1_ps(d[t][b]), a[t]);
            a[t] = _mm256_fnmadd_ps(min, _mm256_set1_ps(dsum[t][pb]), a[t]);
        }
    }
    for (int t = 0; t < TILE_ROWS; t++)
        acc[t] = a[t];
}

#undef TILE_NAME
#undef TILE_SUM
#undef TILE_WIDEN
