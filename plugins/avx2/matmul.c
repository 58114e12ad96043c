/* SPDX-License-Identifier: MIT */
/* gemm.c - matmul C (m x n) = alpha op(A) op(B) + beta C (row-major) and gemv.
 *
 * The Goto/BLIS scheme:
 *   for jc (nc columns of C):          B block kc x nc packed once, shared
 *     for pc (kc of the k dimension):    by every thread
 *       for ic (mc rows of C):           A block mc x kc packed per task, in L2
 *         for jr (24 columns):           B micro-panel kc x 24, mostly in L1
 *           for ir (4 rows):             the 4x24 microkernel: 12 ymm
 *                                        accumulators, 3 loads of B and 4
 *                                        broadcasts of A per k step
 * mc, kc, nc come from the cache sizes (cache.c).  Tasks of the core's pool
 * are (ic block, column slice) pairs: the m blocks are made a multiple of
 * the thread count so every thread gets the same share.
 *
 * Packing reads A and B through their transposes, so the four transpose
 * combinations share one microkernel.  Edge tiles are computed whole into a
 * small buffer (packing pads with zeros) and only their valid part is merged.
 * beta == 0 never reads C (C may hold NaN garbage).  The result is
 * alpha * (A B) + beta * C computed as in the scalar backend, without
 * shortcuts for alpha == 0.
 *
 * m == 1 and n == 1 are matrix-vector products: they go to gemv, which
 * streams the matrix once instead of packing it.
 */
#include "plugin.h"
#include "x86-typed-matmul.h"
#include "x86-avx2-math.h"

#include <stdlib.h>
#include <string.h>

#define MR AVX2_GEMM_MR
#define NR AVX2_GEMM_NR

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- operands ----------------------------------------------------------------
 * op(A) is m x k and op(B) is k x n; a transposed operand is stored the
 * other way round, row-major. */
typedef x86_gemm_args gemm_args;

/* One full MR-row (4-row) panel of A stored m x k (not transposed): 4 k at
 * a time, a 4x4 transpose in registers turns 4 rows into 4 columns. */
static void pack_a_rows(const float *A, size_t lda, size_t kc, float *dst)
{
    size_t p = 0;
    for (; p + 4 <= kc; p += 4) {
        __m128 r0 = _mm_loadu_ps(A + p), r1 = _mm_loadu_ps(A + lda + p);
        __m128 r2 = _mm_loadu_ps(A + 2 * lda + p), r3 = _mm_loadu_ps(A + 3 * lda + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(dst + p * MR, r0);
        _mm_storeu_ps(dst + (p + 1) * MR, r1);
        _mm_storeu_ps(dst + (p + 2) * MR, r2);
        _mm_storeu_ps(dst + (p + 3) * MR, r3);
    }
    for (; p < kc; p++)
        for (size_t i = 0; i < MR; i++)
            dst[p * MR + i] = A[i * lda + p];
}

/* Pack rows [i0, i0 + mc) x cols [p0, p0 + kc) of op(A) into MR-row panels:
 * panel-major, then k, then the MR rows; rows past m are zero. */
static void pack_a(const gemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc, float *dst)
{
    for (size_t ir = 0; ir < mc; ir += MR, dst += MR * kc) {
        size_t rows = min_size(MR, mc - ir);
        if (!g->trans_a && rows == MR) {
            pack_a_rows(g->A + (i0 + ir) * g->k + p0, g->k, kc, dst);
            continue;
        }
        float *d = dst;
        for (size_t p = 0; p < kc; p++, d += MR) {
            size_t r = 0;
            if (g->trans_a) {
                /* op(A)(i, p) = A[p * m + i]: the MR values of one k are contiguous. */
                const float *src = g->A + (p0 + p) * g->m + i0 + ir;
                for (; r < rows; r++)
                    d[r] = src[r];
            } else {
                for (; r < rows; r++)
                    d[r] = g->A[(i0 + ir + r) * g->k + p0 + p];
            }
            for (; r < MR; r++)
                d[r] = 0.0f;
        }
    }
}

/* B stored n x k (transposed), NR full columns: 8 k at a time, 8x8
 * transposes turn NR rows of B into 8 rows of NR of the panel. */
static void pack_b_transposed(const float *B, size_t ldb, size_t kc, float *dst)
{
    size_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        for (size_t group = 0; group < NR / 8; group++) {
            __m256 r[8];
            for (size_t j = 0; j < 8; j++)
                r[j] = _mm256_loadu_ps(B + (group * 8 + j) * ldb + p);
            v_transpose8x8(r);
            for (size_t i = 0; i < 8; i++)
                _mm256_store_ps(dst + (p + i) * NR + group * 8, r[i]);
        }
    }
    for (; p < kc; p++)
        for (size_t j = 0; j < NR; j++)
            dst[p * NR + j] = B[j * ldb + p];
}

/* Pack rows [p0, p0 + kc) x cols [j0, j0 + cols) of op(B) into one
 * NR-column panel: k-major, the NR columns contiguous; columns past n are
 * zero. */
static void pack_b_panel(const gemm_args *g, size_t p0, size_t kc, size_t j0, size_t cols, float *dst)
{
    if (cols == NR && !g->trans_b) {
        for (size_t p = 0; p < kc; p++, dst += NR) {
            const float *src = g->B + (p0 + p) * g->n + j0;
            for (size_t v = 0; v < NR; v += 8)
                _mm256_store_ps(dst + v, _mm256_loadu_ps(src + v));
        }
        return;
    }
    if (cols == NR) {
        pack_b_transposed(g->B + j0 * g->k + p0, g->k, kc, dst);
        return;
    }
    for (size_t p = 0; p < kc; p++, dst += NR) {
        size_t c = 0;
        for (; c < cols; c++)
            dst[c] = g->trans_b ? g->B[(j0 + c) * g->k + p0 + p] : g->B[(p0 + p) * g->n + j0 + c];
        for (; c < NR; c++)
            dst[c] = 0.0f;
    }
}

/* ---- the microkernel ----------------------------------------------------------- */

/* C tile (4 x 24 at c, row stride ldc) = alpha * (a panel x b panel) + beta * C;
 * beta == 0: C is not read.  Per k: 3 loads of B, 4 broadcasts of A, 12
 * fmas into 12 accumulators.  A 6x16 tile needs 6 broadcasts for the same
 * 12 fmas; on Zen 3 the broadcasts compete with the fmas and 6x16 measured
 * 90% of the FMA peak in L1, 4x24 99%. */
static void kernel_4x24(size_t kc, const float *a, const float *b, float *c, size_t ldc,
                        float alpha, float beta)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    for (size_t r = 0; r < MR; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
    /* The k loop is written in assembly: with 12 accumulators, 3 B vectors
     * and a broadcast all 16 ymm registers are in use, and gcc's register
     * allocator then turns B loads into memory operands of the fmas,
     * loading each B vector up to 4 times (15% slower).  Here the
     * accumulators are operands in ymm0-11 and ymm12-15 are scratch. */
#define K_STEP(OFF_B, OFF_A)                                                   \
    "vmovaps " #OFF_B "(%[b]), %%ymm12\n\t"                                    \
    "vmovaps " #OFF_B "+32(%[b]), %%ymm13\n\t"                                 \
    "vmovaps " #OFF_B "+64(%[b]), %%ymm14\n\t"                                 \
    "vbroadcastss " #OFF_A "(%[a]), %%ymm15\n\t"                               \
    "vfmadd231ps %%ymm12, %%ymm15, %[c00]\n\t"                                 \
    "vfmadd231ps %%ymm13, %%ymm15, %[c01]\n\t"                                 \
    "vfmadd231ps %%ymm14, %%ymm15, %[c02]\n\t"                                 \
    "vbroadcastss " #OFF_A "+4(%[a]), %%ymm15\n\t"                             \
    "vfmadd231ps %%ymm12, %%ymm15, %[c10]\n\t"                                 \
    "vfmadd231ps %%ymm13, %%ymm15, %[c11]\n\t"                                 \
    "vfmadd231ps %%ymm14, %%ymm15, %[c12]\n\t"                                 \
    "vbroadcastss " #OFF_A "+8(%[a]), %%ymm15\n\t"                             \
    "vfmadd231ps %%ymm12, %%ymm15, %[c20]\n\t"                                 \
    "vfmadd231ps %%ymm13, %%ymm15, %[c21]\n\t"                                 \
    "vfmadd231ps %%ymm14, %%ymm15, %[c22]\n\t"                                 \
    "vbroadcastss " #OFF_A "+12(%[a]), %%ymm15\n\t"                            \
    "vfmadd231ps %%ymm12, %%ymm15, %[c30]\n\t"                                 \
    "vfmadd231ps %%ymm13, %%ymm15, %[c31]\n\t"                                 \
    "vfmadd231ps %%ymm14, %%ymm15, %[c32]\n\t"
#define K_OPERANDS                                                             \
    [a] "+r"(a), [b] "+r"(b), [n] "+r"(steps), [c00] "+x"(c00), [c01] "+x"(c01),   \
    [c02] "+x"(c02), [c10] "+x"(c10), [c11] "+x"(c11), [c12] "+x"(c12),           \
    [c20] "+x"(c20), [c21] "+x"(c21), [c22] "+x"(c22), [c30] "+x"(c30),           \
    [c31] "+x"(c31), [c32] "+x"(c32)
    size_t steps = kc / 4;
    if (steps)
        __asm__("1:\n\t"
                K_STEP(0, 0) K_STEP(96, 16) K_STEP(192, 32) K_STEP(288, 48)
                "add $64, %[a]\n\t"
                "add $384, %[b]\n\t"
                "dec %[n]\n\t"
                "jnz 1b\n\t"
                : K_OPERANDS
                :
                : "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");
    steps = kc % 4;
    if (steps)
        __asm__("1:\n\t"
                K_STEP(0, 0)
                "add $16, %[a]\n\t"
                "add $96, %[b]\n\t"
                "dec %[n]\n\t"
                "jnz 1b\n\t"
                : K_OPERANDS
                :
                : "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");
#undef K_OPERANDS
#undef K_STEP
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    /* C = alpha AB (beta 0: C unread), alpha AB + C (every k block after the
     * first: one fma), or alpha AB + beta C. */
#define STORE_ONE(PTR, X)                                                      \
    do {                                                                       \
        __m256 y_;                                                             \
        if (beta == 0.0f)                                                      \
            y_ = _mm256_mul_ps(va, X);                                         \
        else if (beta == 1.0f)                                                 \
            y_ = _mm256_fmadd_ps(va, X, _mm256_loadu_ps(PTR));                 \
        else                                                                   \
            y_ = _mm256_fmadd_ps(va, X, _mm256_mul_ps(vb, _mm256_loadu_ps(PTR))); \
        _mm256_storeu_ps(PTR, y_);                                             \
    } while (0)
#define STORE_ROW(R, X0, X1, X2)                                               \
    do {                                                                       \
        float *row = c + (R) * ldc;                                            \
        STORE_ONE(row, X0);                                                    \
        STORE_ONE(row + 8, X1);                                                \
        STORE_ONE(row + 16, X2);                                               \
    } while (0)
    STORE_ROW(0, c00, c01, c02);
    STORE_ROW(1, c10, c11, c12);
    STORE_ROW(2, c20, c21, c22);
    STORE_ROW(3, c30, c31, c32);
#undef STORE_ROW
#undef STORE_ONE
}

/* ---- the blocked driver (x86-sgemm-blocked_tmpl.c) ------------------------- */
#define X86_KERNEL_TILE kernel_4x24
#define X86_PACK_B_OWN /* B not transposed: packed row by row (below) */
#include "x86-sgemm-blocked_tmpl.c"

#define PACK_B_ROWS 16 /* rows of B per task when B is not transposed */

/* B not transposed: one task per PACK_B_ROWS rows of the kc x nc block, each
 * row read once from start to end (panel by panel it would jump a row
 * stride every 96 bytes, a new page each time for wide matrices). */
static void pack_b_rows_task(void *arg, size_t task, unsigned worker)
{
    const gemm_step *s = arg;
    const gemm_args *g = s->g;
    (void)worker;
    size_t p_end = min_size((task + 1) * PACK_B_ROWS, s->kc);
    for (size_t p = task * PACK_B_ROWS; p < p_end; p++) {
        const float *src = g->B + (s->pc + p) * g->n + s->jc;
        float *dst = s->scratch->packed_b + p * NR;
        size_t j = 0;
        for (; j + NR <= s->nc; j += NR, dst += NR * s->kc)
            for (size_t v = 0; v < NR; v += 8)
                _mm256_store_ps(dst + v, _mm256_loadu_ps(src + j + v));
        if (j < s->nc) {
            size_t c = 0;
            for (; c < s->nc - j; c++)
                dst[c] = src[j + c];
            for (; c < NR; c++)
                dst[c] = 0.0f;
        }
    }
}

static void pack_b(const avx2_state *st, gemm_step *s)
{
    if (s->g->trans_b)
        cpu_parallel(&st->cpu, (s->nc + NR - 1) / NR, pack_b_task, s);
    else
        cpu_parallel(&st->cpu, (s->kc + PACK_B_ROWS - 1) / PACK_B_ROWS, pack_b_rows_task, s);
}

/* ---- gemv: y = alpha op(A) x + beta y, A rows x cols ----------------------- */

/* Accuracy at any length (contract 1e-5 of sum|terms|): float lanes add at
 * most 32 terms each before their sum goes to a double accumulator, as in
 * reduce.c, so the error does not grow with n (m = 1 x 100000 summed in
 * float lanes alone was 51x the contract). */
#define DOT_BLOCK 256     /* elements: 32 per lane of one 8-lane sum */
#define ROW_BLOCK 32      /* rows accumulated in float by the transposed gemv */
#define X86_GEMV_RUN avx2_gemv_run
#include "x86-gemv_tmpl.c"

/* Four rows of A against x[0..n), n <= DOT_BLOCK: x is loaded once for four
 * dot products; out[r] += the sums. */
static void dot4_block(const float *A, size_t lda, const float *x, size_t n, double out[4])
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 xv = _mm256_loadu_ps(x + j);
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(A + j), xv, s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(A + lda + j), xv, s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(A + 2 * lda + j), xv, s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(A + 3 * lda + j), xv, s3);
    }
    if (j < n) {
        __m256i m = v_lane_mask(n - j);
        __m256 xv = _mm256_maskload_ps(x + j, m);
        s0 = _mm256_fmadd_ps(_mm256_maskload_ps(A + j, m), xv, s0);
        s1 = _mm256_fmadd_ps(_mm256_maskload_ps(A + lda + j, m), xv, s1);
        s2 = _mm256_fmadd_ps(_mm256_maskload_ps(A + 2 * lda + j, m), xv, s2);
        s3 = _mm256_fmadd_ps(_mm256_maskload_ps(A + 3 * lda + j, m), xv, s3);
    }
    out[0] += v_hsum(s0);
    out[1] += v_hsum(s1);
    out[2] += v_hsum(s2);
    out[3] += v_hsum(s3);
}

static void dot4(const float *A, size_t lda, const float *x, size_t n, double out[4])
{
    out[0] = out[1] = out[2] = out[3] = 0.0;
    for (size_t j = 0; j < n; j += DOT_BLOCK)
        dot4_block(A + j, lda, x + j, min_size(DOT_BLOCK, n - j), out);
}

static double dot1(const float *a, const float *x, size_t n)
{
    __m256d total = _mm256_setzero_pd();
    size_t j = 0;
    while (j < n) {
        size_t block_end = min_size(j + 2 * DOT_BLOCK, n);
        __m256 s0 = _mm256_setzero_ps(), s1 = s0;
        for (; j + 16 <= block_end; j += 16) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(x + j), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 8), _mm256_loadu_ps(x + j + 8), s1);
        }
        for (; j + 8 <= block_end; j += 8)
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(x + j), s0);
        if (j < block_end) {
            __m256i m = v_lane_mask(block_end - j);
            s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + j, m), _mm256_maskload_ps(x + j, m), s1);
            j = block_end;
        }
        total = v_widen_add(total, _mm256_add_ps(s0, s1));
    }
    return v_hsum_pd(total);
}

/* y[i] = alpha dot(A row i, x) + beta y[i] for rows [begin, end). */
static void gemv_rows(const gemv_job *job, size_t begin, size_t end)
{
    size_t i = begin;
    for (; i + 4 <= end; i += 4) {
        double d[4];
        dot4(job->A + i * job->cols, job->cols, job->x, job->cols, d);
        for (size_t r = 0; r < 4; r++) /* a sum past FLT_MAX is redone (cpu-f64-fallback.h) */
            job->y[i + r] = finish(cpu_dot_redo(d[r], job->A + (i + r) * job->cols, 1, job->x, job->cols),
                                   job->alpha, job->beta, &job->y[i + r]);
    }
    for (; i < end; i++) {
        const float *row = job->A + i * job->cols;
        job->y[i] = finish(cpu_dot_redo(dot1(row, job->x, job->cols), row, 1, job->x, job->cols), job->alpha,
                           job->beta, &job->y[i]);
    }
}

/* acc[0..w) += x[0] * a0 + x[1] * a1 + x[2] * a2 + x[3] * a3 (row segments). */
static void accumulate4(float *acc, const float *a0, const float *a1, const float *a2,
                        const float *a3, const float *x, size_t w)
{
    const __m256 x0 = _mm256_set1_ps(x[0]), x1 = _mm256_set1_ps(x[1]);
    const __m256 x2 = _mm256_set1_ps(x[2]), x3 = _mm256_set1_ps(x[3]);
    size_t j = 0;
    for (; j + 8 <= w; j += 8) {
        __m256 s = _mm256_loadu_ps(acc + j);
        s = _mm256_fmadd_ps(x0, _mm256_loadu_ps(a0 + j), s);
        s = _mm256_fmadd_ps(x1, _mm256_loadu_ps(a1 + j), s);
        s = _mm256_fmadd_ps(x2, _mm256_loadu_ps(a2 + j), s);
        s = _mm256_fmadd_ps(x3, _mm256_loadu_ps(a3 + j), s);
        _mm256_storeu_ps(acc + j, s);
    }
    for (; j < w; j++)
        acc[j] = acc[j] + x[0] * a0[j] + x[1] * a1[j] + x[2] * a2[j] + x[3] * a3[j];
}

static void accumulate1(float *acc, const float *a0, float x0, size_t w)
{
    const __m256 xv = _mm256_set1_ps(x0);
    size_t j = 0;
    for (; j + 8 <= w; j += 8)
        _mm256_storeu_ps(acc + j, _mm256_fmadd_ps(xv, _mm256_loadu_ps(a0 + j), _mm256_loadu_ps(acc + j)));
    for (; j < w; j++)
        acc[j] += x0 * a0[j];
}

/* total[0..w) += acc[0..w) in double; acc = 0. */
static void flush_strip(double *total, float *acc, size_t w)
{
    size_t j = 0;
    for (; j + 8 <= w; j += 8) {
        __m256 a = _mm256_loadu_ps(acc + j);
        _mm256_storeu_pd(total + j, _mm256_add_pd(_mm256_loadu_pd(total + j),
                                                  _mm256_cvtps_pd(_mm256_castps256_ps128(a))));
        _mm256_storeu_pd(total + j + 4, _mm256_add_pd(_mm256_loadu_pd(total + j + 4),
                                                      _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1))));
        _mm256_storeu_ps(acc + j, _mm256_setzero_ps());
    }
    for (; j < w; j++) {
        total[j] += acc[j];
        acc[j] = 0.0f;
    }
}

/* ---- a few rows of A against B transposed (x86-matmul_tmpl.c) ------------------ */
#define DOTS_MR 2        /* 2 x 4 sums, 4 rows of B and one of A: 13 of the 16 registers */
#define DOTS_UNROLL _Pragma("GCC unroll 4") /* the sums stay in registers */
#define DOTS_LEN DOT_BLOCK

/* out[r][c] += dot(A row r, B row c) over len values: B's 8 values a step
 * loaded once for every row of A. */
static inline __attribute__((always_inline)) void dots_tile(const float *A, size_t lda, size_t mr, const float *B,
                                                            size_t ldb, size_t nr, size_t len, double out[][4])
{
    __m256 s[DOTS_MR][4];
    DOTS_UNROLL for (size_t r = 0; r < DOTS_MR; r++)
        DOTS_UNROLL for (size_t c = 0; c < 4; c++)
            s[r][c] = _mm256_setzero_ps();
    for (size_t j = 0; j < len; j += 8) {
        __m256i m = v_lane_mask(min_size(8, len - j));
        __m256 b[4];
        DOTS_UNROLL for (size_t c = 0; c < nr; c++)
            b[c] = _mm256_maskload_ps(B + c * ldb + j, m);
        DOTS_UNROLL for (size_t r = 0; r < mr; r++) {
            __m256 a = _mm256_maskload_ps(A + r * lda + j, m);
            DOTS_UNROLL for (size_t c = 0; c < nr; c++)
                s[r][c] = _mm256_fmadd_ps(a, b[c], s[r][c]);
        }
    }
    DOTS_UNROLL for (size_t r = 0; r < mr; r++)
        DOTS_UNROLL for (size_t c = 0; c < nr; c++)
            out[r][c] += v_hsum(s[r][c]);
}

/* ---- matmul ------------------------------------------------------------------ */
#define X86_SGEMM avx2_sgemm
#include "x86-matmul_tmpl.c"
