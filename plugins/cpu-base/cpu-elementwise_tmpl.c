/* SPDX-License-Identifier: MIT */
/* cpu-elementwise_tmpl.c - the elementwise kernels of every CPU plugin:
 * binary, unary and activation ops, axpy and bias_act, written once over the
 * plugin's vector primitives.  A plugin's elementwise.c defines them, then
 * includes this file:
 *
 *   vec_t                   the vector type (float for scalar)
 *   VEC_LANES               floats per vector
 *   VEC_UNROLL2             1: the main loop does two vectors per step
 *   vec_load(p) vec_store(p, v) vec_splat(f)
 *   vec_load_part(p, k) vec_store_part(p, v, k)   the first k < VEC_LANES floats
 *   VEC_FN(name)            the plugin's function of each op below
 *                           (VEC_FN(add)(u, v), VEC_FN(sigmoid)(x), ...)
 *   VEC_FN(axpy)(alpha, x, y)   alpha * x + y rounded once (or as if)
 *   ELTWISE_CHEAP ELTWISE_MATH  the cost of an element of the two op
 *                           classes, in CPU_RUN_ITEMS's unit (cpu-base.h)
 * and optionally
 *   VEC_MAP(y, lo, hi, j, expr)   its own loop y[j] = expr over [lo, hi),
 *                           instead of the vector loops (scalar)
 *   VEC_STREAM_ALIGN        bytes: outputs that vec_use_stream(st, y, n)
 *                           picks go out with vec_stream(p, v) once y is
 *                           aligned, then vec_stream_fence(); vec_note_stream
 *                           (st, call) runs once per call (x86)
 *
 * Outputs may alias inputs exactly (y == a): element i depends on a[i] and
 * b[i] only, and each vector is loaded before the store to its place.  The
 * NaN/Inf behaviour is the plugin's functions': they follow the scalar
 * backend's comparisons.
 */

#ifndef CPU_RUN_ITEMS
#define CPU_RUN_ITEMS cpu_run_items
#endif

/* An op's operands; the op's full/part functions read vectors at an offset. */
typedef struct eltwise_args {
    const float *a, *b;
    vec_t alpha, beta;
} eltwise_args;

static inline eltwise_args eltwise_args_of(const rayo_call *c, const float *b)
{
    eltwise_args g = { c->a, b, vec_splat(c->alpha), vec_splat(c->beta) };
    return g;
}

/* y[i..end) = name##_full(&g, i) vector by vector, the tail through
 * name##_part. */
#ifdef VEC_MAP
#define ELTWISE_MAP(name, g, y, i, end) VEC_MAP(y, i, end, j_, name##_full(&(g), j_))
#else
#if VEC_UNROLL2
#define ELTWISE_MAIN_LOOP(name, g, y, i, end)                                              \
    for (; (i) + 2 * VEC_LANES <= (end); (i) += 2 * VEC_LANES) {                           \
        vec_t y0_ = name##_full(&(g), (i)), y1_ = name##_full(&(g), (i) + VEC_LANES);       \
        vec_store((y) + (i), y0_);                                                         \
        vec_store((y) + (i) + VEC_LANES, y1_);                                             \
    }
#else
#define ELTWISE_MAIN_LOOP(name, g, y, i, end)
#endif
#define ELTWISE_MAP(name, g, y, i, end)                                                    \
    do {                                                                                   \
        ELTWISE_MAIN_LOOP(name, g, y, i, end)                                              \
        for (; (i) + VEC_LANES <= (end); (i) += VEC_LANES)                                 \
            vec_store((y) + (i), name##_full(&(g), (i)));                                  \
        if ((i) < (end))                                                                   \
            vec_store_part((y) + (i), name##_part(&(g), (i), (end) - (i)), (end) - (i));   \
    } while (0)
#endif

/* Outputs larger than the last-level cache go out with non-temporal stores
 * (they would be evicted before anyone reads them; streaming saves the
 * read-for-ownership of every line), from the first aligned element. */
#ifdef VEC_STREAM_ALIGN
static inline size_t eltwise_to_alignment(const float *y, size_t i, size_t end)
{
    size_t head = ((VEC_STREAM_ALIGN - ((uintptr_t)(y + i) & (VEC_STREAM_ALIGN - 1))) &
                   (VEC_STREAM_ALIGN - 1)) / sizeof(float);
    return head < end - i ? head : end - i;
}
#define ELTWISE_STREAM(name, g, st, c, y, i, end)                                          \
    if (vec_use_stream(st, y, (c)->n)) {                                                   \
        size_t head_ = eltwise_to_alignment(y, i, end);                                    \
        if (head_) {                                                                       \
            vec_store_part((y) + (i), name##_part(&(g), (i), head_), head_);               \
            (i) += head_;                                                                  \
        }                                                                                  \
        for (; (i) + VEC_LANES <= (end); (i) += VEC_LANES)                                 \
            vec_stream((y) + (i), name##_full(&(g), (i)));                                 \
        vec_stream_fence();                                                                \
    }
#define ELTWISE_NOTE_STREAM(state, call) vec_note_stream(state, call)
#else
#define ELTWISE_STREAM(name, g, st, c, y, i, end) (void)(st);
#define ELTWISE_NOTE_STREAM(state, call) ((void)0)
#endif

/* The kernel of an op over the call's n elements. */
#define ELTWISE_KERNEL(name, cost, b_operand)                                              \
    static void name##_range(const cpu_state *st, const rayo_call *c, size_t i, size_t end) \
    {                                                                                      \
        const eltwise_args g = eltwise_args_of(c, b_operand);                              \
        float *y = c->y;                                                                   \
        ELTWISE_STREAM(name, g, st, c, y, i, end)                                          \
        ELTWISE_MAP(name, g, y, i, end);                                                   \
    }                                                                                      \
    CPU_KERNEL_FN(name)                                                                    \
    {                                                                                      \
        ELTWISE_NOTE_STREAM(state, call);                                                  \
        CPU_RUN_ITEMS(state, call, call->n, 1, cost, name##_range);                          \
        return RAYO_OK;                                                                    \
    }

/* An op's one-vector function of x (or u, v) and its readers at offset i. */
#define ELTWISE_UNARY_FNS(name, expr)                                                      \
    static inline vec_t name##_vec(vec_t x, vec_t alpha, vec_t beta)                       \
    {                                                                                      \
        (void)alpha;                                                                       \
        (void)beta;                                                                        \
        return (expr);                                                                     \
    }                                                                                      \
    static inline vec_t name##_full(const eltwise_args *g, size_t i)                       \
    {                                                                                      \
        return name##_vec(vec_load(g->a + i), g->alpha, g->beta);                          \
    }                                                                                      \
    static inline vec_t name##_part(const eltwise_args *g, size_t i, size_t k)             \
    {                                                                                      \
        return name##_vec(vec_load_part(g->a + i, k), g->alpha, g->beta);                  \
    }
#define ELTWISE_BINARY_FNS(name, expr)                                                     \
    static inline vec_t name##_vec(vec_t u, vec_t v, vec_t alpha)                          \
    {                                                                                      \
        (void)alpha;                                                                       \
        return (expr);                                                                     \
    }                                                                                      \
    static inline vec_t name##_full(const eltwise_args *g, size_t i)                       \
    {                                                                                      \
        return name##_vec(vec_load(g->a + i), vec_load(g->b + i), g->alpha);               \
    }                                                                                      \
    static inline vec_t name##_part(const eltwise_args *g, size_t i, size_t k)             \
    {                                                                                      \
        return name##_vec(vec_load_part(g->a + i, k), vec_load_part(g->b + i, k), g->alpha); \
    }

#define UNARY_OP(name, cost, expr)                                                         \
    ELTWISE_UNARY_FNS(name, expr)                                                          \
    ELTWISE_KERNEL(name, cost, NULL)
#define BINARY_OP(name, expr)                                                              \
    ELTWISE_BINARY_FNS(name, expr)                                                         \
    ELTWISE_KERNEL(name, ELTWISE_CHEAP, c->b)

BINARY_OP(add, VEC_FN(add)(u, v))
BINARY_OP(sub, VEC_FN(sub)(u, v))
BINARY_OP(mul, VEC_FN(mul)(u, v))
BINARY_OP(div, VEC_FN(div)(u, v))
BINARY_OP(maximum, VEC_FN(maximum)(u, v))
BINARY_OP(minimum, VEC_FN(minimum)(u, v))

UNARY_OP(scale, ELTWISE_CHEAP, VEC_FN(mul)(alpha, x))
UNARY_OP(relu, ELTWISE_CHEAP, VEC_FN(relu)(x))
UNARY_OP(leaky_relu, ELTWISE_CHEAP, VEC_FN(leaky_relu)(x, alpha))
UNARY_OP(clip, ELTWISE_CHEAP, VEC_FN(clip)(x, alpha, beta))
UNARY_OP(abs, ELTWISE_CHEAP, VEC_FN(abs)(x))
UNARY_OP(sqrt, ELTWISE_CHEAP, VEC_FN(sqrt)(x))
UNARY_OP(hardswish, ELTWISE_CHEAP, VEC_FN(hardswish)(x))
UNARY_OP(elu, ELTWISE_MATH, VEC_FN(elu)(x, alpha))
UNARY_OP(selu, ELTWISE_MATH, VEC_FN(selu)(x))
UNARY_OP(sigmoid, ELTWISE_MATH, VEC_FN(sigmoid)(x))
UNARY_OP(tanh, ELTWISE_MATH, VEC_FN(tanh)(x))
UNARY_OP(gelu, ELTWISE_MATH, VEC_FN(gelu)(x))
UNARY_OP(gelu_tanh, ELTWISE_MATH, VEC_FN(gelu_tanh)(x))
UNARY_OP(silu, ELTWISE_MATH, VEC_FN(silu)(x))
UNARY_OP(mish, ELTWISE_MATH, VEC_FN(mish)(x))
UNARY_OP(softplus, ELTWISE_MATH, VEC_FN(softplus)(x))
UNARY_OP(exp, ELTWISE_MATH, VEC_FN(exp_op)(x))
UNARY_OP(log, ELTWISE_MATH, VEC_FN(log)(x))

/* ---- axpy: y = alpha * a + y, y also an input (a may be y) ------------------ */
/* y is read, so never streamed: the call is a binary op of a and y. */
ELTWISE_BINARY_FNS(axpy, VEC_FN(axpy)(alpha, u, v))

static void axpy_range(const cpu_state *st, const rayo_call *c, size_t i, size_t end)
{
    const eltwise_args g = eltwise_args_of(c, c->y);
    float *y = c->y;
    (void)st;
    ELTWISE_MAP(axpy, g, y, i, end);
}

CPU_KERNEL_FN(axpy)
{
    CPU_RUN_ITEMS(state, call, call->n, 1, ELTWISE_CHEAP, axpy_range);
    return RAYO_OK;
}

/* ---- bias_act: y[i][j] = act(a[i][j] + bias[j]) ------------------------------ */
/* One row loop per activation, each inlining its function: the activation is
 * picked once per call, outside every loop. */
#define BIAS_ACT_ROWS(act, act_vec)                                                        \
    ELTWISE_BINARY_FNS(bias_##act, act_vec(VEC_FN(add)(u, v), alpha, alpha))               \
    static void bias_act_rows_##act(const cpu_state *st, const rayo_call *c, size_t lo,    \
                                    size_t hi)                                             \
    {                                                                                      \
        eltwise_args g = eltwise_args_of(c, c->b);                                         \
        (void)st;                                                                          \
        for (size_t r = lo; r < hi; r++) {                                                 \
            float *y = (float *)c->y + r * c->n;                                           \
            size_t j = 0;                                                                  \
            g.a = (const float *)c->a + r * c->n;                                          \
            ELTWISE_MAP(bias_##act, g, y, j, c->n);                                        \
        }                                                                                  \
    }

static inline vec_t identity_vec(vec_t x, vec_t alpha, vec_t beta)
{
    (void)alpha;
    (void)beta;
    return x;
}

BIAS_ACT_ROWS(none, identity_vec)
BIAS_ACT_ROWS(relu, relu_vec)
BIAS_ACT_ROWS(gelu, gelu_vec)
BIAS_ACT_ROWS(silu, silu_vec)
BIAS_ACT_ROWS(tanh, tanh_vec)
BIAS_ACT_ROWS(sigmoid, sigmoid_vec)

static cpu_range_fn *const bias_act_rows[RAYO_ACT_LIMIT] = {
    [RAYO_ACT_NONE] = bias_act_rows_none,    [RAYO_ACT_RELU] = bias_act_rows_relu,
    [RAYO_ACT_GELU] = bias_act_rows_gelu,    [RAYO_ACT_SILU] = bias_act_rows_silu,
    [RAYO_ACT_TANH] = bias_act_rows_tanh,    [RAYO_ACT_SIGMOID] = bias_act_rows_sigmoid,
};

CPU_KERNEL_FN(bias_act)
{
    const cpu_state *st = state;
    if (call->flags >= RAYO_ACT_LIMIT) {
        if (st->host->set_error)
            st->host->set_error(st->host, "bias_act: unknown activation %u", (unsigned)call->flags);
        return RAYO_E_INVALID;
    }
    size_t cost = call->flags <= RAYO_ACT_RELU ? ELTWISE_CHEAP : ELTWISE_MATH;
    CPU_RUN_ITEMS(state, call, call->m, call->n ? call->n : 1, cost, bias_act_rows[call->flags]);
    return RAYO_OK;
}
