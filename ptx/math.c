/* SPDX-License-Identifier: MIT */
/* math.c - accurate float32 math as PTX sequences (exp, expm1, log, erfc)
 * and the activations built on them (sigmoid, silu, tanh, gelu, gelu_tanh,
 * mish, relu, elu/selu): the hardware's ex2.approx and rcp.approx with the
 * argument reduction and corrections that keep the contracts.  Each takes
 * and returns .f32 virtual registers.
 * Written out with explicit rounding (.rn) so ptxas cannot contract it
 * differently; accuracy within the op list's contracts. */
#include "gen-ptx.h"

/* ---- accurate math (within the op list's 2e-6 relative contracts) ------- */
#define LN2_HI_F 0.693145751953125f       /* 0x3f317200: few bits, n*LN2_HI exact */
#define LN2_LO_F 1.42860676533018e-06f    /* ln 2 - LN2_HI */

/* exp(x): x = n ln2 + r, |r| <= ln2/2, with r log2(e) = x log2(e) - n
 * computed by two fmas (log2(e) in two parts, so no rounding of
 * x log2(e) near |x| ~ 88 reaches the result); 2^(r log2 e) by the
 * hardware's ex2.approx (about 2 ulp on this small argument); 2^n applied
 * as two exact power-of-two factors so results that underflow to
 * subnormals round once.  ~3 ulp, 18 instructions. */
#define LOG2E_HI_F 1.44269502162933349609f  /* float(log2 e) */
#define LOG2E_LO_F 1.92596299112661746e-08f /* log2 e - LOG2E_HI_F */
int m_exp(kern *k, int x)
{
    int xc = nf(k), t = nf(k), n = nf(k), nn = nf(k), u1 = nf(k), u = nf(k), p = nf(k);
    emit(k, "max.f32 %s, %s, %s;", F(xc), F(x), C(-104.0f));
    emit(k, "min.f32 %s, %s, %s;", F(xc), F(xc), C(89.0f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(xc), C(LOG2E_HI_F));
    emit(k, "cvt.rni.f32.f32 %s, %s;", F(n), F(t));
    emit(k, "neg.f32 %s, %s;", F(nn), F(n));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u1), F(xc), C(LOG2E_HI_F), F(nn));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u), F(xc), C(LOG2E_LO_F), F(u1));
    emit(k, "ex2.approx.f32 %s, %s;", F(p), F(u));
    int ni = nr(k), n1 = nr(k), n2 = nr(k), b1 = nr(k), b2 = nr(k);
    int s1 = nf(k), s2 = nf(k), y1 = nf(k), y2 = nf(k), y = nf(k);
    emit(k, "cvt.rzi.s32.f32 %s, %s;", R(ni), F(n));
    emit(k, "shr.s32 %s, %s, 1;", R(n1), R(ni));
    emit(k, "sub.s32 %s, %s, %s;", R(n2), R(ni), R(n1));
    emit(k, "add.s32 %s, %s, 127;", R(b1), R(n1));
    emit(k, "shl.b32 %s, %s, 23;", R(b1), R(b1));
    emit(k, "add.s32 %s, %s, 127;", R(b2), R(n2));
    emit(k, "shl.b32 %s, %s, 23;", R(b2), R(b2));
    emit(k, "mov.b32 %s, %s;", F(s1), R(b1));
    emit(k, "mov.b32 %s, %s;", F(s2), R(b2));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y1), F(p), F(s1));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y2), F(y1), F(s2));
    int pn = is_nan(k, x);
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(x), F(y2), P(pn));
    return y;
}

/* exp(x) for the activations and softmax, whose contracts carry an absolute
 * term: x clamped to [-86, 88] (2^n stays a normal float, so it is added to
 * the exponent bits: 11 instructions).  Below -86 it gives exp(-86) ~ 4e-38
 * instead of a smaller number, above 88 exp(88) ~ 1.7e38 instead of more;
 * every caller divides by 1 + that or multiplies by <= 1, so the error is
 * below 1e-37 absolute.  NaN propagates (max.NaN, and ex2 of NaN). */
int m_exp_act(kern *k, int x)
{
    int xc = nf(k), t = nf(k), n = nf(k), nn = nf(k), u1 = nf(k), u = nf(k), p = nf(k);
    emit(k, "max.NaN.f32 %s, %s, %s;", F(xc), F(x), C(-86.0f));
    emit(k, "min.NaN.f32 %s, %s, %s;", F(xc), F(xc), C(88.0f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(xc), C(LOG2E_HI_F));
    emit(k, "cvt.rni.f32.f32 %s, %s;", F(n), F(t));
    emit(k, "neg.f32 %s, %s;", F(nn), F(n));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u1), F(xc), C(LOG2E_HI_F), F(nn));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(u), F(xc), C(LOG2E_LO_F), F(u1));
    emit(k, "ex2.approx.f32 %s, %s;", F(p), F(u));
    int ni = nr(k), sh = nr(k), pb = nr(k), yb = nr(k), y = nf(k);
    emit(k, "cvt.rzi.s32.f32 %s, %s;", R(ni), F(n));
    emit(k, "shl.b32 %s, %s, 23;", R(sh), R(ni));
    emit(k, "mov.b32 %s, %s;", R(pb), F(p));
    emit(k, "add.s32 %s, %s, %s;", R(yb), R(pb), R(sh));
    emit(k, "mov.b32 %s, %s;", F(y), R(yb));
    return y;
}

/* num / den as num * rcp.approx(den): 1 ulp for the reciprocal and 0.5 for
 * the product, far inside the activations' 2e-6 contracts; den = inf gives
 * 0 (the limit every caller wants) and den past 2^126 a flushed 0. */
int m_div_fast(kern *k, int num, int den)
{
    int r = nf(k), y = nf(k);
    emit(k, "rcp.approx.ftz.f32 %s, %s;", F(r), F(den));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y), F(num), F(r));
    return y;
}

/* expm1(x): Taylor series for |x| < 0.5 (no cancellation), exp(x) - 1 beyond
 * (the clamped exp: its callers, tanh, elu and selu, reach only -1 below
 * -86 and select another branch far above 88). */
static int m_expm1(kern *k, int x)
{
    static const float c[8] = {1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720,
                               1.0f / 5040, 1.0f / 40320, 1.0f / 362880};
    int q = horner(k, x, c, 8);
    int x2 = nf(k), small = nf(k), big = nf(k), ax = nf(k), y = nf(k), ps = np(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(x2), F(x), F(x));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(small), F(q), F(x2), F(x));
    int e = m_exp_act(k, x);
    emit(k, "sub.rn.f32 %s, %s, %s;", F(big), F(e), C(1.0f));
    emit(k, "abs.f32 %s, %s;", F(ax), F(x));
    emit(k, "setp.lt.f32 %s, %s, %s;", P(ps), F(ax), C(0.5f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(small), F(big), P(ps));
    return y;
}

/* log(x): x = 2^e m, m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m-1)/(m+1),
 * by its odd series; subnormals scaled first; IEEE special cases at the end. */
int m_log(kern *k, int x)
{
    int psub = np(k), xs1 = nf(k), xs = nf(k), eadj = nr(k);
    emit(k, "setp.lt.f32 %s, %s, %s;", P(psub), F(x), CB(0x00800000u));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(xs1), F(x), C(8388608.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(xs), F(xs1), F(x), P(psub));
    emit(k, "selp.s32 %s, -23, 0, %s;", R(eadj), P(psub));
    int bits = nr(k), t = nr(k), e = nr(k), es = nr(k), mb = nr(k);
    emit(k, "mov.b32 %s, %s;", R(bits), F(xs));
    emit(k, "sub.s32 %s, %s, 1060439283;", R(t), R(bits)); /* 0x3f3504f3 = sqrt(1/2) */
    emit(k, "shr.s32 %s, %s, 23;", R(e), R(t));
    emit(k, "shl.b32 %s, %s, 23;", R(es), R(e));
    emit(k, "sub.s32 %s, %s, %s;", R(mb), R(bits), R(es));
    int m = nf(k), f = nf(k), den = nf(k), s = nf(k), z = nf(k);
    emit(k, "mov.b32 %s, %s;", F(m), R(mb));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(f), F(m), C(1.0f));
    emit(k, "add.rn.f32 %s, %s, %s;", F(den), F(f), C(2.0f));
    emit(k, "div.rn.f32 %s, %s, %s;", F(s), F(f), F(den));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(z), F(s), F(s));
    static const float series[5] = {1.0f / 3, 1.0f / 5, 1.0f / 7, 1.0f / 9, 1.0f / 11};
    int q = horner(k, z, series, 5);
    int s2 = nf(k), zq = nf(k), lm = nf(k), ei = nr(k), ef = nf(k), lo = nf(k), y0 = nf(k);
    emit(k, "add.rn.f32 %s, %s, %s;", F(s2), F(s), F(s));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(zq), F(z), F(q));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(lm), F(s2), F(zq), F(s2));
    emit(k, "add.s32 %s, %s, %s;", R(ei), R(e), R(eadj));
    emit(k, "cvt.rn.f32.s32 %s, %s;", F(ef), R(ei));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(lo), F(ef), C(LN2_LO_F), F(lm));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(y0), F(ef), C(LN2_HI_F), F(lo));
    int pz = np(k), pneg = np(k), pinf = np(k), y1 = nf(k), y2 = nf(k), y3 = nf(k), y = nf(k);
    emit(k, "setp.eq.f32 %s, %s, %s;", P(pz), F(x), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y1), CB(0xff800000u), F(y0), P(pz));
    emit(k, "setp.lt.f32 %s, %s, %s;", P(pneg), F(x), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y2), CB(0x7fffffffu), F(y1), P(pneg));
    emit(k, "setp.eq.f32 %s, %s, %s;", P(pinf), F(x), CB(0x7f800000u));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y3), CB(0x7f800000u), F(y2), P(pinf));
    int pn = is_nan(k, x);
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(x), F(y3), P(pn));
    return y;
}

/* erfc(t) = tau exp(-t^2 + Q(tau)) for t >= 0, tau = 2/(2+t); Q fitted by
 * ptx/fit-erfc.py (relative error ~1e-7 where it matters).  Returns Q(tau)
 * and sets *tau_out. */
int m_erfc_poly(kern *k, int t, int *tau_out)
{
    static const uint32_t q[10] = {0xBFA1FA33u, 0x3F7FA666u, 0x3EC5F5BBu, 0x3D0DBBAAu,
                                   0x3AA62531u, 0xBDA46A12u, 0xBF323D90u, 0x3F940FDAu,
                                   0xBF2E4AB1u, 0x3E146896u};
    float qf[10];
    for (int i = 0; i < 10; i++)
        memcpy(&qf[i], &q[i], sizeof qf[i]);
    int den = nf(k), tau = nf(k);
    /* tau = 2/(2 + t): rcp.approx and one Newton step (Q amplifies an
     * error of tau; t = inf gives NaN here, replaced by 0 by the callers) */
    int r0 = nf(k), nden = nf(k), e0 = nf(k), r1 = nf(k);
    emit(k, "add.rn.f32 %s, %s, %s;", F(den), F(t), C(2.0f));
    emit(k, "rcp.approx.ftz.f32 %s, %s;", F(r0), F(den));
    emit(k, "neg.f32 %s, %s;", F(nden), F(den));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(e0), F(nden), F(r0), C(1.0f)); /* 1 - den r0 */
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(r1), F(e0), F(r0), F(r0));
    emit(k, "add.rn.f32 %s, %s, %s;", F(tau), F(r1), F(r1));
    *tau_out = tau;
    return horner(k, tau, qf, 10);
}

/* erfc(t) for t >= 0; 0 beyond t = 10. */
static int m_erfc_pos(kern *k, int t)
{
    int tau, poly = m_erfc_poly(k, t, &tau);
    int t2 = nf(k), arg = nf(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t2), F(t), F(t));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(arg), F(poly), F(t2));
    int e = m_exp_act(k, arg);
    int y0 = nf(k), y = nf(k), pbig = np(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y0), F(tau), F(e));
    emit(k, "setp.gt.f32 %s, %s, %s;", P(pbig), F(t), C(10.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), C(0.0f), F(y0), P(pbig));
    return y;
}

/* ---- activations and elementwise functions ------------------------------ */
/* x / (1 + exp(-s x)) shared by sigmoid (x = 1), silu and gelu_tanh; where
 * the clamped exp gives exp(88), past 2^126, the flushing reciprocal gives
 * 0, so x / (1 + e) is 0 for any x (silu(-3e38) included) */
static int m_x_over_1_plus_exp_neg(kern *k, int num, int arg)
{
    int na = nf(k), d = nf(k);
    emit(k, "neg.f32 %s, %s;", F(na), F(arg));
    int e = m_exp_act(k, na);
    emit(k, "add.rn.f32 %s, %s, %s;", F(d), F(e), C(1.0f));
    return m_div_fast(k, num, d);
}

int m_sigmoid(kern *k, int x)
{
    return m_x_over_1_plus_exp_neg(k, fmov(k, 1.0f), x);
}

int m_silu(kern *k, int x)
{
    return m_x_over_1_plus_exp_neg(k, x, x);
}

/* tanh(x) = sign(x) e/(e+2), e = expm1(2|x|): no cancellation anywhere. */
int m_tanh(kern *k, int x)
{
    int ax = nf(k), ax2 = nf(k), d = nf(k), t1 = nf(k), y = nf(k), pbig = np(k);
    emit(k, "abs.f32 %s, %s;", F(ax), F(x));
    emit(k, "add.rn.f32 %s, %s, %s;", F(ax2), F(ax), F(ax));
    int e = m_expm1(k, ax2);
    emit(k, "add.rn.f32 %s, %s, %s;", F(d), F(e), C(2.0f));
    int t = m_div_fast(k, e, d);
    emit(k, "setp.gt.f32 %s, %s, %s;", P(pbig), F(ax), C(9.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(t1), C(1.0f), F(t), P(pbig));
    emit(k, "copysign.f32 %s, %s, %s;", F(y), F(x), F(t1));
    return y;
}

/* gelu(x) = x (1 + erf(x/sqrt2))/2 written with erfc so that neither tail cancels. */
int m_gelu(kern *k, int x)
{
    int ax = nf(k), t = nf(k), hx = nf(k), he = nf(k), pos = nf(k), y = nf(k), pp = np(k);
    emit(k, "abs.f32 %s, %s;", F(ax), F(x));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(ax), C(0.707106781186547524f));
    int e = m_erfc_pos(k, t);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(hx), F(x), C(0.5f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(he), F(hx), F(e));
    /* x >= 0: x - x erfc/2; where erfc is 0 that is x itself (also for +inf,
     * where x * 0 would be NaN) */
    int hp = nf(k), pz = np(k);
    emit(k, "setp.eq.f32 %s, %s, %s;", P(pz), F(e), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(hp), C(0.0f), F(he), P(pz));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(pos), F(x), F(hp));
    emit(k, "setp.ge.f32 %s, %s, %s;", P(pp), F(x), C(0.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(pos), F(he), P(pp));
    return y;
}

/* gelu_tanh(x) = x (1 + tanh u)/2 = x / (1 + exp(-2u)) */
int m_gelu_tanh(kern *k, int x)
{
    int x3 = nf(k), x2 = nf(k), in = nf(k), u2 = nf(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(x2), F(x), F(x));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(x3), F(x2), F(x));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(in), F(x3), C(0.044715f), F(x));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(u2), F(in), C(1.595769121605730711f)); /* 2 sqrt(2/pi) */
    return m_x_over_1_plus_exp_neg(k, x, u2);
}

/* mish(x) = x tanh(log1p(e^x)) = x n/(n+2), n = e^x (e^x + 2) */
int m_mish(kern *k, int x)
{
    int e = m_exp(k, x);
    int ep2 = nf(k), n = nf(k), d = nf(k), q = nf(k), y0 = nf(k), y = nf(k), pbig = np(k);
    emit(k, "add.rn.f32 %s, %s, %s;", F(ep2), F(e), C(2.0f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(n), F(e), F(ep2));
    emit(k, "add.rn.f32 %s, %s, %s;", F(d), F(n), C(2.0f));
    int qf = m_div_fast(k, n, d);
    emit(k, "mov.f32 %s, %s;", F(q), F(qf));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y0), F(x), F(q));
    emit(k, "setp.gt.f32 %s, %s, %s;", P(pbig), F(x), C(20.0f));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(x), F(y0), P(pbig));
    return y;
}

int m_relu(kern *k, int x)
{
    int y = nf(k);
    emit(k, "max.NaN.f32 %s, %s, %s;", F(y), F(x), C(0.0f));
    return y;
}

/* x > 0 ? x : scale_neg * expm1(x) ; scaled by scale_all (selu) */
int m_elu_like(kern *k, int x, int scale_neg, double scale_all)
{
    int e = m_expm1(k, x);
    int neg = nf(k), y = nf(k), pp = np(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(neg), F(e), F(scale_neg));
    if (scale_all != 1.0) {
        /* x + (scale_all - 1) x in one rounding: x * scale_all would round
         * scale_all to float first and overflow for x just below
         * FLT_MAX / scale_all where the exact product is still finite */
        int pos = nf(k);
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(pos), F(x), C((float)(scale_all - 1.0)), F(x));
        emit(k, "setp.gt.f32 %s, %s, %s;", P(pp), F(x), C(0.0f));
        emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(pos), F(neg), P(pp));
    } else {
        emit(k, "setp.gt.f32 %s, %s, %s;", P(pp), F(x), C(0.0f));
        emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(x), F(neg), P(pp));
    }
    return y;
}
