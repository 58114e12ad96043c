/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act.
 *
 * Each op is a one-vector function (8 floats) and a loop generated around it:
 * unaligned loads, a masked load/store for the last n % 8 elements, and,
 * when the output is larger than the last-level cache, non-temporal stores
 * (the output would be evicted before anyone reads it; streaming it saves
 * the read-for-ownership of every line).  Outputs may alias inputs exactly
 * (y == a): element i depends on a[i] and b[i] only.
 *
 * NaN/Inf: every op gives NaN, +-Inf or a finite value exactly where the
 * scalar backend does (tests/test-avx2-math checks every float for the
 * transcendental ones).  The comparisons below are the scalar code's,
 * written as compare + blend.  maxps/minps return their SECOND operand when
 * either is NaN, so _mm256_max_ps(bound, x) == (x < bound ? bound : x)
 * exactly, NaN included; maximum/minimum need an explicit NaN test.
 */
#include "plugin.h"
#include "x86-avx2-math.h"

#include <stdint.h>

/* Calls below these sizes run on the calling thread only: waking the pool
 * costs a few microseconds. */
#define PARALLEL_CHEAP ((size_t)1 << 18)
#define PARALLEL_TRANSCENDENTAL ((size_t)1 << 14)

/* Elements to process before y + i is 32-byte aligned (at most 7). */
static inline size_t to_alignment(const float *y, size_t i, size_t end)
{
    size_t head = ((32 - ((uintptr_t)(y + i) & 31)) & 31) / sizeof(float);
    return head < end - i ? head : end - i;
}

/* ---- one-vector functions --------------------------------------------------- */

/* (a > b || a is NaN) ? a : b, the scalar backend's maximum. */
static inline __m256 v_maximum(__m256 a, __m256 b)
{
    __m256 take_a = _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    return _mm256_blendv_ps(b, a, take_a);
}

static inline __m256 v_minimum(__m256 a, __m256 b)
{
    __m256 take_a = _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    return _mm256_blendv_ps(b, a, take_a);
}

static inline __m256 v_relu(__m256 x)
{
    return _mm256_max_ps(_mm256_setzero_ps(), x); /* x < 0 ? 0 : x; NaN stays */
}

static inline __m256 v_clip(__m256 x, __m256 lo, __m256 hi)
{
    return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); /* NaN stays */
}

static inline __m256 v_positive(__m256 x)
{
    return _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
}

/* x tanh(log(1 + e^x)) = x n / (n + 2), n = e (e + 2); x past 20 is its own result. */
static inline __m256 v_mish(__m256 x)
{
    __m256 e = v_exp(x);
    __m256 n = _mm256_mul_ps(e, _mm256_add_ps(e, V_SET(2.0f)));
    __m256 y = _mm256_mul_ps(x, _mm256_div_ps(n, _mm256_add_ps(n, V_SET(2.0f))));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, V_SET(20.0f), _CMP_GE_OQ));
}

/* max(x, 0) + log1p(e^-|x|), log1p(t) = log(u) t / (u - 1), u = 1 + t (the
 * scalar backend's softplus1); max(0, x) keeps a NaN x. */
static inline __m256 v_softplus(__m256 x)
{
    __m256 t = v_exp(_mm256_or_ps(x, V_SET(-0.0f)));
    __m256 u = _mm256_add_ps(V_SET(1.0f), t);
    __m256 l = _mm256_mul_ps(v_log(u), _mm256_div_ps(t, _mm256_sub_ps(u, V_SET(1.0f))));
    l = _mm256_blendv_ps(l, t, _mm256_cmp_ps(u, V_SET(1.0f), _CMP_EQ_OQ));
    return _mm256_add_ps(_mm256_max_ps(_mm256_setzero_ps(), x), l);
}

static inline __m256 v_hardswish(__m256 x)
{
    __m256 t = v_clip(_mm256_add_ps(x, V_SET(3.0f)), _mm256_setzero_ps(), V_SET(6.0f));
    return _mm256_mul_ps(x, _mm256_div_ps(t, V_SET(6.0f)));
}

static inline __m256 v_elu(__m256 x, __m256 alpha)
{
    return _mm256_blendv_ps(_mm256_mul_ps(alpha, v_expm1(x)), x, v_positive(x));
}

/* scale * x uses scale as hi + lo floats and one fma, so it is rounded once
 * from the near-exact product: right up to the overflow threshold, where a
 * float scale (rounded up) would overflow a little early. */
static inline __m256 v_selu(__m256 x)
{
    const __m256 scale_hi = V_SET(1.0507009873554805f);
    const __m256 scale_lo = V_SET((float)(1.0507009873554805 - (double)1.0507009873554805f));
    const __m256 scale_alpha = V_SET(1.7580993408473766f); /* scale * 1.6732632423543772 */
    __m256 positive = _mm256_fmadd_ps(scale_hi, x, _mm256_mul_ps(scale_lo, x));
    positive = _mm256_blendv_ps(positive, x, _mm256_cmp_ps(x, V_SET(INFINITY), _CMP_EQ_OQ)); /* not inf - inf */
    return _mm256_blendv_ps(_mm256_mul_ps(scale_alpha, v_expm1(x)), positive, v_positive(x));
}

/* ---- loops ------------------------------------------------------------------ */

/* A unary op: y = EXPR(x) with x the vector of a, alpha/beta the call's. */
#define UNARY_OP(name, min_parallel, expr)                                             \
    static inline __m256 name##_vec(__m256 x, __m256 alpha, __m256 beta)               \
    {                                                                                  \
        (void)alpha;                                                                   \
        (void)beta;                                                                    \
        return (expr);                                                                 \
    }                                                                                  \
    static inline void name##_masked(const float *a, float *y, size_t count,           \
                                     __m256 alpha, __m256 beta)                        \
    {                                                                                  \
        __m256i m = v_lane_mask(count);                                                  \
        _mm256_maskstore_ps(y, m, name##_vec(_mm256_maskload_ps(a, m), alpha, beta));  \
    }                                                                                  \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t i,      \
                             size_t end)                                               \
    {                                                                                  \
        const float *a = c->a;                                                         \
        float *y = c->y;                                                               \
        const __m256 alpha = _mm256_set1_ps(c->alpha), beta = _mm256_set1_ps(c->beta); \
        if (x86_use_stream((const x86_state *)st, y, c->n)) {                                                 \
            size_t head = to_alignment(y, i, end);                                     \
            if (head) {                                                                \
                name##_masked(a + i, y + i, head, alpha, beta);                        \
                i += head;                                                             \
            }                                                                          \
            for (; i + 8 <= end; i += 8)                                               \
                _mm256_stream_ps(y + i, name##_vec(_mm256_loadu_ps(a + i), alpha, beta)); \
            _mm_sfence();                                                              \
        }                                                                              \
        for (; i + 16 <= end; i += 16) {                                               \
            __m256 y0 = name##_vec(_mm256_loadu_ps(a + i), alpha, beta);               \
            __m256 y1 = name##_vec(_mm256_loadu_ps(a + i + 8), alpha, beta);           \
            _mm256_storeu_ps(y + i, y0);                                               \
            _mm256_storeu_ps(y + i + 8, y1);                                           \
        }                                                                              \
        for (; i + 8 <= end; i += 8)                                                   \
            _mm256_storeu_ps(y + i, name##_vec(_mm256_loadu_ps(a + i), alpha, beta));  \
        if (i < end)                                                                   \
            name##_masked(a + i, y + i, end - i, alpha, beta);                         \
    }                                                                                  \
    AVX2_KERNEL(name)                                                                  \
    {                                                                                  \
        x86_note_stream(state, call);                                                  \
        avx2_run_ranges(state, call, call->n, min_parallel, AVX2_VECTOR_GRANULE, name##_range);             \
        return RAYO_OK;                                                                \
    }

/* A binary op: y = EXPR(u, v) with u, v the vectors of a and b. */
#define BINARY_OP(name, expr)                                                          \
    static inline __m256 name##_vec(__m256 u, __m256 v) { return (expr); }             \
    static inline void name##_masked(const float *a, const float *b, float *y,         \
                                     size_t count)                                     \
    {                                                                                  \
        __m256i m = v_lane_mask(count);                                                  \
        _mm256_maskstore_ps(y, m, name##_vec(_mm256_maskload_ps(a, m),                 \
                                             _mm256_maskload_ps(b, m)));               \
    }                                                                                  \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t i,      \
                             size_t end)                                               \
    {                                                                                  \
        const float *a = c->a, *b = c->b;                                              \
        float *y = c->y;                                                               \
        if (x86_use_stream((const x86_state *)st, y, c->n)) {                                                 \
            size_t head = to_alignment(y, i, end);                                     \
            if (head) {                                                                \
                name##_masked(a + i, b + i, y + i, head);                              \
                i += head;                                                             \
            }                                                                          \
            for (; i + 8 <= end; i += 8)                                               \
                _mm256_stream_ps(y + i, name##_vec(_mm256_loadu_ps(a + i),             \
                                                   _mm256_loadu_ps(b + i)));           \
            _mm_sfence();                                                              \
        }                                                                              \
        for (; i + 16 <= end; i += 16) {                                               \
            __m256 y0 = name##_vec(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));    \
            __m256 y1 = name##_vec(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)); \
            _mm256_storeu_ps(y + i, y0);                                               \
            _mm256_storeu_ps(y + i + 8, y1);                                           \
        }                                                                              \
        for (; i + 8 <= end; i += 8)                                                   \
            _mm256_storeu_ps(y + i, name##_vec(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i))); \
        if (i < end)                                                                   \
            name##_masked(a + i, b + i, y + i, end - i);                               \
    }                                                                                  \
    AVX2_KERNEL(name)                                                                  \
    {                                                                                  \
        x86_note_stream(state, call);                                                  \
        avx2_run_ranges(state, call, call->n, PARALLEL_CHEAP, AVX2_VECTOR_GRANULE, name##_range);           \
        return RAYO_OK;                                                                \
    }

BINARY_OP(add, _mm256_add_ps(u, v))
BINARY_OP(sub, _mm256_sub_ps(u, v))
BINARY_OP(mul, _mm256_mul_ps(u, v))
BINARY_OP(div, _mm256_div_ps(u, v))
BINARY_OP(maximum, v_maximum(u, v))
BINARY_OP(minimum, v_minimum(u, v))

UNARY_OP(scale, PARALLEL_CHEAP, _mm256_mul_ps(alpha, x))
UNARY_OP(relu, PARALLEL_CHEAP, v_relu(x))
UNARY_OP(leaky_relu, PARALLEL_CHEAP, _mm256_blendv_ps(_mm256_mul_ps(alpha, x), x, v_positive(x)))
UNARY_OP(clip, PARALLEL_CHEAP, v_clip(x, alpha, beta))
UNARY_OP(abs, PARALLEL_CHEAP, v_abs(x))
UNARY_OP(sqrt, PARALLEL_CHEAP, _mm256_sqrt_ps(x))
UNARY_OP(hardswish, PARALLEL_CHEAP, v_hardswish(x))
UNARY_OP(elu, PARALLEL_TRANSCENDENTAL, v_elu(x, alpha))
UNARY_OP(selu, PARALLEL_TRANSCENDENTAL, v_selu(x))
UNARY_OP(sigmoid, PARALLEL_TRANSCENDENTAL, v_sigmoid(x))
UNARY_OP(tanh, PARALLEL_TRANSCENDENTAL, v_tanh(x))
UNARY_OP(gelu, PARALLEL_TRANSCENDENTAL, v_gelu(x))
UNARY_OP(gelu_tanh, PARALLEL_TRANSCENDENTAL, v_gelu_tanh(x))
UNARY_OP(silu, PARALLEL_TRANSCENDENTAL, v_silu(x))
UNARY_OP(mish, PARALLEL_TRANSCENDENTAL, v_mish(x))
UNARY_OP(softplus, PARALLEL_TRANSCENDENTAL, v_softplus(x))
UNARY_OP(exp, PARALLEL_TRANSCENDENTAL, v_exp_exact_subnormal(x))
UNARY_OP(log, PARALLEL_TRANSCENDENTAL, v_log(x))

/* ---- axpy: y = alpha * a + y (y is read, so no streaming stores) ------------- */
static void axpy_range(const cpu_state *st, const rayo_call *c, size_t i, size_t end)
{
    const float *a = c->a;
    float *y = c->y;
    const __m256 alpha = _mm256_set1_ps(c->alpha);
    (void)st;
    /* One fma, one rounding: alpha * a alone may overflow a float where
     * alpha * a + y does not. */
    for (; i + 16 <= end; i += 16) {
        __m256 y0 = _mm256_fmadd_ps(alpha, _mm256_loadu_ps(a + i), _mm256_loadu_ps(y + i));
        __m256 y1 = _mm256_fmadd_ps(alpha, _mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(y + i + 8));
        _mm256_storeu_ps(y + i, y0);
        _mm256_storeu_ps(y + i + 8, y1);
    }
    for (; i + 8 <= end; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(alpha, _mm256_loadu_ps(a + i), _mm256_loadu_ps(y + i)));
    if (i < end) {
        __m256i m = v_lane_mask(end - i);
        __m256 r = _mm256_fmadd_ps(alpha, _mm256_maskload_ps(a + i, m), _mm256_maskload_ps(y + i, m));
        _mm256_maskstore_ps(y + i, m, r);
    }
}

AVX2_KERNEL(axpy)
{
    avx2_run_ranges(state, call, call->n, PARALLEL_CHEAP, AVX2_VECTOR_GRANULE, axpy_range);
    return RAYO_OK;
}

/* ---- bias_act: y[i][j] = act(a[i][j] + bias[j]) ------------------------------ */
static inline __m256 activation(uint32_t act, __m256 x)
{
    switch (act) {
    case RAYO_ACT_RELU: return v_relu(x);
    case RAYO_ACT_GELU: return v_gelu(x);
    case RAYO_ACT_SILU: return v_silu(x);
    case RAYO_ACT_TANH: return v_tanh(x);
    case RAYO_ACT_SIGMOID: return v_sigmoid(x);
    default: return x;
    }
}

/* One loop per activation, so the switch is outside the loop. */
#define BIAS_ACT_ROW(ACT)                                                              \
    static void bias_act_row_##ACT(const float *a, const float *bias, float *y, size_t n) \
    {                                                                                  \
        size_t j = 0;                                                                  \
        for (; j + 8 <= n; j += 8)                                                     \
            _mm256_storeu_ps(y + j, activation(ACT, _mm256_add_ps(_mm256_loadu_ps(a + j), \
                                                                  _mm256_loadu_ps(bias + j)))); \
        if (j < n) {                                                                   \
            __m256i m = v_lane_mask(n - j);                                              \
            __m256 x = _mm256_add_ps(_mm256_maskload_ps(a + j, m), _mm256_maskload_ps(bias + j, m)); \
            _mm256_maskstore_ps(y + j, m, activation(ACT, x));                         \
        }                                                                              \
    }

BIAS_ACT_ROW(RAYO_ACT_NONE)
BIAS_ACT_ROW(RAYO_ACT_RELU)
BIAS_ACT_ROW(RAYO_ACT_GELU)
BIAS_ACT_ROW(RAYO_ACT_SILU)
BIAS_ACT_ROW(RAYO_ACT_TANH)
BIAS_ACT_ROW(RAYO_ACT_SIGMOID)

typedef void bias_act_row_fn(const float *a, const float *bias, float *y, size_t n);

static bias_act_row_fn *const bias_act_rows[RAYO_ACT_LIMIT] = {
    [RAYO_ACT_NONE] = bias_act_row_RAYO_ACT_NONE,
    [RAYO_ACT_RELU] = bias_act_row_RAYO_ACT_RELU,
    [RAYO_ACT_GELU] = bias_act_row_RAYO_ACT_GELU,
    [RAYO_ACT_SILU] = bias_act_row_RAYO_ACT_SILU,
    [RAYO_ACT_TANH] = bias_act_row_RAYO_ACT_TANH,
    [RAYO_ACT_SIGMOID] = bias_act_row_RAYO_ACT_SIGMOID,
};

/* Rows [begin, end) of a bias_act call (m rows of n). */
static void bias_act_range(const cpu_state *st, const rayo_call *c, size_t begin, size_t end)
{
    bias_act_row_fn *row = bias_act_rows[c->flags];
    const float *a = c->a;
    float *y = c->y;
    (void)st;
    for (size_t i = begin; i < end; i++)
        row(a + i * c->n, c->b, y + i * c->n, c->n);
}

AVX2_KERNEL(bias_act)
{
    const avx2_state *st = state;
    if (call->flags >= RAYO_ACT_LIMIT) {
        if (st->cpu.host->set_error)
            st->cpu.host->set_error(st->cpu.host, "bias_act: unknown activation %u", (unsigned)call->flags);
        return RAYO_E_INVALID;
    }
    /* Parallel over rows once the whole call is big enough. */
    size_t per_row = call->n ? call->n : 1;
    size_t threshold = call->flags <= RAYO_ACT_RELU ? PARALLEL_CHEAP : PARALLEL_TRANSCENDENTAL;
    size_t min_rows = (threshold + per_row - 1) / per_row;
    avx2_run_ranges(st, call, call->m, min_rows < 2 ? 2 : min_rows, 1, bias_act_range);
    return RAYO_OK;
}
