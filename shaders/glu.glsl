/* SPDX-License-Identifier: MIT */
// glu.glsl - the value of a gated unit, f(g) u (swiglu, geglu, geglu_tanh),
// for infer_rows.comp's GLU ops and gemv_int8.comp's gate and up products
// with their swiglu (RAYO_GLU): one function, so that the fused result is
// the op's, bit for bit.
//
// The includer includes rmath.glsl and rayo-op-ids.glsl first.
//
// y = f(g) u with u up to ~1e30 (rayo-ops.h): where g < GLU_TAIL, f(g)
// down to 1e-37 still makes a y above the tolerance, so there f keeps its
// relative precision: f = x e / (1 + e) (silu, gelu_tanh) or x t e / 2
// (gelu: erfc(z) = t e) with e = exp(w) = m 2^k, w computed in double (its
// float rounding would cost |w| ulp of e), and the power of two applied
// last, to the product with u: neither e nor f passes through a subnormal
// or 0 (flushed on some devices) or past FLT_MAX on the way.

#ifndef RAYO_GLU_GLSL
#define RAYO_GLU_GLSL

const float GLU_TAIL = -2.0;

// exp(w) = m 2^k, m in [0.7, 1.42], for w < 0 (below -200, as for -200:
// every caller then rounds to 0).
float exp_split(double w, out int k)
{
    w = max(w, -200.0LF);
    float kf = roundEven(float(w) * R_LOG2E);
    k = int(kf);
    double r = w - double(kf) * 0.693147180559945309417LF;
    return exp2(float(r * 1.44269504088896340736LF));
}

// c m u 2^k, for |c m| < 256 (scaled by 2^-8 first: the product with u
// stays finite wherever the result is).
float times_pow2(float cm, float u, int k)
{
    float v = (cm * 0.00390625) * u;
    return k + 8 < -252 ? v * 0.0 : r_scale2(v, min(k + 8, 254));
}

// f(g) u for g < GLU_TAIL.
float glu_tail(uint op, float g, float u)
{
    double x = double(g);
    int k;
    if (op == OP_GEGLU) {
        float t, p = r_erfc_poly(abs(g) * 0.70710678118654752, t);
        float m = exp_split(double(p) - 0.5LF * x * x, k);
        return times_pow2(0.5 * g * t * m, u, k);
    }
    double w = op == OP_SWIGLU ? x : 1.59576912160573071176LF * (x + 0.044715LF * x * x * x);
    float m = exp_split(w, k);
    float e = k < -252 ? 0.0 : r_scale2(m, k);
    return times_pow2(g * m / (1.0 + e), u, k);
}

// f(g) u of the gated unit `op` (a constant where the includer has one).
// `precise`: no contraction that the two includers' compilations could
// make differently.
float glu_value(uint op, float g, float u)
{
    if (g < GLU_TAIL)
        return glu_tail(op, g, u);
    float f = op == OP_SWIGLU ? r_silu(g) : op == OP_GEGLU ? r_gelu(g) : r_gelu_tanh(g);
    precise float y = f * u;
    return y;
}

#endif
