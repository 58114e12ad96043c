/* SPDX-License-Identifier: MIT */
/* op-domains.c - what the conformance engine knows per op: the domain its
 * random inputs come from, and its edge values (conform-internal.h). */
#define _POSIX_C_SOURCE 200809L
#include "conform-internal.h"

#include <float.h>
#include <math.h>

domain conform_op_domain(uint32_t op)
{
    switch (op) {
    case RAYO_OP_ADD: case RAYO_OP_SUB: case RAYO_OP_MUL: case RAYO_OP_DIV:
    case RAYO_OP_MAXIMUM: case RAYO_OP_MINIMUM: case RAYO_OP_SCALE: case RAYO_OP_ABS:
    case RAYO_OP_TRANSPOSE:
        return (domain){DOM_SIGNED_LOG, -8, 8};
    case RAYO_OP_EXP: return linear(-87, 88);         /* results stay normal floats */
    case RAYO_OP_LOG: case RAYO_OP_SQRT: return (domain){DOM_POSITIVE, -64, 64};
    case RAYO_OP_HARDSWISH: return linear(-6, 6);
    case RAYO_OP_MAX: case RAYO_OP_MIN: case RAYO_OP_ARGMAX: return linear(-100, 100);
    case RAYO_OP_SUM: case RAYO_OP_DOT: case RAYO_OP_NORM_L1: case RAYO_OP_NORM_L2:
    case RAYO_OP_MATMUL: case RAYO_OP_GEMV:
        return linear(-1, 1);
    case RAYO_OP_LAYERNORM: case RAYO_OP_RMSNORM: return linear(-5, 5);
    case RAYO_OP_BIAS_ACT: return linear(-6, 6);
    default: return linear(-10, 10);
    }
}

float conform_draw(conform_rng *rng, domain d, size_t index)
{
    switch (d.kind) {
    case DOM_SIGNED_LOG: {
        double mag = exp2(uniform_in(rng, d.lo, d.hi));
        return (float)((conform_rng_next(rng) & 1) ? -mag : mag);
    }
    case DOM_POSITIVE:
        return (float)((index & 1) ? uniform_in(rng, 0.5, 2.0) : exp2(uniform_in(rng, d.lo, d.hi)));
    case DOM_LINEAR:
    default:
        return (float)uniform_in(rng, d.lo, d.hi);
    }
}

/* Edge inputs.  Tiny values are 1e-30, not denormals: the contract does not
 * say whether a backend may flush denormals (GPUs do), so no case makes one. */
static const float edge_values[MAX_EDGES] = {
    NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e30f, -1e30f, 1e-30f, -1e-30f,
    1.0f, -1.0f, 0.5f, -3.0f, 2.5f, FLT_MAX, -FLT_MAX,
};

/* x * g(x) activations: at -inf the formula is -inf * 0.  Whether the
 * answer is NaN (IEEE arithmetic on the formula) or 0 (the limit) is not
 * settled by rayo-ops.h, so -inf is not tested for them. */
static int minus_inf_undefined(uint32_t op)
{
    switch (op) {
    case RAYO_OP_GELU: case RAYO_OP_GELU_TANH: case RAYO_OP_SILU: case RAYO_OP_MISH:
    case RAYO_OP_HARDSWISH: case RAYO_OP_BIAS_ACT:
        return 1;
    default:
        return 0;
    }
}

size_t conform_edge_set(const rayo_op_info *op, float *out)
{
    /* +-FLT_MAX only where one input makes one output: with two operands,
     * 1/FLT_MAX is a denormal and a*FLT_MAX + y depends on FMA. */
    int unary = op->sig == RAYO_SIG_UNARY || op->sig == RAYO_SIG_UNARY_P ||
                op->sig == RAYO_SIG_UNARY_P2 || op->sig == RAYO_SIG_TRANSPOSE;
    size_t count = 0;
    for (size_t i = 0; i < MAX_EDGES; i++) {
        float v = edge_values[i];
        if (isinf(v) && v < 0 && minus_inf_undefined(op->id))
            continue;
        if (fabsf(v) == FLT_MAX && !unary)
            continue;
        out[count++] = v;
    }
    return count;
}
