/* SPDX-License-Identifier: MIT */
// rmath.glsl - float functions with a known error.
//
// Vulkan lets exp, log, tanh, division and sqrt be several ulp off (exp is
// 3 + 2|x| ulp); rayo's contracts (core/rayo-ops.h) are tighter, so these
// are built from fma, exact range reductions and short polynomials whose
// truncation error is far below one ulp.  Special values (NaN, +-inf, 0)
// are handled first, so the fast paths never see them.
// Where a step must be exact, it is written with plain operations under
// `precise`: SPIR-V's NoContraction covers those, not the Fma instruction.

#ifndef RAYO_RMATH_GLSL
#define RAYO_RMATH_GLSL

#define R_INF uintBitsToFloat(0x7f800000u)
#define R_NAN uintBitsToFloat(0x7fc00000u)
const float R_LOG2E = 1.44269504088896341;
const float R_LN2_HI = 0.693145751953125;       // 12 bits: k * LN2_HI is exact
const float R_LN2_LO = 1.42860682030941723212e-6;

bool r_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }

// 2^e for e in [-126, 127], built from its bits (exact; some drivers
// implement ldexp through an approximate exp2).
float r_pow2(int e) { return uintBitsToFloat(uint(e + 127) << 23); }

// x * 2^e for e in [-252, 254]: two exact factors, so a denormal or an
// overflowing result is rounded once, where it lands.
float r_scale2(float x, int e)
{
    int h = e / 2;
    return x * r_pow2(h) * r_pow2(e - h);
}

// Dekker's exact product without fma (lavapipe's fma() is not fused):
// p + e == a * b exactly, for |a|, |b| well inside the float range.
void r_split(float a, out float hi, out float lo)
{
    precise float c = 4097.0 * a;
    precise float h = c - (c - a);
    hi = h;
    lo = a - h;
}

void r_two_prod(float a, float b, out float p, out float e)
{
    float ah, al, bh, bl;
    r_split(a, ah, al);
    r_split(b, bh, bl);
    precise float pp = a * b;
    precise float ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
    p = pp;
    e = ee;
}

// x = m * 2^e with |m| in [0.5, 1), read from the bits (GLSL's frexp is
// undefined for denormals); x finite and nonzero.
float r_frexp(float x, out int e)
{
    int sub = 0;
    if (abs(x) < 1.17549435e-38) { x *= 16777216.0; sub = 24; }   // exact
    uint u = floatBitsToUint(x);
    e = int((u >> 23) & 0xffu) - 126 - sub;
    return uintBitsToFloat((u & 0x807fffffu) | 0x3f000000u);
}

// a / b, correctly rounded but for double rounding of denormal results.
// The hardware quotient may be a * (1 / b) (lavapipe, NVIDIA: 1 / b
// overflows for denormal b, a * (1/b) for huge a), so the quotient of the
// mantissas (in (0.5, 2)) is corrected with an exact residual and scaled
// by the exponents' difference once.
float r_div(float a, float b)
{
    uint sign = (floatBitsToUint(a) ^ floatBitsToUint(b)) & 0x80000000u;
    if (r_isnan(a) || r_isnan(b) || (isinf(a) && isinf(b)) || (a == 0.0 && b == 0.0))
        return R_NAN;
    if (isinf(a) || b == 0.0)
        return uintBitsToFloat(sign | 0x7f800000u);
    if (isinf(b) || a == 0.0)
        return uintBitsToFloat(sign);
    int ea, eb;
    float ma = abs(r_frexp(a, ea)), mb = abs(r_frexp(b, eb));
    float q = ma / mb;
    float p, pe;
    r_two_prod(q, mb, p, pe);
    precise float r = (ma - p) - pe;        // ma - p is exact (Sterbenz)
    precise float qc = q + r / mb;
    int e = clamp(ea - eb, -252, 254);      // beyond: 0 or inf either way
    return uintBitsToFloat(floatBitsToUint(r_scale2(qc, e)) | sign);
}

// sqrt with one Newton correction on the residual x - y*y.
float r_sqrt(float x)
{
    if (!(x > 0.0) || isinf(x))
        return x == 0.0 ? x : (x > 0.0 ? x : R_NAN);
    float y = sqrt(x);
    precise float r = fma(-y, y, x);
    return fma(r, 0.5 / y, y);
}

// exp(x): x = k ln 2 + r, |r| <= ln2/2.
float r_exp(float x)
{
    if (r_isnan(x)) return x;
    if (x > 88.7228394) return R_INF;
    if (x < -103.972084) return 0.0;
    float k = roundEven(x * R_LOG2E);
    // Cody-Waite: k * LN2_HI and x - k * LN2_HI are exact.  Plain operations
    // under `precise` (NoContraction), not fma: compilers may merge
    // fma(-k, LO, fma(-k, HI, x)) into fma(-k, HI + LO, x), which rounds
    // ln 2 to float and costs k * 2^-25 of accuracy.
    precise float khi = k * R_LN2_HI;
    precise float klo = k * R_LN2_LO;
    precise float r = (x - khi) - klo;
    // exp(r) = 2^(r log2 e) by the device's exp2 (Vulkan: 3 + 2|x| ulp, so
    // 4 ulp on |r log2 e| <= 1/2; the hardware's fast exp2 on GPUs)
    return r_scale2(exp2(r * R_LOG2E), int(k));
}

// 1 / d for d in [1, 2^126]: the device's quotient (2.5 ulp in Vulkan)
// with one Newton step on its residual.
float r_rcp(float d)
{
    float q = 1.0 / d;
    precise float e = fma(-d, q, 1.0);
    return fma(q, e, q);
}

// a / b for b in [1, inf]: a * (1 / b); past 2^126 the quotient is below
// |a| 2^-126, which every caller may round to 0.
float r_div_big(float a, float b)
{
    return b > 8.5e37 ? a * 0.0 : a * r_rcp(b);
}

// exp(x) - 1 without cancellation near 0.
float r_expm1(float x)
{
    if (r_isnan(x)) return x;
    if (abs(x) < 0.5) {
        float p = 2.75573192239859e-6;          // 1/9!
        p = fma(p, x, 2.48015873015873e-5);
        p = fma(p, x, 1.98412698412698e-4);
        p = fma(p, x, 1.38888888888889e-3);
        p = fma(p, x, 8.33333333333333e-3);
        p = fma(p, x, 4.16666666666667e-2);
        p = fma(p, x, 1.66666666666667e-1);
        p = fma(p, x, 0.5);
        return fma(p * x, x, x);
    }
    if (x < -18.0) return -1.0;
    return r_exp(x) - 1.0;
}

// log(x): x = 2^e * m with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s)
// with s = (m - 1) / (m + 1), |s| <= 0.1716, series to s^11.
float r_log(float x)
{
    if (r_isnan(x) || x == R_INF) return x;
    if (x == 0.0) return -R_INF;
    if (x < 0.0) return R_NAN;
    int e;
    int sub = 0;
    if (x < 1.17549435e-38) { x *= 8388608.0; sub = 23; }  // denormal: exact
    float m = frexp(x, e);                 // m in [0.5, 1)
    e -= sub;
    if (m < 0.70710678) { m *= 2.0; e -= 1; }
    float f = m - 1.0;                      // exact (Sterbenz)
    float s = r_div(f, m + 1.0);
    float s2 = s * s;
    float p = 0.0909090909090909;           // 1/11
    p = fma(p, s2, 0.111111111111111);
    p = fma(p, s2, 0.142857142857143);
    p = fma(p, s2, 0.2);
    p = fma(p, s2, 0.333333333333333);
    // log(m) = 2s + 2s^3 p'  written as f - s*(f - 2 s^2 p ...) would be
    // more exact; 2s(1 + s2 p) keeps the error near 2 ulp, inside 2e-6.
    float lm = 2.0 * fma(s * s2, p, s);
    float fe = float(e);
    return fma(fe, R_LN2_HI, fma(fe, R_LN2_LO, lm));
}

// tanh through expm1: no cancellation near 0, exact +-1 in the tails.
float r_tanh(float x)
{
    if (r_isnan(x)) return x;
    float ax = abs(x);
    if (ax > 9.5) return sign(x);
    float t = r_expm1(2.0 * ax);
    float y = t * r_rcp(t + 2.0);
    return x < 0.0 ? -y : y;
}

float r_sigmoid(float x)
{
    if (r_isnan(x)) return x;
    return r_div_big(1.0, 1.0 + r_exp(-x));
}

// erfc(z) = t exp(p - z^2) for z >= 0, t = 1 / (1 + z / 2): p of a
// Chebyshev fit (fractional error < 1.2e-7), returned with t.
float r_erfc_poly(float z, out float t)
{
    t = r_rcp(fma(0.5, z, 1.0));
    float p = 0.17087277;
    p = fma(p, t, -0.82215223);
    p = fma(p, t, 1.48851587);
    p = fma(p, t, -1.13520398);
    p = fma(p, t, 0.27886807);
    p = fma(p, t, -0.18628806);
    p = fma(p, t, 0.09678418);
    p = fma(p, t, 0.37409196);
    p = fma(p, t, 1.00002368);
    return fma(p, t, -1.26551223);
}

// erfc(z) for z >= 0, the square -z*z split into hi + lo so that its
// rounding does not grow with z.  Past z = 10 erfc is below the smallest
// float.
float r_erfc_pos(float z)
{
    if (z > 10.0) return 0.0;
    float t;
    float p = r_erfc_poly(z, t);
    // z^2 = hi + lo: exact where fma is fused (GPUs); where it is not
    // (lavapipe) lo is 0 and exp(-z^2) keeps z^2's rounding, 3e-8 z^2
    // relative, which only matters past z = 4, where gelu is below its
    // 1e-7 absolute tolerance.  exp(-lo) = 1 - lo: |lo| <= 6e-6.
    precise float hi = z * z;
    float lo = fma(z, z, -hi);
    return t * r_exp(p - hi) * (1.0 - lo);
}

// Phi(x) = (1 + erf(x / sqrt 2)) / 2 = erfc(-x / sqrt 2) / 2, computed on
// the side where it does not cancel.
float r_phi(float x)
{
    float z = abs(x) * 0.70710678118654752;
    float h = 0.5 * r_erfc_pos(z);
    return x < 0.0 ? h : 1.0 - h;
}

float r_gelu(float x)
{
    if (r_isnan(x)) return x;
    return x * r_phi(x);
}

// x (1 + tanh u) / 2 = x sigmoid(2u): no cancellation for negative x.
float r_gelu_tanh(float x)
{
    if (r_isnan(x)) return x;
    float u = 0.7978845608028654 * fma(0.044715 * x, x * x, x);
    return r_div_big(x, 1.0 + r_exp(-2.0 * u));
}

float r_silu(float x)
{
    if (r_isnan(x)) return x;
    return r_div_big(x, 1.0 + r_exp(-x));
}

// mish = x tanh(softplus x); with u = e^x, tanh(log(1+u)) = u(u+2)/(u(u+2)+2).
float r_mish(float x)
{
    if (r_isnan(x)) return x;
    if (x > 20.0) return x;
    float u = r_exp(x);
    float nn = u * (u + 2.0);
    return x * r_div(nn, nn + 2.0);
}

// softplus = log(1 + e^x) = max(x, 0) + log1p(t), t = e^-|x|: no overflow.
// log1p(t) = log(u) t / (u - 1), u = 1 + t (u - 1 exact; precise keeps it
// from being folded to t), so t's accuracy survives where 1 + t rounds.
float r_softplus(float x)
{
    if (r_isnan(x)) return x;
    float t = r_exp(-abs(x));
    precise float u = 1.0 + t;
    precise float d = u - 1.0;
    float l = d == 0.0 ? t : r_log(u) * r_div(t, d);
    return max(x, 0.0) + l;
}

#endif
