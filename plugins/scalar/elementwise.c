/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act.
 *
 * Every op is a loop over [lo, hi) of a one-element function, so the same
 * function serves the op and bias_act, and the loop can be split over the
 * thread pool.  Outputs may alias inputs exactly (y == a): each y[i] depends
 * on a[i] (and b[i]) only; SCALAR_MAP (plugin.h) keeps such loops
 * vectorisable.  The transcendental functions are scalar-math.h's.
 *
 * NaN rules (rayo-ops.h): comparisons are written so that a NaN input falls
 * through to a branch that returns NaN: relu, clip, maximum and minimum
 * propagate NaN, unlike fmaxf/fminf.
 */
#include "plugin.h"
#include "scalar-math.h"

#include <math.h>
#include <string.h>

/* Relative cost of one element, in "cheap operations" (for threading). */
#define COST_ARITH 1
#define COST_MATH 8

/* ---- one-element functions -------------------------------------------------- */
static inline float maximum1(float a, float b)
{
    return (a > b || a != a) ? a : b;
}

static inline float minimum1(float a, float b)
{
    return (a < b || a != a) ? a : b;
}

static inline float relu1(float x)
{
    return x < 0.0f ? 0.0f : x; /* NaN < 0 is false: NaN stays */
}

static inline float clip1(float x, float lo, float hi)
{
    float t = x < lo ? lo : x;
    return t > hi ? hi : t;
}

/* 1 / (1 + e^-x): for x << 0, e^-x overflows to inf and the quotient to 0,
 * the right limit; no cancellation anywhere. */
static inline float sigmoid1(float x)
{
    return 1.0f / (1.0f + exp_f(-x));
}

/* x * tanh(softplus(x)).  With e = e^x, tanh(log(1 + e)) = n / (n + 2) where
 * n = e (e + 2): exact algebra, no log, no cancellation for x << 0.  From
 * x = 20 the factor is 1 in float (and e^2x would overflow). */
static inline float mish1(float x)
{
    float e = exp_f(x);
    float n = e * (e + 2.0f);
    return pick(x >= 20.0f, x, x * (n / (n + 2.0f)));
}

/* log(1 + e^x) = max(x, 0) + log1p(t), t = e^-|x| in (0, 1]: no overflow.
 * log1p(t) = log(u) t / (u - 1) with u = 1 + t rounded (u - 1 is exact), so
 * t's relative accuracy survives where 1 + t rounds; u = 1 leaves t.  NaN
 * stays NaN through t. */
static inline float softplus1(float x)
{
    float t = exp_f(-fabsf(x)), u = 1.0f + t;
    float l = u == 1.0f ? t : log_f(u) * (t / (u - 1.0f));
    return pick(x > 0.0f, x, 0.0f) + l;
}

/* x * clip(x + 3, 0, 6) / 6 as x * clamp((x + 3) / 6, 0, 1): three roundings
 * (< 1.8e-7 relative), exact for x >= 3, no overflow, right for subnormal x,
 * and -inf gives NaN (-inf * 0) like the reference. */
static inline float hardswish1(float x)
{
    return x * clamp((x + 3.0f) / 6.0f, 0.0f, 1.0f);
}

/* NaN > 0 is false: alpha * NaN = NaN.  pick (scalar-math.h) computes both
 * arms; a ?: would put the product under a condition, which gcc does not
 * vectorise (it could trap). */
static inline float leaky_relu1(float x, float alpha)
{
    return pick(x > 0.0f, x, alpha * x);
}

static inline float elu1(float x, float alpha)
{
    return pick(x > 0.0f, x, alpha * expm1_f(x));
}

/* scale * x in double: in float, x = 3.23862215e38 would overflow where
 * the result is still a float (FLT_MAX). */
static inline float selu1(float x)
{
    const double scale = 1.0507009873554805;
    const float scale_alpha = 1.7580993408473766f; /* scale * 1.6732632423543772, rounded once */
    return pick(x > 0.0f, (float)(scale * x), scale_alpha * expm1_f(x));
}

/* ---- running a range ---------------------------------------------------------- */
static rayo_status run_elementwise(void *state, const rayo_call *call, size_t cost,
                                   cpu_range_fn *fn)
{
    cpu_run_ranges(state, call, call->n, cost, fn);
    return RAYO_OK;
}

/* A unary op: y[i] = EXPR with x = a[i]; alpha and beta are the call's. */
#define UNARY_OP(name, cost, expr)                                         \
    static inline float name##_one(float x, float alpha, float beta)       \
    {                                                                      \
        (void)alpha;                                                       \
        (void)beta;                                                        \
        return (expr);                                                     \
    }                                                                      \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)    \
    {                                                                      \
        (void)st;                                                          \
        const float *a = c->a;                                             \
        float *y = c->y;                                                   \
        const float alpha = c->alpha, beta = c->beta;                      \
        SCALAR_MAP(y, lo, hi, i, name##_one(a[i], alpha, beta));           \
    }                                                                      \
    SCALAR_KERNEL(name) { return run_elementwise(state, call, cost, name##_range); }

/* y[i] = EXPR with u = a[i], v = b[i]; alpha is the call's. */
#define BINARY_RANGE(name, expr)                                           \
    static inline float name##_one(float u, float v, float alpha)          \
    {                                                                      \
        (void)alpha;                                                       \
        return (expr);                                                     \
    }                                                                      \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)    \
    {                                                                      \
        (void)st;                                                          \
        const float *a = c->a, *b = c->b;                                  \
        float *y = c->y;                                                   \
        const float alpha = c->alpha;                                      \
        SCALAR_MAP(y, lo, hi, i, name##_one(a[i], b[i], alpha));           \
    }

/* A binary op. */
#define BINARY_OP(name, expr)                                              \
    BINARY_RANGE(name, expr)                                               \
    SCALAR_KERNEL(name) { return run_elementwise(state, call, COST_ARITH, name##_range); }

BINARY_OP(add, u + v)
BINARY_OP(sub, u - v)
BINARY_OP(mul, u * v)
BINARY_OP(div, u / v)
BINARY_OP(maximum, maximum1(u, v))
BINARY_OP(minimum, minimum1(u, v))
/* In double (the product is exact, one rounding of the sum before the last):
 * alpha x alone may overflow a float where alpha x + y does not. */
BINARY_RANGE(axpy_terms, (float)((double)alpha * u + v))

UNARY_OP(scale, COST_ARITH, alpha * x)
UNARY_OP(relu, COST_ARITH, relu1(x))
UNARY_OP(leaky_relu, COST_ARITH, leaky_relu1(x, alpha))
UNARY_OP(clip, COST_ARITH, clip1(x, alpha, beta))
UNARY_OP(abs, COST_ARITH, fabsf(x))
UNARY_OP(sqrt, COST_ARITH, sqrtf(x))
UNARY_OP(hardswish, COST_ARITH, hardswish1(x))
UNARY_OP(elu, COST_MATH, elu1(x, alpha))
UNARY_OP(selu, COST_MATH, selu1(x))
UNARY_OP(sigmoid, COST_MATH, sigmoid1(x))
UNARY_OP(tanh, COST_MATH, tanh_f(x))
UNARY_OP(gelu, COST_MATH, gelu1(x))
UNARY_OP(gelu_tanh, COST_MATH, gelu_tanh1(x))
UNARY_OP(silu, COST_MATH, silu1(x))
UNARY_OP(mish, COST_MATH, mish1(x))
UNARY_OP(softplus, COST_MATH, softplus1(x))
UNARY_OP(exp, COST_MATH, exp_rounded(x))
UNARY_OP(log, COST_MATH, log_f(x))

/* y = alpha * a + y: y is also an input; a may be y. */
static void axpy_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    rayo_call as_binary = *c;
    as_binary.b = c->y;
    axpy_terms_range(st, &as_binary, lo, hi);
}

SCALAR_KERNEL(axpy)
{
    return run_elementwise(state, call, COST_ARITH, axpy_range);
}

/* ---- bias_act: y[i][j] = act(a[i][j] + bias[j]) ------------------------------ */
#define BIAS_ACT_LOOP(act) SCALAR_MAP(y, 0, n, j, act(a[j] + bias[j]))
static inline float identity1(float x)
{
    return x;
}

static void bias_act_row(uint32_t act, const float *a, const float *bias, float *y, size_t n)
{
    switch (act) {
    case RAYO_ACT_NONE: BIAS_ACT_LOOP(identity1); break;
    case RAYO_ACT_RELU: BIAS_ACT_LOOP(relu1); break;
    case RAYO_ACT_GELU: BIAS_ACT_LOOP(gelu1); break;
    case RAYO_ACT_SILU: BIAS_ACT_LOOP(silu1); break;
    case RAYO_ACT_TANH: BIAS_ACT_LOOP(tanh_f); break;
    case RAYO_ACT_SIGMOID: BIAS_ACT_LOOP(sigmoid1); break;
    default: break; /* rejected by scalar_bias_act before any row runs */
    }
}

static void bias_act_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    const float *a = c->a;
    float *y = c->y;
    for (size_t i = lo; i < hi; i++)
        bias_act_row(c->flags, a + i * c->n, c->b, y + i * c->n, c->n);
}

SCALAR_KERNEL(bias_act)
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
