/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act: the
 * SIMD128 vector primitives of ../cpu-base/cpu-elementwise_tmpl.c, four
 * floats, two vectors a step for the cheap ops, the last n % 4 floats
 * through the same expression on a padded copy.
 *
 * NaN/Inf: the expressions mirror the scalar backend's comparisons, so a
 * NaN input falls into the branch that returns NaN: maximum, minimum, relu
 * and clip propagate NaN; the ±0 results are the scalar backend's too.
 */
#include "plugin.h"

#include <math.h>
#include <stdint.h>

/* Relative cost of one element, in "cheap operations" (for threading). */
#define ELTWISE_CHEAP 1
#define ELTWISE_MATH 16

/* ---- one-vector functions (same comparisons as the scalar backend) ----------- */
static inline vf32 vmaximum(vf32 a, vf32 b)
{
    v128_t take_a = wasm_v128_or(wasm_f32x4_gt(a, b), wasm_f32x4_ne(a, a));
    return vselect(take_a, a, b);
}

static inline vf32 vminimum(vf32 a, vf32 b)
{
    v128_t take_a = wasm_v128_or(wasm_f32x4_lt(a, b), wasm_f32x4_ne(a, a));
    return vselect(take_a, a, b);
}

/* x < 0 ? 0 : x: NaN < 0 is false, so NaN stays */
static inline vf32 vrelu(vf32 x)
{
    return vselect(wasm_f32x4_lt(x, vsplat(0.0f)), vsplat(0.0f), x);
}

/* t = x < lo ? lo : x; t > hi ? hi : t */
static inline vf32 vclip(vf32 x, vf32 lo, vf32 hi)
{
    vf32 t = vselect(wasm_f32x4_lt(x, lo), lo, x);
    return vselect(wasm_f32x4_gt(t, hi), hi, t);
}

static inline vf32 vleaky_relu(vf32 x, vf32 alpha)
{
    return vselect(wasm_f32x4_gt(x, vsplat(0.0f)), x, vmul(alpha, x));
}

/* x * (clip(x + 3, 0, 6) / 6): the scalar backend's order of operations */
static inline vf32 vhardswish(vf32 x)
{
    vf32 t = vclip(vadd(x, vsplat(3.0f)), vsplat(0.0f), vsplat(6.0f));
    return vmul(x, vdiv(t, vsplat(6.0f)));
}

static inline vf32 velu(vf32 x, vf32 alpha)
{
    return vselect(wasm_f32x4_gt(x, vsplat(0.0f)), x, vmul(alpha, vexpm1(x)));
}

/* alpha * x + y in double lanes (the product exact, the sum rounded to
 * double, then to float): in float, alpha * x alone may overflow where
 * alpha * x + y, or selu's scale * x, is still a float.  y may be NULL. */
static inline vf32 vaxpy_f64(double alpha, vf32 x, const vf32 *y)
{
    const v128_t a = wasm_f64x2_splat(alpha);
    v128_t lo = wasm_f64x2_mul(a, wasm_f64x2_promote_low_f32x4(x));
    v128_t hi = wasm_f64x2_mul(a, wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(x, x, 2, 3, 0, 1)));
    if (y) {
        lo = wasm_f64x2_add(lo, wasm_f64x2_promote_low_f32x4(*y));
        hi = wasm_f64x2_add(hi, wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(*y, *y, 2, 3, 0, 1)));
    }
    return wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(lo), wasm_f32x4_demote_f64x2_zero(hi), 0, 1, 4, 5);
}

static inline vf32 vselu(vf32 x)
{
    const float scale_alpha = 1.7580993408473766f; /* scale * 1.6732632423543772 */
    return vselect(wasm_f32x4_gt(x, vsplat(0.0f)), vaxpy_f64(1.0507009873554805, x, NULL),
                   vmul(vsplat(scale_alpha), vexpm1(x)));
}

/* e^x for the exp op, whose contract has no absolute slack: results below
 * FLT_MIN (x < -87.33) lose bits to double rounding in vexp, so those rare
 * lanes take the C library's expf (the scalar backend's own function). */
static inline vf32 vexp_op(vf32 x)
{
    vf32 y = vexp(x);
    if (__builtin_expect(wasm_v128_any_true(wasm_f32x4_lt(x, vsplat(-87.33f))), 0)) {
        float xs[4], ys[4];
        wasm_v128_store(xs, x);
        wasm_v128_store(ys, y);
        for (int l = 0; l < 4; l++)
            if (xs[l] < -87.33f)
                ys[l] = expf(xs[l]);
        y = wasm_v128_load(ys);
    }
    return y;
}

static inline vf32 vaxpy(vf32 alpha, vf32 x, vf32 y)
{
    return vaxpy_f64(wasm_f32x4_extract_lane(alpha, 0), x, &y);
}

/* ---- the vector interface of the template --------------------------------- */
typedef vf32 vec_t;
#define VEC_LANES 4
#define VEC_UNROLL2 1
#define VEC_FN(name) v##name
#define vec_load wasm_v128_load
#define vec_store wasm_v128_store
#define vec_splat vsplat
#define vec_load_part load_partial
#define vec_store_part store_partial
#define vsqrt wasm_f32x4_sqrt

#include "cpu-elementwise_tmpl.c"
