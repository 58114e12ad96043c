/* SPDX-License-Identifier: MIT */
#version 450
// eltwise.comp - every elementwise op: binary, unary (with parameters),
// axpy and bias_act.  OP (a specialization constant, the rayo op id; bias_act
// is BIAS_ACT_BASE + activation) selects the function, so the driver compiles one
// branch-free pipeline per op.  Grid-stride loop: any n with a bounded
// number of workgroups.  With RAYO_VEC4 each invocation moves 16 bytes.

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "rmath.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 1;
layout(constant_id = 2) const uint UNROLL = 1;

#include "rayo-op-ids.glsl"

// activations of bias_act (rayo_activation)
const uint ACT_NONE = 0, ACT_RELU = 1, ACT_GELU = 2, ACT_SILU = 3,
           ACT_TANH = 4, ACT_SIGMOID = 5;

float f_relu(float x) { return x > 0.0 ? x : (r_isnan(x) ? x : 0.0); }

float f_binary(float x, float z)
{
    if (OP == OP_ADD) return x + z;
    if (OP == OP_SUB) return x - z;
    if (OP == OP_MUL) return x * z;
    if (OP == OP_DIV) return r_div(x, z);
    if (OP == OP_MAXIMUM) return (r_isnan(x) || r_isnan(z)) ? R_NAN : max(x, z);
    return (r_isnan(x) || r_isnan(z)) ? R_NAN : min(x, z);
}

float f_unary(float x)
{
    float p = pc.alpha;
    switch (OP) {
    case OP_SCALE: return p * x;
    case OP_RELU: return f_relu(x);
    case OP_LEAKY_RELU: return x > 0.0 ? x : p * x;
    case OP_ELU: return x > 0.0 ? x : p * r_expm1(x);
    // lambda x as x + (lambda - 1) x: one rounding, so no overflow below FLT_MAX / lambda
    case OP_SELU: return x > 0.0 ? x + 0.0507009873554805 * x : 1.7580993408473766 * r_expm1(x);
    case OP_SIGMOID: return r_sigmoid(x);
    case OP_TANH: return r_tanh(x);
    case OP_GELU: return r_gelu(x);
    case OP_GELU_TANH: return r_gelu_tanh(x);
    case OP_SILU: return r_silu(x);
    case OP_MISH: return r_mish(x);
    case OP_SOFTPLUS: return r_softplus(x);
    case OP_HARDSWISH:      // exact outside (-3, 3); no overflow for huge x
        if (x >= 3.0 || r_isnan(x)) return x;
        return x <= -3.0 ? 0.0 * x : r_div(x * (x + 3.0), 6.0);
    case OP_CLIP: return r_isnan(x) ? x : min(max(x, p), pc.beta);
    case OP_EXP: return r_exp(x);
    case OP_LOG: return r_log(x);
    case OP_SQRT: return r_sqrt(x);
    case OP_ABS: return abs(x);
    }
    return x;
}

float f_act(float x)
{
    const uint act = OP - BIAS_ACT_BASE;
    if (act == ACT_RELU) return f_relu(x);
    if (act == ACT_GELU) return r_gelu(x);
    if (act == ACT_SILU) return r_silu(x);
    if (act == ACT_TANH) return r_tanh(x);
    if (act == ACT_SIGMOID) return r_sigmoid(x);
    return x;
}

// alpha x + y.  Where fma() is not fused (lavapipe) alpha x is rounded on
// its own and may overflow though alpha x + y is finite (alpha -1.75,
// x = y = 3.2e38); then the same is done on halves, which are exact there
// (|alpha x| > FLT_MAX needs |x| far above the denormals, and |y| must be
// large for the sum to be finite), and doubled: the one rounding of a
// finite result is the same, an overflow stays inf.
float f_axpy(float alpha, float x, float y)
{
    float r = fma(alpha, x, y);
    if (isinf(r) && !isinf(alpha) && !isinf(x) && !isinf(y))
        r = 2.0 * fma(alpha, 0.5 * x, 0.5 * y);
    return r;
}

// One element (or one vec4 lane) i of the flat index space.
float f_elem(float x, float z, float yold)
{
    if (OP <= OP_MINIMUM) return f_binary(x, z);
    if (OP == OP_AXPY) return f_axpy(pc.alpha, x, yold);
    if (OP >= BIAS_ACT_BASE) return f_act(x + z);
    return f_unary(x);
}

bool reads_b() { return OP <= OP_MINIMUM || OP >= BIAS_ACT_BASE; }

void main()
{
    // total: elements (or vec4s); for bias_act m rows of n, b indexed by column.
    // UNROLL independent elements per invocation and step: their loads are
    // all issued before the first result is computed.
    uint total = OP >= BIAS_ACT_BASE ? pc.m * pc.n : pc.n;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint base = gl_GlobalInvocationID.x; base < total; base += stride * UNROLL) {
        ELEM x[UNROLL], z[UNROLL], yold[UNROLL];
        for (uint u = 0u; u < UNROLL; u++) {
            uint i = base + u * stride;
            if (i >= total)
                break;
            x[u] = a_data[pc.oa + i];
            z[u] = ELEM(0.0);
            if (reads_b())
                z[u] = b_data[pc.ob + (OP >= BIAS_ACT_BASE ? i % pc.n : i)];
            yold[u] = ELEM(0.0);
            if (OP == OP_AXPY)
                yold[u] = y_data[pc.oy + i];
        }
        for (uint u = 0u; u < UNROLL; u++) {
            uint i = base + u * stride;
            if (i >= total)
                break;
#ifdef RAYO_VEC4
            vec4 r;
            for (int l = 0; l < 4; l++)
                r[l] = f_elem(x[u][l], z[u][l], yold[u][l]);
            y_data[pc.oy + i] = r;
#else
            y_data[pc.oy + i] = f_elem(x[u], z[u], yold[u]);
#endif
        }
    }
}
