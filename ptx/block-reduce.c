/* SPDX-License-Identifier: MIT */
/* block-reduce.c - warp shuffles and block-wide reductions (256 threads =
 * 8 warps) shared by the reduce, rows and matrix modules. */
#include "gen-ptx.h"

static int shfl_f32(kern *k, int v, int off)
{
    int b = nr(k), o = nr(k), f = nf(k);
    emit(k, "mov.b32 %s, %s;", R(b), F(v));
    emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(o), R(b), off);
    emit(k, "mov.b32 %s, %s;", F(f), R(o));
    return f;
}

static int shfl_b64(kern *k, int v, int off) /* v: a .b64 register */
{
    int lo = nr(k), hi = nr(k), lo2 = nr(k), hi2 = nr(k), o = nd(k);
    emit(k, "mov.b64 {%s, %s}, %s;", R(lo), R(hi), D(v));
    emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(lo2), R(lo), off);
    emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(hi2), R(hi), off);
    emit(k, "mov.b64 %s, {%s, %s};", D(o), R(lo2), R(hi2));
    return o;
}

int shfl_f64(kern *k, int v, int off)
{
    int b = nd(k), f = nfd(k);
    emit(k, "mov.b64 %s, %s;", D(b), FD(v));
    int o = shfl_b64(k, b, off);
    emit(k, "mov.b64 %s, %s;", FD(f), D(o));
    return f;
}

/* Sum of v over the block, in every thread, in a fixed order (deterministic). */
int block_sum_f64(kern *k, int v, int lane, int warp)
{
    int acc = v;
    for (int off = 16; off >= 1; off /= 2) {
        int o = shfl_f64(k, acc, off), s = nfd(k);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(acc), FD(o));
        acc = s;
    }
    int base = nr(k), pl = np(k), w8 = nr(k);
    emit(k, "mov.u32 %s, red_smem;", R(base));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pl), R(lane));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(w8), R(warp), R(base));
    emit(k, "@%s st.shared.f64 [%s], %s;", P(pl), R(w8), FD(acc));
    emit(k, "bar.sync 0;");
    int total = nfd(k);
    emit(k, "ld.shared.f64 %s, [%s];", FD(total), R(base));
    for (int w = 1; w < RED_WARPS; w++) {
        int t = nfd(k), s = nfd(k);
        emit(k, "ld.shared.f64 %s, [%s+%d];", FD(t), R(base), w * 8);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(total), FD(t));
        total = s;
    }
    emit(k, "bar.sync 0;");
    return total;
}

/* max (is_max) or min of v over the block, NaN propagating. */
int block_minmax_f32(kern *k, int v, int lane, int warp, int is_max)
{
    const char *ins = is_max ? "max.NaN.f32" : "min.NaN.f32";
    int acc = v;
    for (int off = 16; off >= 1; off /= 2) {
        int o = shfl_f32(k, acc, off), s = nf(k);
        emit(k, "%s %s, %s, %s;", ins, F(s), F(acc), F(o));
        acc = s;
    }
    int base = nr(k), pl = np(k), w4 = nr(k);
    emit(k, "mov.u32 %s, red_smem;", R(base));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pl), R(lane));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(w4), R(warp), R(base));
    emit(k, "@%s st.shared.f32 [%s], %s;", P(pl), R(w4), F(acc));
    emit(k, "bar.sync 0;");
    int total = nf(k);
    emit(k, "ld.shared.f32 %s, [%s];", F(total), R(base));
    for (int w = 1; w < RED_WARPS; w++) {
        int t = nf(k), s = nf(k);
        emit(k, "ld.shared.f32 %s, [%s+%d];", F(t), R(base), w * 4);
        emit(k, "%s %s, %s, %s;", ins, F(s), F(total), F(t));
        total = s;
    }
    emit(k, "bar.sync 0;");
    return total;
}

/* argmax pair (v, i): replaces it by (v2, i2) when that one comes first in
 * "first maximum, first NaN wins" order. */
void argmax_combine(kern *k, int *v, int *i, int v2, int i2)
{
    int n1 = np(k), n2 = np(k), ilt = np(k), gt = np(k), eq = np(k);
    int t1 = np(k), t2 = np(k), nn1 = np(k), take = np(k);
    emit(k, "setp.nan.f32 %s, %s, %s;", P(n1), F(*v), F(*v));
    emit(k, "setp.nan.f32 %s, %s, %s;", P(n2), F(v2), F(v2));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(ilt), D(i2), D(*i));
    emit(k, "setp.gt.f32 %s, %s, %s;", P(gt), F(v2), F(*v));
    emit(k, "setp.eq.f32 %s, %s, %s;", P(eq), F(v2), F(*v));
    emit(k, "and.pred %s, %s, %s;", P(t1), P(eq), P(ilt));
    emit(k, "or.pred %s, %s, %s;", P(t1), P(t1), P(gt));
    emit(k, "not.pred %s, %s;", P(nn1), P(n1));
    emit(k, "or.pred %s, %s, %s;", P(t2), P(nn1), P(ilt));
    emit(k, "and.pred %s, %s, %s;", P(t2), P(t2), P(n2));
    emit(k, "or.pred %s, %s, %s;", P(take), P(t1), P(t2));
    int nv = nf(k), ni = nd(k);
    emit(k, "selp.f32 %s, %s, %s, %s;", F(nv), F(v2), F(*v), P(take));
    emit(k, "selp.b64 %s, %s, %s, %s;", D(ni), D(i2), D(*i), P(take));
    *v = nv;
    *i = ni;
}

void block_argmax(kern *k, int *v, int *i, int lane, int warp)
{
    for (int off = 16; off >= 1; off /= 2) {
        int ov = shfl_f32(k, *v, off), oi = shfl_b64(k, *i, off);
        argmax_combine(k, v, i, ov, oi);
    }
    int base = nr(k), pl = np(k), slot = nr(k);
    emit(k, "mov.u32 %s, red_smem;", R(base));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pl), R(lane));
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(slot), R(warp), R(base));
    emit(k, "@%s st.shared.f32 [%s], %s;", P(pl), R(slot), F(*v));
    emit(k, "@%s st.shared.u64 [%s+8], %s;", P(pl), R(slot), D(*i));
    emit(k, "bar.sync 0;");
    int tv = nf(k), ti = nd(k);
    emit(k, "ld.shared.f32 %s, [%s];", F(tv), R(base));
    emit(k, "ld.shared.u64 %s, [%s+8];", D(ti), R(base));
    for (int w = 1; w < RED_WARPS; w++) {
        int wv = nf(k), wi = nd(k);
        emit(k, "ld.shared.f32 %s, [%s+%d];", F(wv), R(base), w * 16);
        emit(k, "ld.shared.u64 %s, [%s+%d];", D(wi), R(base), w * 16 + 8);
        argmax_combine(k, &tv, &ti, wv, wi);
    }
    emit(k, "bar.sync 0;");
    *v = tv;
    *i = ti;
}

void lane_warp(kern *k, int *tid, int *lane, int *warp)
{
    *tid = sreg(k, "%tid.x");
    *lane = nr(k);
    *warp = nr(k);
    emit(k, "and.b32 %s, %s, 31;", R(*lane), R(*tid));
    emit(k, "shr.u32 %s, %s, 5;", R(*warp), R(*tid));
}
