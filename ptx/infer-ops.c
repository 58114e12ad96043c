/* infer-ops.c - the bandwidth kernels of module "infer": the gated units
 * (glu_swiglu, glu_geglu, glu_geglu_tanh), rope (rope_norm, rope_neox) and
 * the f32 <-> f16 / bf16 conversions (cvt_*).
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
typedef struct glu_ctx {
    int y, a, b, lda, ldb, ldy;
    int (*act)(kern *k, int x);
} glu_ctx;

static void glu_elem(kern *k, int r, int j, const void *p)
{
    const glu_ctx *c = p;
    int g = nf(k), u = nf(k), out = nf(k);
    /* plain loads: y may be gate or up (in place) */
    emit(k, "ld.global.f32 %s, [%s];", F(g), D(elem_addr(k, c->a, r, c->lda, j, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(u), D(elem_addr(k, c->b, r, c->ldb, j, 4)));
    int f = c->act(k, g);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(out), F(f), F(u));
    emit(k, "st.global.f32 [%s], %s;", D(elem_addr(k, c->y, r, c->ldy, j, 4)), F(out));
}

static void gen_glu(strbuf *mod, const char *name, int (*act)(kern *k, int x))
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
    c.act = act;
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
        } else { /* f16 -> f32 is exact (subnormals too); NaN keeps its payload, as rayo_f16_to_f32 */
            int f = nf(k);
            emit(k, "{ .reg .b16 t; cvt.u16.u32 t, %s; cvt.f32.f16 %s, t; }", R(v), F(f));
            emit(k, "mov.b32 %s, %s;", R(out), F(f));
            int e = nr(k), pn = np(k), nanb = nr(k);
            emit(k, "and.b32 %s, %s, 0x7c00;", R(e), R(v));
            emit(k, "setp.eq.u32 %s, %s, 0x7c00;", P(pn), R(e));
            /* sign | 0x7f800000 | m << 13 (inf and NaN alike) */
            emit(k, "and.b32 %s, %s, 0x3ff;", R(nanb), R(v));
            emit(k, "shl.b32 %s, %s, 13;", R(nanb), R(nanb));
            emit(k, "or.b32 %s, %s, 0x7f800000;", R(nanb), R(nanb));
            emit(k, "and.b32 %s, %s, 0x8000;", R(e), R(v));
            emit(k, "shl.b32 %s, %s, 16;", R(e), R(e));
            emit(k, "or.b32 %s, %s, %s;", R(nanb), R(nanb), R(e));
            emit(k, "selp.b32 %s, %s, %s, %s;", R(out), R(nanb), R(out), P(pn));
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
    /* angle */
    int pos = nr(k), posd = nfd(k), i32 = nr(k), th = nfd(k), kq = nfd(k), red = nfd(k), rf = nf(k);
    emit(k, "ld.global.nc.u32 %s, [%s];", R(pos), D(addr_of(k, c->pos, t, 4)));
    emit(k, "cvt.rn.f64.s32 %s, %s;", FD(posd), R(pos));
    emit(k, "cvt.u32.u64 %s, %s;", R(i32), D(i));
    int pw = pow_by_squaring(k, c->ratio, i32);
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(pw), FD(pw), FD(c->scale));
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
    /* the pair */
    int iu = nd(k), iv = nd(k);
    if (c->neox) {
        emit(k, "mov.u64 %s, %s;", D(iu), D(i));
        emit(k, "add.u64 %s, %s, %s;", D(iv), D(i), D(c->half));
    } else {
        emit(k, "shl.b64 %s, %s, 1;", D(iu), D(i));
        emit(k, "add.u64 %s, %s, 1;", D(iv), D(iu));
    }
    int u = nf(k), v = nf(k), ud = nfd(k), vd = nfd(k), o1 = nfd(k), o2 = nfd(k), f1 = nf(k), f2 = nf(k);
    emit(k, "ld.global.f32 %s, [%s];", F(u), D(addr_of(k, xr, iu, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(v), D(addr_of(k, xr, iv, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(ud), F(u));
    emit(k, "cvt.f64.f32 %s, %s;", FD(vd), F(v));
    /* o1 = u cs - v sn, o2 = u sn + v cs */
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(o1), FD(vd), FD(snd));
    emit(k, "neg.f64 %s, %s;", FD(o1), FD(o1));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(o1), FD(ud), FD(csd), FD(o1));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(o2), FD(vd), FD(csd));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(o2), FD(ud), FD(snd), FD(o2));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(f1), FD(o1));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(f2), FD(o2));
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

static void gen_rope(strbuf *mod, int neox)
{
    kern kk = {0}, *k = &kk;
    rope_ctx c;
    c.y = param_global(k, "p_y");
    c.x = param_global(k, "p_x");
    c.pos = param_global(k, "p_pos");
    int m = param_u64(k, "p_m"), cols = param_u64(k, "p_cols");
    c.ldx = param_u64(k, "p_ldx");
    c.ldy = param_u64(k, "p_ldy");
    c.hsx = param_u64(k, "p_hsx");
    c.hsy = param_u64(k, "p_hsy");
    c.half = param_u64(k, "p_half");
    c.head_dim = param_u64(k, "p_head_dim");
    c.rot = param_u64(k, "p_rot");
    c.ratio = nfd(k);
    c.scale = nfd(k);
    emit(k, "ld.param.f64 %s, [p_ratio];", FD(c.ratio));
    emit(k, "ld.param.f64 %s, [p_scale];", FD(c.scale));
    c.neox = neox;
    rows_cols(k, m, cols, rope_elem, &c);
    kern_finish(mod, k, neox ? "rope_neox" : "rope_norm",
                ".param .u64 p_y, .param .u64 p_x, .param .u64 p_pos, .param .u64 p_m, .param .u64 p_cols, "
                ".param .u64 p_ldx, .param .u64 p_ldy, .param .u64 p_hsx, .param .u64 p_hsy, "
                ".param .u64 p_half, .param .u64 p_head_dim, .param .u64 p_rot, .param .f64 p_ratio, "
                ".param .f64 p_scale", NULL, NULL);
}

void infer_ops(strbuf *mod)
{
    gen_glu(mod, "swiglu", m_silu);
    gen_glu(mod, "geglu", m_gelu);
    gen_glu(mod, "geglu_tanh", m_gelu_tanh);
    gen_convert(mod, "cvt_f32_f16", CVT_F32_F16);
    gen_convert(mod, "cvt_f32_bf16", CVT_F32_BF16);
    gen_convert(mod, "cvt_f16_f32", CVT_F16_F32);
    gen_convert(mod, "cvt_bf16_f32", CVT_BF16_F32);
    gen_rope(mod, 0);
    gen_rope(mod, 1);
}
