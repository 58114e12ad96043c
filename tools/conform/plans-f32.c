/* SPDX-License-Identifier: MIT */
/* plans-f32.c - the test plans of the f32 ops: the cases of each signature
 * class (sizes, alignments, parameters, edge values) and the groups of
 * harder cases (conform-internal.h).  The inference ops and the other
 * dtypes have theirs in plans-infer.c. */
#define _POSIX_C_SOURCE 200809L
#include "conform-internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fill_names[] = {
    "", "edge values", "every edge value", "NaN inputs", "+inf inputs", "-inf inputs",
    "+inf and -inf inputs", "all -inf", "ties", "huge values", "tiny values",
    "wide range", "-inf entries", "shifted", "+-", "near FLT_MAX", "a near FLT_MAX",
    "subnormal divisors", "literal data", "runs of +-FLT_MAX",
};

static const float matmul_alpha_beta[][2] = {
    {1.0f, 0.0f}, {1.0f, 1.0f}, {-0.75f, 0.5f}, {2.5f, 0.0f}, {0.5f, -1.5f},
};
static const float norm_eps[] = {1e-5f, 1e-6f, 1e-2f};

/* Parameters of a case, from its class (and the op where the class leaves
 * the meaning of alpha to the op). */
static void choose_params(const plan *p, case_spec *cs, size_t index)
{
    conform_rng *rng = p->rng;
    switch (p->op->sig) {
    case RAYO_SIG_UNARY_P:
        if (p->op->id == RAYO_OP_SCALE)
            cs->alpha = (float)(exp2(uniform_in(rng, -4, 4)) * ((index & 2) ? -1 : 1));
        else if (p->op->id == RAYO_OP_LEAKY_RELU)
            cs->alpha = index % 3 ? (float)uniform_in(rng, 0.001, 0.5) : 0.01f;
        else
            cs->alpha = index % 3 ? (float)uniform_in(rng, 0.1, 2.0) : 1.0f;
        break;
    case RAYO_SIG_UNARY_P2:
        cs->alpha = (float)uniform_in(rng, -5, 0);
        cs->beta = (float)uniform_in(rng, 0, 5);
        break;
    case RAYO_SIG_AXPY:
        cs->alpha = (float)uniform_in(rng, -3, 3);
        break;
    case RAYO_SIG_NORM:
        cs->alpha = norm_eps[index % 3];
        cs->no_gamma = (index >> 1) & 1;
        cs->no_beta = (index >> 2) & 1;
        break;
    case RAYO_SIG_MATMUL: case RAYO_SIG_GEMV: {
        size_t i = index % (sizeof matmul_alpha_beta / sizeof matmul_alpha_beta[0]);
        cs->alpha = matmul_alpha_beta[i][0];
        cs->beta = matmul_alpha_beta[i][1];
        break;
    }
    case RAYO_SIG_BIAS_ACT:
        cs->flags = (uint32_t)(index % RAYO_ACT_LIMIT);
        break;
    default:
        break;
    }
}

/* Appends a case with these sizes, alternating aligned/unaligned data. */
static case_spec *plan_add(plan *p, size_t m, size_t n, size_t k)
{
    if (p->count == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        case_spec *v = realloc(p->v, cap * sizeof *v);
        if (!v) {
            p->oom = 1;
            return &p->scratch;
        }
        p->v = v;
        p->cap = cap;
    }
    case_spec *cs = &p->v[p->count];
    memset(cs, 0, sizeof *cs);
    cs->m = m, cs->n = n, cs->k = k;
    cs->misalign = p->count & 1;
    choose_params(p, cs, p->count);
    p->count++;
    return cs;
}

static case_spec *plan_fill(plan *p, size_t m, size_t n, size_t k, fill_kind fill)
{
    case_spec *cs = plan_add(p, m, n, k);
    cs->fill = fill;
    return cs;
}

/* A case of a named group (see GROUP_*). */
static case_spec *plan_group(plan *p, size_t m, size_t n, size_t k, fill_kind fill, const char *group)
{
    case_spec *cs = plan_fill(p, m, n, k, fill);
    cs->group = group;
    return cs;
}

/* Inputs uniform in offset +- spread (FILL_SHIFTED) or offset +- spread
 * (FILL_PLUSMINUS); matrix products: alpha = 1, beta = 0. */
static case_spec *plan_values(plan *p, size_t m, size_t n, size_t k, fill_kind fill, double offset,
                              double spread, const char *group)
{
    case_spec *cs = plan_group(p, m, n, k, fill, group);
    cs->offset = offset, cs->spread = spread;
    if (p->op->sig == RAYO_SIG_MATMUL || p->op->sig == RAYO_SIG_GEMV)
        cs->alpha = 1.0f, cs->beta = 0.0f;
    return cs;
}

/* Long sums of uniform(0, 1) terms: no cancellation hides the error that a
 * float accumulator gathers, so it shows at its full size. */
static case_spec *plan_positive(plan *p, size_t m, size_t n, size_t k, const char *group)
{
    return plan_values(p, m, n, k, FILL_SHIFTED, 0.5, 0.5, group);
}

static const size_t vector_sizes[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 1000, 4097};
#define LARGE_VECTOR ((size_t)1 << 20)

/* sum [FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX, 1] = 1: float partial sums
 * overflow where the float64 result is finite; dot: products 2 FLT_MAX. */
static const float max_cancel[] = {FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX, 1.0f};
static const float twos[] = {2.0f, 2.0f, 2.0f, 2.0f, 1.0f};
static const literal max_cancel_literal = {{max_cancel, twos, NULL}, {5, 5, 0}};

static void plan_reduction_extremes(plan *p)
{
    plan_group(p, 0, 5, 0, FILL_LITERAL, GROUP_OVERFLOW)->literal = &max_cancel_literal;
    plan_group(p, 0, 1000, 0, FILL_LITERAL, GROUP_OVERFLOW)->literal = &max_cancel_literal;
    /* runs: every SIMD lane sees FLT_MAX twice, whatever the lane layout */
    plan_group(p, 0, 129, 0, FILL_MAX_RUNS, GROUP_OVERFLOW);
    plan_group(p, 0, 4 * 1024 + 1, 0, FILL_MAX_RUNS, GROUP_OVERFLOW);
    plan_positive(p, 0, 1000003, 0, GROUP_LONG_REDUCTION);
    if (p->long_tier)
        plan_positive(p, 0, 100000000, 0, GROUP_LONG);
}

/* Elementwise ops near the top of the float range: results that are finite
 * floats must not overflow inside the kernel (selu(3.23862215e38), axpy's
 * alpha x + y, FLT_MAX / 50), and divisors may be subnormal. */
static void plan_elementwise_extremes(plan *p)
{
    rayo_op_sig sig = p->op->sig;
    plan_group(p, 0, 257, 0, FILL_NEAR_MAX, GROUP_OVERFLOW);
    if (sig == RAYO_SIG_AXPY)
        plan_group(p, 0, 1000, 0, FILL_NEAR_MAX, GROUP_OVERFLOW)->alpha = -1.75f;
    if (p->op->id == RAYO_OP_DIV) {
        plan_group(p, 0, 257, 0, FILL_DIV_HUGE, GROUP_OVERFLOW);
        plan_group(p, 0, 257, 0, FILL_DIV_SUBNORMAL, GROUP_SUBNORMAL);
    }
}

static void plan_vector(plan *p)
{
    rayo_op_sig  sig = p->op->sig;
    for (size_t i = 0; i < COUNT_OF(vector_sizes); i++) {
        plan_add(p, 0, vector_sizes[i], 0);
        plan_add(p, 0, vector_sizes[i], 0);
    }
    int reduction = sig == RAYO_SIG_REDUCE || sig == RAYO_SIG_REDUCE2 || sig == RAYO_SIG_ARGREDUCE;
    /* Quick runs keep one large reduction: accumulation error shows only there. */
    if (!p->quick || reduction)
        plan_add(p, 0, LARGE_VECTOR, 0);
    if (!p->quick)
        plan_add(p, 0, LARGE_VECTOR, 0);
    if (reduction) {
        plan_fill(p, 0, 17, 0, FILL_NAN);
        plan_fill(p, 0, 1000, 0, FILL_NAN);
        plan_fill(p, 0, 1000, 0, FILL_PINF);
        plan_fill(p, 0, 33, 0, FILL_NINF);
        plan_fill(p, 0, 1000, 0, FILL_BOTH_INF);
        plan_fill(p, 0, 7, 0, FILL_ALL_NINF);
        plan_fill(p, 0, 33, 0, FILL_TIES);
        plan_fill(p, 0, 1000, 0, FILL_TIES);
        plan_fill(p, 0, 1000, 0, FILL_HUGE);
        plan_fill(p, 0, 1000, 0, FILL_TINY);
        plan_reduction_extremes(p);
        return;
    }
    /* elementwise */
    float edges[MAX_EDGES];
    size_t ne = conform_edge_set(p->op, edges);
    plan_fill(p, 0, 257, 0, FILL_EDGE);
    plan_fill(p, 0, 1000, 0, FILL_EDGE);
    plan_fill(p, 0, (sig == RAYO_SIG_BINARY || sig == RAYO_SIG_AXPY) ? ne * ne : 3 * ne, 0, FILL_EDGE_ALL);
    plan_add(p, 0, 33, 0)->alias = 1;
    plan_fill(p, 0, 1000, 0, FILL_EDGE)->alias = 1;
    if (sig == RAYO_SIG_BINARY)
        plan_add(p, 0, 17, 0)->alias = 2;
    plan_elementwise_extremes(p);
}

static const size_t row_cols[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 1000, 4097};
static const size_t row_rows[] = {1, 3, 17};

/* Rows far from 0 relative to their spread: statistics and shifts must be
 * right relative to the spread (mean 1e4 std 1, log_softmax of 1e12 + x). */
static const double row_offsets[][2] = {
    {1e4, 1.7}, {1234.567, 0}, {1e12, 0}, {1e12, 1e12 * 0x1p-21}, {1e16, 1e16 * 0x1p-21},
    {1e30, 0}, {-1e30, 1e30 * 0x1p-20}, {3e38, 0},
};

static void plan_row_extremes(plan *p)
{
    for (size_t i = 0; i < COUNT_OF(row_offsets); i++) {
        plan_values(p, 3, 1000, 0, FILL_SHIFTED, row_offsets[i][0], row_offsets[i][1], GROUP_OFFSET);
        plan_values(p, 1, 7, 0, FILL_SHIFTED, row_offsets[i][0], row_offsets[i][1], GROUP_OFFSET);
    }
    plan_values(p, 1, 1000000, 0, FILL_PLUSMINUS, 0.5, 0.2, GROUP_OFFSET);  /* 0.3 or 0.7 */
    plan_values(p, 3, 1000, 0, FILL_PLUSMINUS, 0, 1e20, GROUP_OVERFLOW);
    plan_values(p, 3, 1000, 0, FILL_PLUSMINUS, 0, 3e38, GROUP_OVERFLOW);
    plan_values(p, 2, 33, 0, FILL_SHIFTED, 3e38, 3e38 * 0x1p-10, GROUP_OVERFLOW);
    /* one long row: loops of millions of iterations per row */
    plan_values(p, 1, 6000000, 0, FILL_SHIFTED, 0, p->op->sig == RAYO_SIG_ROWS ? 0 : 3,
                GROUP_LONG_REDUCTION);
    if (p->long_tier)
        plan_values(p, 1, 17800000, 0, FILL_SHIFTED, 0, p->op->sig == RAYO_SIG_ROWS ? 0 : 3, GROUP_LONG);
}

/* layernorm: found failing for seed 2686411465 (vulkan, rows=1 cols=2, eps=1e-5, gamma NULL). */
static const float regress_ln_x[] = {-0x1.053684p+1f, -0x1.04b59ep+1f};
static const float regress_ln_beta[] = {-0x1.5ec52cp-1f, -0x1.e487cep-1f};
static const literal regress_layernorm = {{regress_ln_x, NULL, regress_ln_beta}, {2, 0, 2}};

/* eps = 0 (constant and all-zero rows are defined in rayo-ops.h), subnormal
 * rows, rows of +-3e38, and gamma ~ 100 with beta ~ -+100, where outputs
 * near 0 come from cancellation of two values near 100. */
static void plan_norm_extremes(plan *p)
{
    const size_t sizes[][2] = {{3, 1000}, {1, 2}, {17, 33}};
    for (size_t i = 0; i < COUNT_OF(sizes); i++) {
        case_spec *cs = plan_add(p, sizes[i][0], sizes[i][1], 0);
        cs->alpha = 0.0f;
        cs->group = GROUP_EPS0;
    }
    plan_values(p, 3, 1000, 0, FILL_SHIFTED, 1234.567, 0, GROUP_EPS0)->alpha = 0.0f;
    plan_values(p, 2, 17, 0, FILL_SHIFTED, 0, 0, GROUP_EPS0)->alpha = 0.0f;
    plan_values(p, 3, 1000, 0, FILL_PLUSMINUS, 0, 3e38, GROUP_EPS0)->alpha = 0.0f;
    plan_values(p, 3, 1000, 0, FILL_SHIFTED, 0, 1e-39, GROUP_SUBNORMAL)->alpha = 0.0f;
    plan_values(p, 2, 33, 0, FILL_SHIFTED, 1e-39, 2e-40, GROUP_SUBNORMAL)->alpha = 0.0f;
    for (int i = 0; i < 2; i++) {
        case_spec *cs = plan_group(p, i ? 1 : 8, i ? 1000 : 4097, 0, FILL_RANDOM, GROUP_AFFINE);
        cs->big_affine = 1;
        cs->no_gamma = cs->no_beta = 0;
        cs->alpha = 1e-5f;
    }
    if (p->op->id == RAYO_OP_LAYERNORM) {
        case_spec *cs = plan_group(p, 1, 2, 0, FILL_LITERAL, GROUP_REGRESSION);
        cs->literal = &regress_layernorm;
        cs->alpha = 1e-5f, cs->no_gamma = 1, cs->no_beta = 0;
    }
}

/* ROWS, NORM and BIAS_ACT: rows x cols */
static void plan_rows(plan *p)
{
    for (size_t c = 0; c < COUNT_OF(row_cols); c++)
        for (size_t r = 0; r < COUNT_OF(row_rows); r++)
            plan_add(p, row_rows[r], row_cols[c], 0);
    plan_add(p, 0, 7, 0);
    plan_add(p, 7, 0, 0);
    plan_add(p, 0, 0, 0);
    if (!p->quick)
        plan_add(p, 256, 4096, 0);
    if (p->op->sig == RAYO_SIG_ROWS) {
        plan_fill(p, 3, 1000, 0, FILL_WIDE);
        plan_fill(p, 2, 17, 0, FILL_WIDE);
        plan_fill(p, 5, 33, 0, FILL_MASKED);
        plan_fill(p, 2, 4097, 0, FILL_MASKED);
    } else if (p->op->sig == RAYO_SIG_BIAS_ACT) {
        for (uint32_t act = 0; act < RAYO_ACT_LIMIT; act++)
            plan_fill(p, 2, 257, 0, FILL_EDGE)->flags = act;
    }
    if (p->op->sig == RAYO_SIG_ROWS || p->op->sig == RAYO_SIG_NORM) {
        plan_row_extremes(p);
        plan_group(p, 3, 1000, 0, FILL_NAN, GROUP_NAN_ROWS);
        plan_group(p, 5, 17, 0, FILL_NAN, GROUP_NAN_ROWS);
    }
    if (p->op->sig == RAYO_SIG_NORM)
        plan_norm_extremes(p);
}

static const size_t transpose_sizes[] = {1, 2, 3, 7, 16, 17, 33, 100};

static void plan_transpose(plan *p)
{
    for (size_t r = 0; r < COUNT_OF(transpose_sizes); r++)
        for (size_t c = 0; c < COUNT_OF(transpose_sizes); c++)
            plan_add(p, transpose_sizes[r], transpose_sizes[c], 0);
    plan_add(p, 1, 4097, 0);
    plan_add(p, 4097, 1, 0);
    plan_add(p, 1000, 33, 0);
    plan_add(p, 0, 5, 0);
    plan_add(p, 5, 0, 0);
    plan_fill(p, 17, 33, 0, FILL_EDGE);
    if (!p->quick)
        plan_add(p, 1024, 1024, 0);
}

static const size_t matmul_sizes[] = {1, 2, 3, 7, 16, 17, 33, 64, 100, 257};

static size_t pick(conform_rng *rng, const size_t *sizes, size_t count)
{
    return sizes[below(rng, count)];
}

/* Long inner dimensions, and m = 1 or n = 1, where a kernel may fall back
 * to one float accumulator over all of k. */
static void plan_long_matmul(plan *p)
{
    plan_positive(p, 8, 8, 100000, GROUP_LONG_REDUCTION);
    plan_values(p, 1, 4096, 4096, FILL_SHIFTED, 0.7, 0, GROUP_LONG_REDUCTION); /* constant */
    plan_positive(p, 1, 1, 100003, GROUP_LONG_REDUCTION);
    plan_positive(p, 37, 1, 20000, GROUP_LONG_REDUCTION)->flags = RAYO_TRANS_B;
    plan_positive(p, 1, 19, 50000, GROUP_LONG_REDUCTION)->flags = RAYO_TRANS_A;
    if (p->long_tier) {
        plan_positive(p, 8, 8, 5000000, GROUP_LONG);
        plan_positive(p, 1, 1, 50000000, GROUP_LONG);
    }
}

/* Few 128 x 128 tiles of C and a long k, where a GPU backend splits k into
 * slabs and adds their partials (cuda: 16 slabs of 256 for the first), and m = 1 or
 * n = 1 long enough for a gemv's vector loads; every transpose. */
static void plan_skinny_matmul(plan *p)
{
    for (uint32_t flags = 0; flags < 4; flags++) {
        if (p->quick && flags != 0 && flags != 3)
            continue;
        plan_add(p, 128, 256, 4096)->flags = flags;
        plan_add(p, 200, 300, 1112)->flags = flags; /* edge tiles; cuda: 5 slabs, the last shorter */
        plan_add(p, 1, 256, 300)->flags = flags;
        plan_add(p, 256, 1, 300)->flags = flags;
        if (!p->quick)
            plan_add(p, 256, 384, 1024)->flags = flags;
    }
}

static void plan_matmul(plan *p)
{
    plan_skinny_matmul(p);
    for (uint32_t flags = 0; flags < 4; flags++) {
        for (size_t i = 0; i < COUNT_OF(matmul_sizes); i++)
            plan_add(p, matmul_sizes[i], matmul_sizes[i], matmul_sizes[i])->flags = flags;
        for (int r = 0; r < 8; r++) {
            size_t m = pick(p->rng, matmul_sizes, COUNT_OF(matmul_sizes));
            size_t n = pick(p->rng, matmul_sizes, COUNT_OF(matmul_sizes));
            size_t k = pick(p->rng, matmul_sizes, COUNT_OF(matmul_sizes));
            plan_add(p, m, n, k)->flags = flags;
        }
    }
    plan_add(p, 0, 5, 5);
    plan_add(p, 5, 0, 5);
    case_spec *cs = plan_add(p, 5, 6, 0);  /* C = beta C */
    cs->alpha = 1.0f, cs->beta = 0.5f;
    cs = plan_add(p, 6, 5, 0);             /* C = 0, though C holds NaN */
    cs->alpha = 1.0f, cs->beta = 0.0f;
    if (!p->quick)
        plan_add(p, 500, 480, 520)->flags = (uint32_t)below(p->rng, 4);
    plan_long_matmul(p);
}

static const size_t gemv_sizes[] = {1, 2, 3, 7, 16, 17, 33, 64, 100, 257, 1000, 4097};

/* gemv: one output of a long sum (m = 1, or n = 1 transposed), and many
 * rows transposed (each output sums m = 100000 terms). */
static void plan_long_gemv(plan *p)
{
    plan_positive(p, 100000, 64, 0, GROUP_LONG_REDUCTION)->flags = RAYO_TRANS_A;
    plan_positive(p, 100003, 1, 0, GROUP_LONG_REDUCTION)->flags = RAYO_TRANS_A;
    plan_positive(p, 1, 100003, 0, GROUP_LONG_REDUCTION);
    plan_positive(p, 64, 100000, 0, GROUP_LONG_REDUCTION);
    if (p->long_tier) {
        plan_positive(p, 1, 17000000, 0, GROUP_LONG);
        plan_positive(p, 17000000, 1, 0, GROUP_LONG)->flags = RAYO_TRANS_A;
    }
}

static void plan_gemv(plan *p)
{
    for (uint32_t flags = 0; flags <= RAYO_TRANS_A; flags += RAYO_TRANS_A) {
        for (size_t i = 0; i < COUNT_OF(matmul_sizes); i++)
            plan_add(p, matmul_sizes[i], matmul_sizes[i], 0)->flags = flags;
        for (int r = 0; r < 12; r++) {
            size_t m = pick(p->rng, gemv_sizes, COUNT_OF(gemv_sizes));
            size_t n = pick(p->rng, gemv_sizes, COUNT_OF(gemv_sizes));
            if (m * n > ((size_t)1 << 21))
                n = 33;
            plan_add(p, m, n, 0)->flags = flags;
        }
        for (int e = 0; e < 2; e++) { /* inner length 0: y = beta y, or 0 */
            case_spec *cs = plan_add(p, e ? 0 : 5, e ? 5 : 0, 0);
            cs->flags = flags;
            cs->alpha = 1.0f, cs->beta = 0.5f;
        }
        if (!p->quick)
            plan_add(p, 1024, 1024, 0)->flags = flags;
    }
    plan_long_gemv(p);
}

int conform_make_plan(plan *p)
{
    switch (p->op->sig) {
    case RAYO_SIG_BINARY: case RAYO_SIG_UNARY: case RAYO_SIG_UNARY_P:
    case RAYO_SIG_UNARY_P2: case RAYO_SIG_AXPY: case RAYO_SIG_REDUCE:
    case RAYO_SIG_REDUCE2: case RAYO_SIG_ARGREDUCE:
        plan_vector(p);
        break;
    case RAYO_SIG_ROWS: case RAYO_SIG_NORM: case RAYO_SIG_BIAS_ACT:
        plan_rows(p);
        break;
    case RAYO_SIG_TRANSPOSE: plan_transpose(p); break;
    case RAYO_SIG_MATMUL: plan_matmul(p); break;
    case RAYO_SIG_GEMV: plan_gemv(p); break;
    default: return -1;
    }
    return p->oom ? -1 : 0;
}

static const char *const act_names[RAYO_ACT_LIMIT] = {"none", "relu", "gelu", "silu", "tanh", "sigmoid"};

/* A case in words: "m=3 n=17 k=33, A transposed, alpha=1 beta=0, unaligned". */
void conform_describe_case(const rayo_op_info *op, const case_spec *cs, char *buf, size_t size)
{
    size_t len = 0;
#define ADD(...) (len += (size_t)snprintf(buf + len, len < size ? size - len : 0, __VA_ARGS__))
    switch (op->sig) {
    case RAYO_SIG_ROWS: case RAYO_SIG_TRANSPOSE: ADD("rows=%zu cols=%zu", cs->m, cs->n); break;
    case RAYO_SIG_NORM:
        ADD("rows=%zu cols=%zu eps=%g%s%s", cs->m, cs->n, (double)cs->alpha,
            cs->no_gamma ? ", gamma NULL" : "", cs->no_beta ? ", beta NULL" : "");
        break;
    case RAYO_SIG_BIAS_ACT:
        ADD("rows=%zu cols=%zu act=%s", cs->m, cs->n, cs->flags < RAYO_ACT_LIMIT ? act_names[cs->flags] : "?");
        break;
    case RAYO_SIG_MATMUL: case RAYO_SIG_GEMV:
        ADD("m=%zu n=%zu", cs->m, cs->n);
        if (op->sig == RAYO_SIG_MATMUL)
            ADD(" k=%zu", cs->k);
        ADD("%s%s, alpha=%g beta=%g", (cs->flags & RAYO_TRANS_A) ? ", A transposed" : "",
            (cs->flags & RAYO_TRANS_B) ? ", B transposed" : "", (double)cs->alpha, (double)cs->beta);
        if (cs->beta == 0)
            ADD(" (C/y NaN-poisoned)");
        break;
    default:
        ADD("n=%zu", cs->n);
        if (op->sig == RAYO_SIG_UNARY_P || op->sig == RAYO_SIG_AXPY)
            ADD(", alpha=%g", (double)cs->alpha);
        else if (op->sig == RAYO_SIG_UNARY_P2)
            ADD(", lo=%g hi=%g", (double)cs->alpha, (double)cs->beta);
        break;
    }
    if (cs->fill == FILL_SHIFTED && cs->spread == 0)
        ADD(", constant %.9g", cs->offset);
    else if (cs->fill == FILL_SHIFTED)
        ADD(", uniform in %.9g +- %.3g", cs->offset, cs->spread);
    else if (cs->fill == FILL_PLUSMINUS)
        ADD(", values %.9g +- %.3g", cs->offset, cs->spread);
    else if (cs->fill != FILL_RANDOM)
        ADD(", %s", fill_names[cs->fill]);
    if (cs->big_affine)
        ADD(", gamma ~ 100, beta ~ +-100");
    if (cs->misalign)
        ADD(", unaligned");
    if (cs->alias)
        ADD(", in place (y == %c)", cs->alias == 1 ? 'a' : 'b');
    if (cs->group)
        ADD(" [%s]", cs->group);
#undef ADD
}
