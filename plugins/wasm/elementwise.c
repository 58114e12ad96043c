/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act on
 * SIMD128 vectors.
 *
 * Each op is one vector expression; the loop macros run it over [lo, hi)
 * four floats at a time (two vectors per iteration for the cheap ops), and
 * the last n % 4 floats through the same expression on a padded copy.
 * Outputs may alias inputs exactly (y == a): every vector is loaded before
 * the store to the same place.
 *
 * NaN/Inf: the expressions mirror the scalar backend's comparisons, so a
 * NaN input falls into the branch that returns NaN: maximum, minimum, relu
 * and clip propagate NaN; the ±0 results are the scalar backend's too.
 */
#include "plugin.h"

#include <math.h>

#define COST_ARITH 1
#define COST_MATH 16

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

static inline vf32 vleaky(vf32 x, vf32 alpha)
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

/* ---- loops ----------------------------------------------------------------------- */
/* A unary op: y = EXPR(x) with x the vector of a; alpha, beta splatted. */
#define UNARY_OP(name, cost, EXPR)                                         \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)    \
    {                                                                      \
        (void)st;                                                          \
        const float *a = c->a;                                             \
        float *y = c->y;                                                   \
        const vf32 alpha = vsplat(c->alpha), beta = vsplat(c->beta);       \
        (void)alpha;                                                       \
        (void)beta;                                                        \
        size_t i = lo;                                                     \
        for (; i + 8 <= hi; i += 8) {                                      \
            vf32 x = wasm_v128_load(a + i);                                \
            vf32 x1 = wasm_v128_load(a + i + 4);                           \
            vf32 r0 = (EXPR);                                              \
            x = x1;                                                        \
            wasm_v128_store(y + i, r0);                                    \
            wasm_v128_store(y + i + 4, (EXPR));                            \
        }                                                                  \
        for (; i + 4 <= hi; i += 4) {                                      \
            vf32 x = wasm_v128_load(a + i);                                \
            wasm_v128_store(y + i, (EXPR));                                \
        }                                                                  \
        if (i < hi) {                                                      \
            vf32 x = load_partial(a + i, hi - i);                          \
            store_partial(y + i, (EXPR), hi - i);                          \
        }                                                                  \
    }                                                                      \
    WASM_KERNEL(name)                                                      \
    {                                                                      \
        cpu_run_ranges(state, call, call->n, cost, name##_range);         \
        return RAYO_OK;                                                    \
    }

/* A binary op: y = EXPR(u, v) with u, v the vectors of a and b. */
#define BINARY_OP(name, EXPR)                                              \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)    \
    {                                                                      \
        (void)st;                                                          \
        const float *a = c->a, *b = c->b;                                  \
        float *y = c->y;                                                   \
        size_t i = lo;                                                     \
        for (; i + 8 <= hi; i += 8) {                                      \
            vf32 u = wasm_v128_load(a + i), v = wasm_v128_load(b + i);     \
            vf32 u1 = wasm_v128_load(a + i + 4);                           \
            vf32 v1 = wasm_v128_load(b + i + 4);                           \
            vf32 r0 = (EXPR);                                              \
            u = u1;                                                        \
            v = v1;                                                        \
            wasm_v128_store(y + i, r0);                                    \
            wasm_v128_store(y + i + 4, (EXPR));                            \
        }                                                                  \
        for (; i + 4 <= hi; i += 4) {                                      \
            vf32 u = wasm_v128_load(a + i), v = wasm_v128_load(b + i);     \
            wasm_v128_store(y + i, (EXPR));                                \
        }                                                                  \
        if (i < hi) {                                                      \
            vf32 u = load_partial(a + i, hi - i);                          \
            vf32 v = load_partial(b + i, hi - i);                          \
            store_partial(y + i, (EXPR), hi - i);                          \
        }                                                                  \
    }                                                                      \
    WASM_KERNEL(name)                                                      \
    {                                                                      \
        cpu_run_ranges(state, call, call->n, COST_ARITH, name##_range);   \
        return RAYO_OK;                                                    \
    }

BINARY_OP(add, vadd(u, v))
BINARY_OP(sub, vsub(u, v))
BINARY_OP(mul, vmul(u, v))
BINARY_OP(div, vdiv(u, v))
BINARY_OP(maximum, vmaximum(u, v))
BINARY_OP(minimum, vminimum(u, v))

UNARY_OP(scale, COST_ARITH, vmul(alpha, x))
UNARY_OP(relu, COST_ARITH, vrelu(x))
UNARY_OP(leaky_relu, COST_ARITH, vleaky(x, alpha))
UNARY_OP(clip, COST_ARITH, vclip(x, alpha, beta))
UNARY_OP(abs, COST_ARITH, vabs(x))
UNARY_OP(sqrt, COST_ARITH, wasm_f32x4_sqrt(x))
UNARY_OP(hardswish, COST_ARITH, vhardswish(x))
UNARY_OP(elu, COST_MATH, velu(x, alpha))
UNARY_OP(selu, COST_MATH, vselu(x))
UNARY_OP(sigmoid, COST_MATH, vsigmoid(x))
UNARY_OP(tanh, COST_MATH, vtanh(x))
UNARY_OP(gelu, COST_MATH, vgelu(x))
UNARY_OP(gelu_tanh, COST_MATH, vgelu_tanh(x))
UNARY_OP(silu, COST_MATH, vsilu(x))
UNARY_OP(mish, COST_MATH, vmish(x))
UNARY_OP(softplus, COST_MATH, vsoftplus(x))
UNARY_OP(exp, COST_MATH, vexp_op(x))
UNARY_OP(log, COST_MATH, vlog(x))

/* y = alpha * a + y (y is read as well as written) */
static void axpy_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    const float *a = c->a;
    float *y = c->y;
    size_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        vf32 v = wasm_v128_load(y + i);
        wasm_v128_store(y + i, vaxpy_f64(c->alpha, wasm_v128_load(a + i), &v));
    }
    if (i < hi) {
        vf32 v = load_partial(y + i, hi - i);
        store_partial(y + i, vaxpy_f64(c->alpha, load_partial(a + i, hi - i), &v), hi - i);
    }
}

WASM_KERNEL(axpy)
{
    cpu_run_ranges(state, call, call->n, COST_ARITH, axpy_range);
    return RAYO_OK;
}

/* ---- bias_act: y[i][j] = act(a[i][j] + bias[j]) ------------------------------- */
static inline vf32 activation(uint32_t act, vf32 x)
{
    switch (act) {
    case RAYO_ACT_RELU: return vrelu(x);
    case RAYO_ACT_GELU: return vgelu(x);
    case RAYO_ACT_SILU: return vsilu(x);
    case RAYO_ACT_TANH: return vtanh(x);
    case RAYO_ACT_SIGMOID: return vsigmoid(x);
    default: return x; /* RAYO_ACT_NONE; others are refused before any row runs */
    }
}

/* One row; the switch sits outside the loop through the ACT macro so each
 * activation gets its own tight loop. */
#define BIAS_ACT_ROW(ACT)                                                  \
    do {                                                                   \
        size_t j = 0;                                                      \
        for (; j + 4 <= n; j += 4)                                         \
            wasm_v128_store(y + j, activation(ACT, vadd(wasm_v128_load(a + j), \
                                                        wasm_v128_load(bias + j)))); \
        if (j < n)                                                         \
            store_partial(y + j, activation(ACT, vadd(load_partial(a + j, n - j), \
                                                      load_partial(bias + j, n - j))), n - j); \
    } while (0)

static void bias_act_row(uint32_t act, const float *a, const float *bias, float *y, size_t n)
{
    switch (act) {
    case RAYO_ACT_NONE: BIAS_ACT_ROW(RAYO_ACT_NONE); break;
    case RAYO_ACT_RELU: BIAS_ACT_ROW(RAYO_ACT_RELU); break;
    case RAYO_ACT_GELU: BIAS_ACT_ROW(RAYO_ACT_GELU); break;
    case RAYO_ACT_SILU: BIAS_ACT_ROW(RAYO_ACT_SILU); break;
    case RAYO_ACT_TANH: BIAS_ACT_ROW(RAYO_ACT_TANH); break;
    case RAYO_ACT_SIGMOID: BIAS_ACT_ROW(RAYO_ACT_SIGMOID); break;
    default: break;
    }
}

static void bias_act_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    for (size_t i = lo; i < hi; i++)
        bias_act_row(c->flags, (const float *)c->a + i * c->n, c->b, (float *)c->y + i * c->n, c->n);
}

WASM_KERNEL(bias_act)
{
    if (call->flags >= RAYO_ACT_LIMIT) {
        const cpu_state *st = state;
        if (st->host->set_error)
            st->host->set_error(st->host, "bias_act: unknown activation %u", (unsigned)call->flags);
        return RAYO_E_INVALID;
    }
    size_t cost = call->flags == RAYO_ACT_NONE || call->flags == RAYO_ACT_RELU ? COST_ARITH
                                                                             : COST_MATH;
    cpu_run_ranges(state, call, call->m, call->n * cost, bias_act_rows);
    return RAYO_OK;
}
