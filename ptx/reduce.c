/* SPDX-License-Identifier: MIT */
/* reduce.c - module "reduce": sum, dot, norms, max, min and argmax as a
 * per-block partial kernel and a final one (red_<op>_part, red_<op>_final). */
#include "gen-ptx.h"

/* ---- module: reductions --------------------------------------------------
 * Two launches: *_part with G blocks writes one partial per block to a
 * scratch array; *_final with one block of 256 combines the partials in a
 * fixed order and writes the result.  Sums accumulate in float64. */
enum red_kind { RED_SUM, RED_DOT, RED_L1, RED_L2, RED_MAX, RED_MIN, RED_ARGMAX };
static const char *const red_names[] = {"sum", "dot", "norm_l1", "norm_l2", "max", "min", "argmax"};

/* The per-block partial of a reduction.  The grid-stride loop takes four
 * elements an iteration (i, i + S, i + 2S, i + 3S: four loads in flight per
 * thread), then the remaining ones one by one.  Sums accumulate in float64;
 * argmax carries (value, index) and combines in index order rules, so the
 * order elements are visited in does not matter. */
typedef struct red_acc {
    enum red_kind kind;
    int acc;        /* .f64 sum */
    int v, i;       /* .f32 max/min/argmax value, .b64 argmax index */
    int a, b;       /* inputs */
} red_acc;

static void red_visit(kern *k, red_acc *r, int idx)
{
    int x = nf(k);
    emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, r->a, idx, 4)));
    if (r->kind <= RED_L2) {
        int xd = nfd(k);
        emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
        if (r->kind == RED_SUM) {
            emit(k, "add.rn.f64 %s, %s, %s;", FD(r->acc), FD(r->acc), FD(xd));
        } else if (r->kind == RED_L1) {
            emit(k, "abs.f64 %s, %s;", FD(xd), FD(xd));
            emit(k, "add.rn.f64 %s, %s, %s;", FD(r->acc), FD(r->acc), FD(xd));
        } else if (r->kind == RED_L2) {
            emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(r->acc), FD(xd), FD(xd), FD(r->acc));
        } else {
            int yv = nf(k), yd = nfd(k);
            emit(k, "ld.global.f32 %s, [%s];", F(yv), D(addr_of(k, r->b, idx, 4)));
            emit(k, "cvt.f64.f32 %s, %s;", FD(yd), F(yv));
            emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(r->acc), FD(xd), FD(yd), FD(r->acc));
        }
    } else if (r->kind == RED_ARGMAX) {
        int nv = r->v, ni = r->i;
        argmax_combine(k, &nv, &ni, x, idx);
        emit(k, "mov.f32 %s, %s;", F(r->v), F(nv));
        emit(k, "mov.u64 %s, %s;", D(r->i), D(ni));
    } else {
        emit(k, "%s %s, %s, %s;", r->kind == RED_MAX ? "max.NaN.f32" : "min.NaN.f32", F(r->v), F(r->v), F(x));
    }
}

static void gen_red_part(strbuf *mod, enum red_kind kind)
{
    kern kk = {0}, *k = &kk;
    red_acc r = {kind, -1, -1, -1, -1, -1};
    int part = param_global(k, "p_part");
    r.a = param_global(k, "p_a");
    r.b = param_global(k, "p_b");
    int n = param_u64(k, "p_n");
    int gid, stride, tid, lane, warp;
    grid_index(k, &gid, &stride);
    lane_warp(k, &tid, &lane, &warp);
    if (kind <= RED_L2) {
        r.acc = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(r.acc), CD(0.0));
    } else {
        r.v = nf(k);
        emit(k, "mov.f32 %s, %s;", F(r.v), CB(kind == RED_MIN ? 0x7f800000u : 0xff800000u));
        if (kind == RED_ARGMAX) {
            r.i = nd(k);
            emit(k, "mov.u64 %s, -1;", D(r.i));
        }
    }
    int i = nd(k), s3 = nd(k), last = nd(k), p = np(k);
    int l_main = nlabel(k), l_rest = nlabel(k), l_one = nlabel(k), l_done = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(i), D(gid));
    emit(k, "mul.lo.u64 %s, %s, 3;", D(s3), D(stride));
    label(k, l_main);
    emit(k, "add.u64 %s, %s, %s;", D(last), D(i), D(s3));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(last), D(n));
    emit(k, "@%s bra %s;", P(p), L(l_rest));
    int idx = i;
    for (int u = 0; u < 4; u++) {
        red_visit(k, &r, idx);
        if (u < 3) {
            int nx = nd(k);
            emit(k, "add.u64 %s, %s, %s;", D(nx), D(idx), D(stride));
            idx = nx;
        }
    }
    emit(k, "add.u64 %s, %s, %s;", D(i), D(idx), D(stride));
    emit(k, "bra.uni %s;", L(l_main));
    label(k, l_rest);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(i), D(n));
    emit(k, "@%s bra %s;", P(p), L(l_done));
    label(k, l_one);
    red_visit(k, &r, i);
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(stride));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(i), D(n));
    emit(k, "@%s bra %s;", P(p), L(l_one));
    label(k, l_done);
    int ctaid = sreg(k, "%ctaid.x"), pt = np(k), pa = nd(k), c64 = nd(k);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pt), R(tid));
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(ctaid));
    if (kind <= RED_L2) {
        int total = block_sum_f64(k, r.acc, lane, warp);
        emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(pa), D(c64), D(part));
        emit(k, "@%s st.global.f64 [%s], %s;", P(pt), D(pa), FD(total));
    } else if (kind == RED_ARGMAX) {
        block_argmax(k, &r.v, &r.i, lane, warp);
        emit(k, "mad.lo.u64 %s, %s, 16, %s;", D(pa), D(c64), D(part));
        emit(k, "@%s st.global.f32 [%s], %s;", P(pt), D(pa), F(r.v));
        emit(k, "@%s st.global.u64 [%s+8], %s;", P(pt), D(pa), D(r.i));
    } else {
        int total = block_minmax_f32(k, r.v, lane, warp, kind == RED_MAX);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(pa), D(c64), D(part));
        emit(k, "@%s st.global.f32 [%s], %s;", P(pt), D(pa), F(total));
    }
    char name[64];
    snprintf(name, sizeof name, "red_%s_part", red_names[kind]);
    kern_finish(mod, k, name, ".param .u64 p_part, .param .u64 p_a, .param .u64 p_b, .param .u64 p_n",
                ".maxntid 256, 1, 1\n", RED_SHARED);
}

/* One block combines `count` partials.  y: f32 result, or the size_t index
 * of argmax written as two 32-bit halves (y need only be 4-byte aligned). */
static void gen_red_final(strbuf *mod, enum red_kind kind)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), part = param_global(k, "p_part");
    int count = param_u64(k, "p_count");
    int tid, lane, warp;
    lane_warp(k, &tid, &lane, &warp);
    int i = nd(k), p = np(k), l_loop = nlabel(k), l_done = nlabel(k);
    int acc = -1, accv = -1, acci = -1;
    if (kind <= RED_L2) {
        acc = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    } else {
        accv = nf(k);
        emit(k, "mov.f32 %s, %s;", F(accv), CB(kind == RED_MIN ? 0x7f800000u : 0xff800000u));
        if (kind == RED_ARGMAX) {
            acci = nd(k);
            emit(k, "mov.u64 %s, -1;", D(acci));
        }
    }
    emit(k, "cvt.u64.u32 %s, %s;", D(i), R(tid));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(i), D(count));
    emit(k, "@%s bra %s;", P(p), L(l_done));
    label(k, l_loop);
    if (kind <= RED_L2) {
        int v = nfd(k);
        emit(k, "ld.global.f64 %s, [%s];", FD(v), D(addr_of(k, part, i, 8)));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(v));
    } else if (kind == RED_ARGMAX) {
        int pa = addr_of(k, part, i, 16), v = nf(k), vi = nd(k);
        emit(k, "ld.global.f32 %s, [%s];", F(v), D(pa));
        emit(k, "ld.global.u64 %s, [%s+8];", D(vi), D(pa));
        int nv = accv, ni = acci;
        argmax_combine(k, &nv, &ni, v, vi);
        emit(k, "mov.f32 %s, %s;", F(accv), F(nv));
        emit(k, "mov.u64 %s, %s;", D(acci), D(ni));
    } else {
        int v = nf(k);
        emit(k, "ld.global.f32 %s, [%s];", F(v), D(addr_of(k, part, i, 4)));
        emit(k, "%s %s, %s, %s;", kind == RED_MAX ? "max.NaN.f32" : "min.NaN.f32", F(accv), F(accv), F(v));
    }
    emit(k, "add.u64 %s, %s, %d;", D(i), D(i), RED_THREADS);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(i), D(count));
    emit(k, "@%s bra %s;", P(p), L(l_loop));
    label(k, l_done);
    int pt = np(k);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pt), R(tid));
    if (kind <= RED_L2) {
        int total = block_sum_f64(k, acc, lane, warp), out = nf(k);
        if (kind == RED_L2) {
            int s = nfd(k);
            emit(k, "sqrt.rn.f64 %s, %s;", FD(s), FD(total));
            total = s;
        }
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(out), FD(total));
        emit(k, "@%s st.global.f32 [%s], %s;", P(pt), D(y), F(out));
    } else if (kind == RED_ARGMAX) {
        block_argmax(k, &accv, &acci, lane, warp);
        int lo = nr(k), hi = nr(k);
        emit(k, "mov.b64 {%s, %s}, %s;", R(lo), R(hi), D(acci));
        emit(k, "@%s st.global.u32 [%s], %s;", P(pt), D(y), R(lo));
        emit(k, "@%s st.global.u32 [%s+4], %s;", P(pt), D(y), R(hi));
    } else {
        int total = block_minmax_f32(k, accv, lane, warp, kind == RED_MAX);
        emit(k, "@%s st.global.f32 [%s], %s;", P(pt), D(y), F(total));
    }
    char name[64];
    snprintf(name, sizeof name, "red_%s_final", red_names[kind]);
    kern_finish(mod, k, name, ".param .u64 p_y, .param .u64 p_part, .param .u64 p_count",
                ".maxntid 256, 1, 1\n", RED_SHARED);
}

void module_reduce(strbuf *mod)
{
    for (int kind = RED_SUM; kind <= RED_ARGMAX; kind++) {
        gen_red_part(mod, (enum red_kind)kind);
        gen_red_final(mod, (enum red_kind)kind);
    }
}
