/* SPDX-License-Identifier: MIT */
/* attn-cluster.c - module "attn_cluster" (sm_90 on: clusters, distributed
 * shared memory): attn_dec_<kv>_d<D>_c<C>[_g<HG>], the attention of
 * relaxed decode calls (a few queries against a cache of any length) with
 * K and V rows 16-byte aligned (kv f16 or f32, head_dim at most D = 64 or
 * 128, a multiple of 8).
 *
 * One such call has too little work for one block per head (the cache of
 * a 7B-shape layer at 192 keys is 3 MB, read in under 1 us by the whole
 * GPU, while 32 blocks leave three quarters of it idle and wait on their
 * own loads): here a cluster of C CTAs of DEC_WARPS warps takes one
 * (query, head), grid (C, heads, queries) (S = 1, HG = 1 below).  Warp gw = rank DEC_WARPS + warp
 * of the cluster takes the tiles of keys gw, gw + C DEC_WARPS, .. of KT
 * keys each: its lanes are KP rows of LR = D / 8 lanes, each lane 8
 * dimensions of a row, so that a tile is DEC_LOADS 16-byte loads of K and
 * as many of V per lane, all issued before the first use.  A score is the
 * lane's 8 products summed, then a sum over its row's lanes (shuffles); the
 * online softmax runs on the tile's maximum, in base 2 (q scaled by scale
 * log2(e) once; e^x as ex2.approx), and p V adds each lane's keys to its 8
 * dimensions, the row groups summed when the warp is done.  The warps of a
 * CTA meet in its shared memory, the CTAs of the cluster in rank 0's,
 * through distributed shared memory: one launch, no scratch, no atomics.
 *
 * Long caches: _g<HG> (HG = 2 or 4) gives a CTA HG query heads of one KV
 * group (h0 = HG ctaid.y, ..): each tile's K and V rows are loaded and
 * widened once and serve every head (its own q, scores, online softmax and
 * acc[8]), so a group of G heads reads its rows G / HG times, not G times.
 * And the grid's x may hold S clusters (x = S C): cluster s takes the
 * tiles gw = (s C + rank) DEC_WARPS + warp, gw + S C DEC_WARPS, ..; with
 * S > 1 rank 0 writes the cluster's (m, sum, acc) of each head, widened to
 * float64 (m in natural units), where attn_merge (ptx/attention.c) reads a
 * key range's, and attn_merge, launched next, combines them.
 *
 * Float32 up to the partials (the relaxed contract of core/rayo-ops.h: an error e
 * in a score is a relative error near e in its weight; the sums of 8
 * products, then of a row's lanes, keep scores near 3e3 right to ~1e-3).
 * NaN in q, K or V reaches the output as in the strict kernels: max.f32
 * keeps the other operand, so the NaN score's weight ex2(NaN) = NaN. */
#include "gen-ptx.h"
#include "../plugins/cuda/cuda-ptx.h"

#include <math.h>

#define DEC_WARPS RAYO_PTX_ATTN_DEC_WARPS
#define DEC_LOADS 4 /* 16-byte loads of K (and of V) per lane per tile: 16 rows of 128 f16 in flight a warp */
#define LOG2E 1.4426950408889634

typedef struct dec_regs {
    int dm, cl, half;   /* D, C, f16 cache */
    int hg;             /* HG: query heads a CTA, of one KV group */
    int lr, kp;         /* lanes per row (D / 8), rows per load (32 / LR) */
    attn_params p;      /* q, k, v, the shape and strides */
    int out, ot, oh;    /* .b64: the output and its strides */
    int scale;          /* .f32 */
    int part;           /* .b64: the scratch of the splits' partial results */
    int tid, lane, warp, rank, split, nsplit; /* .b32 */
    int h0, kvh, i, vis; /* .b64: first head, their KV head, query, keys visible to it */
    int sub, c8;        /* .b64: the lane's row within a load, its first dimension */
    int pd;             /* c8 < d: the lane's dimensions exist */
    int smem;           /* .b32: the warps' slabs, then the CTA's */
} dec_regs;

/* A slab of shared memory: m, sum, 2 floats of padding, acc[D] (floats). */
static int slab_bytes(const dec_regs *g) { return 4 * (4 + g->dm); }

static void dec_params(kern *k, dec_regs *g)
{
    g->out = param_global(k, "p_out");
    attn_read_params(k, &g->p);
    g->ot = param_u64(k, "p_ot");
    g->oh = param_u64(k, "p_oh");
    g->scale = param_f32(k, "p_scale");
    g->part = param_global(k, "p_part");
}

/* First head, KV head, query, split, visible keys (n_kv - n_q + i + 1 when causal), the
 * lane's row and dimensions. */
static void dec_indices(kern *k, dec_regs *g)
{
    lane_warp(k, &g->tid, &g->lane, &g->warp);
    g->rank = sreg(k, "%cluster_ctarank");
    g->split = sreg(k, "%clusterid.x");
    g->nsplit = sreg(k, "%nclusterid.x");
    g->h0 = nd(k), g->kvh = nd(k), g->i = nd(k), g->vis = nd(k), g->sub = nd(k), g->c8 = nd(k), g->pd = np(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(g->h0), R(sreg(k, "%ctaid.y")), g->hg);
    emit(k, "cvt.u64.u32 %s, %s;", D(g->i), R(sreg(k, "%ctaid.z")));
    emit(k, "div.u64 %s, %s, %s;", D(g->kvh), D(g->h0), D(g->p.group));
    int pc = np(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pc), D(g->p.causal));
    emit(k, "mov.u64 %s, %s;", D(g->vis), D(g->p.n_kv));
    emit(k, "@%s sub.u64 %s, %s, %s;", P(pc), D(g->vis), D(g->vis), D(g->p.n_q));
    emit(k, "@%s add.u64 %s, %s, %s;", P(pc), D(g->vis), D(g->vis), D(g->i));
    emit(k, "@%s add.u64 %s, %s, 1;", P(pc), D(g->vis), D(g->vis));
    int l64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(l64), R(g->lane));
    emit(k, "shr.u64 %s, %s, %d;", D(g->sub), D(l64), __builtin_ctz((unsigned)g->lr));
    emit(k, "and.b64 %s, %s, %d;", D(g->c8), D(l64), g->lr - 1);
    emit(k, "shl.b64 %s, %s, 3;", D(g->c8), D(g->c8));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(g->pd), D(g->c8), D(g->p.d));
}

/* The lane's 8 dimensions of q of head h0 + e, times scale log2(e) (0
 * past d). */
static void dec_q(kern *k, const dec_regs *g, int e, int *qv)
{
    int a = nd(k), s2 = nf(k), h = nd(k);
    emit(k, "add.u64 %s, %s, %d;", D(h), D(g->h0), e);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(a), D(g->i), D(g->p.qt));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(a), D(h), D(g->p.qh), D(a));
    emit(k, "add.u64 %s, %s, %s;", D(a), D(a), D(g->c8));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(a), D(a), D(g->p.q));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(s2), F(g->scale), C((float)LOG2E));
    for (int x = 0; x < 8; x++) {
        qv[x] = nf(k);
        emit(k, "mov.f32 %s, 0f00000000;", F(qv[x]));
        emit(k, "@%s ld.global.nc.f32 %s, [%s+%d];", P(g->pd), F(qv[x]), D(a), 4 * x);
        emit(k, "mul.rn.f32 %s, %s, %s;", F(qv[x]), F(qv[x]), F(s2));
    }
}

/* The lane's 8 values of row `key` of a cache (base, strides ts, hs) as raw
 * words: 4 f16 pairs or 8 floats, zeros where pl is false. */
static void dec_load(kern *k, const dec_regs *g, int base, int ts, int hs, int key, int pl, int *w)
{
    int a = nd(k), nw = g->half ? 4 : 8;
    emit(k, "mul.lo.u64 %s, %s, %s;", D(a), D(key), D(ts));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(a), D(g->kvh), D(hs), D(a));
    emit(k, "add.u64 %s, %s, %s;", D(a), D(a), D(g->c8));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(a), D(a), g->half ? 2 : 4, D(base));
    for (int e = 0; e < nw; e++) {
        w[e] = nr(k);
        emit(k, "mov.b32 %s, 0;", R(w[e]));
    }
    for (int o = 0; o < nw; o += 4)
        emit(k, "@%s ld.global.nc.v4.b32 {%s, %s, %s, %s}, [%s+%d];", P(pl), R(w[o]), R(w[o + 1]), R(w[o + 2]),
             R(w[o + 3]), D(a), 4 * o);
}

/* The 8 raw words' values as floats. */
static void dec_widen(kern *k, const dec_regs *g, const int *w, int *f)
{
    for (int e = 0; e < 8; e++) {
        f[e] = nf(k);
        if (g->half)
            emit(k, "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %s; cvt.f32.f16 %s, %s; }", R(w[e / 2]), F(f[e]),
                 e % 2 ? "hi" : "lo");
        else
            emit(k, "mov.b32 %s, %s;", F(f[e]), R(w[e]));
    }
}

static int ex2(kern *k, int x)
{
    int o = nf(k);
    emit(k, "ex2.approx.ftz.f32 %s, %s;", F(o), F(x));
    return o;
}

/* The score (base 2) of the lane's row: its 8 products, then the sum over
 * the row's LR lanes; -inf for a key past the visible ones. */
static int dec_score(kern *k, const dec_regs *g, const int *qv, const int *kf, int valid)
{
    int s = nf(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(s), F(qv[0]), F(kf[0]));
    for (int x = 1; x < 8; x++)
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(s), F(qv[x]), F(kf[x]), F(s));
    for (int o = g->lr / 2; o >= 1; o /= 2) {
        int t = nf(k);
        emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(s), o);
        emit(k, "add.rn.f32 %s, %s, %s;", F(s), F(s), F(t));
    }
    emit(k, "@!%s mov.f32 %s, %s;", P(valid), F(s), C(-INFINITY));
    return s;
}

/* One head's running state: its q (scaled), the warp's m (the same in
 * every lane), the lane's sum and acc[8]. */
typedef struct dec_head {
    int qv[8], m, sum, acc[8];
} dec_head;

/* One head's part of a tile of loaded rows (kf, vf widened, valid): m,
 * sum and acc rescaled to the tile's new maximum, then the rows' weights p
 * and p V added. */
static void dec_tile_head(kern *k, const dec_regs *g, int kf[DEC_LOADS][8], int vf[DEC_LOADS][8],
                          const int *valid, const dec_head *hd)
{
    int s[DEC_LOADS], mt = nf(k);
    for (int r = 0; r < DEC_LOADS; r++) {
        s[r] = dec_score(k, g, hd->qv, kf[r], valid[r]);
        if (r == 0)
            emit(k, "mov.f32 %s, %s;", F(mt), F(s[0]));
        else
            emit(k, "max.f32 %s, %s, %s;", F(mt), F(mt), F(s[r]));
    }
    for (int o = g->lr; o < 32; o *= 2) {
        int t = nf(k);
        emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(mt), o);
        emit(k, "max.f32 %s, %s, %s;", F(mt), F(mt), F(t));
    }
    int mn = nf(k), df = nf(k);
    emit(k, "max.f32 %s, %s, %s;", F(mn), F(hd->m), F(mt)); /* finite: key kb is visible */
    emit(k, "sub.rn.f32 %s, %s, %s;", F(df), F(hd->m), F(mn)); /* -inf for the first tile */
    int shrink = ex2(k, df);
    emit(k, "mov.f32 %s, %s;", F(hd->m), F(mn));
    emit(k, "mul.rn.f32 %s, %s, %s;", F(hd->sum), F(hd->sum), F(shrink));
    for (int x = 0; x < 8; x++)
        emit(k, "mul.rn.f32 %s, %s, %s;", F(hd->acc[x]), F(hd->acc[x]), F(shrink));
    for (int r = 0; r < DEC_LOADS; r++) {
        int pd = nf(k);
        emit(k, "sub.rn.f32 %s, %s, %s;", F(pd), F(s[r]), F(mn));
        int p = ex2(k, pd); /* 0 for a key past the visible ones (-inf) */
        emit(k, "add.rn.f32 %s, %s, %s;", F(hd->sum), F(hd->sum), F(p));
        for (int x = 0; x < 8; x++)
            emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(hd->acc[x]), F(p), F(vf[r][x]), F(hd->acc[x]));
    }
}

/* One tile of keys [kb, kb + KT): its K and V rows loaded once (all loads
 * issued before the first use), widened once, then each head's part. */
static void dec_tile(kern *k, const dec_regs *g, int kb, const dec_head *hd)
{
    int kw[DEC_LOADS][8], vw[DEC_LOADS][8], kf[DEC_LOADS][8], vf[DEC_LOADS][8], valid[DEC_LOADS];
    for (int r = 0; r < DEC_LOADS; r++) {
        int j = nd(k), pl = np(k);
        valid[r] = np(k);
        emit(k, "add.u64 %s, %s, %s;", D(j), D(kb), D(g->sub));
        emit(k, "add.u64 %s, %s, %d;", D(j), D(j), r * g->kp);
        emit(k, "setp.lt.u64 %s, %s, %s;", P(valid[r]), D(j), D(g->vis));
        emit(k, "and.pred %s, %s, %s;", P(pl), P(valid[r]), P(g->pd));
        dec_load(k, g, g->p.k, g->p.kt, g->p.kh, j, pl, kw[r]);
        dec_load(k, g, g->p.v, g->p.vt, g->p.vh, j, pl, vw[r]);
    }
    for (int r = 0; r < DEC_LOADS; r++) {
        dec_widen(k, g, kw[r], kf[r]);
        dec_widen(k, g, vw[r], vf[r]);
    }
    for (int e = 0; e < g->hg; e++)
        dec_tile_head(k, g, kf, vf, valid, &hd[e]);
}

/* The warp's tiles: gw, gw + S C DEC_WARPS, .. (gw = (split C + rank)
 * DEC_WARPS + warp, its index among the S clusters' warps); then the sums
 * of its row groups, in the lanes of row 0, for each head. */
static void dec_warp(kern *k, const dec_regs *g, const dec_head *hd)
{
    int kt_keys = DEC_LOADS * g->kp, kb = nd(k), step = nd(k), gw = nr(k), pt = np(k);
    int l_tile = nlabel(k), l_done = nlabel(k);
    for (int e = 0; e < g->hg; e++) {
        emit(k, "mov.f32 %s, %s;", F(hd[e].m), C(-INFINITY));
        emit(k, "mov.f32 %s, 0f00000000;", F(hd[e].sum));
        for (int x = 0; x < 8; x++)
            emit(k, "mov.f32 %s, 0f00000000;", F(hd[e].acc[x]));
    }
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(gw), R(g->split), g->cl, R(g->rank));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(gw), R(gw), DEC_WARPS, R(g->warp));
    emit(k, "mul.wide.u32 %s, %s, %d;", D(kb), R(gw), kt_keys);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(step), R(g->nsplit), g->cl * DEC_WARPS * kt_keys);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pt), D(kb), D(g->vis));
    emit(k, "@%s bra %s;", P(pt), L(l_done));
    label(k, l_tile);
    dec_tile(k, g, kb, hd);
    emit(k, "add.u64 %s, %s, %s;", D(kb), D(kb), D(step));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pt), D(kb), D(g->vis));
    emit(k, "@%s bra %s;", P(pt), L(l_tile));
    label(k, l_done);
    for (int e = 0; e < g->hg; e++)
        for (int o = g->lr; o < 32; o *= 2) {
            int t = nf(k);
            emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(hd[e].sum), o);
            emit(k, "add.rn.f32 %s, %s, %s;", F(hd[e].sum), F(hd[e].sum), F(t));
            for (int x = 0; x < 8; x++) {
                emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(hd[e].acc[x]), o);
                emit(k, "add.rn.f32 %s, %s, %s;", F(hd[e].acc[x]), F(hd[e].acc[x]), F(t));
            }
        }
}

/* The warp's (m, sum, acc) of head e to its slab (warp HG + e): lane 0 m
 * and sum, the lanes of row 0 their 8 dimensions. */
static void dec_warp_store(kern *k, const dec_regs *g, int e, const dec_head *hd)
{
    int sa = nr(k), c8 = nr(k), p0 = np(k), pr = np(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(sa), R(g->warp), g->hg * slab_bytes(g), R(g->smem));
    emit(k, "add.u32 %s, %s, %d;", R(sa), R(sa), e * slab_bytes(g));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->lane));
    emit(k, "@%s st.shared.v2.f32 [%s], {%s, %s};", P(p0), R(sa), F(hd->m), F(hd->sum));
    emit(k, "setp.lt.u32 %s, %s, %d;", P(pr), R(g->lane), g->lr);
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(c8), R(g->lane), R(sa));
    emit(k, "@%s st.shared.v4.f32 [%s+16], {%s, %s, %s, %s};", P(pr), R(c8), F(hd->acc[0]), F(hd->acc[1]),
         F(hd->acc[2]), F(hd->acc[3]));
    emit(k, "@%s st.shared.v4.f32 [%s+32], {%s, %s, %s, %s};", P(pr), R(c8), F(hd->acc[4]), F(hd->acc[5]),
         F(hd->acc[6]), F(hd->acc[7]));
}

/* Thread t < D merges the n slabs at at[x] (read by ld: "shared" or
 * "shared::cluster"): *max_out = M = max m_x, f_x = e^(m_x - M) (0 for a
 * slab without keys), *tot_out = sum f_x sum_x; returns sum f_x acc_x[t]
 * (t4 = 4 t). */
static int dec_merge(kern *k, const int *at, int n, const char *ld, int t4, int *tot_out, int *max_out)
{
    int mx[8], sx[8], mm = nf(k), tot = nf(k), a = nf(k);
    for (int x = 0; x < n; x++) {
        mx[x] = nf(k), sx[x] = nf(k);
        emit(k, "ld.%s.v2.f32 {%s, %s}, [%s];", ld, F(mx[x]), F(sx[x]), R(at[x]));
        if (x == 0)
            emit(k, "mov.f32 %s, %s;", F(mm), F(mx[0]));
        else
            emit(k, "max.f32 %s, %s, %s;", F(mm), F(mm), F(mx[x]));
    }
    emit(k, "mov.f32 %s, 0f00000000;", F(tot));
    emit(k, "mov.f32 %s, 0f00000000;", F(a));
    for (int x = 0; x < n; x++) {
        int df = nf(k), none = np(k), av = nf(k), aa = nr(k);
        emit(k, "sub.rn.f32 %s, %s, %s;", F(df), F(mx[x]), F(mm));
        int f = ex2(k, df);
        emit(k, "setp.eq.f32 %s, %s, %s;", P(none), F(mx[x]), C(-INFINITY));
        emit(k, "@%s mov.f32 %s, 0f00000000;", P(none), F(f));
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(tot), F(f), F(sx[x]), F(tot));
        emit(k, "add.u32 %s, %s, %s;", R(aa), R(at[x]), R(t4));
        emit(k, "ld.%s.f32 %s, [%s+16];", ld, F(av), R(aa));
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(a), F(f), F(av), F(a));
    }
    *tot_out = tot;
    *max_out = mm;
    return a;
}

/* One split (S = 1): out[i][h0 + e][t] = a / tot for t < d. */
static void dec_write(kern *k, const dec_regs *g, int e, int a, int tot)
{
    int res = nf(k), t64 = nd(k), oa = nd(k), pw = np(k), h = nd(k);
    emit(k, "add.u64 %s, %s, %d;", D(h), D(g->h0), e);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(g->tid));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pw), D(t64), D(g->p.d));
    emit(k, "div.rn.f32 %s, %s, %s;", F(res), F(a), F(tot));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(oa), D(g->i), D(g->ot));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(oa), D(h), D(g->oh), D(oa));
    emit(k, "add.u64 %s, %s, %s;", D(oa), D(oa), D(t64));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(oa), D(oa), D(g->out));
    emit(k, "@%s st.global.f32 [%s], %s;", P(pw), D(oa), F(res));
}

/* S splits: the cluster's (m, sum, acc) of head h0 + e widened to float64
 * at part[((i heads + h) S + split) (2 + d)], attn_merge's layout, m in
 * natural units (attn_merge takes e^(m_s - M)). */
static void dec_write_part(kern *k, const dec_regs *g, int e, int a, int tot, int mm)
{
    int heads = nd(k), h = nd(k), t64 = nd(k), pw = np(k), p0 = np(k), ad = nfd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(heads), R(sreg(k, "%nctaid.y")), g->hg);
    emit(k, "add.u64 %s, %s, %d;", D(h), D(g->h0), e);
    int base = attn_part_at(k, g->part, g->i, heads, h, g->split, g->nsplit, g->p.d);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(g->tid));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pw), D(t64), D(g->p.d));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->tid));
    attn_part_m_sum(k, base, mm, tot, p0);
    emit(k, "cvt.f64.f32 %s, %s;", FD(ad), F(a));
    emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(base), D(t64), D(base));
    emit(k, "@%s st.global.f64 [%s+16], %s;", P(pw), D(base), FD(ad));
}

/* The CTA's warps merged into its own slabs (after the warps'), a slab a
 * head; then rank 0 merges the CTAs' slabs and writes the outputs (S = 1)
 * or the split's partial results.  Every thread passes both cluster
 * barriers (the second: no CTA leaves while rank 0 reads it). */
static void dec_merges(kern *k, const dec_regs *g)
{
    int t4 = nr(k), pt = np(k), l_cta = nlabel(k), at[8], own = nr(k), tot, sb = slab_bytes(g);
    emit(k, "bar.sync 0;");
    emit(k, "shl.b32 %s, %s, 2;", R(t4), R(g->tid));
    emit(k, "add.u32 %s, %s, %d;", R(own), R(g->smem), DEC_WARPS * g->hg * sb);
    emit(k, "setp.ge.u32 %s, %s, %d;", P(pt), R(g->tid), g->dm);
    emit(k, "@%s bra %s;", P(pt), L(l_cta));
    for (int e = 0; e < g->hg; e++) {
        for (int x = 0; x < DEC_WARPS; x++) {
            at[x] = nr(k);
            emit(k, "add.u32 %s, %s, %d;", R(at[x]), R(g->smem), (x * g->hg + e) * sb);
        }
        int mm, a = dec_merge(k, at, DEC_WARPS, "shared", t4, &tot, &mm), p0 = np(k), ta = nr(k);
        emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->tid));
        emit(k, "@%s st.shared.v2.f32 [%s+%d], {%s, %s};", P(p0), R(own), e * sb, F(mm), F(tot));
        emit(k, "add.u32 %s, %s, %s;", R(ta), R(own), R(t4));
        emit(k, "st.shared.f32 [%s+%d], %s;", R(ta), e * sb + 16, F(a));
    }
    label(k, l_cta);
    emit(k, "barrier.cluster.arrive.aligned; /* release by default */");
    emit(k, "barrier.cluster.wait.aligned; /* acquire by default */");
    int pr = np(k), ps = np(k), l_out = nlabel(k);
    emit(k, "setp.ne.or.u32 %s, %s, 0, %s;", P(pr), R(g->rank), P(pt));
    emit(k, "@%s bra %s;", P(pr), L(l_out));
    emit(k, "setp.gt.u32 %s, %s, 1;", P(ps), R(g->nsplit));
    for (int e = 0; e < g->hg; e++) {
        int l_part = nlabel(k), l_next = nlabel(k), oe = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(oe), R(own), e * sb);
        for (int x = 0; x < g->cl; x++) {
            at[x] = nr(k);
            emit(k, "mapa.shared::cluster.u32 %s, %s, %d;", R(at[x]), R(oe), x);
        }
        int mm, a = dec_merge(k, at, g->cl, "shared::cluster", t4, &tot, &mm);
        emit(k, "@%s bra %s;", P(ps), L(l_part));
        dec_write(k, g, e, a, tot);
        emit(k, "bra.uni %s;", L(l_next));
        label(k, l_part);
        dec_write_part(k, g, e, a, tot, mm);
        label(k, l_next);
    }
    label(k, l_out);
    emit(k, "barrier.cluster.arrive.aligned; /* release by default */");
    emit(k, "barrier.cluster.wait.aligned; /* acquire by default */");
}

static void gen_attn_dec(strbuf *mod, int half, int dm, int cl, int hg)
{
    kern kk = {0}, *k = &kk;
    dec_regs g = {.dm = dm, .cl = cl, .half = half, .hg = hg, .lr = dm / 8, .kp = 32 / (dm / 8)};
    dec_params(k, &g);
    dec_indices(k, &g);
    g.smem = nr(k);
    emit(k, "mov.u32 %s, attn_dec_smem;", R(g.smem));
    dec_head hd[RAYO_PTX_ATTN_DEC_MAX_HG];
    for (int e = 0; e < hg; e++) {
        dec_q(k, &g, e, hd[e].qv);
        hd[e].m = nf(k), hd[e].sum = nf(k);
        for (int x = 0; x < 8; x++)
            hd[e].acc[x] = nf(k);
    }
    dec_warp(k, &g, hd);
    for (int e = 0; e < hg; e++)
        dec_warp_store(k, &g, e, &hd[e]);
    dec_merges(k, &g);
    char shared[96], name[48], dir[80], sfx[8] = "";
    snprintf(shared, sizeof shared, "\t.shared .align 16 .b8 attn_dec_smem[%d];\n",
             (DEC_WARPS + 1) * hg * slab_bytes(&g));
    if (hg > 1)
        snprintf(sfx, sizeof sfx, "_g%d", hg);
    snprintf(name, sizeof name, "attn_dec_%s_d%d_c%d%s", half ? "f16" : "f32", dm, cl, sfx);
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n.reqnctapercluster %d, 1, 1\n", 32 * DEC_WARPS, cl);
    kern_finish(mod, k, name,
                ".param .u64 p_out, .param .u64 p_q, .param .u64 p_k, .param .u64 p_v, .param .u64 p_n_q, "
                ".param .u64 p_n_kv, .param .u64 p_group, .param .u64 p_d, .param .u64 p_causal, "
                ".param .u64 p_qt, .param .u64 p_qh, .param .u64 p_kt, .param .u64 p_kh, .param .u64 p_vt, "
                ".param .u64 p_vh, .param .u64 p_ot, .param .u64 p_oh, .param .f32 p_scale, .param .u64 p_part",
                dir, shared);
}

/* module attn_cluster: attn_dec_<f16|f32>_d<64|128>_c<2|4|8> (a head a
 * CTA), attn_dec_<f16|f32>_d<64|128>_c8_g<2|4> (2 or 4 heads a CTA) */
void module_attn_cluster(strbuf *mod)
{
    for (int half = 0; half < 2; half++)
        for (int dm = 64; dm <= 128; dm *= 2) {
            for (int cl = 2; cl <= RAYO_PTX_ATTN_DEC_MAX_CLUSTER; cl *= 2)
                gen_attn_dec(mod, half, dm, cl, 1);
            for (int hg = 2; hg <= RAYO_PTX_ATTN_DEC_MAX_HG; hg *= 2)
                gen_attn_dec(mod, half, dm, RAYO_PTX_ATTN_DEC_MAX_CLUSTER, hg);
        }
}
