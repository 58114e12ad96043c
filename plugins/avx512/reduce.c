/* SPDX-License-Identifier: MIT */
/* reduce.c - sum, dot, norm_l1, norm_l2, max, min, argmax.
 *
 * Accuracy (contract: 1e-5 relative to sum|terms| at any n): sums run in
 * blocks of BLOCK elements with 4 x 16 float accumulators (16 terms per
 * lane), and each block's 16 lanes are added in double, so the error stays
 * near (16 + 16) * 2^-24 relative whatever n.  A block whose float lanes
 * overflowed (partial sums past FLT_MAX: FLT_MAX + FLT_MAX - FLT_MAX) or met
 * inf/NaN is added again in double, term by term, so a finite result cannot
 * become inf; inf and NaN inputs give the same answer in double.  norm_l2
 * sums the squares in double: |x| < FLT_MAX squared cannot overflow there.
 *
 * Large vectors are split over the thread pool in a number of chunks that
 * depends on n only, and the partial sums are added in chunk order: the
 * result does not depend on the number of threads.
 *
 * NaN: max/min return NaN when any element is NaN; argmax returns the index
 * of the first NaN if any.
 */
#include "plugin.h"
#include "avx512-math.h"

#include <math.h>

#define BLOCK 1024

/* The kind is a constant wherever these are inlined: one loop per kind. */
#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE __m512 term_acc(cpu_reduction kind, __m512 acc, __m512 a, __m512 b)
{
    switch (kind) {
    case CPU_RED_SUM: return _mm512_add_ps(acc, a);
    case CPU_RED_ABS: return _mm512_add_ps(acc, _mm512_abs_ps(a));
    default: return _mm512_fmadd_ps(a, b, acc);
    }
}

/* One block (n <= BLOCK) in float lanes, returned as 16 lanes. */
static ALWAYS_INLINE __m512 block_reduce(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    const float *bb = kind == CPU_RED_DOT ? b : a;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = term_acc(kind, acc0, _mm512_loadu_ps(a + i), _mm512_loadu_ps(bb + i));
        acc1 = term_acc(kind, acc1, _mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(bb + i + 16));
        acc2 = term_acc(kind, acc2, _mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(bb + i + 32));
        acc3 = term_acc(kind, acc3, _mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(bb + i + 48));
    }
    for (; i + 16 <= n; i += 16)
        acc0 = term_acc(kind, acc0, _mm512_loadu_ps(a + i), _mm512_loadu_ps(bb + i));
    if (i < n) {
        __mmask16 m = z_lanes(n - i);
        acc1 = term_acc(kind, acc1, _mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, bb + i));
    }
    return _mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3));
}

/* total + the block's sum; the fast path costs one fpclass test per block. */
static ALWAYS_INLINE __m512d add_block(cpu_reduction kind, __m512d total, const float *a, const float *b,
                                       size_t n)
{
    __m512 lanes = block_reduce(kind, a, b, n);
    if (__builtin_expect(_mm512_fpclass_ps_mask(lanes, 0x99) == 0, 1)) /* no NaN, no +-inf */
        return z_widen_add(total, lanes);
    return _mm512_add_pd(total, _mm512_set_pd(0, 0, 0, 0, 0, 0, 0, cpu_reduce_f64(kind, a, b, n)));
}

double avx512_sum_squares_f64(const float *x, size_t n)
{
    __m512d acc0 = _mm512_setzero_pd(), acc1 = acc0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d x0 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        __m512d x1 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        acc0 = _mm512_fmadd_pd(x0, x0, acc0);
        acc1 = _mm512_fmadd_pd(x1, x1, acc1);
    }
    if (i < n) {
        __mmask16 m = z_lanes(n - i);
        __m512d x0 = _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)m, x + i));
        __m512d x1 = _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)(m >> 8), x + i + 8));
        acc0 = _mm512_fmadd_pd(x0, x0, acc0);
        acc1 = _mm512_fmadd_pd(x1, x1, acc1);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
}

static ALWAYS_INLINE double reduce_blocks(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    __m512d total0 = _mm512_setzero_pd(), total1 = total0;
    size_t i = 0;
    for (; i + 2 * BLOCK <= n; i += 2 * BLOCK) {
        total0 = add_block(kind, total0, a + i, b + i, BLOCK);
        total1 = add_block(kind, total1, a + i + BLOCK, b + i + BLOCK, BLOCK);
    }
    for (; i < n; i += BLOCK)
        total0 = add_block(kind, total0, a + i, b + i, n - i < BLOCK ? n - i : BLOCK);
    return _mm512_reduce_add_pd(_mm512_add_pd(total0, total1));
}

/* A dot of one block (the common small call) skips the loop over blocks. */
static double reduce_serial(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    switch (kind) {
    case CPU_RED_SUM: return reduce_blocks(CPU_RED_SUM, a, a, n);
    case CPU_RED_ABS: return reduce_blocks(CPU_RED_ABS, a, a, n);
    case CPU_RED_DOT:
        return n <= BLOCK ? _mm512_reduce_add_pd(add_block(CPU_RED_DOT, _mm512_setzero_pd(), a, b, n))
                          : reduce_blocks(CPU_RED_DOT, a, b, n);
    default: return avx512_sum_squares_f64(a, n);
    }
}

/* ---- max, min ---------------------------------------------------------------
 * vmaxps(m, v) returns v when either is NaN: a NaN would enter m and leave it
 * again at the next step, so a separate "saw NaN" mask decides instead.
 * Masked-off tail lanes keep the start value, which changes nothing. */
static ALWAYS_INLINE float reduce_extreme(const float *x, size_t n, int want_max)
{
    const __m512 start = _mm512_set1_ps(want_max ? -INFINITY : INFINITY);
    __m512 m0 = start, m1 = start, m2 = start, m3 = start;
    __mmask16 nan = 0;
#define EXTREME_STEP(m, v)                                                        \
    do {                                                                          \
        __m512 v_ = (v);                                                          \
        m = want_max ? _mm512_max_ps(m, v_) : _mm512_min_ps(m, v_);               \
        nan |= _mm512_cmp_ps_mask(v_, v_, _CMP_UNORD_Q);                          \
    } while (0)
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        EXTREME_STEP(m0, _mm512_loadu_ps(x + i));
        EXTREME_STEP(m1, _mm512_loadu_ps(x + i + 16));
        EXTREME_STEP(m2, _mm512_loadu_ps(x + i + 32));
        EXTREME_STEP(m3, _mm512_loadu_ps(x + i + 48));
    }
    for (; i < n; i += 16)
        EXTREME_STEP(m0, _mm512_mask_loadu_ps(start, z_lanes(n - i < 16 ? n - i : 16), x + i));
#undef EXTREME_STEP
    if (nan)
        return NAN;
    return want_max ? _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)))
                    : _mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(m0, m1), _mm512_min_ps(m2, m3)));
}

/* Index of the first element equal to value (NaN: the first NaN); the
 * caller knows there is one. */
static size_t reduce_find_first(const float *x, size_t n, float value)
{
    int want_nan = value != value;
    const __m512 v = _mm512_set1_ps(value);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 live = z_lanes(n - i < 16 ? n - i : 16);
        __m512 xv = _mm512_maskz_loadu_ps(live, x + i);
        __mmask16 hit = want_nan ? _mm512_mask_cmp_ps_mask(live, xv, xv, _CMP_UNORD_Q)
                                 : _mm512_mask_cmp_ps_mask(live, xv, v, _CMP_EQ_OQ);
        if (hit)
            return i + (size_t)__builtin_ctz(hit);
    }
    return n - 1; /* not reached */
}

#define REDUCE_SPLIT CPU_SPLIT_BY_SIZE
#define REDUCE_BLOCK BLOCK
#include "cpu-reduce_tmpl.c"
