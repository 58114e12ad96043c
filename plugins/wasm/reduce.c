/* SPDX-License-Identifier: MIT */
/* reduce.c - sum, dot, max, min, argmax, norm_l1, norm_l2 on SIMD128.
 *
 * Accuracy (contract: 1e-5 of sum|terms| at any n): four 4-lane float
 * accumulators (16 lanes) run over blocks of BLOCK elements, i.e. 32 terms
 * per lane, and block results are added in double, so the error stays near
 * (32 + 16) * 2^-24 ~ 3e-6 of sum|terms| however long the vector.  Squares
 * (norm_l2) are summed in double lanes outright: no overflow or underflow
 * for any float.  Large vectors are split over the pool in whole blocks.
 */
#include "plugin.h"

#include <math.h>

#define BLOCK 512

/* horizontal sum of a float vector, in double */
static inline double hsum_f64(vf32 v)
{
    return ((double)wasm_f32x4_extract_lane(v, 0) + (double)wasm_f32x4_extract_lane(v, 1)) +
           ((double)wasm_f32x4_extract_lane(v, 2) + (double)wasm_f32x4_extract_lane(v, 3));
}

/* A function summing one block (n <= BLOCK) of TERM(i), the vector of
 * terms at element i; TAIL(k) is the single term k of the last n % 4. */
#define BLOCK_SUM_FN(name, PARAMS, TERM, TAIL)                             \
    static double name PARAMS                                              \
    {                                                                      \
        vf32 s0 = vsplat(0.0f), s1 = s0, s2 = s0, s3 = s0;                 \
        size_t i = 0;                                                      \
        for (; i + 16 <= n; i += 16) {                                     \
            s0 = vadd(s0, TERM(i));                                        \
            s1 = vadd(s1, TERM(i + 4));                                    \
            s2 = vadd(s2, TERM(i + 8));                                    \
            s3 = vadd(s3, TERM(i + 12));                                   \
        }                                                                  \
        for (; i + 4 <= n; i += 4)                                         \
            s0 = vadd(s0, TERM(i));                                        \
        double total = hsum_f64(vadd(vadd(s0, s1), vadd(s2, s3)));         \
        for (; i < n; i++)                                                 \
            total += TAIL(i);                                              \
        return total;                                                      \
    }

#define TERM_SUM(i) wasm_v128_load(x + (i))
#define TAIL_SUM(k) (double)x[k]
#define TERM_ABS(i) vabs(wasm_v128_load(x + (i)))
#define TAIL_ABS(k) (double)fabsf(x[k])
#define TERM_DOT(i) vmul(wasm_v128_load(a + (i)), wasm_v128_load(b + (i)))
#define TAIL_DOT(k) (double)(a[k] * b[k])

BLOCK_SUM_FN(block_sum, (const float *x, size_t n), TERM_SUM, TAIL_SUM)
BLOCK_SUM_FN(block_abs_sum, (const float *x, size_t n), TERM_ABS, TAIL_ABS)
BLOCK_SUM_FN(block_dot, (const float *a, const float *b, size_t n), TERM_DOT, TAIL_DOT)

/* squares in double lanes: (2 lanes) x 2 accumulators per float vector */
double wasm_sum_squares_f64(const float *x, size_t n)
{
    v128_t s0 = wasm_f64x2_splat(0.0), s1 = s0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        vf32 v = wasm_v128_load(x + i);
        v128_t lo = wasm_f64x2_promote_low_f32x4(v);
        v128_t hi = wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
        s0 = wasm_f64x2_add(s0, wasm_f64x2_mul(lo, lo));
        s1 = wasm_f64x2_add(s1, wasm_f64x2_mul(hi, hi));
    }
    v128_t s = wasm_f64x2_add(s0, s1);
    double total = wasm_f64x2_extract_lane(s, 0) + wasm_f64x2_extract_lane(s, 1);
    for (; i < n; i++)
        total += (double)x[i] * (double)x[i];
    return total;
}

/* ---- max, min, argmax --------------------------------------------------------------
 * pmax/pmin (one instruction) keep the extreme of the non-NaN lanes; a
 * separate mask remembers whether any lane saw NaN, which then wins. */
static inline float reduce_extreme(const float *x, size_t n, int want_max)
{
    const float start = want_max ? -INFINITY : INFINITY;
    vf32 m0 = vsplat(start), m1 = m0;
    v128_t nan = wasm_i32x4_splat(0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vf32 v0 = wasm_v128_load(x + i), v1 = wasm_v128_load(x + i + 4);
        m0 = want_max ? wasm_f32x4_pmax(m0, v0) : wasm_f32x4_pmin(m0, v0);
        m1 = want_max ? wasm_f32x4_pmax(m1, v1) : wasm_f32x4_pmin(m1, v1);
        nan = wasm_v128_or(nan, wasm_v128_or(wasm_f32x4_ne(v0, v0), wasm_f32x4_ne(v1, v1)));
    }
    for (; i + 4 <= n; i += 4) {
        vf32 v = wasm_v128_load(x + i);
        m0 = want_max ? wasm_f32x4_pmax(m0, v) : wasm_f32x4_pmin(m0, v);
        nan = wasm_v128_or(nan, wasm_f32x4_ne(v, v));
    }
    float lanes[8];
    wasm_v128_store(lanes, m0);
    wasm_v128_store(lanes + 4, m1);
    float best = start;
    int any_nan = wasm_v128_any_true(nan);
    for (int l = 0; l < 8; l++)
        best = want_max ? (lanes[l] > best ? lanes[l] : best) : (lanes[l] < best ? lanes[l] : best);
    for (; i < n; i++) {
        any_nan |= x[i] != x[i];
        best = want_max ? (x[i] > best ? x[i] : best) : (x[i] < best ? x[i] : best);
    }
    return any_nan ? NAN : best;
}

/* The first index holding best (or the first NaN): four lanes at a time. */
static size_t reduce_find_first(const float *x, size_t n, float best)
{
    const int find_nan = best != best;
    const vf32 target = vsplat(best);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        vf32 v = wasm_v128_load(x + i);
        v128_t hit = find_nan ? wasm_f32x4_ne(v, v) : wasm_f32x4_eq(v, target);
        uint32_t bits = wasm_i32x4_bitmask(hit);
        if (bits)
            return i + (size_t)__builtin_ctz(bits);
    }
    for (; i < n; i++)
        if (find_nan ? x[i] != x[i] : x[i] == best)
            return i;
    return n; /* not reached: best is an element of x */
}

#define REDUCE_SPLIT CPU_SPLIT_PER_THREAD
#define REDUCE_BLOCK BLOCK
#define REDUCE_BLOCKED
#define REDUCE_SQUARES wasm_sum_squares_f64
#include "cpu-reduce_tmpl.c"
