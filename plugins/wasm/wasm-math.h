/* SPDX-License-Identifier: MIT */
/* wasm-math.h - float math on WebAssembly SIMD128 vectors (4 lanes).
 *
 * exp, expm1, log, tanh, erfc and the activations built on them, accurate
 * to a few float ulps (the op contracts allow 2e-6 relative), with the NaN
 * and Inf behaviour of the C library: NaN in gives NaN out, overflow gives
 * inf, underflow gives 0 (through the subnormals).  The polynomial
 * coefficients come from fit-coefficients.py.
 *
 * Clamps use pmin/pmax (one instruction each) with the input first:
 * pmax(x, c) = x < c ? c : x and pmin(x, c) = c < x ? c : x keep x when it
 * is NaN, so NaN reaches the end of every function without a select.
 * WebAssembly SIMD has no FMA: every a * b + c below rounds twice.
 */
#ifndef RAYO_WASM_VMATH_H
#define RAYO_WASM_VMATH_H

#include <wasm_simd128.h>

typedef v128_t vf32; /* 4 floats */

static inline vf32 vsplat(float x) { return wasm_f32x4_splat(x); }
static inline vf32 vadd(vf32 a, vf32 b) { return wasm_f32x4_add(a, b); }
static inline vf32 vsub(vf32 a, vf32 b) { return wasm_f32x4_sub(a, b); }
static inline vf32 vmul(vf32 a, vf32 b) { return wasm_f32x4_mul(a, b); }
static inline vf32 vdiv(vf32 a, vf32 b) { return wasm_f32x4_div(a, b); }
/* mask ? a : b, lane by lane (mask lanes all ones or all zeros) */
static inline vf32 vselect(v128_t mask, vf32 a, vf32 b) { return wasm_v128_bitselect(a, b, mask); }
static inline vf32 vclamp(vf32 x, float lo, float hi)
{
    return wasm_f32x4_pmin(wasm_f32x4_pmax(x, vsplat(lo)), vsplat(hi));
}
static inline vf32 vabs(vf32 x) { return wasm_f32x4_abs(x); }

/* c[0] + x (c[1] + x (c[2] + ...)), Horner; n is a constant at every call,
 * so the loop unrolls. */
static inline vf32 vpoly(vf32 x, const float *c, int n)
{
    vf32 acc = vsplat(c[n - 1]);
    for (int k = n - 2; k >= 0; k--)
        acc = vadd(vmul(acc, x), vsplat(c[k]));
    return acc;
}

/* ---- exp and expm1 ----------------------------------------------------------
 * x = n ln2 + r with |r| <= ln2/2 (ln2 split in two: n * LN2_HI is exact for
 * |n| < 512), then e^r - 1 = r + r^2 P(r). */
#define VM_LOG2E 1.44269504088896341f
#define VM_EXP_LN2_HI 0.693145751953125f      /* 15 significant bits */
#define VM_EXP_LN2_LO 1.42860682030941723e-6f /* ln 2 - VM_EXP_LN2_HI */

static const float vm_exp_p[5] = {
    0.5f, 0.1666657702559799f, 0.041666554662050534f, 0.008363173074513711f,
    0.001392617611993558f,
};

/* e^r - 1 for the reduced argument r, relative error ~1e-8 + rounding */
static inline vf32 vm_expm1_reduced(vf32 r)
{
    vf32 p = vpoly(r, vm_exp_p, 5);
    return vadd(r, vmul(vmul(r, r), p));
}

/* 2^n for integer lanes n in [-126, 127] (built in the exponent field) */
static inline vf32 vm_pow2i(v128_t n)
{
    return wasm_i32x4_shl(wasm_i32x4_add(n, wasm_i32x4_splat(127)), 23);
}

/* n = round(x / ln2) as float and the reduced r = x - n ln2 */
static inline vf32 vm_reduce(vf32 x, vf32 *r)
{
    vf32 n = wasm_f32x4_nearest(vmul(x, vsplat(VM_LOG2E)));
    *r = vsub(vsub(x, vmul(n, vsplat(VM_EXP_LN2_HI))), vmul(n, vsplat(VM_EXP_LN2_LO)));
    return n;
}

/* e^x.  x is clamped to [-104, 89], past which the result is 0 or inf
 * anyway; 2^n is applied as two factors so that n from -150 to 128 reaches
 * the subnormals and overflows to inf in the last multiply, as expf does. */
static inline vf32 vexp(vf32 x)
{
    vf32 r;
    vf32 n = vm_reduce(vclamp(x, -104.0f, 89.0f), &r);
    v128_t ni = wasm_i32x4_trunc_sat_f32x4(n); /* NaN -> 0; r carries the NaN */
    v128_t n1 = wasm_i32x4_shr(ni, 1);
    v128_t n2 = wasm_i32x4_sub(ni, n1);
    vf32 m = vadd(vsplat(1.0f), vm_expm1_reduced(r));
    return vmul(vmul(m, vm_pow2i(n1)), vm_pow2i(n2));
}

/* e^x - 1, with full relative precision near 0: (2^n - 1) + 2^n (e^r - 1),
 * which is e^r - 1 itself for |x| <= ln2/2.  For x < -88 the result is -1
 * in float; for x > 88 the argument is clamped (callers need x <= 18.2). */
static inline vf32 vexpm1(vf32 x)
{
    vf32 r;
    vf32 n = vm_reduce(vclamp(x, -88.0f, 88.0f), &r);
    vf32 s = vm_pow2i(wasm_i32x4_trunc_sat_f32x4(n)); /* n = -127 gives 0: fine, -1 */
    return vadd(vsub(s, vsplat(1.0f)), vmul(s, vm_expm1_reduced(r)));
}

/* ---- log ----------------------------------------------------------------------
 * x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), and
 * log(1 + f) = f - f^2/2 + f^3 Q(f); then e ln2 is added in two parts. */
#define VM_LOG_LN2_HI 0.693359375f            /* 9 significant bits */
#define VM_LOG_LN2_LO -2.12194440054690583e-4f /* ln 2 - VM_LOG_LN2_HI */

static const float vm_log_q[8] = {
    0.33333330728190674f, -0.25000306422569796f, 0.2000104509416068f,
    -0.16641281463106394f, 0.14214495923947962f, -0.1299818376365153f,
    0.12622319849228378f, -0.0790274377239344f,
};

static inline vf32 vlog(vf32 x)
{
    /* subnormals: scale into the normal range first */
    v128_t tiny = wasm_f32x4_lt(x, vsplat(1.17549435e-38f));
    vf32 xs = vselect(tiny, vmul(x, vsplat(8388608.0f)), x);
    v128_t e = wasm_i32x4_sub(wasm_u32x4_shr(xs, 23), wasm_i32x4_splat(127));
    e = wasm_i32x4_sub(e, wasm_v128_and(tiny, wasm_i32x4_splat(23)));
    vf32 m = wasm_v128_or(wasm_v128_and(xs, wasm_i32x4_splat(0x007fffff)),
                          wasm_i32x4_splat(0x3f800000)); /* [1, 2) */
    v128_t big = wasm_f32x4_gt(m, vsplat(1.41421356f));
    m = vselect(big, vmul(m, vsplat(0.5f)), m);
    e = wasm_i32x4_sub(e, big); /* big lanes are -1: e + 1 */
    vf32 f = vsub(m, vsplat(1.0f));
    vf32 f2 = vmul(f, f);
    vf32 q = vpoly(f, vm_log_q, 8);
    vf32 log1p = vadd(vsub(f, vmul(vsplat(0.5f), f2)), vmul(vmul(f2, f), q));
    vf32 ef = wasm_f32x4_convert_i32x4(e);
    vf32 y = vadd(vmul(ef, vsplat(VM_LOG_LN2_HI)), vadd(log1p, vmul(ef, vsplat(VM_LOG_LN2_LO))));
    /* the C library's special cases */
    y = vselect(wasm_f32x4_eq(x, vsplat(0.0f)), vsplat(-__builtin_inff()), y);
    y = vselect(wasm_f32x4_lt(x, vsplat(0.0f)), vsplat(__builtin_nanf("")), y);
    y = vselect(wasm_f32x4_eq(x, vsplat(__builtin_inff())), x, y);
    return vselect(wasm_f32x4_ne(x, x), x, y);
}

/* ---- tanh, sigmoid ---------------------------------------------------------------
 * tanh |x| = e / (e + 2) with e = e^(2|x|) - 1: no cancellation near 0, and
 * past |x| = 9.1 the float result is 1 (the clamp keeps e finite). */
static inline vf32 vtanh(vf32 x)
{
    vf32 ax = wasm_f32x4_pmin(vabs(x), vsplat(9.1f));
    vf32 e = vexpm1(vadd(ax, ax));
    vf32 t = vdiv(e, vadd(e, vsplat(2.0f)));
    return wasm_v128_or(t, wasm_v128_and(x, wasm_i32x4_splat((int32_t)0x80000000)));
}

/* 1 / (1 + e^-x), from e = e^-|x| <= 1: no overflow on either side. */
static inline vf32 vsigmoid(vf32 x)
{
    vf32 e = vexp(wasm_f32x4_neg(vabs(x)));
    vf32 s = vdiv(vsplat(1.0f), vadd(vsplat(1.0f), e));
    return vselect(wasm_f32x4_ge(x, vsplat(0.0f)), s, vmul(e, s));
}

/* ---- erfc and gelu ---------------------------------------------------------------
 * For z >= 0: erfc(z) = t e^(-z^2) G(t), t = 1 / (1 + z/2) in (0, 1].
 * G is smooth on all of (0, 1] (it tends to 1/(2 sqrt(pi)) as z -> inf). */
static const float vm_erfc_g[11] = {
    0.282094799651273f,  0.2820928673346307f,  0.24691356121779123f, 0.17494859631541002f,
    0.0958271993931922f, -0.06795827531374868f, 0.1518851796289982f,  -0.4824747605145184f,
    0.5168995401022985f, -0.245580036275335f,   0.0453513366235701f,
};

static inline vf32 verfc_nonneg(vf32 z)
{
    vf32 t = vdiv(vsplat(1.0f), vadd(vsplat(1.0f), vmul(vsplat(0.5f), z)));
    vf32 g = vpoly(t, vm_erfc_g, 11);
    return vmul(vmul(t, vexp(wasm_f32x4_neg(vmul(z, z)))), g);
}

/* x Phi(x): x (1 - erfc(z)/2) for x >= 0 and x erfc(z)/2 for x < 0, with
 * z = |x| / sqrt 2: the left tail keeps its relative precision. */
static inline vf32 vgelu(vf32 x)
{
    vf32 c = vmul(vsplat(0.5f), verfc_nonneg(vmul(vabs(x), vsplat(0.70710678118654752f))));
    vf32 phi = vselect(wasm_f32x4_ge(x, vsplat(0.0f)), vsub(vsplat(1.0f), c), c);
    return vmul(x, phi);
}

/* x (1 + tanh u) / 2 = x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3) */
static inline vf32 vgelu_tanh(vf32 x)
{
    vf32 x3 = vmul(vmul(x, x), x);
    vf32 u = vmul(vsplat(0.79788456080286536f), vadd(x, vmul(vsplat(0.044715f), x3)));
    return vdiv(x, vadd(vsplat(1.0f), vexp(vmul(vsplat(-2.0f), u))));
}

/* x sigmoid(x) as x / (1 + e^-x) (x -> -inf gives -0, -inf gives NaN as in libm) */
static inline vf32 vsilu(vf32 x)
{
    return vdiv(x, vadd(vsplat(1.0f), vexp(wasm_f32x4_neg(x))));
}

/* x tanh(log(1 + e^x)) = x n / (n + 2) with n = e^x (e^x + 2); x >= 20 gives x */
static inline vf32 vmish(vf32 x)
{
    vf32 e = vexp(wasm_f32x4_pmin(x, vsplat(20.0f)));
    vf32 n = vmul(e, vadd(e, vsplat(2.0f)));
    vf32 y = vmul(x, vdiv(n, vadd(n, vsplat(2.0f))));
    return vselect(wasm_f32x4_ge(x, vsplat(20.0f)), x, y);
}

/* max(x, 0) + log1p(e^-|x|), log1p(t) = log(u) t / (u - 1), u = 1 + t (the
 * scalar backend's softplus1); wasm's f32x4.max keeps a NaN x. */
static inline vf32 vsoftplus(vf32 x)
{
    vf32 t = vexp(wasm_f32x4_neg(vabs(x)));
    vf32 u = vadd(vsplat(1.0f), t);
    vf32 l = vmul(vlog(u), vdiv(t, vsub(u, vsplat(1.0f))));
    l = vselect(wasm_f32x4_eq(u, vsplat(1.0f)), t, l);
    return vadd(wasm_f32x4_max(x, vsplat(0.0f)), l);
}

#endif
