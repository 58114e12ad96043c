/* SPDX-License-Identifier: MIT */
/* attention.c - the fused attention of module "infer": attn_warp_<kv>[_v]_d<D>
 * (the KV cache's dtype f32 or f16; _v: K and V rows 16-byte aligned, read
 * with vector loads; D = 64, 128 or 256: head_dim at most) and attn_merge.
 *
 * out = softmax(scale Q K^T + causal mask) V, grouped-query, without a
 * score matrix (flash-decoding): the keys of one query are cut into
 * `splits` ranges of `chunk` keys (whole tiles of 32); a warp runs an online
 * softmax over one range for HB query heads of one KV group (running
 * maximum; the sum and the weighted sum of V rescaled when it grows) and
 * writes (max, sum, acc[head_dim]) per head to the scratch; attn_merge
 * combines the ranges of each (query, head).  Decode (one query) uses many
 * ranges, so that the whole GPU reads the cache; long prefills use one.
 * attn_block_<kv>[_v]_d<D> runs the same warps with the ranges as the warps
 * of one block (grid: warps of heads, queries), which merges them in shared
 * memory as attn_merge would (same order of operations, same results): one
 * launch where the ranges are few (a short cache).
 *
 * Inside a warp, lane j scores key j of a tile of 32 for the HB heads: its
 * K row in 16-byte loads when the rows are 16-byte aligned, each value
 * converted to float64 once for the HB heads (conversions to and from 64
 * bits run at a quarter of the float64 FMA rate, and reading the group's
 * cache once per HB heads saves L2 traffic: HB = 4 measured 14.5 us for the
 * decode of doc/benchmarks-cuda.md, 2 heads 19.2 us, 1 head 23.1 us), q in
 * shared memory as float64, read by broadcast.  For p V each lane owns
 * D / 32 dimensions of the V rows (coalesced rows; the p of each key read
 * from shared memory by broadcast).  The lanes prefetch their key's V row
 * into L1 before scoring, so the p V loop finds it there.  Scores,
 * probabilities and sums are float64, like the scalar reference (an f16
 * cache is widened exactly): the strict contract holds for every call.
 *
 * attn_{warp,block}_<kv>_v_d64_relaxed, for relaxed calls with aligned
 * rows and head_dim up to 64: the same warps in float32 (q, scores, running maxima, sums, p and
 * accumulators; K and V widened to float32, e^x by ex2.approx), each score
 * summed in blocks of 8 products; (m, sum, acc) widened to float64 for
 * the scratch and the merges, which are the strict kernels'.  (Prefetching
 * the next tile's K and V rows into L2 was measured on an H200 and made
 * long caches 1-9% slower.)
 *
 * Grid of attn_warp_*: x = key ranges, y = groups of 4 warps (a warp per HB
 * heads of a KV group, NG = ceil(group / HB) warps per KV group), z =
 * queries. */
#include "gen-ptx.h"
#include "../plugins/cuda/cuda-ptx.h"

#include <math.h>

static int shfl_d(kern *k, int v, const char *mode, int lane_or_off)
{
    int lo = nr(k), hi = nr(k), lo2 = nr(k), hi2 = nr(k), o = nfd(k);
    emit(k, "mov.b64 {%s, %s}, %s;", R(lo), R(hi), FD(v));
    emit(k, "shfl.sync.%s.b32 %s, %s, %d, 31, -1;", mode, R(lo2), R(lo), lane_or_off);
    emit(k, "shfl.sync.%s.b32 %s, %s, %d, 31, -1;", mode, R(hi2), R(hi), lane_or_off);
    emit(k, "mov.b64 %s, {%s, %s};", FD(o), R(lo2), R(hi2));
    return o;
}

/* e^x for x <= 0 in double, through the float exp (x rounded to float: an
 * error of |x| 2^-24 relative, which matters only where e^x is tiny) */
static int exp_neg(kern *k, int xd)
{
    int f = nf(k), o = nfd(k);
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(f), FD(xd));
    int e = m_exp(k, f);
    emit(k, "cvt.f64.f32 %s, %s;", FD(o), F(e));
    return o;
}

/* element l of a cache row at base (f32 or f16) as double */
static int kv_load(kern *k, int row, int l, int half, int pred)
{
    int a = nd(k), o = nfd(k);
    emit(k, "mov.f64 %s, %s;", FD(o), CD(0.0));
    if (half) {
        int h = nr(k), f = nf(k);
        emit(k, "mad.lo.u64 %s, %s, 2, %s;", D(a), D(l), D(row));
        emit(k, "mov.b32 %s, 0;", R(h));
        emit(k, "@%s ld.global.nc.u16 %s, [%s];", P(pred), R(h), D(a));
        emit(k, "{ .reg .b16 t; cvt.u16.u32 t, %s; cvt.f32.f16 %s, t; }", R(h), F(f));
        emit(k, "cvt.f64.f32 %s, %s;", FD(o), F(f));
    } else {
        int f = nf(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(a), D(l), D(row));
        emit(k, "mov.f32 %s, 0f00000000;", F(f));
        emit(k, "@%s ld.global.nc.f32 %s, [%s];", P(pred), F(f), D(a));
        emit(k, "cvt.f64.f32 %s, %s;", FD(o), F(f));
    }
    return o;
}

/* address of the row of token t, head hh of a [tokens][heads][d] tensor */
static int row_addr(kern *k, int base, int t, int ts, int hh, int hs, int elem)
{
    int o = nd(k), a = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(o), D(t), D(ts));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(o), D(hh), D(hs), D(o));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(a), D(o), elem, D(base));
    return a;
}

#define HB RAYO_PTX_ATTN_HEADS_PER_WARP /* query heads per warp: 1, 2 or 4 */
#define VU 8      /* keys of V in flight per round (rows not aligned: loaded as doubles) */

typedef struct warp_regs {
    int relaxed;        /* float32 scores, sums and accumulators (else float64) */
    int part, q, k, v, n_q, n_kv, group, d, causal, qt, qh, kt, kh, vt, vh, chunk, splits, nb, ng;
    int scale;          /* .f64 (.f32 relaxed) */
    int lane, warp;     /* .b32 */
    int lane64;         /* .b64 */
    int s, kvh, hb0;    /* .b64 range, KV head, first head of the warp within the group */
    int qs, ps;         /* .b32 shared: the warp's q [D][HB] and p [32][HB] (float64) */
    int out, ot, oh;    /* .b64 attn_block_*: the output and its strides */
} warp_regs;

/* The warp's arithmetic width: float64 for strict calls, float32 for the
 * relaxed kernels (_relaxed), whose contract float scores meet (a score's
 * error e is a relative error e in its weight).  A fresh register, its
 * name, the type suffix, an immediate and the bytes of a value in shared
 * memory. */
static int nw(kern *k, const warp_regs *g) { return g->relaxed ? nf(k) : nfd(k); }
static const char *W(const warp_regs *g, int i) { return g->relaxed ? F(i) : FD(i); }
static const char *WT(const warp_regs *g) { return g->relaxed ? "f32" : "f64"; }
static const char *CW(const warp_regs *g, double v) { return g->relaxed ? C((float)v) : CD(v); }
static int WS(const warp_regs *g) { return g->relaxed ? 4 : 8; }

/* v from lane (lane_or_off) of the warp, in the warp's width */
static int shfl_w(kern *k, const warp_regs *g, int v, const char *mode, int lane_or_off)
{
    if (!g->relaxed)
        return shfl_d(k, v, mode, lane_or_off);
    int o = nf(k);
    emit(k, "shfl.sync.%s.b32 %s, %s, %d, 31, -1;", mode, F(o), F(v), lane_or_off);
    return o;
}

/* e^x for x <= 0 in the warp's width: relaxed through ex2.approx (a
 * relative error near 2^-22 plus |x| 2^-24 from rounding x log2(e)) */
static int exp_w(kern *k, const warp_regs *g, int x)
{
    if (!g->relaxed)
        return exp_neg(k, x);
    int t = nf(k), o = nf(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(x), C(1.4426950408889634f));
    emit(k, "ex2.approx.ftz.f32 %s, %s;", F(o), F(t));
    return o;
}

/* 8 values of a cache row (dimensions l0 .. l0 + 7) into out[8]: vec (the
 * row 16-byte aligned, d a multiple of 8: one predicate for all 8) as raw
 * words for raw_to_wide (4 f16 pairs, or 8 floats), else as doubles, loaded
 * element by element with dims < d. */
static void kv_load8(kern *k, const warp_regs *g, int row, int l0, int half, int vec, int pkey, int *out)
{
    int pin = np(k);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(l0), D(g->d));
    emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(pkey));
    if (!vec) {
        for (int e = 0; e < 8; e++) {
            int le = nd(k), pe = np(k);
            emit(k, "add.u64 %s, %s, %d;", D(le), D(l0), e);
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pe), D(le), D(g->d));
            emit(k, "and.pred %s, %s, %s;", P(pe), P(pe), P(pkey));
            out[e] = kv_load(k, row, le, half, pe);
        }
        return;
    }
    int a = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(a), D(l0), half ? 2 : 4, D(row));
    for (int e = 0; e < 8; e++) { /* raw words: out[e] holds a .b32 register until raw_to_wide */
        out[e] = nr(k);
        emit(k, "mov.b32 %s, 0;", R(out[e]));
    }
    for (int h = 0; h < (half ? 1 : 2); h++)
        emit(k, "@%s ld.global.nc.v4.b32 {%s, %s, %s, %s}, [%s+%d];", P(pin), R(out[4 * h]), R(out[4 * h + 1]),
             R(out[4 * h + 2]), R(out[4 * h + 3]), D(a), 16 * h);
}

/* The n values in the raw words w (f16 pairs or f32) in the warp's width
 * in out; vec: w are words of loads, else already doubles (copied; strict
 * only). */
static void raw_to_wide(kern *k, const warp_regs *g, const int *w, int n, int half, int vec, int *out)
{
    for (int e = 0; e < n; e++) {
        if (!vec) {
            out[e] = w[e];
            continue;
        }
        out[e] = nw(k, g);
        if (half)
            emit(k, "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %s; cvt.%s.f16 %s, %s; }", R(w[e / 2]), WT(g),
                 W(g, out[e]), e % 2 ? "hi" : "lo");
        else if (g->relaxed)
            emit(k, "mov.b32 %s, %s;", F(out[e]), R(w[e]));
        else
            emit(k, "{ .reg .f32 t; mov.b32 t, %s; cvt.f64.f32 %s, t; }", R(w[e]), FD(out[e]));
    }
}

/* the lane's vs values of a V row (dimensions lane * vs ..): vec as raw
 * words for raw_to_wide, else as doubles */
static void v_load(kern *k, const warp_regs *g, int row, int vs, int half, int vec, int pkey, int *out)
{
    int l0 = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %d;", D(l0), D(g->lane64), vs);
    if (!vec) {
        for (int e = 0; e < vs; e++) {
            int le = nd(k), pe = np(k);
            emit(k, "add.u64 %s, %s, %d;", D(le), D(l0), e);
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pe), D(le), D(g->d));
            emit(k, "and.pred %s, %s, %s;", P(pe), P(pe), P(pkey));
            out[e] = kv_load(k, row, le, half, pe);
        }
        return;
    }
    int pin = np(k), a = nd(k), nw = half ? vs / 2 : vs, w[8];
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(l0), D(g->d));
    emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(pkey));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(a), D(l0), half ? 2 : 4, D(row));
    for (int e = 0; e < nw; e++) {
        w[e] = nr(k);
        emit(k, "mov.b32 %s, 0;", R(w[e]));
    }
    for (int o = 0; o < nw; o += 4) {
        int n = nw - o < 4 ? nw - o : 4;
        if (n == 1)
            emit(k, "@%s ld.global.nc.b32 %s, [%s];", P(pin), R(w[o]), D(a));
        else if (n == 2)
            emit(k, "@%s ld.global.nc.v2.b32 {%s, %s}, [%s+%d];", P(pin), R(w[o]), R(w[o + 1]), D(a), 4 * o);
        else
            emit(k, "@%s ld.global.nc.v4.b32 {%s, %s, %s, %s}, [%s+%d];", P(pin), R(w[o]), R(w[o + 1]),
                 R(w[o + 2]), R(w[o + 3]), D(a), 4 * o);
    }
    for (int e = 0; e < nw; e++)
        out[e] = w[e];
}

/* the HB values at shared address addr + off (one per head), in pairs
 * (float32: in fours where HB is 4) */
static void ld_heads(kern *k, const warp_regs *g, int addr, int off, int *out)
{
    for (int e = 0; e < HB; e++)
        out[e] = nw(k, g);
    if (HB == 1)
        emit(k, "ld.shared.%s %s, [%s+%d];", WT(g), W(g, out[0]), R(addr), off);
    else if (HB == 4 && g->relaxed)
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(out[0]), F(out[1]), F(out[2]), F(out[3]),
             R(addr), off);
    else
        for (int e = 0; e + 1 < HB; e += 2)
            emit(k, "ld.shared.v2.%s {%s, %s}, [%s+%d];", WT(g), W(g, out[e]), W(g, out[e + 1]), R(addr),
                 off + WS(g) * e);
}

/* The warp's q rows in its width in shared memory, qs[l][e] for dimension l <
 * dmax of head hb0 + e of the group (zeros past d and for heads past the
 * group, so that they add nothing). */
static void stage_q(kern *k, const warp_regs *g, int qrow0, int dmax)
{
    for (int it = 0; it < dmax * HB / 32; it++) {
        int idx = nr(k), l = nd(k), e = nd(k), pin = np(k), ph = np(k), he = nd(k), a = nd(k), f = nf(k),
            fd = nfd(k), sa = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(idx), R(g->lane), 32 * it);
        emit(k, "cvt.u64.u32 %s, %s;", D(l), R(idx));
        emit(k, "and.b64 %s, %s, %d;", D(e), D(l), HB - 1);
        emit(k, "shr.u64 %s, %s, %d;", D(l), D(l), __builtin_ctz(HB));
        emit(k, "add.u64 %s, %s, %s;", D(he), D(g->hb0), D(e));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(l), D(g->d));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(ph), D(he), D(g->group));
        emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(ph));
        /* q[i][kvh * group + hb0 + e][l]: qrow0 is head kvh * group + hb0 */
        emit(k, "mul.lo.u64 %s, %s, %s;", D(a), D(e), D(g->qh));
        emit(k, "add.u64 %s, %s, %s;", D(a), D(a), D(l));
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(a), D(a), D(qrow0));
        emit(k, "mov.f32 %s, 0f00000000;", F(f));
        emit(k, "@%s ld.global.nc.f32 %s, [%s];", P(pin), F(f), D(a));
        if (!g->relaxed)
            emit(k, "cvt.f64.f32 %s, %s;", FD(fd), F(f));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(sa), R(idx), WS(g), R(g->qs));
        emit(k, "st.shared.%s [%s], %s;", WT(g), R(sa), g->relaxed ? F(f) : FD(fd));
    }
    emit(k, "bar.warp.sync -1;");
}

/* The key's V row (row j, valid) into L1 for the p V loop of warp_tile. */
static void warp_prefetch_v(kern *k, const warp_regs *g, int half, int dmax, int j, int valid)
{
    int esz = half ? 2 : 4;
    int vrow = row_addr(k, g->v, j, g->vt, g->kvh, g->vh, esz), rb = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %d;", D(rb), D(g->d), esz);
    for (int o = 0; o < dmax * esz; o += 128) {
        int po = np(k);
        emit(k, "setp.gt.u64 %s, %s, %d;", P(po), D(rb), o);
        emit(k, "and.pred %s, %s, %s;", P(po), P(po), P(valid));
        emit(k, "@%s prefetch.global.L1 [%s+%d];", P(po), D(vrow), o);
    }
}

/* The scores of the lane's key (row krow, valid): dot[e] over the
 * dimensions for each head e, DC values at a time (all their loads in
 * flight before the first use).  Relaxed: the products of 8 dimensions
 * summed first, then added to dot (scores near 3e3 must be right to ~1e-3;
 * a running float sum's rounding errors are about 3 times larger). */
static void warp_scores(kern *k, const warp_regs *g, int half, int vec, int dmax, int krow, int valid, int *dot)
{
    const int dc = dmax < 64 ? dmax : 64;
    int l0 = nd(k), pl = np(k), l_dot = nlabel(k);
    for (int e = 0; e < HB; e++) {
        dot[e] = nw(k, g);
        emit(k, "mov.%s %s, %s;", WT(g), W(g, dot[e]), CW(g, 0.0));
    }
    emit(k, "mov.u64 %s, 0;", D(l0));
    label(k, l_dot);
    int raw[8][8], kv[8][8];
    for (int c = 0; c < dc / 8; c++) {
        int lc = nd(k);
        emit(k, "add.u64 %s, %s, %d;", D(lc), D(l0), 8 * c);
        kv_load8(k, g, krow, lc, half, vec, valid, raw[c]);
    }
    for (int c = 0; c < dc / 8; c++)
        raw_to_wide(k, g, raw[c], 8, half, vec, kv[c]);
    int qa = nr(k), l32 = nr(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(l32), D(l0));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(qa), R(l32), WS(g) * HB, R(g->qs));
    for (int c = 0; c < dc / 8; c++) {
        int part[HB];
        for (int x = 0; x < 8; x++) {
            int q[HB];
            ld_heads(k, g, qa, WS(g) * HB * (8 * c + x), q);
            for (int e = 0; e < HB; e++) {
                if (!g->relaxed) {
                    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(dot[e]), FD(q[e]), FD(kv[c][x]), FD(dot[e]));
                    continue;
                }
                if (x == 0) {
                    part[e] = nf(k);
                    emit(k, "mul.rn.f32 %s, %s, %s;", F(part[e]), F(q[e]), F(kv[c][x]));
                } else {
                    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(part[e]), F(q[e]), F(kv[c][x]), F(part[e]));
                }
            }
        }
        for (int e = 0; g->relaxed && e < HB; e++) /* whole sums of 8: a running float sum rounds more */
            emit(k, "add.rn.f32 %s, %s, %s;", F(dot[e]), F(dot[e]), F(part[e]));
    }
    emit(k, "add.u64 %s, %s, %d;", D(l0), D(l0), dc);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pl), D(l0), D(g->d));
    emit(k, "@%s bra %s;", P(pl), L(l_dot));
}

/* Online softmax per head: m[e], sum[e] and acc[e] rescaled to the tile's
 * new maximum; p of the lane's key to ps[lane][e]. */
static void warp_online_softmax(kern *k, const warp_regs *g, int dmax, int valid, const int *dot, const int *m,
                                const int *sum, int acc[HB][8])
{
    int vs = dmax / 32;
    const char *ty = WT(g);
    int pa = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(pa), R(g->lane), WS(g) * HB, R(g->ps));
    for (int e = 0; e < HB; e++) {
        int sc = nw(k, g), tm = nw(k, g);
        emit(k, "mul.rn.%s %s, %s, %s;", ty, W(g, sc), W(g, dot[e]), W(g, g->scale));
        emit(k, "@!%s mov.%s %s, %s;", P(valid), ty, W(g, sc), CW(g, -INFINITY));
        emit(k, "mov.%s %s, %s;", ty, W(g, tm), W(g, sc));
        for (int o = 16; o >= 1; o /= 2) {
            int t = shfl_w(k, g, tm, "bfly", o);
            emit(k, "max.%s %s, %s, %s;", ty, W(g, tm), W(g, tm), W(g, t));
        }
        int nm = nw(k, g), diff = nw(k, g);
        emit(k, "max.%s %s, %s, %s;", ty, W(g, nm), W(g, m[e]), W(g, tm)); /* finite: key tb is valid */
        emit(k, "sub.rn.%s %s, %s, %s;", ty, W(g, diff), W(g, m[e]), W(g, nm)); /* -inf for the first tile */
        int shrink = exp_w(k, g, diff);
        emit(k, "mul.rn.%s %s, %s, %s;", ty, W(g, sum[e]), W(g, sum[e]), W(g, shrink));
        for (int t = 0; t < vs; t++)
            emit(k, "mul.rn.%s %s, %s, %s;", ty, W(g, acc[e][t]), W(g, acc[e][t]), W(g, shrink));
        emit(k, "mov.%s %s, %s;", ty, W(g, m[e]), W(g, nm));
        int pd = nw(k, g), p = nw(k, g);
        emit(k, "sub.rn.%s %s, %s, %s;", ty, W(g, pd), W(g, sc), W(g, nm));
        int ex = exp_w(k, g, pd);
        emit(k, "selp.%s %s, %s, %s, %s;", ty, W(g, p), W(g, ex), CW(g, 0.0), P(valid));
        emit(k, "add.rn.%s %s, %s, %s;", ty, W(g, sum[e]), W(g, sum[e]), W(g, p));
        emit(k, "st.shared.%s [%s+%d], %s;", ty, R(pa), WS(g) * e, W(g, p));
    }
}

/* acc[e] += p[key][e] v_key over the tile's keys [tb, j1), vu keys at a
 * time, 32 raw words of loads in flight (a key past the range has p = 0 and
 * loads nothing). */
static void warp_pv(kern *k, const warp_regs *g, int half, int vec, int dmax, int tb, int j1, int acc[HB][8])
{
    int vs = dmax / 32, esz = half ? 2 : 4;
    int raw_words = half ? vs / 2 : vs, vu = vec ? 32 / raw_words : VU;
    if (vu > 32)
        vu = 32;
    int jj = nr(k), cnt = nr(k), pj = np(k), l_key = nlabel(k);
    {
        int c64 = nd(k);
        emit(k, "sub.u64 %s, %s, %s;", D(c64), D(j1), D(tb));
        emit(k, "min.u64 %s, %s, 32;", D(c64), D(c64));
        emit(k, "cvt.u32.u64 %s, %s;", R(cnt), D(c64));
    }
    emit(k, "mov.u32 %s, 0;", R(jj));
    label(k, l_key);
    {
        int vr[32][8];
        for (int u = 0; u < vu; u++) {
            int ju = nr(k), pk = np(k), key = nd(k), ju64 = nd(k);
            emit(k, "add.u32 %s, %s, %d;", R(ju), R(jj), u);
            emit(k, "setp.lt.u32 %s, %s, %s;", P(pk), R(ju), R(cnt));
            emit(k, "cvt.u64.u32 %s, %s;", D(ju64), R(ju));
            emit(k, "add.u64 %s, %s, %s;", D(key), D(tb), D(ju64));
            int vrow = row_addr(k, g->v, key, g->vt, g->kvh, g->vh, esz);
            v_load(k, g, vrow, vs, half, vec, pk, vr[u]);
        }
        int pb = nr(k);
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(pb), R(jj), WS(g) * HB, R(g->ps));
        for (int u = 0; u < vu; u++) {
            int p[HB], vd[8];
            raw_to_wide(k, g, vr[u], vs, half, vec, vd);
            ld_heads(k, g, pb, WS(g) * HB * u, p);
            for (int e = 0; e < HB; e++)
                for (int t = 0; t < vs; t++)
                    emit(k, "fma.rn.%s %s, %s, %s, %s;", WT(g), W(g, acc[e][t]), W(g, p[e]), W(g, vd[t]),
                         W(g, acc[e][t]));
        }
    }
    emit(k, "add.u32 %s, %s, %d;", R(jj), R(jj), vu);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pj), R(jj), R(cnt));
    emit(k, "@%s bra %s;", P(pj), L(l_key));
    emit(k, "bar.warp.sync -1;"); /* the next tile's p overwrite these */
}

/* One tile of 32 keys [tb, tb + 32) of the range ending at j1: the warp's
 * m[e], the lane's sum[e] and acc[e][t] (dimension lane * vs + t) of each
 * head e are updated. */
static void warp_tile(kern *k, const warp_regs *g, int half, int vec, int dmax, int tb, int j1, const int *m,
                      const int *sum, int acc[HB][8])
{
    int j = nd(k), valid = np(k), esz = half ? 2 : 4;
    emit(k, "add.u64 %s, %s, %s;", D(j), D(tb), D(g->lane64));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(valid), D(j), D(j1));
    int krow = row_addr(k, g->k, j, g->kt, g->kvh, g->kh, esz);
    warp_prefetch_v(k, g, half, dmax, j, valid);
    int dot[HB];
    warp_scores(k, g, half, vec, dmax, krow, valid, dot);
    warp_online_softmax(k, g, dmax, valid, dot, m, sum, acc);
    emit(k, "bar.warp.sync -1;");
    warp_pv(k, g, half, vec, dmax, tb, j1, acc);
}

void attn_read_params(kern *k, attn_params *a)
{
    a->q = param_global(k, "p_q");
    a->k = param_global(k, "p_k");
    a->v = param_global(k, "p_v");
    a->n_q = param_u64(k, "p_n_q");
    a->n_kv = param_u64(k, "p_n_kv");
    a->group = param_u64(k, "p_group");
    a->d = param_u64(k, "p_d");
    a->causal = param_u64(k, "p_causal");
    a->qt = param_u64(k, "p_qt");
    a->qh = param_u64(k, "p_qh");
    a->kt = param_u64(k, "p_kt");
    a->kh = param_u64(k, "p_kh");
    a->vt = param_u64(k, "p_vt");
    a->vh = param_u64(k, "p_vh");
}

/* attn_warp's parameters, its scale in the warp's width, lane and warp. */
static void warp_params(kern *k, warp_regs *g)
{
    attn_params a;
    g->part = param_global(k, "p_part");
    attn_read_params(k, &a);
    g->q = a.q, g->k = a.k, g->v = a.v, g->n_q = a.n_q, g->n_kv = a.n_kv, g->group = a.group, g->d = a.d;
    g->causal = a.causal, g->qt = a.qt, g->qh = a.qh, g->kt = a.kt, g->kh = a.kh, g->vt = a.vt, g->vh = a.vh;
    g->chunk = param_u64(k, "p_chunk");
    g->splits = param_u64(k, "p_splits");
    g->nb = param_u64(k, "p_nb"); /* warps in all: KV heads x ng */
    g->ng = param_u64(k, "p_ng"); /* warps per KV group */
    if (g->relaxed) {
        g->scale = param_f32(k, "p_scale");
    } else {
        g->scale = nfd(k);
        int sf = param_f32(k, "p_scale");
        emit(k, "cvt.f64.f32 %s, %s;", FD(g->scale), F(sf));
    }
    int tid;
    lane_warp(k, &tid, &g->lane, &g->warp);
    g->lane64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(g->lane64), R(g->lane));
}

/* This warp's range of keys [j0, j1) for query i: the split s of the keys
 * visible to it (n_kv - n_q + i + 1 when causal). */
static void warp_range(kern *k, const warp_regs *g, int i, int *j0_out, int *j1_out)
{
    int vis = nd(k), pc = np(k), j0 = nd(k), j1 = nd(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pc), D(g->causal));
    emit(k, "mov.u64 %s, %s;", D(vis), D(g->n_kv));
    emit(k, "@%s sub.u64 %s, %s, %s;", P(pc), D(vis), D(vis), D(g->n_q));
    emit(k, "@%s add.u64 %s, %s, %s;", P(pc), D(vis), D(vis), D(i));
    emit(k, "@%s add.u64 %s, %s, 1;", P(pc), D(vis), D(vis));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(j0), D(g->s), D(g->chunk));
    emit(k, "add.u64 %s, %s, %s;", D(j1), D(j0), D(g->chunk));
    emit(k, "min.u64 %s, %s, %s;", D(j1), D(j1), D(vis));
    *j0_out = j0;
    *j1_out = j1;
}

/* m = -inf, sum = 0, acc = 0 for each head of the warp. */
static void warp_init(kern *k, const warp_regs *g, int dmax, int *m, int *sum, int acc[HB][8])
{
    for (int e = 0; e < HB; e++) {
        m[e] = nw(k, g), sum[e] = nw(k, g);
        emit(k, "mov.%s %s, %s;", WT(g), W(g, m[e]), CW(g, -INFINITY));
        emit(k, "mov.%s %s, %s;", WT(g), W(g, sum[e]), CW(g, 0.0));
        for (int t = 0; t < dmax / 32; t++) {
            acc[e][t] = nw(k, g);
            emit(k, "mov.%s %s, %s;", WT(g), W(g, acc[e][t]), CW(g, 0.0));
        }
    }
}

/* The relaxed warp's (m, sum, acc) widened to float64 in place (registers
 * renamed) for the stores and merges, which are the strict kernels'. */
static void warp_widen(kern *k, const warp_regs *g, int dmax, int *m, int *sum, int acc[HB][8])
{
    if (!g->relaxed)
        return;
    for (int e = 0; e < HB; e++) {
        int *r[2 + 8] = {&m[e], &sum[e]};
        for (int t = 0; t < dmax / 32; t++)
            r[2 + t] = &acc[e][t];
        for (int x = 0; x < 2 + dmax / 32; x++) {
            int o = nfd(k);
            emit(k, "cvt.f64.f32 %s, %s;", FD(o), F(*r[x]));
            *r[x] = o;
        }
    }
}

/* sum of head e over the warp's lanes, in every lane */
static void warp_sum(kern *k, int sum)
{
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_d(k, sum, "bfly", o);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(sum), FD(sum), FD(t));
    }
}

/* (m, sum, acc) of each head of the warp for query i to
 * part[((i * heads + h) * splits + s) * (2 + d)], h0: the warp's first head. */
static void warp_store(kern *k, const warp_regs *g, int dmax, int i, int h0, const int *m, const int *sum,
                       int acc[HB][8])
{
    int heads = nd(k), w2 = nd(k), l0 = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(heads), D(g->group), D(g->nb));
    emit(k, "div.u64 %s, %s, %s;", D(heads), D(heads), D(g->ng)); /* = KV heads x group */
    emit(k, "add.u64 %s, %s, 2;", D(w2), D(g->d));
    emit(k, "mul.lo.u64 %s, %s, %d;", D(l0), D(g->lane64), dmax / 32);
    for (int e = 0; e < HB; e++) {
        warp_sum(k, sum[e]);
        int he = nd(k), ph = np(k), slot = nd(k), base = nd(k), p0 = np(k);
        emit(k, "add.u64 %s, %s, %d;", D(he), D(g->hb0), e);
        emit(k, "setp.lt.u64 %s, %s, %s;", P(ph), D(he), D(g->group));
        emit(k, "add.u64 %s, %s, %d;", D(he), D(h0), e);
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(slot), D(i), D(heads), D(he));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(slot), D(slot), D(g->splits), D(g->s));
        emit(k, "mul.lo.u64 %s, %s, %s;", D(slot), D(slot), D(w2));
        emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(base), D(slot), D(g->part));
        emit(k, "setp.eq.and.u32 %s, %s, 0, %s;", P(p0), R(g->lane), P(ph));
        emit(k, "@%s st.global.f64 [%s], %s;", P(p0), D(base), FD(m[e]));
        emit(k, "@%s st.global.f64 [%s+8], %s;", P(p0), D(base), FD(sum[e]));
        for (int t = 0; t < dmax / 32; t++) {
            int lt = nd(k), pd = np(k), ga = nd(k);
            emit(k, "add.u64 %s, %s, %d;", D(lt), D(l0), t);
            emit(k, "setp.lt.and.u64 %s, %s, %s, %s;", P(pd), D(lt), D(g->d), P(ph));
            emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(ga), D(lt), D(base));
            emit(k, "@%s st.global.f64 [%s+16], %s;", P(pd), D(ga), FD(acc[e][t]));
        }
    }
}

/* ---- attn_block_*: the ranges merged in the block ------------------------
 * Warp s of the block is range s; it leaves (m, sum, acc) of its heads in
 * its own slab of shared memory (its q is no longer needed): m[e] at double
 * e, sum[e] at HB + e, acc[e][l] at 2 HB + e dmax + l.  Then a warp a head
 * finds its weights f_s and total as attn_merge does, and every thread
 * writes outputs, each summed in attn_merge's order (so that the results
 * are those of attn_warp_* then attn_merge, bit for bit). */
#define SLAB(dmax) (8 * HB * ((dmax) + 32)) /* bytes of shared memory per warp */

static void block_store(kern *k, const warp_regs *g, int dmax, const int *m, const int *sum, int acc[HB][8])
{
    int p0 = np(k), l0 = nr(k);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->lane));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(l0), R(g->lane), dmax / 32);
    for (int e = 0; e < HB; e++) {
        warp_sum(k, sum[e]);
        emit(k, "@%s st.shared.f64 [%s+%d], %s;", P(p0), R(g->qs), 8 * e, FD(m[e]));
        emit(k, "@%s st.shared.f64 [%s+%d], %s;", P(p0), R(g->qs), 8 * (HB + e), FD(sum[e]));
        for (int t = 0; t < dmax / 32; t++) { /* past d too: never read */
            int sa = nr(k);
            emit(k, "add.u32 %s, %s, %d;", R(sa), R(l0), t);
            emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(sa), R(sa), R(g->qs));
            emit(k, "st.shared.f64 [%s+%d], %s;", R(sa), 8 * (2 * HB + e * dmax), FD(acc[e][t]));
        }
    }
}

/* Head e's weights in warp e % splits (the heads side by side): lane s <
 * splits takes range s's m and sum of the head; the head's M (their
 * maximum), f_s = e^(m_s - M) (0 for a range without keys) to fsm[e][s] and
 * the total sum_s sum_s f_s (lane 0) to tot[e], the sums in
 * block_sum_f64's order. */
static void block_weights(kern *k, const warp_regs *g, int dmax, int slab0, int fsm, int tot)
{
    int ps = np(k), sa = nr(k), sp = nr(k), p0 = np(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(sp), D(g->splits));
    emit(k, "setp.lt.u32 %s, %s, %s;", P(ps), R(g->lane), R(sp));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->lane));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(sa), R(g->lane), SLAB(dmax), R(slab0));
    for (int e = 0; e < HB; e++) {
        int ms = nfd(k), ss = nfd(k), mx = nfd(k), df = nfd(k), none = np(k), prod = nfd(k), fa = nr(k);
        int owner = nr(k), pw = np(k), l_skip = nlabel(k);
        emit(k, "rem.u32 %s, %d, %s;", R(owner), e, R(sp));
        emit(k, "setp.ne.u32 %s, %s, %s;", P(pw), R(g->warp), R(owner));
        emit(k, "@%s bra %s;", P(pw), L(l_skip));
        emit(k, "mov.f64 %s, %s;", FD(ms), CD(-INFINITY));
        emit(k, "mov.f64 %s, %s;", FD(ss), CD(0.0));
        emit(k, "@%s ld.shared.f64 %s, [%s+%d];", P(ps), FD(ms), R(sa), 8 * e);
        emit(k, "@%s ld.shared.f64 %s, [%s+%d];", P(ps), FD(ss), R(sa), 8 * (HB + e));
        emit(k, "mov.f64 %s, %s;", FD(mx), FD(ms));
        for (int o = 16; o >= 1; o /= 2) {
            int t = shfl_d(k, mx, "bfly", o);
            emit(k, "max.f64 %s, %s, %s;", FD(mx), FD(mx), FD(t));
        }
        emit(k, "sub.rn.f64 %s, %s, %s;", FD(df), FD(ms), FD(mx));
        int f = exp_neg(k, df);
        emit(k, "setp.eq.f64 %s, %s, %s;", P(none), FD(ms), CD(-INFINITY));
        emit(k, "@%s mov.f64 %s, %s;", P(none), FD(f), CD(0.0));
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(fa), R(g->lane), R(fsm));
        emit(k, "st.shared.f64 [%s+%d], %s;", R(fa), 8 * 32 * e, FD(f));
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(prod), FD(ss), FD(f));
        warp_sum(k, prod);
        emit(k, "@%s st.shared.f64 [%s+%d], %s;", P(p0), R(tot), 8 * e, FD(prod));
        label(k, l_skip);
    }
    emit(k, "bar.sync 0;");
}

/* Output (e, l) of query i: sum over slices x < R = 256 / d of (sum over
 * ranges s = x, x + R, .. of acc_s[l] f_s, fused multiply-adds in that
 * order), divided by the total: attn_merge's order. */
static int block_output(kern *k, const warp_regs *g, int dmax, int slab0, int fsm, int e, int l, int nsl)
{
    int sum = nfd(k), x = nr(k), sp = nr(k), px = np(k), l_x = nlabel(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(sp), D(g->splits));
    emit(k, "mov.f64 %s, %s;", FD(sum), CD(0.0));
    emit(k, "mov.u32 %s, 0;", R(x));
    label(k, l_x);
    {
        int a = nfd(k), s = nr(k), pr = np(k), l_s = nlabel(k), l_done = nlabel(k);
        emit(k, "mov.f64 %s, %s;", FD(a), CD(0.0));
        emit(k, "mov.u32 %s, %s;", R(s), R(x));
        label(k, l_s);
        emit(k, "setp.ge.u32 %s, %s, %s;", P(pr), R(s), R(sp));
        emit(k, "@%s bra %s;", P(pr), L(l_done));
        int aa = nr(k), fa = nr(k), av = nfd(k), fv = nfd(k);
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(aa), R(s), SLAB(dmax), R(slab0));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(aa), R(e), 8 * dmax, R(aa));
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(aa), R(l), R(aa));
        emit(k, "ld.shared.f64 %s, [%s+%d];", FD(av), R(aa), 8 * 2 * HB);
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(fa), R(e), 8 * 32, R(fsm));
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(fa), R(s), R(fa));
        emit(k, "ld.shared.f64 %s, [%s];", FD(fv), R(fa));
        emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(a), FD(av), FD(fv), FD(a));
        emit(k, "add.u32 %s, %s, %s;", R(s), R(s), R(nsl));
        emit(k, "bra.uni %s;", L(l_s));
        label(k, l_done);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(sum), FD(sum), FD(a));
    }
    emit(k, "add.u32 %s, %s, 1;", R(x), R(x));
    emit(k, "setp.lt.u32 %s, %s, %s;", P(px), R(x), R(nsl));
    emit(k, "@%s bra %s;", P(px), L(l_x));
    return sum;
}

/* Every thread: outputs idx = tid, tid + threads, .. < HB dmax of query i
 * (head h0 + e, e = idx / dmax, dimension l = idx % dmax) where l < d and
 * the head is in the group; then the barrier before the next query. */
static void block_write(kern *k, const warp_regs *g, int dmax, int i, int h0, int slab0, int fsm, int tot)
{
    int tid = sreg(k, "%tid.x"), ntid = sreg(k, "%ntid.x"), idx = nr(k), nsl = nr(k), d32 = nr(k);
    int pi = np(k), l_loop = nlabel(k), l_end = nlabel(k), l_next = nlabel(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(d32), D(g->d));
    emit(k, "div.u32 %s, 256, %s;", R(nsl), R(d32));
    emit(k, "mov.u32 %s, %s;", R(idx), R(tid));
    label(k, l_loop);
    emit(k, "setp.ge.u32 %s, %s, %d;", P(pi), R(idx), HB * dmax);
    emit(k, "@%s bra %s;", P(pi), L(l_end));
    int e = nr(k), l = nr(k), e64 = nd(k), skip = np(k), ph = np(k);
    emit(k, "shr.u32 %s, %s, %d;", R(e), R(idx), __builtin_ctz((unsigned)dmax));
    emit(k, "and.b32 %s, %s, %d;", R(l), R(idx), dmax - 1);
    emit(k, "cvt.u64.u32 %s, %s;", D(e64), R(e));
    emit(k, "add.u64 %s, %s, %s;", D(e64), D(e64), D(g->hb0));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(ph), D(e64), D(g->group));
    emit(k, "setp.ge.u32 %s, %s, %s;", P(skip), R(l), R(d32));
    emit(k, "or.pred %s, %s, %s;", P(skip), P(skip), P(ph));
    emit(k, "@%s bra %s;", P(skip), L(l_next));
    {
        int sum = block_output(k, g, dmax, slab0, fsm, e, l, nsl), t = nfd(k), ta = nr(k), res = nfd(k), rf = nf(k);
        int he = nd(k), oa = nd(k), l64 = nd(k);
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(ta), R(e), R(tot));
        emit(k, "ld.shared.f64 %s, [%s];", FD(t), R(ta));
        emit(k, "div.rn.f64 %s, %s, %s;", FD(res), FD(sum), FD(t));
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(rf), FD(res));
        emit(k, "cvt.u64.u32 %s, %s;", D(he), R(e));
        emit(k, "add.u64 %s, %s, %s;", D(he), D(he), D(h0));
        int orow = row_addr(k, g->out, i, g->ot, he, g->oh, 4);
        emit(k, "cvt.u64.u32 %s, %s;", D(l64), R(l));
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(oa), D(l64), D(orow));
        emit(k, "st.global.f32 [%s], %s;", D(oa), F(rf));
    }
    label(k, l_next);
    emit(k, "add.u32 %s, %s, %s;", R(idx), R(idx), R(ntid));
    emit(k, "bra.uni %s;", L(l_loop));
    label(k, l_end);
    emit(k, "bar.sync 0;"); /* the next query's q overwrite the slabs */
}

/* dmax: 64, 128 or 256 (head_dim at most); vec: K and V rows 16-byte
 * aligned and head_dim a multiple of 8 (the plugin checks); merged: the
 * attn_block_* form (the ranges are the block's warps, merged in it);
 * relaxed: float32 arithmetic (vec only). */
static void gen_attn_warp(strbuf *mod, int half, int vec, int dmax, int merged, int relaxed)
{
    kern kk = {0}, *k = &kk;
    warp_regs g = {.relaxed = relaxed};
    warp_params(k, &g);
    if (merged) {
        g.out = param_global(k, "p_out");
        g.ot = param_u64(k, "p_ot");
        g.oh = param_u64(k, "p_oh");
    }
    int cx = sreg(k, "%ctaid.x"), cy = sreg(k, "%ctaid.y"), cz = sreg(k, "%ctaid.z"), nz = sreg(k, "%nctaid.z");
    int b = nd(k), pb = np(k), l_end = nlabel(k);
    g.s = nd(k);
    if (merged) { /* grid (warps of heads, queries); the block's warps are the ranges */
        emit(k, "cvt.u64.u32 %s, %s;", D(g.s), R(g.warp));
        emit(k, "cvt.u64.u32 %s, %s;", D(b), R(cx));
        cz = cy;
        nz = sreg(k, "%nctaid.y");
    } else {
        int w64 = nd(k);
        emit(k, "cvt.u64.u32 %s, %s;", D(g.s), R(cx));
        emit(k, "cvt.u64.u32 %s, %s;", D(b), R(cy));
        emit(k, "cvt.u64.u32 %s, %s;", D(w64), R(g.warp));
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(b), D(b), D(w64));
    }
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pb), D(b), D(g.nb));
    emit(k, "@%s bra %s;", P(pb), L(l_end)); /* attn_warp_*: only warp syncs below (attn_block_*: the whole block leaves) */
    g.kvh = nd(k);
    g.hb0 = nd(k);
    emit(k, "div.u64 %s, %s, %s;", D(g.kvh), D(b), D(g.ng));
    emit(k, "rem.u64 %s, %s, %s;", D(g.hb0), D(b), D(g.ng));
    emit(k, "mul.lo.u64 %s, %s, %d;", D(g.hb0), D(g.hb0), HB);
    int h0 = nd(k); /* the warp's first head */
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(h0), D(g.kvh), D(g.group), D(g.hb0));
    g.qs = nr(k);
    g.ps = nr(k);
    int slab0 = nr(k), fsm = nr(k), tot = nr(k);
    emit(k, "mov.u32 %s, attn_warp_smem;", R(slab0));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(g.qs), R(g.warp), SLAB(dmax), R(slab0));
    emit(k, "add.u32 %s, %s, %d;", R(g.ps), R(g.qs), 8 * HB * dmax);
    if (merged) { /* after the warps' slabs: f [HB][32], then the totals [HB] */
        emit(k, "add.u32 %s, %s, %d;", R(fsm), R(slab0), RAYO_PTX_ATTN_BLOCK_WARPS(dmax) * SLAB(dmax));
        emit(k, "add.u32 %s, %s, %d;", R(tot), R(fsm), 8 * 32 * HB);
    }
    int i = nd(k), istep = nd(k), pi = np(k), l_q = nlabel(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(i), R(cz));
    emit(k, "cvt.u64.u32 %s, %s;", D(istep), R(nz));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(i), D(g.n_q));
    emit(k, "@%s bra %s;", P(pi), L(l_end));
    label(k, l_q);
    int j0, j1;
    warp_range(k, &g, i, &j0, &j1);
    stage_q(k, &g, row_addr(k, g.q, i, g.qt, h0, g.qh, 4), dmax);
    int m[HB], sum[HB], acc[HB][8];
    warp_init(k, &g, dmax, m, sum, acc);
    int tb = nd(k), pt = np(k), l_tile = nlabel(k), l_tend = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(tb), D(j0));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pt), D(tb), D(j1));
    emit(k, "@%s bra %s;", P(pt), L(l_tend));
    label(k, l_tile);
    warp_tile(k, &g, half, vec, dmax, tb, j1, m, sum, acc);
    emit(k, "add.u64 %s, %s, 32;", D(tb), D(tb));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pt), D(tb), D(j1));
    emit(k, "@%s bra %s;", P(pt), L(l_tile));
    label(k, l_tend);
    warp_widen(k, &g, dmax, m, sum, acc);
    if (merged) {
        block_store(k, &g, dmax, m, sum, acc);
        emit(k, "bar.sync 0;");
        block_weights(k, &g, dmax, slab0, fsm, tot);
        block_write(k, &g, dmax, i, h0, slab0, fsm, tot);
    } else {
        warp_store(k, &g, dmax, i, h0, m, sum, acc);
        emit(k, "bar.warp.sync -1;"); /* the next query's q overwrite qs */
    }
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(istep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(i), D(g.n_q));
    emit(k, "@%s bra %s;", P(pi), L(l_q));
    label(k, l_end);
    int warps = merged ? RAYO_PTX_ATTN_BLOCK_WARPS(dmax) : 4;
    char shared[96], name[40], dir[40], decl[520];
    snprintf(shared, sizeof shared, "\t.shared .align 16 .b8 attn_warp_smem[%d];\n",
             warps * SLAB(dmax) + (merged ? 8 * 33 * HB : 0));
    snprintf(name, sizeof name, "attn_%s_%s%s_d%d%s", merged ? "block" : "warp", half ? "f16" : "f32",
             vec ? "_v" : "", dmax, relaxed ? "_relaxed" : "");
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n", 32 * warps);
    snprintf(decl, sizeof decl, "%s%s",
             ".param .u64 p_part, .param .u64 p_q, .param .u64 p_k, .param .u64 p_v, .param .u64 p_n_q, "
             ".param .u64 p_n_kv, .param .u64 p_group, .param .u64 p_d, .param .u64 p_causal, "
             ".param .u64 p_qt, .param .u64 p_qh, .param .u64 p_kt, .param .u64 p_kh, .param .u64 p_vt, "
             ".param .u64 p_vh, .param .u64 p_chunk, .param .u64 p_splits, .param .u64 p_nb, "
             ".param .u64 p_ng, .param .f32 p_scale",
             merged ? ", .param .u64 p_out, .param .u64 p_ot, .param .u64 p_oh" : "");
    kern_finish(mod, k, name, decl, dir, shared);
}

/* out[i][h][l] = sum_s acc_s[l] f_s / sum_s sum_s f_s with f_s = e^(m_s - M),
 * M = max m_s, for at most 256 ranges: grid (heads, queries), 256 threads.
 * Thread t computes f_t once (into shared memory); then the threads are
 * R = 256 / d slices of d dimensions, slice r adding the ranges r, r + R, ..
 * (MERGE_UNROLL loads in flight), and the slices' sums meet in shared memory. */
#define MERGE_UNROLL 16

int attn_part_at(kern *k, int part, int i, int heads, int h, int split, int nsplit, int d)
{
    int slot = nd(k), t = nd(k), base = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(slot), D(i), D(heads), D(h));
    emit(k, "cvt.u64.u32 %s, %s;", D(t), R(nsplit));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(slot), D(slot), D(t));
    emit(k, "cvt.u64.u32 %s, %s;", D(t), R(split));
    emit(k, "add.u64 %s, %s, %s;", D(slot), D(slot), D(t));
    emit(k, "add.u64 %s, %s, 2;", D(t), D(d));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(slot), D(slot), D(t));
    emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(base), D(slot), D(part));
    return base;
}

void attn_part_m_sum(kern *k, int base, int mm, int tot, int p0)
{
    int md = nfd(k), td = nfd(k);
    emit(k, "cvt.f64.f32 %s, %s;", FD(md), F(mm));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(md), FD(md), CD(0.6931471805599453)); /* ln 2 */
    emit(k, "cvt.f64.f32 %s, %s;", FD(td), F(tot));
    emit(k, "@%s st.global.f64 [%s], %s;", P(p0), D(base), FD(md));
    emit(k, "@%s st.global.f64 [%s+8], %s;", P(p0), D(base), FD(td));
}

/* The registers of attn_merge that its steps share. */
typedef struct merge_regs {
    int out, ot, oh;           /* .b64 parameters: the output and its strides */
    int tid, lane, warp;       /* .b32 */
    int h, i, t64, d, splits;  /* .b64: head, query, thread index, head_dim, ranges */
    int fs, red, mx_sm;        /* .b32 shared: f_t [256], slices' sums [256], warps' maxima [8] */
    int d32, nsl, r, l;        /* .b32: head_dim, slices R, this thread's slice and dimension */
    int base, stride;          /* .b64: the query's first range in part, bytes per range */
} merge_regs;

/* M over the ranges (thread t loads range t's m and sum: ms, ss), through
 * the warps' maxima in shared memory. */
static int merge_max(kern *k, const merge_regs *g, int *ms_out, int *ss_out)
{
    int ps = np(k), pa = nd(k), ms = nfd(k), ss = nfd(k), mx = nfd(k);
    *ms_out = ms;
    *ss_out = ss;
    emit(k, "setp.lt.u64 %s, %s, %s;", P(ps), D(g->t64), D(g->splits));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(pa), D(g->t64), D(g->stride), D(g->base));
    emit(k, "mov.f64 %s, %s;", FD(ms), CD(-INFINITY));
    emit(k, "mov.f64 %s, %s;", FD(ss), CD(0.0));
    emit(k, "@%s ld.global.f64 %s, [%s];", P(ps), FD(ms), D(pa));
    emit(k, "@%s ld.global.f64 %s, [%s+8];", P(ps), FD(ss), D(pa));
    emit(k, "mov.f64 %s, %s;", FD(mx), FD(ms));
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_d(k, mx, "bfly", o);
        emit(k, "max.f64 %s, %s, %s;", FD(mx), FD(mx), FD(t));
    }
    {
        int p0 = np(k), wa = nr(k);
        emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->lane));
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(wa), R(g->warp), R(g->mx_sm));
        emit(k, "@%s st.shared.f64 [%s], %s;", P(p0), R(wa), FD(mx));
        emit(k, "bar.sync 0;");
        for (int x = 0; x < 8; x++) {
            int t = nfd(k);
            emit(k, "ld.shared.f64 %s, [%s+%d];", FD(t), R(g->mx_sm), 8 * x);
            emit(k, "max.f64 %s, %s, %s;", FD(mx), FD(mx), FD(t));
        }
    }
    return mx;
}

/* f_t = e^(m_t - M) (0 for a range without keys) to shared memory; the
 * total sum_t sum_t f_t. */
static int merge_total(kern *k, const merge_regs *g, int ms, int ss, int mx)
{
    int df = nfd(k), none = np(k), prod = nfd(k);
    emit(k, "sub.rn.f64 %s, %s, %s;", FD(df), FD(ms), FD(mx));
    int f = exp_neg(k, df);
    emit(k, "setp.eq.f64 %s, %s, %s;", P(none), FD(ms), CD(-INFINITY));
    emit(k, "@%s mov.f64 %s, %s;", P(none), FD(f), CD(0.0));
    {
        int fa = nr(k);
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(fa), R(g->tid), R(g->fs));
        emit(k, "st.shared.f64 [%s], %s;", R(fa), FD(f));
    }
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(prod), FD(ss), FD(f));
    return block_sum_f64(k, prod, g->lane, g->warp); /* its barriers also publish f */
}

/* Slice r: a = sum over its ranges of f_s acc_s[l], MERGE_UNROLL loads in
 * flight. */
static int merge_slice(kern *k, const merge_regs *g)
{
    int a = nfd(k), pr = np(k), l_sl = nlabel(k);
    emit(k, "mov.f64 %s, %s;", FD(a), CD(0.0));
    emit(k, "setp.ge.u32 %s, %s, %s;", P(pr), R(g->r), R(g->nsl));
    emit(k, "@%s bra %s;", P(pr), L(l_sl));
    {
        int s = nr(k), spl = nr(k), ga0 = nd(k), l64 = nd(k), psl = np(k), l_s = nlabel(k);
        emit(k, "cvt.u32.u64 %s, %s;", R(spl), D(g->splits));
        emit(k, "cvt.u64.u32 %s, %s;", D(l64), R(g->l));
        emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(ga0), D(l64), D(g->base));
        emit(k, "mov.u32 %s, %s;", R(s), R(g->r));
        emit(k, "setp.ge.u32 %s, %s, %s;", P(psl), R(s), R(spl));
        emit(k, "@%s bra %s;", P(psl), L(l_sl));
        label(k, l_s);
        int av[MERGE_UNROLL], fv[MERGE_UNROLL];
        for (int u = 0; u < MERGE_UNROLL; u++) {
            int su = nr(k), pin = np(k), su64 = nd(k), ga = nd(k), fa = nr(k);
            av[u] = nfd(k), fv[u] = nfd(k);
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(su), R(g->nsl), u, R(s));
            emit(k, "setp.lt.u32 %s, %s, %s;", P(pin), R(su), R(spl));
            emit(k, "cvt.u64.u32 %s, %s;", D(su64), R(su));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(ga), D(su64), D(g->stride), D(ga0));
            emit(k, "mov.f64 %s, %s;", FD(av[u]), CD(0.0));
            emit(k, "mov.f64 %s, %s;", FD(fv[u]), CD(0.0));
            emit(k, "@%s ld.global.f64 %s, [%s+16];", P(pin), FD(av[u]), D(ga));
            emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(fa), R(su), R(g->fs));
            emit(k, "@%s ld.shared.f64 %s, [%s];", P(pin), FD(fv[u]), R(fa));
        }
        for (int u = 0; u < MERGE_UNROLL; u++)
            emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(a), FD(av[u]), FD(fv[u]), FD(a));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(s), R(g->nsl), MERGE_UNROLL, R(s));
        emit(k, "setp.lt.u32 %s, %s, %s;", P(psl), R(s), R(spl));
        emit(k, "@%s bra %s;", P(psl), L(l_s));
    }
    label(k, l_sl);
    return a;
}

/* The slices' sums meet in shared memory; thread t < d writes
 * out[i][h][t] = their sum / tot. */
static void merge_write(kern *k, const merge_regs *g, int a, int tot)
{
    {
        int ra = nr(k);
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(ra), R(g->tid), R(g->red));
        emit(k, "st.shared.f64 [%s], %s;", R(ra), FD(a));
    }
    emit(k, "bar.sync 0;");
    {
        int pd = np(k), l_skip = nlabel(k), x = nr(k), px = np(k), l_x = nlabel(k), sum = nfd(k);
        emit(k, "setp.ge.u64 %s, %s, %s;", P(pd), D(g->t64), D(g->d));
        emit(k, "@%s bra %s;", P(pd), L(l_skip));
        emit(k, "mov.f64 %s, %s;", FD(sum), CD(0.0));
        emit(k, "mov.u32 %s, 0;", R(x));
        label(k, l_x); /* the slices r = 0 .. R - 1 of dimension t: red[r d + t] */
        {
            int ra = nr(k), v = nfd(k);
            emit(k, "mad.lo.u32 %s, %s, %s, %s;", R(ra), R(x), R(g->d32), R(g->tid));
            emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(ra), R(ra), R(g->red));
            emit(k, "ld.shared.f64 %s, [%s];", FD(v), R(ra));
            emit(k, "add.rn.f64 %s, %s, %s;", FD(sum), FD(sum), FD(v));
        }
        emit(k, "add.u32 %s, %s, 1;", R(x), R(x));
        emit(k, "setp.lt.u32 %s, %s, %s;", P(px), R(x), R(g->nsl));
        emit(k, "@%s bra %s;", P(px), L(l_x));
        int res = nfd(k), rf = nf(k), orow = row_addr(k, g->out, g->i, g->ot, g->h, g->oh, 4), oa = nd(k);
        emit(k, "div.rn.f64 %s, %s, %s;", FD(res), FD(sum), FD(tot));
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(rf), FD(res));
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(oa), D(g->t64), D(orow));
        emit(k, "st.global.f32 [%s], %s;", D(oa), F(rf));
        label(k, l_skip);
    }
}

static void gen_attn_merge(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    merge_regs g;
    g.out = param_global(k, "p_out");
    int part = param_global(k, "p_part");
    int n_q = param_u64(k, "p_n_q");
    g.d = param_u64(k, "p_d");
    g.splits = param_u64(k, "p_splits");
    g.ot = param_u64(k, "p_ot");
    g.oh = param_u64(k, "p_oh");
    lane_warp(k, &g.tid, &g.lane, &g.warp);
    g.h = nd(k);
    int heads = nd(k);
    g.i = nd(k);
    int istep = nd(k);
    g.t64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(g.h), R(sreg(k, "%ctaid.x")));
    emit(k, "cvt.u64.u32 %s, %s;", D(heads), R(sreg(k, "%nctaid.x")));
    emit(k, "cvt.u64.u32 %s, %s;", D(g.i), R(sreg(k, "%ctaid.y")));
    emit(k, "cvt.u64.u32 %s, %s;", D(istep), R(sreg(k, "%nctaid.y")));
    emit(k, "cvt.u64.u32 %s, %s;", D(g.t64), R(g.tid));
    g.fs = nr(k);
    g.red = nr(k);
    g.mx_sm = nr(k);
    emit(k, "mov.u32 %s, merge_smem;", R(g.fs));
    emit(k, "add.u32 %s, %s, %d;", R(g.red), R(g.fs), 8 * 256);
    emit(k, "add.u32 %s, %s, %d;", R(g.mx_sm), R(g.red), 8 * 256);
    /* slices: R = 256 / d, this thread's slice r and dimension l */
    g.d32 = nr(k);
    g.nsl = nr(k);
    g.r = nr(k);
    g.l = nr(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(g.d32), D(g.d));
    emit(k, "div.u32 %s, 256, %s;", R(g.nsl), R(g.d32));
    emit(k, "div.u32 %s, %s, %s;", R(g.r), R(g.tid), R(g.d32));
    emit(k, "rem.u32 %s, %s, %s;", R(g.l), R(g.tid), R(g.d32));
    int pi = np(k), l_q = nlabel(k), l_qend = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(g.i), D(n_q));
    emit(k, "@%s bra %s;", P(pi), L(l_qend));
    label(k, l_q);
    int w = nd(k);
    g.base = nd(k);
    int slot = nd(k);
    g.stride = nd(k);
    emit(k, "add.u64 %s, %s, 2;", D(w), D(g.d));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(slot), D(g.i), D(heads), D(g.h));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(slot), D(slot), D(g.splits));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(slot), D(slot), D(w));
    emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(g.base), D(slot), D(part));
    emit(k, "mul.lo.u64 %s, %s, 8;", D(g.stride), D(w));
    int ms, ss, mx = merge_max(k, &g, &ms, &ss);
    int tot = merge_total(k, &g, ms, ss, mx);
    merge_write(k, &g, merge_slice(k, &g), tot);
    emit(k, "bar.sync 0;"); /* the next query reuses the shared arrays */
    emit(k, "add.u64 %s, %s, %s;", D(g.i), D(g.i), D(istep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(g.i), D(n_q));
    emit(k, "@%s bra %s;", P(pi), L(l_q));
    label(k, l_qend);
    char shared[160];
    snprintf(shared, sizeof shared, "\t.shared .align 8 .b8 merge_smem[%d];\n%s", 8 * (256 + 256 + 8), RED_SHARED);
    kern_finish(mod, k, "attn_merge",
                ".param .u64 p_out, .param .u64 p_part, .param .u64 p_n_q, .param .u64 p_d, .param .u64 p_splits, "
                ".param .u64 p_ot, .param .u64 p_oh", ".maxntid 256, 1, 1\n", shared);
}

void infer_attention(strbuf *mod)
{
    for (int half = 0; half < 2; half++)
        for (int vec = 0; vec < 2; vec++)
            for (int dmax = 64; dmax <= RAYO_PTX_ATTN_MAX_DIM; dmax *= 2)
                for (int merged = 0; merged < 2; merged++)
                    gen_attn_warp(mod, half, vec, dmax, merged, 0);
    gen_attn_merge(mod);
    /* relaxed: aligned rows, head_dim up to 64 (others take the strict kernels:
     * on an H200 the float32 ones at 128 were slower in a 7B-shape prefill) */
    for (int half = 0; half < 2; half++)
        for (int merged = 0; merged < 2; merged++)
            gen_attn_warp(mod, half, 1, 64, merged, 1);
}
