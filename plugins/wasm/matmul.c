/* SPDX-License-Identifier: MIT */
/* matmul.c - C (m x n) = alpha op(A) op(B) + beta C, row-major, SIMD128.
 *
 * The blocked scheme of the scalar backend (GotoBLAS / BLIS): C in MC x NC
 * tiles; per KC-deep slice of k, op(A) packed into MR-row micro-panels and
 * op(B) into NR-column micro-panels, zero-padded, so the micro-kernel never
 * sees strides, transposes or edges.  The micro-kernel keeps an MR x NR
 * block of C in MR * NR / 4 vectors: 6 x 8 is 12 accumulators + 2 vectors
 * of B + 1 broadcast of A = 15 of the 16 SIMD registers engines have on
 * x86-64 (and half of AArch64's 32).  WebAssembly has no FMA: mul + add.
 *
 * beta == 0 never reads C.  m == 1 or n == 1 go to gemv.  The driver (checks,
 * tile plan, packing, threads) is the CPU plugins' shared one,
 * cpu-base/cpu-gemm.c.
 */
#include "plugin.h"

#include <string.h>

#ifndef MR /* -DMR=.. -DNR=.. to try other shapes */
#define MR 6
#define NR 8
#endif
#define NV (NR / 4) /* vectors per row of the micro-tile */
#define KC 256
#define MC (16 * MR) /* multiple of MR */
#define NC 512       /* multiple of NR */

/* acc (MR x NR) = sum over p < kc of a[p] (MR) outer b[p] (NR). */
static void micro_kernel(size_t kc, const float *a, const float *b, float *acc)
{
    vf32 c[MR][NV];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < NV; v++)
            c[i][v] = vsplat(0.0f);
    for (size_t p = 0; p < kc; p++, a += MR, b += NR) {
        vf32 bv[NV];
        for (int v = 0; v < NV; v++)
            bv[v] = wasm_v128_load(b + 4 * v);
        for (int i = 0; i < MR; i++) {
            vf32 ai = wasm_v128_load32_splat(a + i);
            for (int v = 0; v < NV; v++)
                c[i][v] = vadd(c[i][v], vmul(ai, bv[v]));
        }
    }
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < NV; v++)
            wasm_v128_store(acc + i * NR + 4 * v, c[i][v]);
}

/* C block (rows x cols, leading dimension ldc) from acc: on the first k
 * slice C = alpha acc + beta C (C unread when beta == 0), then C += alpha acc. */
static void store_block(float *C, size_t ldc, size_t rows, size_t cols, const float *acc,
                        float alpha, float beta, int first)
{
    const vf32 va = vsplat(alpha), vb = vsplat(beta);
    for (size_t i = 0; i < rows; i++, C += ldc, acc += NR) {
        for (size_t j = 0; j < cols; j += 4) {
            size_t w = cpu_min_size(4, cols - j);
            vf32 v = vmul(va, wasm_v128_load(acc + j));
            if (!first)
                v = vadd(w == 4 ? wasm_v128_load(C + j) : load_partial(C + j, w), v);
            else if (beta != 0.0f)
                v = vadd(v, vmul(vb, w == 4 ? wasm_v128_load(C + j) : load_partial(C + j, w)));
            if (w == 4)
                wasm_v128_store(C + j, v);
            else
                store_partial(C + j, v, w);
        }
    }
}

CPU_GEMM_MATMUL_FN(&wasm_gemv_kernels, 0, NULL) /* row strides: not yet */
