/* SPDX-License-Identifier: MIT */
/* infer-ops.c - the bandwidth kernels of module "infer": the gated units
 * (glu_swiglu, glu_geglu, glu_geglu_tanh), rope (rope_norm, rope_neox; rope2_*: two in one launch),
 * the f32 <-> f16 / bf16 conversions (cvt_*), quantization to Q8_0 / Q4_0
 * (quant_*) and get_rows / dequantization (rows_*).
 *
 * Rows are walked with a 2-D grid: y over rows (a grid-stride loop past
 * 65535), x over the columns of a row; strides are in elements. */
#include "gen-ptx.h"
#include "../core/rayo-dtype.h"

#define THREADS 256

/* Loop over rows r (ctaid.y, stride nctaid.y) and columns j (ctaid.x * 256 +
 * tid, stride nctaid.x * 256) of an m x n matrix; body(k, r, j, ctx) emits
 * one element's work (r, j .b64). */
typedef void (*elem_fn)(kern *k, int r, int j, const void *ctx);

static void rows_cols(kern *k, int m, int n, elem_fn body, const void *ctx)
{
    int cy = sreg(k, "%ctaid.y"), ny = sreg(k, "%nctaid.y"), cx = sreg(k, "%ctaid.x"), nx = sreg(k, "%nctaid.x");
    int tid = sreg(k, "%tid.x");
    int r = nd(k), rstep = nd(k), j0 = nd(k), jstep = nd(k), t64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(r), R(cy));
    emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(ny));
    emit(k, "mul.wide.u32 %s, %s, %d;", D(j0), R(cx), THREADS);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tid));
    emit(k, "add.u64 %s, %s, %s;", D(j0), D(j0), D(t64));
    emit(k, "mul.wide.u32 %s, %s, %d;", D(jstep), R(nx), THREADS);
    int pr = np(k), pj = np(k), l_row = nlabel(k), l_col = nlabel(k), l_next = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(r), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_row);
    int j = nd(k);
    emit(k, "mov.u64 %s, %s;", D(j), D(j0));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_next));
    label(k, l_col);
    body(k, r, j, ctx);
    emit(k, "add.u64 %s, %s, %s;", D(j), D(j), D(jstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_col));
    label(k, l_next);
    emit(k, "add.u64 %s, %s, %s;", D(r), D(r), D(rstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(r), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_row));
    label(k, l_end);
}

/* address of element (r, j) of a matrix at base with row stride ld (elements of `size` bytes) */
static int elem_addr(kern *k, int base, int r, int ld, int j, int size)
{
    int idx = nd(k), a = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r), D(ld), D(j));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(a), D(idx), size, D(base));
    return a;
}

/* ---- gated units: y = f(gate) * up -------------------------------------------- */
/* With up near 1e30, f(gate) down to 1e-37 (gates of -9 to -88) still makes
 * a y above the tolerance, so below GLU_TAIL f keeps its relative
 * precision: f = g e / (1 + e) (silu, gelu_tanh) or g tau e / 2 (gelu:
 * erfc = tau e), e = exp(w) = p 2^n with w in f64 (its f32 rounding would
 * cost |w| ulp of e), and 2^n applied last, to the product with up: neither
 * e nor f passes through a subnormal (flushed) or 0 on the way. */
#define GLU_TAIL (-2.0f)
enum glu_kind { GLU_SILU, GLU_GELU, GLU_GELU_TANH };

typedef struct glu_ctx {
    int y, a, b, lda, ldb, ldy;
    enum glu_kind kind;
} glu_ctx;

/* 2^e as an f32 from its bits, e (.s32 register) in [-126, 127]. */
static int pow2_of(kern *k, int e)
{
    int b = nr(k), f = nf(k);
    emit(k, "add.s32 %s, %s, 127;", R(b), R(e));
    emit(k, "shl.b32 %s, %s, 23;", R(b), R(b));
    emit(k, "mov.b32 %s, %s;", F(f), R(b));
    return f;
}

/* exp(w) = p 2^n for w (.f64) < 0, clamped at -200 (every caller then
 * rounds to 0): returns p (f32, in [0.7, 1.42]), *n_out the .s32 n. */
static int exp_split(kern *k, int w, int *n_out)
{
    int wc = nfd(k), t = nfd(k), n = nfd(k), r = nfd(k), rl = nfd(k), rf = nf(k), p = nf(k), ni = nr(k);
    emit(k, "max.f64 %s, %s, %s;", FD(wc), FD(w), CD(-200.0));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(t), FD(wc), CD(1.4426950408889634));
    emit(k, "cvt.rni.f64.f64 %s, %s;", FD(n), FD(t));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(r), FD(n), CD(-0.6931471805599453), FD(wc));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(rl), FD(r), CD(1.4426950408889634));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(rf), FD(rl));
    emit(k, "ex2.approx.f32 %s, %s;", F(p), F(rf));
    emit(k, "cvt.rzi.s32.f64 %s, %s;", R(ni), FD(n));
    *n_out = ni;
    return p;
}

/* The factor c (|c| < 256) of y = c u 2^n, for gate g < GLU_TAIL. */
static int glu_tail_factor(kern *k, enum glu_kind kind, int g, int *n)
{
    int x = nfd(k), w = nfd(k), c = nf(k);
    emit(k, "cvt.f64.f32 %s, %s;", FD(x), F(g));
    if (kind == GLU_GELU) {
        int a = nf(k), t = nf(k), tau, poly, pd = nfd(k), x2 = nfd(k), p;
        emit(k, "abs.f32 %s, %s;", F(a), F(g));
        emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(a), C(0.707106781186547524f));
        poly = m_erfc_poly(k, t, &tau);
        emit(k, "cvt.f64.f32 %s, %s;", FD(pd), F(poly));
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(x2), FD(x), FD(x));
        emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(w), FD(x2), CD(-0.5), FD(pd)); /* Q - g^2 / 2 */
        p = exp_split(k, w, n);
        emit(k, "mul.rn.f32 %s, %s, %s;", F(c), F(g), F(tau));
        emit(k, "mul.rn.f32 %s, %s, %s;", F(c), F(c), F(p));
        emit(k, "mul.rn.f32 %s, %s, %s;", F(c), F(c), C(0.5f));
        return c;
    }
    if (kind == GLU_SILU) {
        emit(k, "mov.f64 %s, %s;", FD(w), FD(x));
    } else { /* 2 sqrt(2/pi) (g + 0.044715 g^3) */
        int x3 = nfd(k), in = nfd(k);
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(x3), FD(x), FD(x));
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(x3), FD(x3), FD(x));
        emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(in), FD(x3), CD(0.044715), FD(x));
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(w), FD(in), CD(1.5957691216057308));
    }
    int p = exp_split(k, w, n), nc = nr(k), e = nf(k), d = nf(k), gp = nf(k);
    emit(k, "max.s32 %s, %s, -126;", R(nc), R(*n)); /* below, e only rounds 1 + e to 1 */
    emit(k, "mul.rn.f32 %s, %s, %s;", F(e), F(p), F(pow2_of(k, nc)));
    emit(k, "add.rn.f32 %s, %s, %s;", F(d), F(e), C(1.0f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(gp), F(g), F(p));
    emit(k, "div.rn.f32 %s, %s, %s;", F(c), F(gp), F(d));
    return c;
}

/* f(g) u for g < GLU_TAIL: (c 2^-8) u 2^(n + 8), the power of two as two
 * exact factors (one rounding where the result lands); 0 below 2^-252. */
static int glu_tail(kern *k, enum glu_kind kind, int g, int u)
{
    int n, c = glu_tail_factor(k, kind, g, &n);
    int v = nf(k), e = nr(k), h1 = nr(k), h2 = nr(k), y1 = nf(k), y = nf(k), y0 = nf(k), pz = np(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(v), F(c), C(0.00390625f));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(v), F(v), F(u));
    emit(k, "add.s32 %s, %s, 8;", R(e), R(n));
    emit(k, "setp.lt.s32 %s, %s, -252;", P(pz), R(e));
    emit(k, "max.s32 %s, %s, -252;", R(e), R(e));
    emit(k, "shr.s32 %s, %s, 1;", R(h1), R(e));
    emit(k, "sub.s32 %s, %s, %s;", R(h2), R(e), R(h1));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y1), F(v), F(pow2_of(k, h1)));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(y0), F(y1), F(pow2_of(k, h2)));
    emit(k, "mul.rn.f32 %s, %s, 0f00000000;", F(v), F(v));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(y), F(v), F(y0), P(pz));
    return y;
}

/* f(g) u (.f32 g, u) */
static int glu_value(kern *k, enum glu_kind kind, int g, int u)
{
    int out = nf(k), tail = np(k);
    int f = kind == GLU_SILU ? m_silu(k, g) : kind == GLU_GELU ? m_gelu(k, g) : m_gelu_tanh(k, g);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(out), F(f), F(u));
    int lab = nlabel(k);
    emit(k, "setp.ge.f32 %s, %s, %s;", P(tail), F(g), C(GLU_TAIL));
    emit(k, "@%s bra %s;", P(tail), L(lab)); /* NaN gates take the tail too: NaN either way */
    emit(k, "mov.f32 %s, %s;", F(out), F(glu_tail(k, kind, g, u)));
    label(k, lab);
    return out;
}

int swiglu_value(kern *k, int g, int u)
{
    return glu_value(k, GLU_SILU, g, u);
}

static void glu_elem(kern *k, int r, int j, const void *p)
{
    const glu_ctx *c = p;
    int g = nf(k), u = nf(k);
    /* plain loads: y may be gate or up (in place) */
    emit(k, "ld.global.f32 %s, [%s];", F(g), D(elem_addr(k, c->a, r, c->lda, j, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(u), D(elem_addr(k, c->b, r, c->ldb, j, 4)));
    int out = glu_value(k, c->kind, g, u);
    emit(k, "st.global.f32 [%s], %s;", D(elem_addr(k, c->y, r, c->ldy, j, 4)), F(out));
}

static void gen_glu(strbuf *mod, const char *name, enum glu_kind kind)
{
    kern kk = {0}, *k = &kk;
    glu_ctx c;
    c.y = param_global(k, "p_y");
    c.a = param_global(k, "p_a");
    c.b = param_global(k, "p_b");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    c.lda = param_u64(k, "p_lda");
    c.ldb = param_u64(k, "p_ldb");
    c.ldy = param_u64(k, "p_ldy");
    c.kind = kind;
    rows_cols(k, m, n, glu_elem, &c);
    char full[48];
    snprintf(full, sizeof full, "glu_%s", name);
    kern_finish(mod, k, full,
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_lda, .param .u64 p_ldb, .param .u64 p_ldy", NULL, NULL);
}

/* ---- convert: f32 <-> f16 / bf16, bit for bit as rayo-dtype.h ---------------------- */
/* f32 bits u -> f16 bits (rayo_f32_to_f16): cvt.rn.f16.f32 rounds like it for
 * every non-NaN (subnormals exact, overflow to inf); NaN keeps sign and top
 * payload bits, made quiet. */
static int f32_to_f16_bits(kern *k, int u)
{
    int h = nr(k), a = nr(k), nan = nr(k), pn = np(k), f = nf(k);
    emit(k, "mov.b32 %s, %s;", F(f), R(u));
    emit(k, "{ .reg .b16 t; cvt.rn.f16.f32 t, %s; cvt.u32.u16 %s, t; }", F(f), R(h));
    emit(k, "and.b32 %s, %s, 0x7fffffff;", R(a), R(u));
    emit(k, "setp.gt.u32 %s, %s, 0x7f800000;", P(pn), R(a));
    emit(k, "shr.u32 %s, %s, 13;", R(nan), R(a));
    emit(k, "and.b32 %s, %s, 0x3ff;", R(nan), R(nan));
    emit(k, "or.b32 %s, %s, 0x7e00;", R(nan), R(nan));
    int sign = nr(k);
    emit(k, "shr.u32 %s, %s, 16;", R(sign), R(u));
    emit(k, "and.b32 %s, %s, 0x8000;", R(sign), R(sign));
    emit(k, "or.b32 %s, %s, %s;", R(nan), R(nan), R(sign));
    emit(k, "selp.b32 %s, %s, %s, %s;", R(h), R(nan), R(h), P(pn));
    return h;
}

/* rayo_f32_to_bf16: add 0x7fff + lsb, keep the top half; NaN: top half | 0x40 */
static int f32_to_bf16_bits(kern *k, int u)
{
    int r = nr(k), lsb = nr(k), a = nr(k), nan = nr(k), pn = np(k);
    emit(k, "shr.u32 %s, %s, 16;", R(lsb), R(u));
    emit(k, "and.b32 %s, %s, 1;", R(lsb), R(lsb));
    emit(k, "add.u32 %s, %s, 0x7fff;", R(r), R(u));
    emit(k, "add.u32 %s, %s, %s;", R(r), R(r), R(lsb));
    emit(k, "shr.u32 %s, %s, 16;", R(r), R(r));
    emit(k, "and.b32 %s, %s, 0x7fffffff;", R(a), R(u));
    emit(k, "setp.gt.u32 %s, %s, 0x7f800000;", P(pn), R(a));
    emit(k, "shr.u32 %s, %s, 16;", R(nan), R(u));
    emit(k, "or.b32 %s, %s, 0x40;", R(nan), R(nan));
    emit(k, "selp.b32 %s, %s, %s, %s;", R(r), R(nan), R(r), P(pn));
    return r;
}

/* f16 bits h -> f32 bits (rayo_f16_to_f32): exact, subnormals too; inf and
 * NaN keep sign and payload (cvt would make NaN canonical). */
static int f16_bits_to_f32_bits(kern *k, int h)
{
    int f = nf(k), out = nr(k), e = nr(k), pn = np(k), nanb = nr(k);
    emit(k, "{ .reg .b16 t; cvt.u16.u32 t, %s; cvt.f32.f16 %s, t; }", R(h), F(f));
    emit(k, "mov.b32 %s, %s;", R(out), F(f));
    emit(k, "and.b32 %s, %s, 0x7c00;", R(e), R(h));
    emit(k, "setp.eq.u32 %s, %s, 0x7c00;", P(pn), R(e));
    emit(k, "and.b32 %s, %s, 0x3ff;", R(nanb), R(h));
    emit(k, "shl.b32 %s, %s, 13;", R(nanb), R(nanb));
    emit(k, "or.b32 %s, %s, 0x7f800000;", R(nanb), R(nanb));
    emit(k, "and.b32 %s, %s, 0x8000;", R(e), R(h));
    emit(k, "shl.b32 %s, %s, 16;", R(e), R(e));
    emit(k, "or.b32 %s, %s, %s;", R(nanb), R(nanb), R(e));
    emit(k, "selp.b32 %s, %s, %s, %s;", R(out), R(nanb), R(out), P(pn));
    return out;
}

typedef enum cvt_kind { CVT_F32_F16, CVT_F32_BF16, CVT_F16_F32, CVT_BF16_F32 } cvt_kind;

/* one element per thread, grid-stride */
static void gen_convert(strbuf *mod, const char *name, cvt_kind kind)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), n = param_u64(k, "p_n");
    int gid, stride;
    grid_index(k, &gid, &stride);
    int pi = np(k), l_loop = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(gid), D(n));
    emit(k, "@%s bra %s;", P(pi), L(l_end));
    label(k, l_loop);
    int v = nr(k), out = nr(k);
    if (kind == CVT_F32_F16 || kind == CVT_F32_BF16) {
        emit(k, "ld.global.nc.b32 %s, [%s];", R(v), D(addr_of(k, a, gid, 4)));
        out = kind == CVT_F32_F16 ? f32_to_f16_bits(k, v) : f32_to_bf16_bits(k, v);
        emit(k, "st.global.u16 [%s], %s;", D(addr_of(k, y, gid, 2)), R(out));
    } else {
        emit(k, "ld.global.nc.u16 %s, [%s];", R(v), D(addr_of(k, a, gid, 2)));
        if (kind == CVT_BF16_F32) {
            emit(k, "shl.b32 %s, %s, 16;", R(out), R(v));
        } else {
            out = f16_bits_to_f32_bits(k, v);
        }
        emit(k, "st.global.b32 [%s], %s;", D(addr_of(k, y, gid, 4)), R(out));
    }
    emit(k, "add.u64 %s, %s, %s;", D(gid), D(gid), D(stride));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(gid), D(n));
    emit(k, "@%s bra %s;", P(pi), L(l_loop));
    label(k, l_end);
    kern_finish(mod, k, name, ".param .u64 p_y, .param .u64 p_a, .param .u64 p_n", NULL, NULL);
}

/* ---- rope ------------------------------------------------------------------------ */
/* One thread per pair i of one head of one token: grid x over tokens' pairs
 * and heads (rows_cols with rows = tokens, columns = heads * half).  The
 * angle pos * inv_freq[i] is in double, inv_freq[i] = freq_scale * ratio^i
 * (ratio = freq_base^(-2 / rot_dims), computed by the host in double; the
 * power by squaring, a few roundings of 2^-53); the angle reduced to
 * [-pi, pi] in double, then cos and sin in float (sin.approx / cos.approx:
 * absolute error below 2^-20.9 there); the rotation in double, rounded once.
 * Dimensions past rot_dims are copied by the thread of pair 0 of the head. */
typedef struct rope_ctx {
    int y, x, pos, ldx, ldy, hsx, hsy, half, head_dim, rot, ratio, scale;
    int neox;
} rope_ctx;

static int pow_by_squaring(kern *k, int base, int e32)
{
    int acc = nfd(k), b = nfd(k), e = nr(k), bit = nr(k), pb = np(k), pe = np(k), l_loop = nlabel(k),
        l_end = nlabel(k);
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(1.0));
    emit(k, "mov.f64 %s, %s;", FD(b), FD(base));
    emit(k, "mov.u32 %s, %s;", R(e), R(e32));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pe), R(e));
    emit(k, "@%s bra %s;", P(pe), L(l_end));
    label(k, l_loop);
    emit(k, "and.b32 %s, %s, 1;", R(bit), R(e));
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pb), R(bit));
    emit(k, "@%s mul.rn.f64 %s, %s, %s;", P(pb), FD(acc), FD(acc), FD(b));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(b), FD(b), FD(b));
    emit(k, "shr.u32 %s, %s, 1;", R(e), R(e));
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pe), R(e));
    emit(k, "@%s bra %s;", P(pe), L(l_loop));
    label(k, l_end);
    return acc;
}

/* The pair (u, v) (.f32) rotated by pos (.s32) times inv_freq[i] (i .b32;
 * ratio and scale .f64): *o1 = u cos - v sin, *o2 = u sin + v cos (.f32),
 * as the rope kernels compute them. */
void rope_rotate(kern *k, int pos, int i, int ratio, int scale, int u, int v, int *o1, int *o2)
{
    int posd = nfd(k), th = nfd(k), kq = nfd(k), red = nfd(k), rf = nf(k);
    emit(k, "cvt.rn.f64.s32 %s, %s;", FD(posd), R(pos));
    int pw = pow_by_squaring(k, ratio, i);
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(pw), FD(pw), FD(scale));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(th), FD(posd), FD(pw));
    /* th - round(th / 2 pi) * 2 pi, with 2 pi in two parts */
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(kq), FD(th), CD(0.15915494309189533577));
    emit(k, "cvt.rni.f64.f64 %s, %s;", FD(kq), FD(kq));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(red), FD(kq), CD(-6.283185307179586232), FD(th));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(red), FD(kq), CD(-2.4492935982947064e-16), FD(red));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(rf), FD(red));
    int cs = nf(k), sn = nf(k), csd = nfd(k), snd = nfd(k);
    emit(k, "cos.approx.f32 %s, %s;", F(cs), F(rf));
    emit(k, "sin.approx.f32 %s, %s;", F(sn), F(rf));
    emit(k, "cvt.f64.f32 %s, %s;", FD(csd), F(cs));
    emit(k, "cvt.f64.f32 %s, %s;", FD(snd), F(sn));
    int ud = nfd(k), vd = nfd(k), d1 = nfd(k), d2 = nfd(k);
    *o1 = nf(k);
    *o2 = nf(k);
    emit(k, "cvt.f64.f32 %s, %s;", FD(ud), F(u));
    emit(k, "cvt.f64.f32 %s, %s;", FD(vd), F(v));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(d1), FD(vd), FD(snd));
    emit(k, "neg.f64 %s, %s;", FD(d1), FD(d1));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(d1), FD(ud), FD(csd), FD(d1));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(d2), FD(vd), FD(csd));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(d2), FD(ud), FD(snd), FD(d2));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(*o1), FD(d1));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(*o2), FD(d2));
}

static void rope_elem(kern *k, int t, int col, const void *p)
{
    const rope_ctx *c = p;
    int h = nd(k), i = nd(k);
    emit(k, "div.u64 %s, %s, %s;", D(h), D(col), D(c->half));
    emit(k, "rem.u64 %s, %s, %s;", D(i), D(col), D(c->half));
    /* the row starts of this token's head */
    int xo = nd(k), yo = nd(k), xr = nd(k), yr = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(xo), D(t), D(c->ldx));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(xo), D(h), D(c->hsx), D(xo));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(xr), D(xo), D(c->x));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(yo), D(t), D(c->ldy));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(yo), D(h), D(c->hsy), D(yo));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(yr), D(yo), D(c->y));
    int pos = nr(k), f1, f2;
    emit(k, "ld.global.nc.u32 %s, [%s];", R(pos), D(addr_of(k, c->pos, t, 4)));
    int iu = nd(k), iv = nd(k), i32 = nr(k);
    if (c->neox) {
        emit(k, "mov.u64 %s, %s;", D(iu), D(i));
        emit(k, "add.u64 %s, %s, %s;", D(iv), D(i), D(c->half));
    } else {
        emit(k, "shl.b64 %s, %s, 1;", D(iu), D(i));
        emit(k, "add.u64 %s, %s, 1;", D(iv), D(iu));
    }
    int u = nf(k), v = nf(k);
    emit(k, "ld.global.f32 %s, [%s];", F(u), D(addr_of(k, xr, iu, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(v), D(addr_of(k, xr, iv, 4)));
    emit(k, "cvt.u32.u64 %s, %s;", R(i32), D(i));
    rope_rotate(k, pos, i32, c->ratio, c->scale, u, v, &f1, &f2);
    emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, yr, iu, 4)), F(f1));
    emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, yr, iv, 4)), F(f2));
    /* pair 0 copies the dimensions past rot_dims */
    int p0 = np(k), l_skip = nlabel(k), d = nd(k), pd = np(k), l_copy = nlabel(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(p0), D(i));
    emit(k, "@%s bra %s;", P(p0), L(l_skip));
    emit(k, "mov.u64 %s, %s;", D(d), D(c->rot));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pd), D(d), D(c->head_dim));
    emit(k, "@%s bra %s;", P(pd), L(l_skip));
    label(k, l_copy);
    int cv = nf(k);
    emit(k, "ld.global.f32 %s, [%s];", F(cv), D(addr_of(k, xr, d, 4)));
    emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, yr, d, 4)), F(cv));
    emit(k, "add.u64 %s, %s, 1;", D(d), D(d));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pd), D(d), D(c->head_dim));
    emit(k, "@%s bra %s;", P(pd), L(l_copy));
    label(k, l_skip);
}

#define ROPE_PARAMS                                                                                       \
    ".param .u64 p_y, .param .u64 p_x, .param .u64 p_pos, .param .u64 p_m, .param .u64 p_cols, "            \
    ".param .u64 p_ldx, .param .u64 p_ldy, .param .u64 p_hsx, .param .u64 p_hsy, "                          \
    ".param .u64 p_half, .param .u64 p_head_dim, .param .u64 p_rot, .param .f64 p_ratio, .param .f64 p_scale"

/* The parameters of ROPE_PARAMS but p_m and p_cols (*m, *cols). */
static void rope_params(kern *k, rope_ctx *c, int *m, int *cols)
{
    c->y = param_global(k, "p_y");
    c->x = param_global(k, "p_x");
    c->pos = param_global(k, "p_pos");
    *m = param_u64(k, "p_m");
    *cols = param_u64(k, "p_cols");
    c->ldx = param_u64(k, "p_ldx");
    c->ldy = param_u64(k, "p_ldy");
    c->hsx = param_u64(k, "p_hsx");
    c->hsy = param_u64(k, "p_hsy");
    c->half = param_u64(k, "p_half");
    c->head_dim = param_u64(k, "p_head_dim");
    c->rot = param_u64(k, "p_rot");
    c->ratio = nfd(k);
    c->scale = nfd(k);
    emit(k, "ld.param.f64 %s, [p_ratio];", FD(c->ratio));
    emit(k, "ld.param.f64 %s, [p_scale];", FD(c->scale));
}

static void gen_rope(strbuf *mod, int neox)
{
    kern kk = {0}, *k = &kk;
    rope_ctx c;
    int m, cols;
    rope_params(k, &c, &m, &cols);
    c.neox = neox;
    rows_cols(k, m, cols, rope_elem, &c);
    kern_finish(mod, k, neox ? "rope_neox" : "rope_norm", ROPE_PARAMS, NULL, NULL);
}

/* rope2_*: two ropes of the same tokens, positions and frequencies (a decode
 * step's q and k) in one launch: columns past the first rope's cols are the
 * second's (p_y2, p_x2, p_cols2 and its strides), each pair computed as
 * rope_* computes it. */
typedef struct rope2_ctx {
    rope_ctx one;
    int cols, y2, x2, ldx2, ldy2, hsx2, hsy2;
} rope2_ctx;

static void rope2_elem(kern *k, int t, int col, const void *p)
{
    const rope2_ctx *c = p;
    rope_ctx r = c->one;
    int second = np(k), j = nd(k);
    int *mine[] = {&r.y, &r.x, &r.ldx, &r.ldy, &r.hsx, &r.hsy};
    const int theirs[] = {c->y2, c->x2, c->ldx2, c->ldy2, c->hsx2, c->hsy2};
    emit(k, "setp.ge.u64 %s, %s, %s;", P(second), D(col), D(c->cols));
    emit(k, "mov.u64 %s, %s;", D(j), D(col));
    emit(k, "@%s sub.u64 %s, %s, %s;", P(second), D(j), D(col), D(c->cols));
    for (int i = 0; i < 6; i++) {
        int v = nd(k);
        emit(k, "selp.u64 %s, %s, %s, %s;", D(v), D(theirs[i]), D(*mine[i]), P(second));
        *mine[i] = v;
    }
    rope_elem(k, t, j, &r);
}

static void gen_rope2(strbuf *mod, int neox)
{
    kern kk = {0}, *k = &kk;
    rope2_ctx c;
    int m, all = nd(k);
    rope_params(k, &c.one, &m, &c.cols);
    c.one.neox = neox;
    c.y2 = param_global(k, "p_y2");
    c.x2 = param_global(k, "p_x2");
    emit(k, "add.u64 %s, %s, %s;", D(all), D(c.cols), D(param_u64(k, "p_cols2")));
    c.ldx2 = param_u64(k, "p_ldx2");
    c.ldy2 = param_u64(k, "p_ldy2");
    c.hsx2 = param_u64(k, "p_hsx2");
    c.hsy2 = param_u64(k, "p_hsy2");
    rows_cols(k, m, all, rope2_elem, &c);
    kern_finish(mod, k, neox ? "rope2_neox" : "rope2_norm",
                ROPE_PARAMS ", .param .u64 p_y2, .param .u64 p_x2, .param .u64 p_cols2, .param .u64 p_ldx2, "
                            ".param .u64 p_ldy2, .param .u64 p_hsx2, .param .u64 p_hsy2",
                NULL, NULL);
}

/* ---- get_rows and dequantization: y[r][j] = value j of table row idx[r] ---------- */
/* Each value with the float operations of rayo-dtype.h's decoder, in its
 * order (mul.rn / sub.rn: no contraction), so results are bit-exact.  With
 * p_idx = 0, row r is table row r (convert: one row).  A row whose index is
 * outside [0, k) is left unwritten (the host path refuses such calls before
 * any kernel runs). */
typedef struct rows_ctx {
    rayo_dtype dt;
    int y, a, idx, k, row_bytes, ldy;
} rows_ctx;

static int le16_f16(kern *k, int addr, int off)
{
    int h = nr(k), f = nf(k);
    emit(k, "ld.global.nc.u16 %s, [%s+%d];", R(h), D(addr), off);
    emit(k, "{ .reg .b16 t; cvt.u16.u32 t, %s; cvt.f32.f16 %s, t; }", R(h), F(f));
    return f;
}

/* The registers of one dequant_value: the block's address and the value's
 * index (inputs), the result, and scratch the block decoders share (their
 * allocation order is part of the PTX, which must not change). */
typedef struct dequant_regs {
    int blk, e, e64, v, q, qf, at;
} dequant_regs;

static void dequant_q8_0(kern *k, const dequant_regs *g)
{
    int blk = g->blk, e64 = g->e64, v = g->v, q = g->q, qf = g->qf, at = g->at;
    int d = le16_f16(k, blk, 0);
    emit(k, "add.u64 %s, %s, %s;", D(at), D(blk), D(e64));
    emit(k, "ld.global.nc.s8 %s, [%s+2];", R(q), D(at));
    emit(k, "cvt.rn.f32.s32 %s, %s;", F(qf), R(q));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(v), F(qf), F(d));
}

/* dst = the byte (type u8 or s8) at blk + offset + idx, idx a u32
 * register, addr a u64 register for the address */
static void block_byte(kern *k, const char *type, int dst, int addr, int blk, int idx, int offset)
{
    emit(k, "cvt.u64.u32 %s, %s;", D(addr), R(idx));
    emit(k, "add.u64 %s, %s, %s;", D(addr), D(addr), D(blk));
    if (offset)
        emit(k, "ld.global.nc.%s %s, [%s+%d];", type, R(dst), D(addr), offset);
    else
        emit(k, "ld.global.nc.%s %s, [%s];", type, R(dst), D(addr));
}

/* value e: byte 2 + e % 16, high nibble for e >= 16 */
static void dequant_q4_0(kern *k, const dequant_regs *g)
{
    int blk = g->blk, e = g->e, e64 = g->e64, v = g->v, q = g->q, qf = g->qf, at = g->at;
    int d = le16_f16(k, blk, 0), lo = nd(k), sh = nr(k);
    emit(k, "and.b64 %s, %s, 15;", D(lo), D(e64));
    emit(k, "add.u64 %s, %s, %s;", D(at), D(blk), D(lo));
    emit(k, "ld.global.nc.u8 %s, [%s+2];", R(q), D(at));
    emit(k, "shr.u32 %s, %s, 4;", R(sh), R(e));
    emit(k, "shl.b32 %s, %s, 2;", R(sh), R(sh));
    emit(k, "shr.u32 %s, %s, %s;", R(q), R(q), R(sh));
    emit(k, "and.b32 %s, %s, 15;", R(q), R(q));
    emit(k, "sub.s32 %s, %s, 8;", R(q), R(q));
    emit(k, "cvt.rn.f32.s32 %s, %s;", F(qf), R(q));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(v), F(qf), F(d));
}

/* sub-block s = e / 32; byte 16 + 32 (s / 2) + e % 32, nibble s & 1 */
static void dequant_q4_k(kern *k, const dequant_regs *g)
{
    int blk = g->blk, e = g->e, v = g->v, q = g->q, qf = g->qf;
    int d = le16_f16(k, blk, 0), dmin = le16_f16(k, blk, RAYO_Q4_K_DMIN);
    int s = nr(k), jj = nr(k), high = np(k), sc = nr(k), m = nr(k), t = nr(k), t2 = nr(k);
    emit(k, "shr.u32 %s, %s, 5;", R(s), R(e));
    emit(k, "and.b32 %s, %s, 3;", R(jj), R(s));
    emit(k, "setp.ge.u32 %s, %s, 4;", P(high), R(s));
    int jj64 = nd(k), sa = nd(k), b0 = nr(k), b1 = nr(k), b2 = nr(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(jj64), R(jj));
    emit(k, "add.u64 %s, %s, %s;", D(sa), D(blk), D(jj64));
    emit(k, "ld.global.nc.u8 %s, [%s+%d];", R(b0), D(sa), RAYO_Q4_K_SCALES);
    emit(k, "ld.global.nc.u8 %s, [%s+%d];", R(b1), D(sa), RAYO_Q4_K_SCALES + 4);
    emit(k, "ld.global.nc.u8 %s, [%s+%d];", R(b2), D(sa), RAYO_Q4_K_SCALES + 8);
    emit(k, "and.b32 %s, %s, 63;", R(sc), R(b0));
    emit(k, "and.b32 %s, %s, 63;", R(m), R(b1));
    emit(k, "and.b32 %s, %s, 15;", R(t), R(b2));
    emit(k, "shr.u32 %s, %s, 6;", R(t2), R(b0));
    emit(k, "shl.b32 %s, %s, 4;", R(t2), R(t2));
    emit(k, "@%s or.b32 %s, %s, %s;", P(high), R(sc), R(t), R(t2));
    emit(k, "shr.u32 %s, %s, 4;", R(t), R(b2));
    emit(k, "shr.u32 %s, %s, 6;", R(t2), R(b1));
    emit(k, "shl.b32 %s, %s, 4;", R(t2), R(t2));
    emit(k, "@%s or.b32 %s, %s, %s;", P(high), R(m), R(t), R(t2));
    int qb = nr(k), qa = nd(k), sh = nr(k);
    emit(k, "shr.u32 %s, %s, 1;", R(qb), R(s));
    emit(k, "shl.b32 %s, %s, 5;", R(qb), R(qb));
    emit(k, "and.b32 %s, %s, 31;", R(t), R(e));
    emit(k, "add.u32 %s, %s, %s;", R(qb), R(qb), R(t));
    block_byte(k, "u8", q, qa, blk, qb, RAYO_Q4_K_QS);
    emit(k, "and.b32 %s, %s, 1;", R(sh), R(s));
    emit(k, "shl.b32 %s, %s, 2;", R(sh), R(sh));
    emit(k, "shr.u32 %s, %s, %s;", R(q), R(q), R(sh));
    emit(k, "and.b32 %s, %s, 15;", R(q), R(q));
    int scf = nf(k), mf = nf(k), ds = nf(k), ms = nf(k);
    emit(k, "cvt.rn.f32.u32 %s, %s;", F(scf), R(sc));
    emit(k, "cvt.rn.f32.u32 %s, %s;", F(mf), R(m));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(ds), F(d), F(scf));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(ms), F(dmin), F(mf));
    emit(k, "cvt.rn.f32.u32 %s, %s;", F(qf), R(q));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(v), F(ds), F(qf));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(v), F(v), F(ms));
}

/* rayo_q6_k_code; scale of 16 values */
static void dequant_q6_k(kern *k, const dequant_regs *g)
{
    int blk = g->blk, e = g->e, v = g->v, q = g->q, qf = g->qf;
    int d = le16_f16(k, blk, RAYO_Q6_K_D);
    int h = nr(k), kk = nr(k), l = nr(k), t = nr(k), lo = nr(k), hi = nr(k), sh = nr(k);
    emit(k, "shr.u32 %s, %s, 7;", R(h), R(e));
    emit(k, "shr.u32 %s, %s, 5;", R(kk), R(e));
    emit(k, "and.b32 %s, %s, 3;", R(kk), R(kk));
    emit(k, "and.b32 %s, %s, 31;", R(l), R(e));
    /* low: ql[64 h + 32 (kk & 1) + l] >> 4 (kk >> 1) */
    emit(k, "and.b32 %s, %s, 1;", R(t), R(kk));
    emit(k, "shl.b32 %s, %s, 5;", R(t), R(t));
    emit(k, "mad.lo.u32 %s, %s, 64, %s;", R(t), R(h), R(t));
    emit(k, "add.u32 %s, %s, %s;", R(t), R(t), R(l));
    int a1 = nd(k), a2 = nd(k), a3 = nd(k);
    block_byte(k, "u8", lo, a1, blk, t, 0);
    emit(k, "shr.u32 %s, %s, 1;", R(sh), R(kk));
    emit(k, "shl.b32 %s, %s, 2;", R(sh), R(sh));
    emit(k, "shr.u32 %s, %s, %s;", R(lo), R(lo), R(sh));
    emit(k, "and.b32 %s, %s, 15;", R(lo), R(lo));
    /* high: qh[32 h + l] >> 2 kk */
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(t), R(h), R(l));
    block_byte(k, "u8", hi, a2, blk, t, RAYO_Q6_K_QH);
    emit(k, "shl.b32 %s, %s, 1;", R(sh), R(kk));
    emit(k, "shr.u32 %s, %s, %s;", R(hi), R(hi), R(sh));
    emit(k, "and.b32 %s, %s, 3;", R(hi), R(hi));
    emit(k, "shl.b32 %s, %s, 4;", R(hi), R(hi));
    emit(k, "or.b32 %s, %s, %s;", R(q), R(lo), R(hi));
    emit(k, "sub.s32 %s, %s, 32;", R(q), R(q));
    /* ds = d * scale[e / 16]; y = ds * code */
    int sc = nr(k), scf = nf(k), ds = nf(k);
    emit(k, "shr.u32 %s, %s, 4;", R(t), R(e));
    block_byte(k, "s8", sc, a3, blk, t, RAYO_Q6_K_SCALES);
    emit(k, "cvt.rn.f32.s32 %s, %s;", F(scf), R(sc));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(ds), F(d), F(scf));
    emit(k, "cvt.rn.f32.s32 %s, %s;", F(qf), R(q));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(v), F(ds), F(qf));
}

/* f32, f16, bf16: value e of the "block" of one value */
static void dequant_half_or_f32(kern *k, rayo_dtype dt, int blk, int v)
{
    int w = nr(k);
    if (dt == RAYO_DTYPE_F32) {
        emit(k, "ld.global.nc.b32 %s, [%s];", R(w), D(blk));
    } else {
        int h = nr(k);
        emit(k, "ld.global.nc.u16 %s, [%s];", R(h), D(blk));
        if (dt == RAYO_DTYPE_BF16)
            emit(k, "shl.b32 %s, %s, 16;", R(w), R(h));
        else
            w = f16_bits_to_f32_bits(k, h);
    }
    emit(k, "mov.b32 %s, %s;", F(v), R(w));
}

/* value e (.b32) of the block at blk (.b64), as f32 bits */
int dequant_value(kern *k, rayo_dtype dt, int blk, int e)
{
    dequant_regs g = { .blk = blk, .e = e };
    g.v = nf(k);
    g.e64 = nd(k);
    g.q = nr(k);
    g.qf = nf(k);
    g.at = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(g.e64), R(e));
    switch (dt) {
    case RAYO_DTYPE_Q8_0: dequant_q8_0(k, &g); break;
    case RAYO_DTYPE_Q4_0: dequant_q4_0(k, &g); break;
    case RAYO_DTYPE_Q4_K: dequant_q4_k(k, &g); break;
    case RAYO_DTYPE_Q6_K: dequant_q6_k(k, &g); break;
    default: dequant_half_or_f32(k, dt, blk, g.v); break;
    }
    return g.v;
}

static void rows_elem(kern *k, int r, int j, const void *p)
{
    const rows_ctx *c = p;
    size_t per = rayo_dtype_block_elems(c->dt), bytes = rayo_dtype_block_bytes(c->dt);
    int tr = nd(k), pidx = np(k), pbad = np(k), l_skip = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(tr), D(r));
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pidx), D(c->idx));
    {
        int ia = nd(k), iv = nr(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ia), D(r), D(c->idx));
        emit(k, "@%s ld.global.nc.s32 %s, [%s];", P(pidx), R(iv), D(ia));
        emit(k, "@%s cvt.s64.s32 %s, %s;", P(pidx), D(tr), R(iv));
    }
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pbad), D(tr), D(c->k)); /* negative: huge unsigned */
    emit(k, "@%s bra %s;", P(pbad), L(l_skip));
    int blk = nd(k), b = nd(k), e = nd(k), e32 = nr(k);
    emit(k, "div.u64 %s, %s, %d;", D(b), D(j), (int)per);
    emit(k, "rem.u64 %s, %s, %d;", D(e), D(j), (int)per);
    emit(k, "cvt.u32.u64 %s, %s;", R(e32), D(e));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(blk), D(tr), D(c->row_bytes), D(c->a));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(blk), D(b), (int)bytes, D(blk));
    int v = dequant_value(k, c->dt, blk, e32);
    emit(k, "st.global.f32 [%s], %s;", D(elem_addr(k, c->y, r, c->ldy, j, 4)), F(v));
    label(k, l_skip);
}

static void gen_rows(strbuf *mod, rayo_dtype dt)
{
    kern kk = {0}, *k = &kk;
    rows_ctx c;
    c.dt = dt;
    c.y = param_global(k, "p_y");
    c.a = param_global(k, "p_a");
    c.idx = param_u64(k, "p_idx"); /* 0: no indices */
    {
        int g = nd(k), pz = np(k);
        emit(k, "cvta.to.global.u64 %s, %s;", D(g), D(c.idx));
        emit(k, "setp.ne.u64 %s, %s, 0;", P(pz), D(c.idx));
        emit(k, "@%s mov.u64 %s, %s;", P(pz), D(c.idx), D(g));
    }
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    c.k = param_u64(k, "p_k");
    c.row_bytes = param_u64(k, "p_row_bytes");
    c.ldy = param_u64(k, "p_ldy");
    rows_cols(k, m, n, rows_elem, &c);
    char name[48];
    snprintf(name, sizeof name, "rows_%s", rayo_dtype_name(dt));
    kern_finish(mod, k, name,
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_idx, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_k, .param .u64 p_row_bytes, .param .u64 p_ldy", NULL, NULL);
}

/* ---- quantize: f32 -> Q8_0 / Q4_0, the bytes of rayo_quantize_q8_0/q4_0 -------------- */
/* One thread per block of 32 values, every operation as in rayo-dtype.h
 * (IEEE division, separate roundings, C's roundf for Q8_0, truncation after
 * + 8.5 for Q4_0), the block's bytes stored one by one. */
static void quant_block(kern *k, int y, int a, int b, int q4)
{
    int xa = nd(k), ya = nd(k), x[32];
    emit(k, "mad.lo.u64 %s, %s, 128, %s;", D(xa), D(b), D(a));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(ya), D(b), q4 ? RAYO_Q4_0_BYTES : RAYO_Q8_0_BYTES, D(y));
    for (int j = 0; j < 32; j++) {
        x[j] = nf(k);
        emit(k, "ld.global.nc.f32 %s, [%s+%d];", F(x[j]), D(xa), 4 * j);
    }
    /* amax (and for Q4_0 the first value of largest |x|): NaN never wins */
    int amax = fmov(k, 0.0f), mx = fmov(k, 0.0f);
    for (int j = 0; j < 32; j++) {
        int ab = nf(k), pg = np(k);
        emit(k, "abs.f32 %s, %s;", F(ab), F(x[j]));
        emit(k, "setp.gt.f32 %s, %s, %s;", P(pg), F(ab), F(amax));
        emit(k, "@%s mov.f32 %s, %s;", P(pg), F(amax), F(ab));
        if (q4)
            emit(k, "@%s mov.f32 %s, %s;", P(pg), F(mx), F(x[j]));
    }
    int d = nf(k), id = nf(k), pz = np(k);
    if (q4)
        emit(k, "div.rn.f32 %s, %s, %s;", F(d), F(mx), C(-8.0f));
    else
        emit(k, "div.rn.f32 %s, %s, %s;", F(d), F(amax), C(127.0f));
    emit(k, "setp.neu.f32 %s, %s, %s;", P(pz), F(d), C(0.0f));
    emit(k, "mov.f32 %s, %s;", F(id), C(0.0f));
    emit(k, "@%s div.rn.f32 %s, %s, %s;", P(pz), F(id), C(1.0f), F(d));
    int dbits = nr(k);
    emit(k, "mov.b32 %s, %s;", R(dbits), F(d));
    int h = f32_to_f16_bits(k, dbits), hb = nr(k);
    emit(k, "st.global.u8 [%s], %s;", D(ya), R(h));
    emit(k, "shr.u32 %s, %s, 8;", R(hb), R(h));
    emit(k, "st.global.u8 [%s+1], %s;", D(ya), R(hb));
    int q[32];
    for (int j = 0; j < 32; j++) {
        int v = nf(k), pn = np(k), p1 = np(k), p2 = np(k);
        q[j] = nr(k);
        emit(k, "mul.rn.f32 %s, %s, %s;", F(v), F(x[j]), F(id));
        if (q4) { /* t = v + 8.5; q = t != t || t < 0 ? 0 : t >= 15 ? 15 : (int)t */
            emit(k, "add.rn.f32 %s, %s, %s;", F(v), F(v), C(8.5f));
            emit(k, "cvt.rzi.s32.f32 %s, %s;", R(q[j]), F(v));
            emit(k, "setp.ge.f32 %s, %s, %s;", P(p1), F(v), C(15.0f));
            emit(k, "@%s mov.b32 %s, 15;", P(p1), R(q[j]));
            emit(k, "setp.ltu.f32 %s, %s, %s;", P(pn), F(v), C(0.0f)); /* also NaN */
            emit(k, "@%s mov.b32 %s, 0;", P(pn), R(q[j]));
        } else { /* NaN -> 0, clamp to +-127, else roundf */
            int fr = nf(k), tf = nf(k);
            emit(k, "cvt.rzi.s32.f32 %s, %s;", R(q[j]), F(v));
            emit(k, "cvt.rn.f32.s32 %s, %s;", F(tf), R(q[j]));
            emit(k, "sub.rn.f32 %s, %s, %s;", F(fr), F(v), F(tf));
            emit(k, "setp.ge.f32 %s, %s, %s;", P(p1), F(fr), C(0.5f));
            emit(k, "@%s add.s32 %s, %s, 1;", P(p1), R(q[j]), R(q[j]));
            emit(k, "setp.le.f32 %s, %s, %s;", P(p2), F(fr), C(-0.5f));
            emit(k, "@%s sub.s32 %s, %s, 1;", P(p2), R(q[j]), R(q[j]));
            emit(k, "setp.gt.f32 %s, %s, %s;", P(p1), F(v), C(127.0f));
            emit(k, "@%s mov.b32 %s, 127;", P(p1), R(q[j]));
            emit(k, "setp.lt.f32 %s, %s, %s;", P(p2), F(v), C(-127.0f));
            emit(k, "@%s mov.b32 %s, -127;", P(p2), R(q[j]));
            emit(k, "setp.nan.f32 %s, %s, %s;", P(pn), F(v), F(v));
            emit(k, "@%s mov.b32 %s, 0;", P(pn), R(q[j]));
            emit(k, "st.global.u8 [%s+%d], %s;", D(ya), 2 + j, R(q[j]));
        }
    }
    if (q4)
        for (int j = 0; j < 16; j++) {
            int byte = nr(k);
            emit(k, "shl.b32 %s, %s, 4;", R(byte), R(q[j + 16]));
            emit(k, "or.b32 %s, %s, %s;", R(byte), R(byte), R(q[j]));
            emit(k, "st.global.u8 [%s+%d], %s;", D(ya), 2 + j, R(byte));
        }
}

static void gen_quantize(strbuf *mod, int q4)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), blocks = param_u64(k, "p_blocks");
    int gid, stride;
    grid_index(k, &gid, &stride);
    int pi = np(k), l_loop = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(gid), D(blocks));
    emit(k, "@%s bra %s;", P(pi), L(l_end));
    label(k, l_loop);
    quant_block(k, y, a, gid, q4);
    emit(k, "add.u64 %s, %s, %s;", D(gid), D(gid), D(stride));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(gid), D(blocks));
    emit(k, "@%s bra %s;", P(pi), L(l_loop));
    label(k, l_end);
    kern_finish(mod, k, q4 ? "quant_q4_0" : "quant_q8_0", ".param .u64 p_y, .param .u64 p_a, .param .u64 p_blocks",
                NULL, NULL);
}

void infer_ops(strbuf *mod)
{
    gen_glu(mod, "swiglu", GLU_SILU);
    gen_glu(mod, "geglu", GLU_GELU);
    gen_glu(mod, "geglu_tanh", GLU_GELU_TANH);
    gen_convert(mod, "cvt_f32_f16", CVT_F32_F16);
    gen_convert(mod, "cvt_f32_bf16", CVT_F32_BF16);
    gen_convert(mod, "cvt_f16_f32", CVT_F16_F32);
    gen_convert(mod, "cvt_bf16_f32", CVT_BF16_F32);
    gen_quantize(mod, 0);
    gen_quantize(mod, 1);
    gen_rope(mod, 0);
    gen_rope(mod, 1);
    gen_rope2(mod, 0);
    gen_rope2(mod, 1);
    static const rayo_dtype tables[] = {RAYO_DTYPE_F32, RAYO_DTYPE_F16, RAYO_DTYPE_BF16, RAYO_DTYPE_Q8_0,
                                        RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        gen_rows(mod, tables[i]);
}
