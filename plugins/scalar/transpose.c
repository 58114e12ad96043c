/* SPDX-License-Identifier: MIT */
/* transpose.c - y (n x m) = a (m x n)^T: cache-blocked tiles and bands of
 * rows on the pool, as every CPU plugin (cpu-transpose_tmpl.c);
 * the 4 x 4 block inside a tile here in plain C.
 */
#include "plugin.h"

#define TRANSPOSE_BLOCK 4
static inline void transpose_block(const float *a, size_t lda, float *y, size_t ldy)
{
    for (size_t j = 0; j < 4; j++)
        for (size_t i = 0; i < 4; i++)
            y[j * ldy + i] = a[i * lda + j];
}

#include "cpu-transpose_tmpl.c"
