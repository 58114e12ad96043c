/* SPDX-License-Identifier: MIT */
/* matmul.c - matmul: C (m x n) = alpha op(A) op(B) + beta C, row-major.
 *
 * The blocked scheme of GotoBLAS / BLIS with an Advanced SIMD micro-kernel:
 *   - C is cut into MC x NC tiles; a tile is one task of the core's pool and
 *     runs over all of k, so no two tasks ever write the same C element.
 *   - For each KC-deep slice of k the task packs its MC x KC block of op(A)
 *     into 8-row micro-panels and its KC x NC block of op(B) into 12-column
 *     micro-panels, contiguous and zero-padded: the micro-kernel never sees
 *     strides, transposes or ragged edges.
 *   - The micro-kernel holds an 8 x 12 block of C in 24 of the 32 vector
 *     registers and per step of k loads 2 vectors of A and 3 of B for 24
 *     FMAs (vfmaq_laneq_f32: B vector times one lane of A).
 *   - Loop order: the B micro-panel (KC x 12, 12 KiB) stays in L1 while the
 *     A block (MC x KC, 128 KiB) streams from L2.
 * beta == 0 never reads C.  m == 1 and n == 1 go to gemv (packing would
 * only add traffic).  The driver (checks, tile plan, packing, threads) is
 * the CPU plugins' shared one, cpu-base/cpu-gemm.c.  Rounding: float FMAs over one KC slice (256 terms),
 * slices added into C; the same order of error as any BLAS sgemm.
 */
#include "plugin.h"
#include "neon-math.h"

#include <stdlib.h>
#include <string.h>

#define MR 8
#define NR 12
#define KC 256
#define MC 128 /* multiple of MR */
#define NC 384 /* multiple of NR */

/* acc (MR x NR, row-major) = sum over p < kc of a[p] (MR) outer b[p] (NR).
 * 24 accumulators: c[row][v] holds columns 4v..4v+3 of that row. */
static void micro_kernel(size_t kc, const float *restrict a, const float *restrict b,
                         float *restrict acc)
{
    float32x4_t c00 = vdupq_n_f32(0.0f), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    float32x4_t c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    float32x4_t c40 = c00, c41 = c00, c42 = c00, c50 = c00, c51 = c00, c52 = c00;
    float32x4_t c60 = c00, c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;

    for (size_t p = 0; p < kc; p++, a += MR, b += NR) {
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
#define ROW(c0, c1, c2, av, lane)                        \
        c0 = vfmaq_laneq_f32(c0, b0, av, lane);          \
        c1 = vfmaq_laneq_f32(c1, b1, av, lane);          \
        c2 = vfmaq_laneq_f32(c2, b2, av, lane)
        ROW(c00, c01, c02, a0, 0);
        ROW(c10, c11, c12, a0, 1);
        ROW(c20, c21, c22, a0, 2);
        ROW(c30, c31, c32, a0, 3);
        ROW(c40, c41, c42, a1, 0);
        ROW(c50, c51, c52, a1, 1);
        ROW(c60, c61, c62, a1, 2);
        ROW(c70, c71, c72, a1, 3);
#undef ROW
    }
#define PUT(row, c0, c1, c2)                               \
    vst1q_f32(acc + (row) * NR, c0);                       \
    vst1q_f32(acc + (row) * NR + 4, c1);                   \
    vst1q_f32(acc + (row) * NR + 8, c2)
    PUT(0, c00, c01, c02);
    PUT(1, c10, c11, c12);
    PUT(2, c20, c21, c22);
    PUT(3, c30, c31, c32);
    PUT(4, c40, c41, c42);
    PUT(5, c50, c51, c52);
    PUT(6, c60, c61, c62);
    PUT(7, c70, c71, c72);
#undef PUT
}

/* C block (rows x cols, leading dimension ldc) from acc: on the first k
 * slice C = alpha acc + beta C (C unread when beta == 0), then C += alpha acc.
 * Full rows of 12 go through vectors, ragged edges element by element with
 * the same operations. */
static void store_block(float *C, size_t ldc, size_t rows, size_t cols, const float *acc,
                        float alpha, float beta, int first)
{
    const float32x4_t va = vdupq_n_f32(alpha), vb = vdupq_n_f32(beta);
    for (size_t i = 0; i < rows; i++, C += ldc, acc += NR) {
        size_t j = 0;
        for (; cols - j >= 4; j += 4) {
            float32x4_t prod = vmulq_f32(va, vld1q_f32(acc + j));
            if (!first)
                prod = vaddq_f32(vld1q_f32(C + j), prod);
            else if (beta != 0.0f)
                prod = vaddq_f32(prod, vmulq_f32(vb, vld1q_f32(C + j)));
            vst1q_f32(C + j, prod);
        }
        for (; j < cols; j++) {
            if (!first)
                C[j] += alpha * acc[j];
            else if (beta == 0.0f)
                C[j] = alpha * acc[j];
            else
                C[j] = alpha * acc[j] + beta * C[j];
        }
    }
}

CPU_GEMM_MATMUL_FN(&neon_gemv_kernels, 0, NULL) /* row strides: not yet */
