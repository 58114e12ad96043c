/* SPDX-License-Identifier: MIT */
/* transpose.c - y (n x m) = a (m x n)^T, SIMD128.
 *
 * The cache-blocked tiles of every CPU plugin (cpu-transpose_tmpl.c,
 * cpu-base.h); inside a tile 4 x 4 blocks are transposed in registers with
 * eight shuffles.
 */
#include "plugin.h"

/* the 4 x 4 block at a (row stride n) to y (row stride m), transposed */
#define TRANSPOSE_BLOCK 4
static inline void transpose_block(const float *a, size_t n, float *y, size_t m)
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

#include "cpu-transpose_tmpl.c"
