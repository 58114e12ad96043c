/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act.
 *
 * Each op is a one-vector function (16 floats) and a loop generated around
 * it: unaligned loads, one masked load/store for the last n % 16 elements
 * (masked-off lanes are never touched, so no read past the end), and, when
 * the output is larger than the last-level cache, non-temporal stores (the
 * output would be evicted before anyone reads it; streaming it saves the
 * read-for-ownership of every line).  y may alias a or b exactly.
 *
 * NaN/Inf: each op's comparisons are the scalar backend's, as a compare into
 * an opmask and a masked blend.  vmaxps/vminps return their SECOND operand
 * when either is NaN, so _mm512_max_ps(bound, x) == (x < bound ? bound : x),
 * NaN included; maximum/minimum test for NaN explicitly.
 */
#include "plugin.h"
#include "avx512-math.h"

#include <stdint.h>

/* Cost per element handed to cpu_run_ranges: cheap ops go parallel from
 * CPU_PARALLEL_MIN_WORK elements, transcendental ones 16 times sooner. */
#define COST_CHEAP 1
#define COST_TRANSCENDENTAL 16

/* ---- one-vector functions --------------------------------------------------- */

/* (a > b || a is NaN) ? a : b, the scalar backend's maximum. */
static inline __m512 z_maximum(__m512 a, __m512 b)
{
    __mmask16 take_a = _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ) | _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(take_a, b, a);
}

static inline __m512 z_minimum(__m512 a, __m512 b)
{
    __mmask16 take_a = _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ) | _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(take_a, b, a);
}

static inline __mmask16 z_positive(__m512 x)
{
    return _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
}

static inline __m512 z_clip(__m512 x, __m512 lo, __m512 hi)
{
    return _mm512_min_ps(hi, _mm512_max_ps(lo, x)); /* NaN stays */
}

/* x tanh(log(1 + e^x)) = x n / (n + 2), n = e (e + 2); past x = 20 the result is x. */
static inline __m512 z_mish(__m512 x)
{
    __m512 e = z_exp(x);
    __m512 n = _mm512_mul_ps(e, _mm512_add_ps(e, Z_SET(2.0f)));
    __m512 y = _mm512_mul_ps(x, _mm512_div_ps(n, _mm512_add_ps(n, Z_SET(2.0f))));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, Z_SET(20.0f), _CMP_GE_OQ), y, x);
}

/* max(x, 0) + log1p(e^-|x|), log1p(t) = log(u) t / (u - 1), u = 1 + t (the
 * scalar backend's softplus1); max(0, x) keeps a NaN x. */
static inline __m512 z_softplus(__m512 x)
{
    __m512 t = z_exp(_mm512_or_ps(x, Z_SET(-0.0f)));
    __m512 u = _mm512_add_ps(Z_SET(1.0f), t);
    __m512 l = _mm512_mul_ps(z_log(u), _mm512_div_ps(t, _mm512_sub_ps(u, Z_SET(1.0f))));
    l = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, Z_SET(1.0f), _CMP_EQ_OQ), l, t);
    return _mm512_add_ps(_mm512_max_ps(_mm512_setzero_ps(), x), l);
}

static inline __m512 z_hardswish(__m512 x)
{
    __m512 t = z_clip(_mm512_add_ps(x, Z_SET(3.0f)), _mm512_setzero_ps(), Z_SET(6.0f));
    return _mm512_mul_ps(x, _mm512_div_ps(t, Z_SET(6.0f)));
}

static inline __m512 z_elu(__m512 x, __m512 alpha)
{
    return _mm512_mask_blend_ps(z_positive(x), _mm512_mul_ps(alpha, z_expm1(x)), x);
}

/* selu: scale * x in double lanes, rounded once, so it is right up to the
 * overflow threshold (a float scale, rounded up, overflows a little early);
 * the negative side is scale * alpha * expm1(x), far from any overflow. */
static inline __m512 z_selu(__m512 x)
{
    const __m512d scale = _mm512_set1_pd(1.0507009873554805);
    __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(scale, _mm512_cvtps_pd(_mm512_castps512_ps256(x))));
    __m256 hi = _mm512_cvtpd_ps(_mm512_mul_pd(
        scale, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))));
    __m512 positive = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
    __m512 negative = _mm512_mul_ps(Z_SET(1.7580993408473766f), z_expm1(x)); /* scale * 1.6732632423543772 */
    return _mm512_mask_blend_ps(z_positive(x), negative, positive);
}

/* ---- loops ------------------------------------------------------------------ */

/* Non-temporal stores need 64-byte aligned addresses: a float-aligned y
 * reaches one after at most 15 elements (x86_use_stream). */
static inline size_t to_alignment(const float *y, size_t i, size_t end)
{
    size_t head = ((64 - ((uintptr_t)(y + i) & 63)) & 63) / sizeof(float);
    return head < end - i ? head : end - i;
}

/* A unary op: y = EXPR(x) with x the vector of a, alpha/beta the call's.
 * A masked step (mask 0: nothing) aligns y for streaming and ends the loop. */
#define UNARY_OP(name, cost, expr)                                                       \
    static inline __m512 name##_vec(__m512 x, __m512 alpha, __m512 beta)                 \
    {                                                                                    \
        (void)alpha;                                                                     \
        (void)beta;                                                                      \
        return (expr);                                                                   \
    }                                                                                    \
    static inline void name##_masked(const float *a, float *y, __mmask16 m, __m512 alpha, \
                                     __m512 beta)                                        \
    {                                                                                    \
        _mm512_mask_storeu_ps(y, m, name##_vec(_mm512_maskz_loadu_ps(m, a), alpha, beta)); \
    }                                                                                    \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t i, size_t end)                  \
    {                                                                                    \
        const float *a = c->a;                                                           \
        float *y = c->y;                                                                 \
        const __m512 alpha = _mm512_set1_ps(c->alpha), beta = _mm512_set1_ps(c->beta);   \
        if (x86_use_stream((const x86_state *)st, y, c->n)) {                              \
            size_t head = to_alignment(y, i, end);                                       \
            name##_masked(a + i, y + i, z_lanes(head), alpha, beta);                     \
            for (i += head; i + 16 <= end; i += 16)                                      \
                _mm512_stream_ps(y + i, name##_vec(_mm512_loadu_ps(a + i), alpha, beta)); \
            _mm_sfence();                                                                \
        }                                                                                \
        for (; i + 32 <= end; i += 32) {                                                 \
            __m512 y0 = name##_vec(_mm512_loadu_ps(a + i), alpha, beta);                 \
            __m512 y1 = name##_vec(_mm512_loadu_ps(a + i + 16), alpha, beta);            \
            _mm512_storeu_ps(y + i, y0);                                                 \
            _mm512_storeu_ps(y + i + 16, y1);                                            \
        }                                                                                \
        for (; i + 16 <= end; i += 16)                                                   \
            _mm512_storeu_ps(y + i, name##_vec(_mm512_loadu_ps(a + i), alpha, beta));    \
        if (i < end)                                                                     \
            name##_masked(a + i, y + i, z_lanes(end - i), alpha, beta);                  \
    }                                                                                    \
    AVX512_KERNEL(name)                                                                  \
    {                                                                                    \
        x86_note_stream(state, call);                                                    \
        cpu_run_ranges(state, call, call->n, cost, name##_range);                        \
        return RAYO_OK;                                                                  \
    }

/* A binary op: y = EXPR(u, v) with u, v the vectors of a and b. */
#define BINARY_OP(name, expr)                                                            \
    static inline __m512 name##_vec(__m512 u, __m512 v) { return (expr); }               \
    static inline void name##_masked(const float *a, const float *b, float *y, __mmask16 m) \
    {                                                                                    \
        _mm512_mask_storeu_ps(y, m, name##_vec(_mm512_maskz_loadu_ps(m, a),              \
                                               _mm512_maskz_loadu_ps(m, b)));            \
    }                                                                                    \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t i, size_t end)                  \
    {                                                                                    \
        const float *a = c->a, *b = c->b;                                                \
        float *y = c->y;                                                                 \
        if (x86_use_stream((const x86_state *)st, y, c->n)) {                              \
            size_t head = to_alignment(y, i, end);                                       \
            name##_masked(a + i, b + i, y + i, z_lanes(head));                           \
            for (i += head; i + 16 <= end; i += 16)                                      \
                _mm512_stream_ps(y + i, name##_vec(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i))); \
            _mm_sfence();                                                                \
        }                                                                                \
        for (; i + 32 <= end; i += 32) {                                                 \
            __m512 y0 = name##_vec(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));      \
            __m512 y1 = name##_vec(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16)); \
            _mm512_storeu_ps(y + i, y0);                                                 \
            _mm512_storeu_ps(y + i + 16, y1);                                            \
        }                                                                                \
        for (; i + 16 <= end; i += 16)                                                   \
            _mm512_storeu_ps(y + i, name##_vec(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i))); \
        if (i < end)                                                                     \
            name##_masked(a + i, b + i, y + i, z_lanes(end - i));                        \
    }                                                                                    \
    AVX512_KERNEL(name)                                                                  \
    {                                                                                    \
        x86_note_stream(state, call);                                                    \
        cpu_run_ranges(state, call, call->n, COST_CHEAP, name##_range);                  \
        return RAYO_OK;                                                                  \
    }

BINARY_OP(add, _mm512_add_ps(u, v))
BINARY_OP(sub, _mm512_sub_ps(u, v))
BINARY_OP(mul, _mm512_mul_ps(u, v))
BINARY_OP(div, _mm512_div_ps(u, v))
BINARY_OP(maximum, z_maximum(u, v))
BINARY_OP(minimum, z_minimum(u, v))

UNARY_OP(scale, COST_CHEAP, _mm512_mul_ps(alpha, x))
UNARY_OP(relu, COST_CHEAP, _mm512_max_ps(_mm512_setzero_ps(), x))
UNARY_OP(leaky_relu, COST_CHEAP, _mm512_mask_blend_ps(z_positive(x), _mm512_mul_ps(alpha, x), x))
UNARY_OP(clip, COST_CHEAP, z_clip(x, alpha, beta))
UNARY_OP(abs, COST_CHEAP, _mm512_abs_ps(x))
UNARY_OP(sqrt, COST_CHEAP, _mm512_sqrt_ps(x))
UNARY_OP(hardswish, COST_CHEAP, z_hardswish(x))
UNARY_OP(elu, COST_TRANSCENDENTAL, z_elu(x, alpha))
UNARY_OP(selu, COST_TRANSCENDENTAL, z_selu(x))
UNARY_OP(sigmoid, COST_TRANSCENDENTAL, z_sigmoid(x))
UNARY_OP(tanh, COST_TRANSCENDENTAL, z_tanh(x))
UNARY_OP(gelu, COST_TRANSCENDENTAL, z_gelu(x))
UNARY_OP(gelu_tanh, COST_TRANSCENDENTAL, z_gelu_tanh(x))
UNARY_OP(silu, COST_TRANSCENDENTAL, z_silu(x))
UNARY_OP(mish, COST_TRANSCENDENTAL, z_mish(x))
UNARY_OP(softplus, COST_TRANSCENDENTAL, z_softplus(x))
UNARY_OP(exp, COST_TRANSCENDENTAL, z_exp_exact_subnormal(x))
UNARY_OP(log, COST_TRANSCENDENTAL, z_log(x))

/* ---- axpy: y = alpha * a + y, one fma (one rounding: alpha * a alone may
 * overflow where alpha * a + y does not).  y is read: no streaming. ------- */
static void axpy_range(const cpu_state *st, const rayo_call *c, size_t i, size_t end)
{
    (void)st;
    const float *a = c->a;
    float *y = c->y;
    const __m512 alpha = _mm512_set1_ps(c->alpha);
    for (; i + 32 <= end; i += 32) {
        __m512 y0 = _mm512_fmadd_ps(alpha, _mm512_loadu_ps(a + i), _mm512_loadu_ps(y + i));
        __m512 y1 = _mm512_fmadd_ps(alpha, _mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(y + i + 16));
        _mm512_storeu_ps(y + i, y0);
        _mm512_storeu_ps(y + i + 16, y1);
    }
    for (; i < end; i += 16) {
        __mmask16 m = z_lanes(end - i < 16 ? end - i : 16);
        __m512 r = _mm512_fmadd_ps(alpha, _mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, y + i));
        z_store_lanes(y + i, m, r);
    }
}

AVX512_KERNEL(axpy)
{
    cpu_run_ranges(state, call, call->n, COST_CHEAP, axpy_range);
    return RAYO_OK;
}

/* ---- bias_act: y[i][j] = act(a[i][j] + bias[j]) ------------------------------ */
static inline __m512 activation(uint32_t act, __m512 x)
{
    switch (act) {
    case RAYO_ACT_RELU: return _mm512_max_ps(_mm512_setzero_ps(), x);
    case RAYO_ACT_GELU: return z_gelu(x);
    case RAYO_ACT_SILU: return z_silu(x);
    case RAYO_ACT_TANH: return z_tanh(x);
    case RAYO_ACT_SIGMOID: return z_sigmoid(x);
    default: return x;
    }
}

/* One row loop per activation (the switch folds away). */
#define BIAS_ACT_ROWS(ACT)                                                               \
    static void bias_act_rows_##ACT(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)            \
    {                                                                                    \
        (void)st;                                                                        \
        const float *bias = c->b;                                                        \
        for (size_t r = lo; r < hi; r++) {                                               \
            const float *a = (const float *)c->a + r * c->n;                                            \
            float *y = (float *)c->y + r * c->n;                                         \
            for (size_t j = 0; j < c->n; j += 16) {                                      \
                __mmask16 m = z_lanes(c->n - j < 16 ? c->n - j : 16);                    \
                __m512 x = _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + j),                \
                                         _mm512_maskz_loadu_ps(m, bias + j));            \
                z_store_lanes(y + j, m, activation(ACT, x));                             \
            }                                                                            \
        }                                                                                \
    }

BIAS_ACT_ROWS(RAYO_ACT_NONE)
BIAS_ACT_ROWS(RAYO_ACT_RELU)
BIAS_ACT_ROWS(RAYO_ACT_GELU)
BIAS_ACT_ROWS(RAYO_ACT_SILU)
BIAS_ACT_ROWS(RAYO_ACT_TANH)
BIAS_ACT_ROWS(RAYO_ACT_SIGMOID)

static cpu_range_fn *const bias_act_rows[RAYO_ACT_LIMIT] = {
    [RAYO_ACT_NONE] = bias_act_rows_RAYO_ACT_NONE,
    [RAYO_ACT_RELU] = bias_act_rows_RAYO_ACT_RELU,
    [RAYO_ACT_GELU] = bias_act_rows_RAYO_ACT_GELU,
    [RAYO_ACT_SILU] = bias_act_rows_RAYO_ACT_SILU,
    [RAYO_ACT_TANH] = bias_act_rows_RAYO_ACT_TANH,
    [RAYO_ACT_SIGMOID] = bias_act_rows_RAYO_ACT_SIGMOID,
};

AVX512_KERNEL(bias_act)
{
    const avx512_state *st = state;
    if (call->flags >= RAYO_ACT_LIMIT) {
        if (st->cpu.host->set_error)
            st->cpu.host->set_error(st->cpu.host, "bias_act: unknown activation %u", (unsigned)call->flags);
        return RAYO_E_INVALID;
    }
    size_t cost = call->flags <= RAYO_ACT_RELU ? COST_CHEAP : COST_TRANSCENDENTAL;
    cpu_run_ranges(state, call, call->m, (call->n ? call->n : 1) * cost, bias_act_rows[call->flags]);
    return RAYO_OK;
}
