/* SPDX-License-Identifier: MIT */
/* reduce.c - sum, dot, norm_l1, norm_l2, max, min, argmax.
 *
 * Accuracy (contract: 1e-5 relative to sum|terms| at any n): sums run in
 * blocks of BLOCK elements with 4 x 8 float accumulators (BLOCK / 32 terms
 * per lane), and the block results are added in double, so the error stays
 * near (BLOCK / 32 + 32) * 2^-24 ~ 4e-6 relative whatever n.  norm_l2 sums
 * the squares in double: |x| < FLT_MAX squared cannot overflow there.
 *
 * Large vectors are split over the thread pool in a fixed number of chunks
 * that depends on n only, and the partial sums are added in chunk order: the
 * result does not depend on the number of threads.
 *
 * NaN: max/min return NaN when any element is NaN (the scalar backend's NAN);
 * argmax returns the index of the first NaN if any.
 */
#include "plugin.h"
#include "x86-avx2-math.h"

#include <math.h>

#define BLOCK 1024

/* The kind of cpu_reduction is a constant wherever these are inlined, so each
 * kind gets its own loop (no switch per vector). */
#define ALWAYS_INLINE inline __attribute__((always_inline))

/* One term vector of the cpu_reduction (a, b: 8 elements each). */
static ALWAYS_INLINE __m256 term_acc(cpu_reduction kind, __m256 acc, __m256 a, __m256 b)
{
    switch (kind) {
    case CPU_RED_SUM: return _mm256_add_ps(acc, a);
    case CPU_RED_ABS: return _mm256_add_ps(acc, v_abs(a));
    default: return _mm256_fmadd_ps(a, b, acc);
    }
}

/* sum over one block (n <= BLOCK) in float lanes, returned as 8 lanes. */
static ALWAYS_INLINE __m256 block_reduce(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    const float *bb = kind == CPU_RED_DOT ? b : a;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = term_acc(kind, acc0, _mm256_loadu_ps(a + i), _mm256_loadu_ps(bb + i));
        acc1 = term_acc(kind, acc1, _mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(bb + i + 8));
        acc2 = term_acc(kind, acc2, _mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(bb + i + 16));
        acc3 = term_acc(kind, acc3, _mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(bb + i + 24));
    }
    for (; i + 8 <= n; i += 8)
        acc0 = term_acc(kind, acc0, _mm256_loadu_ps(a + i), _mm256_loadu_ps(bb + i));
    if (i < n) {
        __m256i m = v_lane_mask(n - i);
        acc1 = term_acc(kind, acc1, _mm256_maskload_ps(a + i, m), _mm256_maskload_ps(bb + i, m));
    }
    return _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
}

double avx2_sum_squares_f64(const float *x, size_t n)
{
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256d x0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        __m256d x1 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
        __m256d x2 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8));
        __m256d x3 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12));
        acc0 = _mm256_fmadd_pd(x0, x0, acc0);
        acc1 = _mm256_fmadd_pd(x1, x1, acc1);
        acc2 = _mm256_fmadd_pd(x2, x2, acc2);
        acc3 = _mm256_fmadd_pd(x3, x3, acc3);
    }
    double s = v_hsum_pd(_mm256_add_pd(_mm256_add_pd(acc0, acc1), _mm256_add_pd(acc2, acc3)));
    for (; i < n; i++)
        s += (double)x[i] * (double)x[i];
    return s;
}

/* total + the block's sum.  A block whose float lanes overflowed (or met
 * inf/NaN) is added again in double, so partial sums past FLT_MAX (FLT_MAX +
 * FLT_MAX - FLT_MAX) cannot make a finite result inf; inf and NaN inputs give
 * the same answer in double.  The fast path costs one test per block. */
static ALWAYS_INLINE __m256d add_block(cpu_reduction kind, __m256d total, const float *a, const float *b,
                                       size_t n)
{
    __m256 lanes = block_reduce(kind, a, b, n);
    __m256 finite = _mm256_cmp_ps(v_abs(lanes), _mm256_set1_ps(INFINITY), _CMP_LT_OQ);
    if (__builtin_expect(_mm256_movemask_ps(finite) == 0xff, 1))
        return v_widen_add(total, lanes);
    return _mm256_add_pd(total, _mm256_set_pd(0.0, 0.0, 0.0, cpu_reduce_f64(kind, a, b, n)));
}

static ALWAYS_INLINE double reduce_blocks(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    __m256d total0 = _mm256_setzero_pd(), total1 = total0;
    size_t i = 0;
    for (; i + 2 * BLOCK <= n; i += 2 * BLOCK) {
        total0 = add_block(kind, total0, a + i, b + i, BLOCK);
        total1 = add_block(kind, total1, a + i + BLOCK, b + i + BLOCK, BLOCK);
    }
    for (; i < n; i += BLOCK) {
        size_t len = n - i < BLOCK ? n - i : BLOCK;
        total0 = add_block(kind, total0, a + i, b + i, len);
    }
    return v_hsum_pd(_mm256_add_pd(total0, total1));
}

static double reduce_sum(const float *a, const float *b, size_t n) { return reduce_blocks(CPU_RED_SUM, a, b, n); }
static double reduce_abs(const float *a, const float *b, size_t n) { return reduce_blocks(CPU_RED_ABS, a, b, n); }
static double reduce_dot(const float *a, const float *b, size_t n) { return reduce_blocks(CPU_RED_DOT, a, b, n); }

/* One block (the common small call) skips the loop over blocks; b is a for
 * the reductions of one vector (their loads of b are a's, never used). */
static double reduce_serial(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    const __m256d zero = _mm256_setzero_pd();
    if (!b)
        b = a;
    switch (kind) {
    case CPU_RED_SUM: return n <= BLOCK ? v_hsum_pd(add_block(CPU_RED_SUM, zero, a, a, n)) : reduce_sum(a, b, n);
    case CPU_RED_ABS: return n <= BLOCK ? v_hsum_pd(add_block(CPU_RED_ABS, zero, a, a, n)) : reduce_abs(a, b, n);
    case CPU_RED_DOT: return n <= BLOCK ? v_hsum_pd(add_block(CPU_RED_DOT, zero, a, b, n)) : reduce_dot(a, b, n);
    default: return avx2_sum_squares_f64(a, n);
    }
}

/* ---- max, min ---------------------------------------------------------------
 * maxps(m, v) returns v when either is NaN: a NaN would enter m and leave it
 * again at the next step.  A separate "saw NaN" mask decides instead. */
static ALWAYS_INLINE float reduce_extreme(const float *x, size_t n, int want_max)
{
    const __m256 start = _mm256_set1_ps(want_max ? -INFINITY : INFINITY);
    __m256 m0 = start, m1 = start, m2 = start, m3 = start;
    __m256 nan = _mm256_setzero_ps();
#define EXTREME_STEP(m, v)                                                        \
    do {                                                                          \
        __m256 v_ = (v);                                                          \
        m = want_max ? _mm256_max_ps(m, v_) : _mm256_min_ps(m, v_);               \
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v_, v_, _CMP_UNORD_Q));             \
    } while (0)
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        EXTREME_STEP(m0, _mm256_loadu_ps(x + i));
        EXTREME_STEP(m1, _mm256_loadu_ps(x + i + 8));
        EXTREME_STEP(m2, _mm256_loadu_ps(x + i + 16));
        EXTREME_STEP(m3, _mm256_loadu_ps(x + i + 24));
    }
    for (; i + 8 <= n; i += 8)
        EXTREME_STEP(m0, _mm256_loadu_ps(x + i));
    if (i < n) {
        /* Unused lanes read as the start value, which changes nothing. */
        __m256i mask = v_lane_mask(n - i);
        __m256 v = _mm256_blendv_ps(start, _mm256_maskload_ps(x + i, mask), _mm256_castsi256_ps(mask));
        EXTREME_STEP(m1, v);
    }
#undef EXTREME_STEP
    if (_mm256_movemask_ps(nan))
        return NAN;
    __m256 m = want_max ? _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3))
                        : _mm256_min_ps(_mm256_min_ps(m0, m1), _mm256_min_ps(m2, m3));
    __m128 h = want_max ? _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1))
                        : _mm_min_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    float lanes[4];
    _mm_storeu_ps(lanes, h);
    float best = lanes[0];
    for (int l = 1; l < 4; l++)
        best = want_max ? (lanes[l] > best ? lanes[l] : best) : (lanes[l] < best ? lanes[l] : best);
    return best;
}

/* Index of the first element equal to value (value NaN: the first NaN);
 * the caller knows there is one. */
static size_t reduce_find_first(const float *x, size_t n, float value)
{
    int want_nan = value != value;
    __m256 v = _mm256_set1_ps(value);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256 hit = want_nan ? _mm256_cmp_ps(xv, xv, _CMP_UNORD_Q) : _mm256_cmp_ps(xv, v, _CMP_EQ_OQ);
        int bits = _mm256_movemask_ps(hit);
        if (bits)
            return i + (size_t)__builtin_ctz((unsigned)bits);
    }
    for (; i < n; i++)
        if (want_nan ? x[i] != x[i] : x[i] == value)
            return i;
    return n - 1; /* not reached */
}

#define REDUCE_SPLIT CPU_SPLIT_BY_SIZE
#define REDUCE_BLOCK BLOCK
#include "cpu-reduce_tmpl.c"
