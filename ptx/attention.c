/* attention.c - the fused attention of module "infer": attn_part_f32 /
 * attn_part_f16 (the KV cache's dtype) and attn_final.
 *
 * out = softmax(scale Q K^T + causal mask) V, grouped-query, without a
 * score matrix: the keys of one (query, head) are cut into `splits` ranges
 * of `chunk` keys; block (s, h, i) runs an online softmax over range s
 * (running maximum; the sum and the weighted sum of V rescaled when it
 * grows) and writes (max, sum, acc[head_dim]) to the scratch; attn_final
 * merges the ranges of each (query, head).  Decode (one query) uses many
 * ranges, so that the whole GPU reads the cache; prefill uses one.
 *
 * Inside a block, each of the 4 warps takes tiles of 32 keys: lane j scores
 * key j of the tile (a float64 dot product, like the reference), then for
 * each key of the tile every lane adds p * v[l] for its dimensions l = lane
 * + 32 t (t < MAX_DIM / 32; coalesced rows of V), in float64.  The four
 * warps' states are merged through shared memory. */
#include "gen-ptx.h"
#include "../plugins/cuda/cuda-ptx.h"

#include <math.h>

#define WARPS 4
#define SLOTS (RAYO_PTX_ATTN_MAX_DIM / 32) /* dimensions per lane, at most */

typedef struct attn_regs {
    int part, q, k, v;                  /* .b64 global */
    int n_q, n_kv, group, d, causal;    /* .b64 */
    int qt, qh, kt, kh, vt, vh, chunk, splits; /* .b64 strides (elements), keys per range, ranges */
    int scale;                          /* .f64 */
    int lane, warp, tid;                /* .b32 */
    int s, h;                           /* .b64 range, head */
} attn_regs;

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

#define UNROLL 8 /* loads in flight before their use: the loops would wait for each */

/* One tile of 32 keys [tb, tb + 32) of the range (ending at j1): the warp's
 * running m, sum (per lane) and acc[slots] are updated. */
static void attn_tile(kern *k, const attn_regs *g, int half, int slots, int qrow, int kvh, int tb, int j1, int m,
                      int sum, const int *acc)
{
    int j = nd(k), lane64 = nd(k), valid = np(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(lane64), R(g->lane));
    emit(k, "add.u64 %s, %s, %s;", D(j), D(tb), D(lane64));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(valid), D(j), D(j1));
    /* score of key j: dot(q, k_j) in double, UNROLL dimensions at a time */
    int krow = row_addr(k, g->k, j, g->kt, kvh, g->kh, half ? 2 : 4);
    int dot = nfd(k), l = nd(k), pl = np(k), l_dot = nlabel(k);
    emit(k, "mov.f64 %s, %s;", FD(dot), CD(0.0));
    emit(k, "mov.u64 %s, 0;", D(l));
    label(k, l_dot);
    {
        int qd[UNROLL], kd[UNROLL];
        for (int u = 0; u < UNROLL; u++) {
            int lu = nd(k), pin = np(k), pk = np(k), qa = nd(k), qf = nf(k);
            emit(k, "add.u64 %s, %s, %d;", D(lu), D(l), u);
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(lu), D(g->d));
            emit(k, "and.pred %s, %s, %s;", P(pk), P(pin), P(valid));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(qa), D(lu), D(qrow));
            emit(k, "mov.f32 %s, 0f00000000;", F(qf));
            emit(k, "@%s ld.global.nc.f32 %s, [%s];", P(pin), F(qf), D(qa));
            qd[u] = nfd(k);
            emit(k, "cvt.f64.f32 %s, %s;", FD(qd[u]), F(qf));
            kd[u] = kv_load(k, krow, lu, half, pk);
        }
        for (int u = 0; u < UNROLL; u++)
            emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(dot), FD(qd[u]), FD(kd[u]), FD(dot));
    }
    emit(k, "add.u64 %s, %s, %d;", D(l), D(l), UNROLL);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pl), D(l), D(g->d));
    emit(k, "@%s bra %s;", P(pl), L(l_dot));
    int sc = nfd(k);
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(sc), FD(dot), FD(g->scale));
    emit(k, "@!%s mov.f64 %s, %s;", P(valid), FD(sc), CD(-INFINITY));
    /* tile maximum, the new running maximum, rescaling */
    int tm = nfd(k);
    emit(k, "mov.f64 %s, %s;", FD(tm), FD(sc));
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_d(k, tm, "bfly", o);
        emit(k, "max.f64 %s, %s, %s;", FD(tm), FD(tm), FD(t));
    }
    int nm = nfd(k), diff = nfd(k);
    emit(k, "max.f64 %s, %s, %s;", FD(nm), FD(m), FD(tm)); /* finite: key tb is valid */
    emit(k, "sub.rn.f64 %s, %s, %s;", FD(diff), FD(m), FD(nm)); /* -inf for the first tile */
    int shrink = exp_neg(k, diff);
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(sum), FD(sum), FD(shrink));
    for (int t = 0; t < slots; t++)
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(acc[t]), FD(acc[t]), FD(shrink));
    emit(k, "mov.f64 %s, %s;", FD(m), FD(nm));
    int pd = nfd(k), p = nfd(k);
    emit(k, "sub.rn.f64 %s, %s, %s;", FD(pd), FD(sc), FD(nm));
    int e = exp_neg(k, pd);
    emit(k, "selp.f64 %s, %s, %s, %s;", FD(p), FD(e), CD(0.0), P(valid));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(sum), FD(sum), FD(p));
    /* acc += p_key v_key for the valid keys of the tile, UNROLL keys at a time
     * (an invalid key has p = 0 and loads nothing) */
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
        int pv[UNROLL], vd[UNROLL][8];
        for (int u = 0; u < UNROLL; u++) {
            int ju = nr(k), pk = np(k), lo = nr(k), hi = nr(k), lo2 = nr(k), hi2 = nr(k);
            emit(k, "add.u32 %s, %s, %d;", R(ju), R(jj), u);
            emit(k, "setp.lt.u32 %s, %s, %s;", P(pk), R(ju), R(cnt));
            pv[u] = nfd(k);
            emit(k, "mov.b64 {%s, %s}, %s;", R(lo), R(hi), FD(p));
            emit(k, "shfl.sync.idx.b32 %s, %s, %s, 31, -1;", R(lo2), R(lo), R(ju));
            emit(k, "shfl.sync.idx.b32 %s, %s, %s, 31, -1;", R(hi2), R(hi), R(ju));
            emit(k, "mov.b64 %s, {%s, %s};", FD(pv[u]), R(lo2), R(hi2));
            int key = nd(k), ju64 = nd(k);
            emit(k, "cvt.u64.u32 %s, %s;", D(ju64), R(ju));
            emit(k, "add.u64 %s, %s, %s;", D(key), D(tb), D(ju64));
            int vrow = row_addr(k, g->v, key, g->vt, kvh, g->vh, half ? 2 : 4);
            for (int t = 0; t < slots; t++) {
                int dl = nd(k), pin = np(k);
                emit(k, "add.u64 %s, %s, %d;", D(dl), D(lane64), 32 * t);
                emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(dl), D(g->d));
                emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(pk));
                vd[u][t] = kv_load(k, vrow, dl, half, pin);
            }
        }
        for (int u = 0; u < UNROLL; u++)
            for (int t = 0; t < slots; t++)
                emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc[t]), FD(pv[u]), FD(vd[u][t]), FD(acc[t]));
    }
    emit(k, "add.u32 %s, %s, %d;", R(jj), R(jj), UNROLL);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pj), R(jj), R(cnt));
    emit(k, "@%s bra %s;", P(pj), L(l_key));
}

/* shared: per warp m, sum, acc[MAX_DIM] (doubles) */
#define WARP_STATE (2 + RAYO_PTX_ATTN_MAX_DIM)

/* slots: head_dim <= 32 slots (the kernel attn_part_<kv>_d<32 slots>) */
static void gen_attn_part(strbuf *mod, int half, int slots)
{
    kern kk = {0}, *k = &kk;
    attn_regs g;
    g.part = param_global(k, "p_part");
    g.q = param_global(k, "p_q");
    g.k = param_global(k, "p_k");
    g.v = param_global(k, "p_v");
    g.n_q = param_u64(k, "p_n_q");
    g.n_kv = param_u64(k, "p_n_kv");
    g.group = param_u64(k, "p_group");
    g.d = param_u64(k, "p_d");
    g.causal = param_u64(k, "p_causal");
    g.qt = param_u64(k, "p_qt");
    g.qh = param_u64(k, "p_qh");
    g.kt = param_u64(k, "p_kt");
    g.kh = param_u64(k, "p_kh");
    g.vt = param_u64(k, "p_vt");
    g.vh = param_u64(k, "p_vh");
    g.chunk = param_u64(k, "p_chunk");
    g.splits = param_u64(k, "p_splits");
    g.scale = nfd(k);
    {
        int sf = param_f32(k, "p_scale");
        emit(k, "cvt.f64.f32 %s, %s;", FD(g.scale), F(sf));
    }
    lane_warp(k, &g.tid, &g.lane, &g.warp);
    int cx = sreg(k, "%ctaid.x"), cy = sreg(k, "%ctaid.y"), cz = sreg(k, "%ctaid.z"), nz = sreg(k, "%nctaid.z");
    g.s = nd(k);
    g.h = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(g.s), R(cx));
    emit(k, "cvt.u64.u32 %s, %s;", D(g.h), R(cy));
    int kvh = nd(k), sm = nr(k), ws = nr(k);
    emit(k, "div.u64 %s, %s, %s;", D(kvh), D(g.h), D(g.group));
    emit(k, "mov.u32 %s, attn_smem;", R(sm));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(ws), R(g.warp), 8 * WARP_STATE, R(sm));
    int i = nd(k), istep = nd(k), pi = np(k), l_q = nlabel(k), l_qend = nlabel(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(i), R(cz));
    emit(k, "cvt.u64.u32 %s, %s;", D(istep), R(nz));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(i), D(g.n_q));
    emit(k, "@%s bra %s;", P(pi), L(l_qend));
    label(k, l_q);
    /* visible keys: n_kv - n_q + i + 1 when causal; this block's range [j0, j1) */
    int vis = nd(k), pc = np(k), j0 = nd(k), j1 = nd(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pc), D(g.causal));
    emit(k, "mov.u64 %s, %s;", D(vis), D(g.n_kv));
    emit(k, "@%s sub.u64 %s, %s, %s;", P(pc), D(vis), D(vis), D(g.n_q));
    emit(k, "@%s add.u64 %s, %s, %s;", P(pc), D(vis), D(vis), D(i));
    emit(k, "@%s add.u64 %s, %s, 1;", P(pc), D(vis), D(vis));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(j0), D(g.s), D(g.chunk));
    emit(k, "add.u64 %s, %s, %s;", D(j1), D(j0), D(g.chunk));
    emit(k, "min.u64 %s, %s, %s;", D(j1), D(j1), D(vis));
    int qrow = row_addr(k, g.q, i, g.qt, g.h, g.qh, 4);
    int m = nfd(k), sum = nfd(k), acc[SLOTS];
    emit(k, "mov.f64 %s, %s;", FD(m), CD(-INFINITY));
    emit(k, "mov.f64 %s, %s;", FD(sum), CD(0.0));
    for (int t = 0; t < slots; t++) {
        acc[t] = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(acc[t]), CD(0.0));
    }
    int tb = nd(k), w64 = nd(k), pt = np(k), l_tile = nlabel(k), l_tend = nlabel(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(w64), R(g.warp));
    emit(k, "mad.lo.u64 %s, %s, 32, %s;", D(tb), D(w64), D(j0));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pt), D(tb), D(j1));
    emit(k, "@%s bra %s;", P(pt), L(l_tend));
    label(k, l_tile);
    attn_tile(k, &g, half, slots, qrow, kvh, tb, j1, m, sum, acc);
    emit(k, "add.u64 %s, %s, %d;", D(tb), D(tb), 32 * WARPS);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pt), D(tb), D(j1));
    emit(k, "@%s bra %s;", P(pt), L(l_tile));
    label(k, l_tend);
    /* the warp's state to shared memory: sum over lanes */
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_d(k, sum, "bfly", o);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(sum), FD(sum), FD(t));
    }
    emit(k, "bar.sync 0;"); /* the previous query's merge is done with the shared state */
    {
        int p0 = np(k);
        emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g.lane));
        emit(k, "@%s st.shared.f64 [%s], %s;", P(p0), R(ws), FD(m));
        emit(k, "@%s st.shared.f64 [%s+8], %s;", P(p0), R(ws), FD(sum));
        for (int t = 0; t < slots; t++) {
            int sa = nr(k);
            emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(sa), R(g.lane), R(ws));
            emit(k, "st.shared.f64 [%s+%d], %s;", R(sa), 16 + 256 * t, FD(acc[t]));
        }
    }
    emit(k, "bar.sync 0;");
    /* merge the warps: thread t < d handles dimensions t, t + 128, ...; the
     * result goes to part[((i * heads + h) * splits + s) * (2 + d)] */
    {
        int heads = nd(k), slot = nd(k), base = nd(k), mx = nfd(k), f[WARPS], ms[WARPS], ss[WARPS];
        emit(k, "cvt.u64.u32 %s, %s;", D(heads), R(sreg(k, "%nctaid.y")));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(slot), D(i), D(heads), D(g.h));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(slot), D(slot), D(g.splits), D(g.s));
        {
            int w2 = nd(k);
            emit(k, "add.u64 %s, %s, 2;", D(w2), D(g.d));
            emit(k, "mul.lo.u64 %s, %s, %s;", D(slot), D(slot), D(w2));
        }
        emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(base), D(slot), D(g.part));
        emit(k, "mov.f64 %s, %s;", FD(mx), CD(-INFINITY));
        for (int w = 0; w < WARPS; w++) {
            ms[w] = nfd(k);
            ss[w] = nfd(k);
            emit(k, "ld.shared.f64 %s, [%s+%d];", FD(ms[w]), R(sm), 8 * WARP_STATE * w);
            emit(k, "ld.shared.f64 %s, [%s+%d];", FD(ss[w]), R(sm), 8 * WARP_STATE * w + 8);
            emit(k, "max.f64 %s, %s, %s;", FD(mx), FD(mx), FD(ms[w]));
        }
        /* factor e^(m_w - max); 0 for a warp without keys (and all 0 when none had any) */
        int none = np(k), tot = nfd(k);
        emit(k, "setp.eq.f64 %s, %s, %s;", P(none), FD(mx), CD(-INFINITY));
        emit(k, "mov.f64 %s, %s;", FD(tot), CD(0.0));
        for (int w = 0; w < WARPS; w++) {
            int dw = nfd(k);
            emit(k, "sub.rn.f64 %s, %s, %s;", FD(dw), FD(ms[w]), FD(mx));
            f[w] = exp_neg(k, dw);
            emit(k, "@%s mov.f64 %s, %s;", P(none), FD(f[w]), CD(0.0));
            emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(tot), FD(ss[w]), FD(f[w]), FD(tot));
        }
        int p0 = np(k);
        emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g.tid));
        emit(k, "@%s st.global.f64 [%s], %s;", P(p0), D(base), FD(mx));
        emit(k, "@%s st.global.f64 [%s+8], %s;", P(p0), D(base), FD(tot));
        int dl = nd(k), pd = np(k), l_dim = nlabel(k), l_dend = nlabel(k);
        emit(k, "cvt.u64.u32 %s, %s;", D(dl), R(g.tid));
        emit(k, "setp.ge.u64 %s, %s, %s;", P(pd), D(dl), D(g.d));
        emit(k, "@%s bra %s;", P(pd), L(l_dend));
        label(k, l_dim);
        {
            int a = nfd(k), dl32 = nr(k), off = nr(k), ga = nd(k);
            emit(k, "mov.f64 %s, %s;", FD(a), CD(0.0));
            emit(k, "cvt.u32.u64 %s, %s;", R(dl32), D(dl));
            emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(off), R(dl32), R(sm));
            for (int w = 0; w < WARPS; w++) {
                int aw = nfd(k);
                emit(k, "ld.shared.f64 %s, [%s+%d];", FD(aw), R(off), 8 * WARP_STATE * w + 16);
                emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(a), FD(aw), FD(f[w]), FD(a));
            }
            emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(ga), D(dl), D(base));
            emit(k, "st.global.f64 [%s+16], %s;", D(ga), FD(a));
        }
        emit(k, "add.u64 %s, %s, %d;", D(dl), D(dl), 32 * WARPS);
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pd), D(dl), D(g.d));
        emit(k, "@%s bra %s;", P(pd), L(l_dim));
        label(k, l_dend);
    }
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(istep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(i), D(g.n_q));
    emit(k, "@%s bra %s;", P(pi), L(l_q));
    label(k, l_qend);
    char shared[96];
    snprintf(shared, sizeof shared, "\t.shared .align 8 .b8 attn_smem[%d];\n", 8 * WARP_STATE * WARPS);
    char dir[48];
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n", 32 * WARPS);
    char name[32];
    snprintf(name, sizeof name, "attn_part_%s_d%d", half ? "f16" : "f32", 32 * slots);
    kern_finish(mod, k, name,
                ".param .u64 p_part, .param .u64 p_q, .param .u64 p_k, .param .u64 p_v, .param .u64 p_n_q, "
                ".param .u64 p_n_kv, .param .u64 p_group, .param .u64 p_d, .param .u64 p_causal, "
                ".param .u64 p_qt, .param .u64 p_qh, .param .u64 p_kt, .param .u64 p_kh, .param .u64 p_vt, "
                ".param .u64 p_vh, .param .u64 p_chunk, .param .u64 p_splits, .param .f32 p_scale",
                dir, shared);
}

/* out[i][h][l] = sum_s acc_s[l] e^(m_s - M) / sum_s sum_s e^(m_s - M):
 * grid (heads, queries), threads over l. */
static void gen_attn_final(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int out = param_global(k, "p_out"), part = param_global(k, "p_part");
    int n_q = param_u64(k, "p_n_q"), d = param_u64(k, "p_d"), splits = param_u64(k, "p_splits");
    int ot = param_u64(k, "p_ot"), oh = param_u64(k, "p_oh");
    int h = nd(k), heads = nd(k), i = nd(k), istep = nd(k), tid = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(h), R(sreg(k, "%ctaid.x")));
    emit(k, "cvt.u64.u32 %s, %s;", D(heads), R(sreg(k, "%nctaid.x")));
    emit(k, "cvt.u64.u32 %s, %s;", D(i), R(sreg(k, "%ctaid.y")));
    emit(k, "cvt.u64.u32 %s, %s;", D(istep), R(sreg(k, "%nctaid.y")));
    emit(k, "cvt.u64.u32 %s, %s;", D(tid), R(sreg(k, "%tid.x")));
    int pi = np(k), l_q = nlabel(k), l_qend = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(i), D(n_q));
    emit(k, "@%s bra %s;", P(pi), L(l_qend));
    label(k, l_q);
    int w = nd(k), base = nd(k), slot = nd(k);
    emit(k, "add.u64 %s, %s, 2;", D(w), D(d));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(slot), D(i), D(heads), D(h));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(slot), D(slot), D(splits));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(slot), D(slot), D(w));
    emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(base), D(slot), D(part));
    int stride = nd(k);
    emit(k, "mul.lo.u64 %s, %s, 8;", D(stride), D(w));
    /* M = max m_s (UNROLL ranges at a time: their loads in flight together) */
    int mx = nfd(k), s = nd(k), ps = np(k), l_m = nlabel(k);
    emit(k, "mov.f64 %s, %s;", FD(mx), CD(-INFINITY));
    emit(k, "mov.u64 %s, 0;", D(s));
    label(k, l_m);
    {
        int v[UNROLL];
        for (int u = 0; u < UNROLL; u++) {
            int su = nd(k), pin = np(k), pa = nd(k);
            v[u] = nfd(k);
            emit(k, "add.u64 %s, %s, %d;", D(su), D(s), u);
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(su), D(splits));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(pa), D(su), D(stride), D(base));
            emit(k, "mov.f64 %s, %s;", FD(v[u]), CD(-INFINITY));
            emit(k, "@%s ld.global.f64 %s, [%s];", P(pin), FD(v[u]), D(pa));
        }
        for (int u = 0; u < UNROLL; u++)
            emit(k, "max.f64 %s, %s, %s;", FD(mx), FD(mx), FD(v[u]));
    }
    emit(k, "add.u64 %s, %s, %d;", D(s), D(s), UNROLL);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(ps), D(s), D(splits));
    emit(k, "@%s bra %s;", P(ps), L(l_m));
    int dl = nd(k), pd = np(k), l_dim = nlabel(k), l_dend = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(dl), D(tid));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pd), D(dl), D(d));
    emit(k, "@%s bra %s;", P(pd), L(l_dend));
    label(k, l_dim);
    {
        /* S = sum sum_s e^(m_s - M), A = sum acc_s[l] e^(m_s - M); a range
         * without keys (m_s = -inf) adds nothing */
        int tot = nfd(k), a = nfd(k), s2 = nd(k), l_s = nlabel(k), ps2 = np(k);
        emit(k, "mov.f64 %s, %s;", FD(tot), CD(0.0));
        emit(k, "mov.f64 %s, %s;", FD(a), CD(0.0));
        emit(k, "mov.u64 %s, 0;", D(s2));
        label(k, l_s);
        int ms[UNROLL], ss[UNROLL], as[UNROLL];
        for (int u = 0; u < UNROLL; u++) {
            int su = nd(k), pin = np(k), pa = nd(k), ga = nd(k);
            ms[u] = nfd(k), ss[u] = nfd(k), as[u] = nfd(k);
            emit(k, "add.u64 %s, %s, %d;", D(su), D(s2), u);
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(su), D(splits));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(pa), D(su), D(stride), D(base));
            emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(ga), D(dl), D(pa));
            emit(k, "mov.f64 %s, %s;", FD(ms[u]), CD(-INFINITY));
            emit(k, "@%s ld.global.f64 %s, [%s];", P(pin), FD(ms[u]), D(pa));
            emit(k, "@%s ld.global.f64 %s, [%s+8];", P(pin), FD(ss[u]), D(pa));
            emit(k, "@%s ld.global.f64 %s, [%s+16];", P(pin), FD(as[u]), D(ga));
        }
        for (int u = 0; u < UNROLL; u++) {
            int df = nfd(k), none = np(k);
            emit(k, "sub.rn.f64 %s, %s, %s;", FD(df), FD(ms[u]), FD(mx));
            int f = exp_neg(k, df);
            emit(k, "setp.eq.f64 %s, %s, %s;", P(none), FD(ms[u]), CD(-INFINITY));
            emit(k, "@%s mov.f64 %s, %s;", P(none), FD(f), CD(0.0));
            emit(k, "@!%s fma.rn.f64 %s, %s, %s, %s;", P(none), FD(tot), FD(ss[u]), FD(f), FD(tot));
            emit(k, "@!%s fma.rn.f64 %s, %s, %s, %s;", P(none), FD(a), FD(as[u]), FD(f), FD(a));
        }
        emit(k, "add.u64 %s, %s, %d;", D(s2), D(s2), UNROLL);
        emit(k, "setp.lt.u64 %s, %s, %s;", P(ps2), D(s2), D(splits));
        emit(k, "@%s bra %s;", P(ps2), L(l_s));
        int r = nfd(k), rf = nf(k);
        emit(k, "div.rn.f64 %s, %s, %s;", FD(r), FD(a), FD(tot));
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(rf), FD(r));
        int orow = row_addr(k, out, i, ot, h, oh, 4), oa = nd(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(oa), D(dl), D(orow));
        emit(k, "st.global.f32 [%s], %s;", D(oa), F(rf));
    }
    emit(k, "add.u64 %s, %s, %d;", D(dl), D(dl), 128);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pd), D(dl), D(d));
    emit(k, "@%s bra %s;", P(pd), L(l_dim));
    label(k, l_dend);
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(istep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(i), D(n_q));
    emit(k, "@%s bra %s;", P(pi), L(l_q));
    label(k, l_qend);
    kern_finish(mod, k, "attn_final",
                ".param .u64 p_out, .param .u64 p_part, .param .u64 p_n_q, .param .u64 p_d, .param .u64 p_splits, "
                ".param .u64 p_ot, .param .u64 p_oh", ".maxntid 128, 1, 1\n", NULL);
}

void infer_attention(strbuf *mod)
{
    for (int half = 0; half < 2; half++)
        for (int slots = 2; slots <= SLOTS; slots *= 2)
            gen_attn_part(mod, half, slots);
    gen_attn_final(mod);
}
