// SPDX-License-Identifier: MIT
// rmath.wgsl - float functions with a known error (WGSL port of the Vulkan
// backend's shaders/rmath.glsl; the same algorithms and coefficients).
//
// WGSL lets exp, log and division be several ulp off (exp is 3 + 2|x| ulp)
// and may assume there are no NaNs, so NaN tests read the bits, and exp,
// log, division and sqrt are built from exact range reductions, fma and
// short polynomials.  Special values are handled first.

// inf and NaN: WGSL refuses them as constant values, so their bits are
// or-ed with p.zero (kernels.wgsl's parameters; always 0) at run time.
fn r_inf() -> f32 { return bitcast<f32>(0x7f800000u | p.zero); }
fn r_nan() -> f32 { return bitcast<f32>(0x7fc00000u | p.zero); }
fn r_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn r_isinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }

const R_LOG2E: f32 = 1.44269504088896341;
const R_LN2_HI: f32 = 0.693145751953125;
const R_LN2_LO: f32 = 1.42860682030941723212e-6;

// 2^e for e in [-126, 127], from its bits (exact).
fn r_pow2(e: i32) -> f32 { return bitcast<f32>(u32(e + 127) << 23u); }

// x * 2^e for e in [-252, 254]: two exact factors, one rounding.
fn r_scale2(x: f32, e: i32) -> f32 {
    let h = e / 2;
    return x * r_pow2(h) * r_pow2(e - h);
}

// x = m * 2^e, |m| in [0.5, 1), from the bits; x finite and nonzero.
struct RFrexp { m: f32, e: i32 }
fn r_frexp(x0: f32) -> RFrexp {
    var x = x0;
    var sub = 0;
    if (abs(x) < 1.17549435e-38) { x = x * 16777216.0; sub = 24; }
    let u = bitcast<u32>(x);
    return RFrexp(bitcast<f32>((u & 0x807fffffu) | 0x3f000000u), i32((u >> 23u) & 0xffu) - 126 - sub);
}

// a / b, correctly rounded but for double rounding of denormal results:
// the quotient of the mantissas, corrected with an exact fma residual,
// scaled by the exponents' difference once.
fn r_div(a: f32, b: f32) -> f32 {
    let sign = (bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u;
    if (r_isnan(a) || r_isnan(b) || (r_isinf(a) && r_isinf(b)) || (a == 0.0 && b == 0.0)) {
        return r_nan();
    }
    if (r_isinf(a) || b == 0.0) { return bitcast<f32>(sign | 0x7f800000u); }
    if (r_isinf(b) || a == 0.0) { return bitcast<f32>(sign); }
    let fa = r_frexp(a);
    let fb = r_frexp(b);
    let ma = abs(fa.m);
    let mb = abs(fb.m);
    let q = ma / mb;
    let r = fma(-q, mb, ma);
    let qc = fma(r, 1.0 / mb, q);
    let e = clamp(fa.e - fb.e, -252, 254);
    return bitcast<f32>(bitcast<u32>(r_scale2(qc, e)) | sign);
}

// sqrt with one Newton correction on the residual x - y*y.
fn r_sqrt(x: f32) -> f32 {
    if (!(x > 0.0) || r_isinf(x)) {
        if (x == 0.0 || x > 0.0) { return x; }
        return r_nan();
    }
    let y = sqrt(x);
    let r = fma(-y, y, x);
    return fma(r, 0.5 / y, y);
}

// exp(x): x = k ln 2 + r (Cody-Waite, exact), exp(r) by exp2.
fn r_exp(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    if (x > 88.7228394) { return r_inf(); }
    if (x < -103.972084) { return 0.0; }
    let k = round(x * R_LOG2E);
    let r = fma(-k, R_LN2_LO, fma(-k, R_LN2_HI, x));
    return r_scale2(exp2(r * R_LOG2E), i32(k));
}

// 1 / d for d in [1, 2^126], with one Newton step.
fn r_rcp(d: f32) -> f32 {
    let q = 1.0 / d;
    let e = fma(-d, q, 1.0);
    return fma(q, e, q);
}

// a / b for b in [1, inf].
fn r_div_big(a: f32, b: f32) -> f32 {
    if (b > 8.5e37) { return a * 0.0; }
    return a * r_rcp(b);
}

// exp(x) - 1 without cancellation near 0.
fn r_expm1(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    if (abs(x) < 0.5) {
        var p: f32 = 2.75573192239859e-6;
        p = fma(p, x, 2.48015873015873e-5);
        p = fma(p, x, 1.98412698412698e-4);
        p = fma(p, x, 1.38888888888889e-3);
        p = fma(p, x, 8.33333333333333e-3);
        p = fma(p, x, 4.16666666666667e-2);
        p = fma(p, x, 1.66666666666667e-1);
        p = fma(p, x, 0.5);
        return fma(p * x, x, x);
    }
    if (x < -18.0) { return -1.0; }
    return r_exp(x) - 1.0;
}

// log(x) = e ln 2 + 2 atanh(s), s = (m - 1) / (m + 1), m in [sqrt(1/2), sqrt(2)).
fn r_log(x0: f32) -> f32 {
    var x = x0;
    if (r_isnan(x) || x == r_inf()) { return x; }
    if (x == 0.0) { return -r_inf(); }
    if (x < 0.0) { return r_nan(); }
    let fr = r_frexp(x);
    var m = fr.m;
    var e = fr.e;
    if (m < 0.70710678) { m = m * 2.0; e = e - 1; }
    let f = m - 1.0;
    let s = r_div(f, m + 1.0);
    let s2 = s * s;
    var p: f32 = 0.0909090909090909;
    p = fma(p, s2, 0.111111111111111);
    p = fma(p, s2, 0.142857142857143);
    p = fma(p, s2, 0.2);
    p = fma(p, s2, 0.333333333333333);
    let lm = 2.0 * fma(s * s2, p, s);
    let fe = f32(e);
    return fma(fe, R_LN2_HI, fma(fe, R_LN2_LO, lm));
}

fn r_tanh(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    let ax = abs(x);
    if (ax > 9.5) { return sign(x); }
    let t = r_expm1(2.0 * ax);
    let y = t * r_rcp(t + 2.0);
    return select(y, -y, x < 0.0);
}

fn r_sigmoid(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    return r_div_big(1.0, 1.0 + r_exp(-x));
}

// x y - round(x y), exactly, for |x|, |y| < 2^100 (Dekker: the WGSL fma
// may be a multiply and an add, as on SwiftShader, so it cannot give it).
fn split_hi(x: f32) -> f32 {
    let c = 4097.0 * x;
    return c - (c - x);
}
fn prod_err(x: f32, y: f32, xy: f32) -> f32 {
    let xh = split_hi(x);
    let xl = x - xh;
    let yh = split_hi(y);
    let yl = y - yh;
    return ((xh * yh - xy) + xh * yl + xl * yh) + xl * yl;
}

// erfc(z) for z >= 0 (Chebyshev fit, fractional error < 1.2e-7), z*z
// split into hi + lo so its rounding does not grow with z.
fn r_erfc_pos(z: f32) -> f32 {
    if (z > 10.0) { return 0.0; }
    let t = r_rcp(fma(0.5, z, 1.0));
    let p = r_erfc_fit(t);
    let hi = z * z;
    let lo = prod_err(z, z, hi);
    return t * r_exp(p - hi) * (1.0 - lo);
}

// The fit's exponent beyond -z^2, at t = 1 / (1 + z / 2).
fn r_erfc_fit(t: f32) -> f32 {
    var p: f32 = 0.17087277;
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

fn r_phi(x: f32) -> f32 {
    let h = 0.5 * r_erfc_pos(abs(x) * 0.70710678118654752);
    return select(1.0 - h, h, x < 0.0);
}

fn r_gelu(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    return x * r_phi(x);
}

fn r_gelu_tanh(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    let u = 0.7978845608028654 * fma(0.044715 * x, x * x, x);
    return r_div_big(x, 1.0 + r_exp(-2.0 * u));
}

fn r_silu(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    return r_div_big(x, 1.0 + r_exp(-x));
}

// mish = x tanh(softplus x) = x u(u+2) / (u(u+2) + 2), u = e^x.
fn r_mish(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    if (x > 20.0) { return x; }
    let u = r_exp(x);
    let nn = u * (u + 2.0);
    return x * r_div(nn, nn + 2.0);
}

// softplus = log(1 + e^x) = max(x, 0) + log1p(t), t = e^-|x|: no overflow;
// log1p(t) = log(u) t / (u - 1), u = 1 + t (u - 1 exact), so t's accuracy
// survives where 1 + t rounds.
fn r_softplus(x: f32) -> f32 {
    if (r_isnan(x)) { return x; }
    let t = r_exp(-abs(x));
    let u = 1.0 + t;
    let d = u - 1.0;
    if (d == 0.0) { return max(x, 0.0) + t; }
    return max(x, 0.0) + r_log(u) * r_div(t, d);
}
