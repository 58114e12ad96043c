/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act.
 *
 * Every op is a loop over [lo, hi) of a four-lane function from
 * neon-math.h, so the pool can split it.  The last 1-3 elements go through
 * the same function via a small stack buffer: one code path, hence the same
 * NaN/Inf behaviour for every element.  Outputs may alias inputs exactly
 * (y == a): each vector is loaded before it is stored.
 */
#include "plugin.h"
#include "neon-math.h"

/* Relative cost of one element, in "cheap operations" (for threading). */
#define COST_ARITH 1
#define COST_TRANSCENDENTAL 16

/* A unary op: y[i] = EXPR, where EXPR is a float32x4_t expression of x
 * (four elements of a) and of the broadcast call parameters alpha, beta. */
#define UNARY_OP(name, cost, expr)                                          \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)     \
    {                                                                       \
        (void)st;                                                           \
        const float *a = c->a;                                              \
        float *y = c->y;                                                    \
        const float32x4_t alpha = vdupq_n_f32(c->alpha);                    \
        const float32x4_t beta = vdupq_n_f32(c->beta);                      \
        (void)alpha;                                                        \
        (void)beta;                                                         \
        size_t i = lo;                                                      \
        for (; hi - i >= 4; i += 4) {                                       \
            float32x4_t x = vld1q_f32(a + i);                               \
            vst1q_f32(y + i, (expr));                                       \
        }                                                                   \
        if (i < hi) {                                                       \
            float32x4_t x = load_partial(a + i, hi - i);                    \
            store_partial(y + i, (expr), hi - i);                           \
        }                                                                   \
    }                                                                       \
    NEON_KERNEL(name)                                                       \
    {                                                                       \
        cpu_run_ranges(state, call, call->n, cost, name##_range);         \
        return RAYO_OK;                                                     \
    }

/* A binary op: y[i] = EXPR of u = a[i..i+3], v = b[i..i+3]. */
#define BINARY_OP(name, expr)                                               \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)     \
    {                                                                       \
        (void)st;                                                           \
        const float *a = c->a, *b = c->b;                                   \
        float *y = c->y;                                                    \
        size_t i = lo;                                                      \
        for (; hi - i >= 4; i += 4) {                                       \
            float32x4_t u = vld1q_f32(a + i), v = vld1q_f32(b + i);         \
            vst1q_f32(y + i, (expr));                                       \
        }                                                                   \
        if (i < hi) {                                                       \
            float32x4_t u = load_partial(a + i, hi - i);                    \
            float32x4_t v = load_partial(b + i, hi - i);                    \
            store_partial(y + i, (expr), hi - i);                           \
        }                                                                   \
    }                                                                       \
    NEON_KERNEL(name)                                                       \
    {                                                                       \
        cpu_run_ranges(state, call, call->n, COST_ARITH, name##_range);   \
        return RAYO_OK;                                                     \
    }

BINARY_OP(add, vaddq_f32(u, v))
BINARY_OP(sub, vsubq_f32(u, v))
BINARY_OP(mul, vmulq_f32(u, v))
BINARY_OP(div, vdivq_f32(u, v))
BINARY_OP(maximum, vec_maximum(u, v))
BINARY_OP(minimum, vec_minimum(u, v))

UNARY_OP(scale, COST_ARITH, vmulq_f32(alpha, x))
UNARY_OP(relu, COST_ARITH, vec_relu(x))
UNARY_OP(leaky_relu, COST_ARITH, vec_leaky_relu(x, alpha))
UNARY_OP(clip, COST_ARITH, vec_clip(x, alpha, beta))
UNARY_OP(abs, COST_ARITH, vabsq_f32(x))
UNARY_OP(sqrt, COST_ARITH, vsqrtq_f32(x))
UNARY_OP(hardswish, COST_ARITH, vec_hardswish(x))
UNARY_OP(elu, COST_TRANSCENDENTAL, vec_elu(x, alpha))
UNARY_OP(selu, COST_TRANSCENDENTAL, vec_selu(x))
UNARY_OP(sigmoid, COST_TRANSCENDENTAL, vec_sigmoid(x))
UNARY_OP(tanh, COST_TRANSCENDENTAL, vec_tanh(x))
UNARY_OP(gelu, COST_TRANSCENDENTAL, vec_gelu(x))
UNARY_OP(gelu_tanh, COST_TRANSCENDENTAL, vec_gelu_tanh(x))
UNARY_OP(silu, COST_TRANSCENDENTAL, vec_silu(x))
UNARY_OP(mish, COST_TRANSCENDENTAL, vec_mish(x))
UNARY_OP(softplus, COST_TRANSCENDENTAL, vec_softplus(x))
UNARY_OP(exp, COST_TRANSCENDENTAL, vec_exp(x))
UNARY_OP(log, COST_TRANSCENDENTAL, vec_log(x))

/* y = alpha * a + y with one rounding (FMA); y is read, so not a UNARY_OP. */
static void axpy_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    const float *a = c->a;
    float *y = c->y;
    const float32x4_t alpha = vdupq_n_f32(c->alpha);
    size_t i = lo;
    for (; hi - i >= 4; i += 4)
        vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), alpha, vld1q_f32(a + i)));
    if (i < hi) {
        float32x4_t r = vfmaq_f32(load_partial(y + i, hi - i), alpha, load_partial(a + i, hi - i));
        store_partial(y + i, r, hi - i);
    }
}

NEON_KERNEL(axpy)
{
    cpu_run_ranges(state, call, call->n, COST_ARITH, axpy_range);
    return RAYO_OK;
}

/* ---- bias_act: y[i][j] = act(a[i][j] + bias[j]) ------------------------------ */
static inline float32x4_t activate(uint32_t act, float32x4_t x)
{
    switch (act) {
    case RAYO_ACT_RELU: return vec_relu(x);
    case RAYO_ACT_GELU: return vec_gelu(x);
    case RAYO_ACT_SILU: return vec_silu(x);
    case RAYO_ACT_TANH: return vec_tanh(x);
    case RAYO_ACT_SIGMOID: return vec_sigmoid(x);
    default: return x; /* RAYO_ACT_NONE; others are refused before any row runs */
    }
}

/* One row for one activation: the switch sits outside the loop so that each
 * loop inlines one activation. */
#define BIAS_ACT_ROW(act)                                                       \
    do {                                                                        \
        size_t j = 0;                                                           \
        for (; n - j >= 4; j += 4)                                              \
            vst1q_f32(y + j, activate(act, vaddq_f32(vld1q_f32(a + j), vld1q_f32(bias + j)))); \
        if (j < n) {                                                            \
            float32x4_t x = vaddq_f32(load_partial(a + j, n - j), load_partial(bias + j, n - j)); \
            store_partial(y + j, activate(act, x), n - j);                      \
        }                                                                       \
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
    const float *a = c->a;
    float *y = c->y;
    for (size_t i = lo; i < hi; i++)
        bias_act_row(c->flags, a + i * c->n, c->b, y + i * c->n, c->n);
}

NEON_KERNEL(bias_act)
{
    if (call->flags >= RAYO_ACT_LIMIT)
        return RAYO_E_INVALID;
    size_t cost = call->flags == RAYO_ACT_NONE || call->flags == RAYO_ACT_RELU
                      ? COST_ARITH
                      : COST_TRANSCENDENTAL;
    cpu_run_ranges(state, call, call->m, call->n * cost, bias_act_rows);
    return RAYO_OK;
}
