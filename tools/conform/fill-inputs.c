/* SPDX-License-Identifier: MIT */
/* fill-inputs.c - the input values of a conformance case: random values
 * from the op's domain, and the special fills of the plans (edge values,
 * NaN and infinities, values near FLT_MAX, literal data...). */
#define _POSIX_C_SOURCE 200809L
#include "conform-internal.h"

#include <float.h>
#include <math.h>

static domain operand_domain(const rayo_op_info *op, int which)
{
    if (which == 0 || op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_REDUCE2 ||
        op->sig == RAYO_SIG_AXPY)
        return conform_op_domain(op->id);
    if (op->sig == RAYO_SIG_NORM)
        return which == 1 ? linear(-2, 2) : linear(-1, 1); /* gamma, beta */
    if (op->sig == RAYO_SIG_BIAS_ACT)
        return linear(-2, 2);
    return linear(-1, 1); /* matmul, gemv: B, x, C, y */
}

/* Does this fill kind change this operand?  Edge values and values near
 * FLT_MAX go to every input of an elementwise op; shifted values to every
 * input of a dot or matrix product; literal data where the case has some;
 * the other special fills to the first input only. */
static int fill_applies(const rayo_op_info *op, const case_spec *cs, int which)
{
    int elementwise2 = op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_AXPY;
    switch (cs->fill) {
    case FILL_EDGE: case FILL_EDGE_ALL: case FILL_NEAR_MAX: case FILL_DIV_HUGE:
    case FILL_DIV_SUBNORMAL:
        return which == 0 || elementwise2;
    case FILL_SHIFTED: case FILL_PLUSMINUS:
        return which == 0 || ((op->sig == RAYO_SIG_REDUCE2 || op->sig == RAYO_SIG_MATMUL ||
                               op->sig == RAYO_SIG_GEMV) && which < 3);
    case FILL_LITERAL:
        return which < 3 && cs->literal->count[which] > 0;
    case FILL_MAX_RUNS:
        return which == 0 || (op->sig == RAYO_SIG_REDUCE2 && which == 1);
    default:
        return which == 0;
    }
}

static float signed_at_random(conform_rng *rng, double magnitude)
{
    return (float)((conform_rng_next(rng) & 1) ? -magnitude : magnitude);
}

/* Values near the top of the float range; the first three are the ones that
 * were found to fail (selu just below FLT_MAX) and FLT_MAX itself. */
static void fill_near_max(conform_rng *rng, float *x, size_t n)
{
    static const float firsts[] = {3.23862215e38f, FLT_MAX, -FLT_MAX};
    for (size_t i = 0; i < n; i++)
        x[i] = i < COUNT_OF(firsts) ? firsts[i] : signed_at_random(rng, uniform_in(rng, 0.5, 1.0) * FLT_MAX);
}

/* div: a / b for a near FLT_MAX and b in [1, 100] (FLT_MAX / 50 must not
 * overflow), or b subnormal and a small enough that a / b is finite
 * (a reciprocal 1 / b overflows there). */
static void fill_div(conform_rng *rng, fill_kind fill, int which, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double mag;
        if (fill == FILL_DIV_HUGE)
            mag = which == 0 ? uniform_in(rng, 0.5, 1.0) * FLT_MAX : (i == 0 ? 50 : uniform_in(rng, 1, 100));
        else
            mag = which == 0 ? exp2(uniform_in(rng, -40, -10)) : exp2(uniform_in(rng, -149, -127));
        x[i] = i == 0 && which == 0 && fill == FILL_DIV_HUGE ? FLT_MAX : signed_at_random(rng, mag);
    }
}

static void fill_values(conform_rng *rng, const case_spec *cs, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double u = cs->fill == FILL_SHIFTED ? uniform_in(rng, -1, 1) : (conform_rng_next(rng) & 1) ? -1 : 1;
        x[i] = (float)(cs->offset + cs->spread * u);
    }
}

static void place(conform_rng *rng, float *x, size_t n, float v, size_t times)
{
    for (size_t i = 0; i < times && n; i++)
        x[below(rng, n)] = v;
}

static void fill_special(engine *e, const case_spec *cs, int which, int fastest, float *x, size_t n)
{
    conform_rng *rng = &e->rng;
    size_t ne = e->edge_count;
    switch (cs->fill) {
    case FILL_SHIFTED: case FILL_PLUSMINUS: fill_values(rng, cs, x, n); break;
    case FILL_NEAR_MAX: fill_near_max(rng, x, n); break;
    case FILL_DIV_HUGE: case FILL_DIV_SUBNORMAL: fill_div(rng, cs->fill, which, x, n); break;
    case FILL_MAX_RUNS:
        for (size_t i = 0; i < n; i++)
            x[i] = i + 1 == n ? 1.0f : which ? 2.0f : (i / 64) & 1 ? -FLT_MAX : FLT_MAX;
        break;
    case FILL_LITERAL:
        for (size_t i = 0; i < n; i++)
            x[i] = cs->literal->data[which][i % cs->literal->count[which]];
        break;
    case FILL_EDGE:
        for (size_t i = 0; i < n; i++)
            if (below(rng, 4) == 0)
                x[i] = e->edges[below(rng, ne)];
        break;
    case FILL_EDGE_ALL:
        /* with two operands the second varies fastest: every pair appears */
        for (size_t i = 0; i < n; i++)
            x[i] = e->edges[fastest ? i % ne : (i / ne) % ne];
        break;
    case FILL_NAN: place(rng, x, n, NAN, 1 + below(rng, 3)); break;
    case FILL_PINF: place(rng, x, n, INFINITY, 1 + below(rng, 3)); break;
    case FILL_NINF: place(rng, x, n, -INFINITY, 1 + below(rng, 3)); break;
    case FILL_BOTH_INF:
        place(rng, x, n, INFINITY, 2);
        place(rng, x, n, -INFINITY, 2);
        break;
    case FILL_ALL_NINF:
        for (size_t i = 0; i < n; i++)
            x[i] = -INFINITY;
        break;
    case FILL_TIES:
        for (size_t i = 0; i < n; i++)
            x[i] = (float)below(rng, 5) - 2.0f;
        break;
    case FILL_HUGE: case FILL_TINY: {
        domain d = {DOM_SIGNED_LOG, cs->fill == FILL_HUGE ? 90 : -125, cs->fill == FILL_HUGE ? 115 : -100};
        for (size_t i = 0; i < n; i++)
            x[i] = conform_draw(rng, d, i);
        break;
    }
    case FILL_WIDE:
        conform_fill_uniform(rng, x, n, -100, 100);
        break;
    case FILL_MASKED:
        for (size_t i = 0; i < n; i++)
            if (cs->n && i % cs->n != 0 && below(rng, 4) == 0) /* column 0 stays finite */
                x[i] = -INFINITY;
        break;
    case FILL_RANDOM:
    default:
        break;
    }
}

void conform_fill_operand(engine *e, const case_spec *cs, int which, float *x, size_t n)
{
    domain d = operand_domain(e->op, which);
    int two_operands = e->op->sig == RAYO_SIG_BINARY || e->op->sig == RAYO_SIG_AXPY;
    if (cs->big_affine && which > 0)
        d = which == 1 ? linear(99, 101) : linear(-2, 2);
    for (size_t i = 0; i < n; i++)
        x[i] = conform_draw(&e->rng, d, i);
    if (cs->big_affine && which == 2) /* beta ~ +-100 */
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] < 0 ? x[i] - 99.0f : x[i] + 99.0f; /* +-[99, 101] */
    /* y of axpy (operand 3) is its second input */
    int input = which == 3 ? 1 : which;
    if (fill_applies(e->op, cs, input))
        fill_special(e, cs, input, !two_operands || which != 0, x, n);
}
