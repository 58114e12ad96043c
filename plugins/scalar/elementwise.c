/* elementwise.c - binary, unary and activation ops, axpy and bias_act.
 *
 * Every op is a loop over [lo, hi) of a one-element function, so the same
 * function serves the op and bias_act, and the loop can be split over the
 * thread pool.  Outputs may alias inputs exactly (y == a): each y[i] depends
 * on a[i] (and b[i]) only, so no pointer is declared restrict.
 *
 * NaN rules (rayo-ops.h): comparisons are written so that a NaN input falls
 * through to a branch that returns NaN: relu, clip, maximum and minimum
 * propagate NaN, unlike fmaxf/fminf.
 */
#include "scalar.h"

#include <math.h>
#include <string.h>

/* Relative cost of one element, in "cheap operations" (for threading). */
#define COST_ARITH 1
#define COST_LIBM 16

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

/* 1 / (1 + e^-x), written with e^-|x| so that nothing overflows. */
static inline float sigmoid1(float x)
{
    if (x >= 0.0f)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x); /* also the NaN path */
    return e / (1.0f + e);
}

/* x * sigmoid(x) as x / (1 + e^-x): one rounding less than the product;
 * for x -> -inf the quotient goes to -0 as the reference does. */
static inline float silu1(float x)
{
    return x / (1.0f + expf(-x));
}

/* x * Phi(x).  For x < 0, 1 + erf(x / sqrt 2) cancels badly; erfc of the
 * positive argument keeps full relative precision in the left tail. */
static inline float gelu1(float x)
{
    const float inv_sqrt2 = 0.70710678118654752f;
    if (x >= 0.0f)
        return 0.5f * x * (1.0f + erff(x * inv_sqrt2));
    return 0.5f * x * erfcf(-x * inv_sqrt2);
}

/* x * (1 + tanh(u)) / 2 = x * sigmoid(2u) = x / (1 + e^-2u): no cancellation
 * in the left tail, no overflow (e^-2u = inf gives -0). */
static inline float gelu_tanh1(float x)
{
    const float sqrt_2_over_pi = 0.79788456080286536f;
    float u = sqrt_2_over_pi * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
}

/* x * tanh(softplus(x)).  With e = e^x, tanh(log(1 + e)) = n / (n + 2) where
 * n = e (e + 2): exact algebra, no log, no cancellation for x << 0.  Past
 * x = 20 the factor is 1 in float (and e^2x would overflow). */
static inline float mish1(float x)
{
    if (x >= 20.0f)
        return x;
    float e = expf(x);
    float n = e * (e + 2.0f);
    return x * (n / (n + 2.0f));
}

/* x * clip(x + 3, 0, 6) / 6 as x * clip((x + 3) / 6, 0, 1): three roundings
 * (< 1.8e-7 relative), exact for x >= 3, no overflow, right for subnormal x,
 * and -inf gives NaN (-inf * 0) like the reference. */
static inline float hardswish1(float x)
{
    return x * clip1((x + 3.0f) / 6.0f, 0.0f, 1.0f);
}

/* x > 0 ? x : alpha x, as a sum where one term is zero (still exact, and
 * NaN stays NaN): selecting between x and a product would put the product
 * under a condition, which gcc does not vectorise (it could trap). */
static inline float leaky_relu1(float x, float alpha)
{
    float pos = x > 0.0f ? x : 0.0f;
    float neg = x > 0.0f ? 0.0f : x;
    return pos + alpha * neg;
}

static inline float elu1(float x, float alpha)
{
    return x > 0.0f ? x : alpha * expm1f(x);
}

static inline float selu1(float x)
{
    const float scale = 1.0507009873554805f;
    const float scale_alpha = 1.7580993408473766f; /* scale * 1.6732632423543772, rounded once */
    return x > 0.0f ? scale * x : scale_alpha * expm1f(x);
}

/* ---- running a range ---------------------------------------------------------- */
static rayo_status run_elementwise(void *state, const rayo_call *call, size_t cost,
                                   scalar_range_fn *fn)
{
    scalar_run_ranges(state, call, call->n, cost, fn);
    return RAYO_OK;
}

/* Loops run over blocks of BLOCK elements computed into a local array and
 * then copied to y.  The local array cannot alias a or b, so the compiler
 * vectorises the loop even though y may be a or b (in place); writing y
 * directly would need a run-time overlap check, which gcc -O2 does not
 * emit.  Reading a block before writing it is right for y == a exactly. */
#define BLOCK 64

/* A unary op: y[i] = EXPR with x = a[i]; alpha and beta are the call's. */
#define UNARY_OP(name, cost, expr)                                         \
    static void name##_range(const rayo_call *c, size_t lo, size_t hi)    \
    {                                                                      \
        const float *a = c->a;                                             \
        float *y = c->y;                                                   \
        const float alpha = c->alpha, beta = c->beta;                      \
        float out[BLOCK];                                                  \
        (void)alpha;                                                       \
        (void)beta;                                                        \
        size_t i = lo;                                                     \
        for (; i + BLOCK <= hi; i += BLOCK) {                              \
            for (size_t j = 0; j < BLOCK; j++) {                           \
                const float x = a[i + j];                                  \
                out[j] = (expr);                                           \
            }                                                              \
            memcpy(y + i, out, sizeof out);                                \
        }                                                                  \
        for (; i < hi; i++) {                                              \
            const float x = a[i];                                          \
            y[i] = (expr);                                                 \
        }                                                                  \
    }                                                                      \
    SCALAR_KERNEL(name) { return run_elementwise(state, call, cost, name##_range); }

/* y[i] = EXPR with u = a[i], v = b[i]; alpha is the call's. */
#define BINARY_RANGE(name, expr)                                           \
    static void name##_range(const rayo_call *c, size_t lo, size_t hi)    \
    {                                                                      \
        const float *a = c->a, *b = c->b;                                  \
        float *y = c->y;                                                   \
        const float alpha = c->alpha;                                      \
        float out[BLOCK];                                                  \
        (void)alpha;                                                       \
        size_t i = lo;                                                     \
        for (; i + BLOCK <= hi; i += BLOCK) {                              \
            for (size_t j = 0; j < BLOCK; j++) {                           \
                const float u = a[i + j], v = b[i + j];                    \
                out[j] = (expr);                                           \
            }                                                              \
            memcpy(y + i, out, sizeof out);                                \
        }                                                                  \
        for (; i < hi; i++) {                                              \
            const float u = a[i], v = b[i];                                \
            y[i] = (expr);                                                 \
        }                                                                  \
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
BINARY_RANGE(axpy_terms, alpha * u + v)

UNARY_OP(scale, COST_ARITH, alpha * x)
UNARY_OP(relu, COST_ARITH, relu1(x))
UNARY_OP(leaky_relu, COST_ARITH, leaky_relu1(x, alpha))
UNARY_OP(clip, COST_ARITH, clip1(x, alpha, beta))
UNARY_OP(abs, COST_ARITH, fabsf(x))
UNARY_OP(sqrt, COST_ARITH, sqrtf(x))
UNARY_OP(hardswish, COST_ARITH, hardswish1(x))
UNARY_OP(elu, COST_LIBM, elu1(x, alpha))
UNARY_OP(selu, COST_LIBM, selu1(x))
UNARY_OP(sigmoid, COST_LIBM, sigmoid1(x))
UNARY_OP(tanh, COST_LIBM, tanhf(x))
UNARY_OP(gelu, COST_LIBM, gelu1(x))
UNARY_OP(gelu_tanh, COST_LIBM, gelu_tanh1(x))
UNARY_OP(silu, COST_LIBM, silu1(x))
UNARY_OP(mish, COST_LIBM, mish1(x))
UNARY_OP(exp, COST_LIBM, expf(x))
UNARY_OP(log, COST_LIBM, logf(x))

/* y = alpha * a + y: y is also an input; a may be y. */
static void axpy_range(const rayo_call *c, size_t lo, size_t hi)
{
    rayo_call as_binary = *c;
    as_binary.b = c->y;
    axpy_terms_range(&as_binary, lo, hi);
}

SCALAR_KERNEL(axpy)
{
    return run_elementwise(state, call, COST_ARITH, axpy_range);
}

/* ---- bias_act: y[i][j] = act(a[i][j] + bias[j]) ------------------------------ */
#define BIAS_ACT_LOOP(expr)                                                \
    for (size_t j = 0; j < n; j++) {                                       \
        const float x = a[j] + bias[j];                                    \
        y[j] = (expr);                                                     \
    }

static void bias_act_row(uint32_t act, const float *a, const float *bias, float *y, size_t n)
{
    switch (act) {
    case RAYO_ACT_NONE: BIAS_ACT_LOOP(x) break;
    case RAYO_ACT_RELU: BIAS_ACT_LOOP(relu1(x)) break;
    case RAYO_ACT_GELU: BIAS_ACT_LOOP(gelu1(x)) break;
    case RAYO_ACT_SILU: BIAS_ACT_LOOP(silu1(x)) break;
    case RAYO_ACT_TANH: BIAS_ACT_LOOP(tanhf(x)) break;
    case RAYO_ACT_SIGMOID: BIAS_ACT_LOOP(sigmoid1(x)) break;
    default: break; /* rejected by scalar_bias_act before any row runs */
    }
}

static void bias_act_rows(const rayo_call *c, size_t lo, size_t hi)
{
    const float *a = c->a;
    float *y = c->y;
    for (size_t i = lo; i < hi; i++)
        bias_act_row(c->flags, a + i * c->n, c->b, y + i * c->n, c->n);
}

SCALAR_KERNEL(bias_act)
{
    if (call->flags >= RAYO_ACT_LIMIT) {
        const scalar_state *st = state;
        if (st->host->set_error)
            st->host->set_error(st->host, "bias_act: unknown activation %u", (unsigned)call->flags);
        return RAYO_E_INVALID;
    }
    size_t cost = call->flags == RAYO_ACT_NONE || call->flags == RAYO_ACT_RELU ? COST_ARITH
                                                                             : COST_LIBM;
    scalar_run_ranges(state, call, call->m, call->n * cost, bias_act_rows);
    return RAYO_OK;
}
