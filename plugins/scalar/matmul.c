/* SPDX-License-Identifier: MIT */
/* matmul.c - C (m x n) = alpha op(A) op(B) + beta C, row-major.
 *
 * The classic blocked scheme (GotoBLAS / BLIS), in portable C:
 *   - C is cut into tiles of MC x NC (narrower when that gives too few
 *     tiles to keep every thread busy); a tile is one task of the pool.
 *   - For each KC-deep slice of k, the task packs its MC x KC block of op(A)
 *     into MR-row micro-panels and its KC x NC block of op(B) into NR-column
 *     micro-panels, contiguous and zero-padded: the inner kernel then never
 *     sees strides, transposes or edges.
 *   - The micro-kernel keeps an MR x NR block of C in local accumulators and
 *     runs over KC; it is plain loops over small constant bounds, which
 *     compilers unroll and vectorise.  MR x NR = 3 x 16 is 12 four-wide
 *     registers plus one broadcast and one B vector: it fits the 16 of
 *     baseline x86-64 (SSE2) and WebAssembly SIMD128 without spills (6 x 8
 *     and 4 x 16 spill; measured 2x slower with gcc -O2), and AArch64 has 32.
 *   - Loop order: B micro-panel (KC x NR, 16 KiB) outer so it stays in L1
 *     while the A block (MC x KC, 96 KiB) streams from L2.
 * Packing B again for every row tile costs 1 / MC of the arithmetic.
 *
 * beta == 0 never reads C (C may hold NaN garbage).  m == 1 and n == 1 go to
 * gemv, where packing would only add traffic.  The driver (checks, tile plan,
 * packing, threads) is the CPU plugins' shared one, cpu-base/cpu-gemm.c;
 * this file holds the micro-kernel and the block store.
 */
#include "plugin.h"

#include <string.h>

#define MR 3
#define NR 16
#define KC 256
#define MC 96  /* multiple of MR */
#define NC 512 /* multiple of NR */
_Static_assert(MC % MR == 0 && NC % NR == 0, "tiles must hold whole micro-panels");

/* gcc -O2 vectorises the micro-kernel's loops but keeps the accumulators in
 * memory unless the loops over MR and NR are unrolled completely.  clang
 * unrolls them by itself (and spills more when told to: 10 vs 20 GFLOP/s). */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL_FULLY _Pragma("GCC unroll 16")
#else
#define UNROLL_FULLY
#endif

/* acc (MR x NR) = sum over p < kc of a[p] (MR) outer b[p] (NR). */
static void micro_kernel(size_t kc, const float *restrict a, const float *restrict b,
                         float *restrict acc)
{
    float c[MR][NR] = { { 0.0f } };
    for (size_t p = 0; p < kc; p++, a += MR, b += NR) {
        UNROLL_FULLY
        for (size_t i = 0; i < MR; i++) {
            UNROLL_FULLY
            for (size_t j = 0; j < NR; j++)
                c[i][j] += a[i] * b[j];
        }
    }
    memcpy(acc, c, sizeof c);
}

/* C block (rows x cols, leading dimension ldc) from acc: on the first k
 * slice C = alpha acc + beta C (C unread when beta == 0), then C += alpha acc.
 * Inlined, so that the full block's call has constant bounds (vectorised). */
static inline __attribute__((always_inline)) void
store_rows(float *C, size_t ldc, size_t rows, size_t cols, const float *acc, float alpha, float beta, int first)
{
    for (size_t i = 0; i < rows; i++, C += ldc, acc += NR) {
        if (!first)
            for (size_t j = 0; j < cols; j++)
                C[j] += alpha * acc[j];
        else if (beta == 0.0f)
            for (size_t j = 0; j < cols; j++)
                C[j] = alpha * acc[j];
        else
            for (size_t j = 0; j < cols; j++)
                C[j] = alpha * acc[j] + beta * C[j];
    }
}

static void store_block(float *C, size_t ldc, size_t rows, size_t cols, const float *acc,
                        float alpha, float beta, int first)
{
    if (rows == MR && cols == NR)
        store_rows(C, ldc, MR, NR, acc, alpha, beta, first);
    else
        store_rows(C, ldc, rows, cols, acc, alpha, beta, first);
}

CPU_GEMM_MATMUL_FN(&scalar_gemv_kernels, 1, scalar_matmul_typed) /* views: the row-dot path takes any strides */
