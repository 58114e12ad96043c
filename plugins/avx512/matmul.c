/* SPDX-License-Identifier: MIT */
/* matmul.c - C (m x n) = alpha op(A) op(B) + beta C (row-major), by the
 * Goto/BLIS scheme with a 12x32 microkernel:
 *   for jc (nc columns of C):          B block kc x nc packed once, shared
 *     for pc (kc of the k dimension):    by every thread
 *       for ic (mc rows of C):           A block mc x kc packed per task, in L2
 *         for jr (32 columns):           B micro-panel kc x 32, in L1
 *           for ir (12 rows):            the microkernel: 24 zmm accumulators,
 *                                        2 loads of B and 12 broadcasts of A
 *                                        per k step
 * mc, kc, nc come from the cache sizes (plugin.c).  Tasks of the core's pool
 * are (ic block, column slice) pairs: the m blocks are made a multiple of the
 * thread count so every thread gets the same share, and the columns are
 * sliced when there are too few row blocks.
 *
 * Packing reads A and B through their transposes, so the four transpose
 * combinations share one microkernel; 16x16 register transposes (avx512-math.h)
 * pack the operands stored across k.  Edge tiles are computed whole into a
 * small buffer (packing pads with zeros) and only their valid part is
 * merged.  beta == 0 never reads C.  m == 1 and n == 1 go to gemv (gemv.c).
 */
#include "plugin.h"
#include "x86-typed-matmul.h"
#include "avx512-math.h"

#include <stdlib.h>
#include <string.h>

#define MR AVX512_GEMM_MR
#define NR AVX512_GEMM_NR

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- packing -------------------------------------------------------------------
 * op(A) is m x k and op(B) is k x n; a transposed operand is stored the
 * other way round, row-major. */
typedef x86_gemm_args gemm_args;

/* `rows` (<= 16) rows of src (stride ld), 16 k at a time, transposed into
 * dst: for each k, `rows` floats then the next k at dst + width.  Stores
 * are whole vectors (masked ones are slow on Zen 4): with width < 16 the
 * lanes past `rows` spill into the next k's slot, written next, or past the
 * panel into the next panel or the buffers' spare MR x kc (rows < 16 come
 * from zero registers, so padding lanes of a short panel are zero). */
static void pack_across_k(const float *src, size_t ld, size_t rows, size_t kc, float *dst, size_t width)
{
    size_t p = 0;
    for (; p + 16 <= kc; p += 16) {
        __m512 r[16];
        for (size_t i = 0; i < 16; i++)
            r[i] = i < rows ? _mm512_loadu_ps(src + i * ld + p) : _mm512_setzero_ps();
        z_transpose16x16(r);
        for (size_t i = 0; i < 16; i++)
            _mm512_storeu_ps(dst + (p + i) * width, r[i]);
    }
    for (; p < kc; p++)
        for (size_t i = 0; i < rows; i++)
            dst[p * width + i] = src[i * ld + p];
}

/* Rows [i0, i0 + mc) x cols [p0, p0 + kc) of op(A) into MR-row panels:
 * panel-major, then k, then the MR rows; rows past m are zero. */
static void pack_a(const gemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc, float *dst)
{
    for (size_t ir = 0; ir < mc; ir += MR, dst += MR * kc) {
        size_t rows = min_size(MR, mc - ir);
        if (rows < MR)
            memset(dst, 0, MR * kc * sizeof(float));
        if (!g->trans_a) {
            pack_across_k(g->A + (i0 + ir) * g->k + p0, g->k, rows, kc, dst, MR);
            continue;
        }
        /* op(A)(i, p) = A[p * m + i]: the rows of one k are contiguous;
         * whole-vector stores spill into the next k, as in pack_across_k. */
        __mmask16 keep = z_lanes(rows);
        for (size_t p = 0; p < kc; p++)
            _mm512_storeu_ps(dst + p * MR, _mm512_maskz_loadu_ps(keep, g->A + (p0 + p) * g->m + i0 + ir));
    }
}

/* Rows [p0, p0 + kc) x cols [j0, j0 + cols) of op(B) into one NR-column
 * panel: k-major, the NR columns contiguous; columns past n are zero. */
static void pack_b_panel(const gemm_args *g, size_t p0, size_t kc, size_t j0, size_t cols, float *dst)
{
    if (g->trans_b) {
        if (cols < NR)
            memset(dst, 0, NR * kc * sizeof(float));
        const float *src = g->B + j0 * g->k + p0;
        for (size_t h = 0; h < cols; h += 16)
            pack_across_k(src + h * g->k, g->k, min_size(16, cols - h), kc, dst + h, NR);
        return;
    }
    for (size_t p = 0; p < kc; p++, dst += NR) {
        const float *src = g->B + (p0 + p) * g->n + j0;
        for (size_t h = 0; h < NR; h += 16)
            _mm512_store_ps(dst + h, _mm512_maskz_loadu_ps(z_lanes(h < cols ? min_size(16, cols - h) : 0), src + h));
    }
}

/* ---- the microkernel ------------------------------------------------------------ */

/* C tile (12 x 32 at c, row stride ldc) = alpha (a panel x b panel) + beta C;
 * beta == 0: C is not read.  Per k: 2 loads of B, 12 broadcasts of A, 24
 * fmas into 24 accumulators (of 32 zmm registers: no spills; the 12
 * broadcasts are memory operands of the fmas' loads, 14 loads per 24 fmas). */
static void kernel_12x32(size_t kc, const float *a, const float *b, float *c, size_t ldc, float alpha,
                         float beta)
{
    __m512 lo[MR], hi[MR];
    for (int r = 0; r < MR; r++) {
        lo[r] = hi[r] = _mm512_setzero_ps();
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
    for (size_t p = 0; p < kc; p++, a += MR, b += NR) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        _mm_prefetch((const char *)(b + 8 * NR), _MM_HINT_T0);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            __m512 ar = _mm512_set1_ps(a[r]);
            lo[r] = _mm512_fmadd_ps(ar, b0, lo[r]);
            hi[r] = _mm512_fmadd_ps(ar, b1, hi[r]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    /* C = alpha AB (beta 0: C unread), alpha AB + C (every k block after
     * the first: one fma), or alpha AB + beta C. */
    for (int r = 0; r < MR; r++) {
        float *row = c + r * ldc;
        if (beta == 0.0f) {
            _mm512_storeu_ps(row, _mm512_mul_ps(va, lo[r]));
            _mm512_storeu_ps(row + 16, _mm512_mul_ps(va, hi[r]));
        } else if (beta == 1.0f) {
            _mm512_storeu_ps(row, _mm512_fmadd_ps(va, lo[r], _mm512_loadu_ps(row)));
            _mm512_storeu_ps(row + 16, _mm512_fmadd_ps(va, hi[r], _mm512_loadu_ps(row + 16)));
        } else {
            _mm512_storeu_ps(row, _mm512_fmadd_ps(va, lo[r], _mm512_mul_ps(vb, _mm512_loadu_ps(row))));
            _mm512_storeu_ps(row + 16,
                             _mm512_fmadd_ps(va, hi[r], _mm512_mul_ps(vb, _mm512_loadu_ps(row + 16))));
        }
    }
}

/* ---- the blocked driver (x86-sgemm-blocked_tmpl.c) ------------------------- */
#define X86_KERNEL_TILE kernel_12x32
#include "x86-sgemm-blocked_tmpl.c"

/* ---- a few rows of A against B transposed (x86-matmul_tmpl.c) ------------------ */
#define DOTS_MR 4
#define DOTS_UNROLL _Pragma("GCC unroll 4") /* the sums stay in registers */
#define DOTS_LEN 512 /* values: 32 per lane of a 16-lane float sum before double */

/* out[r][c] += dot(A row r, B row c) over len values: B's 16 values a step
 * loaded once for every row of A (4 x 4 float sums, in registers). */
static inline __attribute__((always_inline)) void dots_tile(const float *A, size_t lda, size_t mr, const float *B,
                                                            size_t ldb, size_t nr, size_t len, double out[][4])
{
    __m512 s[DOTS_MR][4];
    DOTS_UNROLL for (size_t r = 0; r < DOTS_MR; r++)
        DOTS_UNROLL for (size_t c = 0; c < 4; c++)
            s[r][c] = _mm512_setzero_ps();
    for (size_t j = 0; j < len; j += 16) {
        __mmask16 m = z_lanes(min_size(16, len - j));
        __m512 b[4];
        DOTS_UNROLL for (size_t c = 0; c < nr; c++)
            b[c] = _mm512_maskz_loadu_ps(m, B + c * ldb + j);
        DOTS_UNROLL for (size_t r = 0; r < mr; r++) {
            __m512 a = _mm512_maskz_loadu_ps(m, A + r * lda + j);
            DOTS_UNROLL for (size_t c = 0; c < nr; c++)
                s[r][c] = _mm512_fmadd_ps(a, b[c], s[r][c]);
        }
    }
    DOTS_UNROLL for (size_t r = 0; r < mr; r++)
        DOTS_UNROLL for (size_t c = 0; c < nr; c++)
            out[r][c] += _mm512_reduce_add_pd(z_widen_add(_mm512_setzero_pd(), s[r][c]));
}

/* ---- matmul ------------------------------------------------------------------- */
#define X86_GEMV_RUN avx512_gemv_run
#define X86_SGEMM avx512_sgemm
#include "x86-matmul_tmpl.c"
