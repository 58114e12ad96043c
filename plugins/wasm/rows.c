/* SPDX-License-Identifier: MIT */
/* rows.c - softmax, log_softmax, layernorm, rmsnorm on SIMD128: m
 * independent rows of n.
 *
 * As in the scalar backend, row statistics are accumulated in double, and
 * the final expression of log_softmax, layernorm and rmsnorm is evaluated in
 * double lanes (f64x2) and rounded once: a float mean or shift alone would
 * cost more than the 4e-6 contract when |mean| >> stddev.  y may be x (in
 * place): a row is read completely before the pass that overwrites it.
 */
#include "plugin.h"

#include <math.h>

#define COST_EXP 16
#define COST_NORM 4

/* ---- float <-> double lanes -------------------------------------------------- */
static inline void widen(vf32 v, v128_t *lo, v128_t *hi)
{
    *lo = wasm_f64x2_promote_low_f32x4(v);
    *hi = wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
}

static inline vf32 narrow(v128_t lo, v128_t hi)
{
    return wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(lo), wasm_f32x4_demote_f64x2_zero(hi),
                              0, 1, 4, 5);
}

/* Applies, in double, y = (x - center) * scale * g + b to four floats;
 * g, b are NULL-able stand-ins (NULL: left out, as in the scalar backend). */
static inline vf32 norm4(vf32 x, v128_t center, v128_t scale, const vf32 *g, const vf32 *b)
{
    v128_t lo, hi, glo, ghi, blo, bhi;
    widen(x, &lo, &hi);
    lo = wasm_f64x2_mul(wasm_f64x2_sub(lo, center), scale);
    hi = wasm_f64x2_mul(wasm_f64x2_sub(hi, center), scale);
    if (g) {
        widen(*g, &glo, &ghi);
        lo = wasm_f64x2_mul(lo, glo);
        hi = wasm_f64x2_mul(hi, ghi);
    }
    if (b) {
        widen(*b, &blo, &bhi);
        lo = wasm_f64x2_add(lo, blo);
        hi = wasm_f64x2_add(hi, bhi);
    }
    return narrow(lo, hi);
}

/* y = (x - center) * scale * gamma + beta over a row; gamma, beta may be NULL. */
static void normalize_row(const float *x, const float *gamma, const float *beta, float *y, size_t n,
                     double center, double scale)
{
    const v128_t c = wasm_f64x2_splat(center), s = wasm_f64x2_splat(scale);
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        vf32 g = gamma ? wasm_v128_load(gamma + j) : vsplat(1.0f);
        vf32 b = beta ? wasm_v128_load(beta + j) : vsplat(0.0f);
        wasm_v128_store(y + j, norm4(wasm_v128_load(x + j), c, s, gamma ? &g : NULL,
                                     beta ? &b : NULL));
    }
    if (j < n) {
        size_t r = n - j;
        vf32 g = gamma ? load_partial(gamma + j, r) : vsplat(1.0f);
        vf32 b = beta ? load_partial(beta + j, r) : vsplat(0.0f);
        store_partial(y + j, norm4(load_partial(x + j, r), c, s, gamma ? &g : NULL,
                                   beta ? &b : NULL), r);
    }
}

/* ---- softmax, log_softmax ---------------------------------------------------------
 * Max-subtracted: e^(x - max) <= 1 never overflows; a NaN makes the max NaN
 * and so the whole row NaN, as in the reference. */
static void softmax_row(const float *x, float *y, size_t n)
{
    const vf32 mx = vsplat(wasm_max_f32(x, n));
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        wasm_v128_store(y + j, vexp(vsub(wasm_v128_load(x + j), mx)));
    if (j < n)
        store_partial(y + j, vexp(vsub(load_partial(x + j, n - j), mx)), n - j);
    const vf32 inv = vsplat((float)(1.0 / wasm_sum_f64(y, n)));
    for (j = 0; j + 4 <= n; j += 4)
        wasm_v128_store(y + j, vmul(wasm_v128_load(y + j), inv));
    for (; j < n; j++)
        y[j] *= wasm_f32x4_extract_lane(inv, 0);
}

/* sum of e^(x - mx) without storing the terms: float lanes per block of
 * 512, double across blocks (as reduce.c) */
static double sum_exp_shifted(const float *x, size_t n, float mx)
{
    const vf32 m = vsplat(mx);
    double total = 0.0;
    size_t j = 0;
    while (j + 4 <= n) {
        size_t end = n - j > 512 ? j + 512 : n;
        vf32 s0 = vsplat(0.0f), s1 = s0;
        for (; j + 8 <= end; j += 8) {
            s0 = vadd(s0, vexp(vsub(wasm_v128_load(x + j), m)));
            s1 = vadd(s1, vexp(vsub(wasm_v128_load(x + j + 4), m)));
        }
        for (; j + 4 <= end; j += 4)
            s0 = vadd(s0, vexp(vsub(wasm_v128_load(x + j), m)));
        float lanes[4];
        wasm_v128_store(lanes, vadd(s0, s1));
        total += ((double)lanes[0] + lanes[1]) + ((double)lanes[2] + lanes[3]);
    }
    if (j < n) {
        float lanes[4];
        /* only the n - j real lanes are stored and counted */
        store_partial(lanes, vexp(vsub(load_partial(x + j, n - j), m)), n - j);
        for (size_t k = 0; k < n - j; k++)
            total += lanes[k];
    }
    return total;
}

/* y = (x - max) - log(sum), in that order: max + log(sum) as one shift
 * would lose log(sum) against a large max (a constant row of 1e30).  x - max
 * and y have the same sign and |x - max| <= |y|: each float rounding costs
 * at most 2^-24 |y|. */
static void log_softmax_row(const float *x, float *y, size_t n)
{
    float mx = wasm_max_f32(x, n);
    const vf32 m = vsplat(mx), l = vsplat((float)log(sum_exp_shifted(x, n, mx)));
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        wasm_v128_store(y + j, vsub(vsub(wasm_v128_load(x + j), m), l));
    if (j < n)
        store_partial(y + j, vsub(vsub(load_partial(x + j, n - j), m), l), n - j);
}

/* ---- the double sums of layernorm ------------------------------------------ */
#define VD v128_t
#define ROW_SUMS_STEP 4
#define vd_zero() wasm_f64x2_splat(0.0)
#define vd_set wasm_f64x2_splat
#define vd_add wasm_f64x2_add
#define vd_sub wasm_f64x2_sub
#define vd_fma(a, b, acc) wasm_f64x2_add(acc, wasm_f64x2_mul(a, b))
static inline double vd_hsum(v128_t v)
{
    return wasm_f64x2_extract_lane(v, 0) + wasm_f64x2_extract_lane(v, 1);
}
static inline void row_sums_widen(const float *x, VD *lo, VD *hi)
{
    widen(wasm_v128_load(x), lo, hi);
}
#include "cpu-row-sums_tmpl.c"

/* ---- kernels: the row functions above over the call's m rows ---------------- */
#define ROWS_EXP_COST COST_EXP
#define ROWS_NORM_COST COST_NORM
#include "cpu-rows_tmpl.c"
