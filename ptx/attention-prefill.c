/* SPDX-License-Identifier: MIT */
/* attention-prefill.c - attn_pf_<f16|f32>_d<D> of module "infer": the
 * attention of relaxed prompt calls (many queries) with an f16 or f32 cache
 * whose K and V rows are 16-byte aligned, head_dim exactly D = 64 or 128, on
 * tensor cores (mma.sync m16n8k16, f16 inputs, float32 sums; sm_80 on).
 * attn_group_<f16|f32>_d<D> runs the same tiles for a decode of grouped
 * queries: the rows are the query heads of one KV head (at the end of
 * this file).
 *
 * A block of 4 warps takes 64 queries of one head (grid: query blocks,
 * heads), a warp 16 of them; the keys go by in tiles of 64, staged in
 * shared memory as f16 (K and V rows padded by 16 bytes: conflict-free
 * reads).  Per tile a warp computes its 16 x 64 scores S = q K^T, masks them
 * (causal: query i sees keys up to n_kv - n_q + i), runs the online
 * softmax in base 2 (float32 running maximum and sum, e^x as ex2.approx)
 * and adds P V to its 16 x D accumulators; at the end each row is divided
 * by its sum.  One launch, no scratch.
 *
 * Precision (the relaxed contract of core/rayo-ops.h: 1e-4 absolute plus
 * 2e-3 of sum_j p_j |v_j|): q, times scale log2(e), is split into q_hi =
 * f16(q) and q_lo = f16(q - q_hi).  Before the split each query row is
 * scaled by a power of two that puts its largest value in [2^14, 2^15) (no
 * f16 overflow, no digits lost to f16's range in tiny rows); the scores are
 * scaled back exactly.  P goes into P V as two f16 parts, f16(p) and
 * f16(p - f16(p)), two products each: within 2^-22 of p (f16(p) alone
 * errs by 2^-11 a term, which with the f16 V and the float32 scores took
 * 0.80-0.84 of the contract at scores near 3e3).
 *
 * f16 cache: S = q_hi K^T + q_lo K^T.  K is exact in f16, so each score is
 * right to float32 accuracy (a single f16 q would err by 2^-11 |q||k|, 1.5%
 * of a weight at scores near 30).  V is exact.
 *
 * f32 cache: each key row is scaled by 2^s, the power of two that puts its
 * largest |k| in [2^14, 2^15) (s within [-113, 126]; a row of zeros s = 0),
 * and split into k_hi = f16(k') and k_lo = f16(k' - k_hi) while staging;
 * S = q_hi k_hi + q_lo k_hi + q_hi k_lo, each score column times 2^-s
 * (exact).  Where k_lo is a normal f16, k_hi + k_lo is k' to 2^-22
 * relative; where it is subnormal (|k'| below 2^-3: values far below the
 * row's largest) it errs by at most 2^-25 absolutely, 2^-25 2^-s after the
 * scaling back, against the row's largest |k| of at least 2^14 2^-s: an
 * error below 2^-39 of the row's largest |k| times |q|_1 in the score,
 * far below the float32 rounding of the sum of the products.  q_lo k_lo,
 * at most 2^-22 |q||k|, is within that rounding too.  So each score is
 * right to about float32 accuracy (2^-20 relative in |q||k|), which keeps
 * each weight within 2^-20 |s| relative: inside the 2e-3 term.  V is
 * rounded to f16: 2^-11 relative per element in the normal range, at most
 * 2^-25 absolutely below it, within 2e-3 of sum_j p_j |v_j| plus the 1e-4
 * absolute term; a tile whose V holds |v| >= 65504 (rounding would give
 * infinity), an infinity or NaN takes the float32 P V below, reading the
 * f32 values themselves.
 *
 * NaN and infinity: a NaN score gives its row NaN (max.f32 keeps the other
 * operand, ex2(NaN) = NaN), as in the other kernels; masked scores are set
 * to -inf whatever K holds.  A masked key's weight is 0, but 0 times a
 * non-finite V in the tensor-core product is NaN: a tile whose staged V
 * holds any infinity or NaN (found while staging, bar.red.or) does its
 * P V with float32 fused multiply-adds over the visible keys only (the
 * weights, as f16, through shared memory), so such values reach exactly
 * the rows that see them. */
#include "gen-ptx.h"
#include "../plugins/cuda/cuda-ptx.h"

#include <math.h>

#define PF_WARPS 4
#define PF_ROWS (16 * PF_WARPS) /* queries a block */
#define PF_KEYS 64              /* keys a tile */
#define LOG2E 1.4426950408889634

typedef struct pf_regs {
    int dm;              /* D */
    attn_params p;       /* q, k, v, the shape and strides */
    int out, ot, oh;     /* .b64 */
    int scale;           /* .f32: scale log2(e) */
    int tid, lane, warp; /* .b32 */
    int g, t;            /* .b32: lane / 4, lane % 4 (the mma fragments' row and column pair) */
    int h, kvh;          /* .b64: head, its KV head */
    int ra, rb;          /* .b64: the lane's query rows (g, g + 8 of the warp's 16) */
    int va, vb;          /* .b32: keys visible to them */
    int kend;            /* .b32: keys any query of the block sees */
    int ks, vs;          /* .b32: shared K (K_hi with an f32 cache) and V tiles */
    int f32;             /* an f32 cache: K staged as K_hi and K_lo, V rounded to f16 */
    int kl, ksc;         /* .b32 (f32 cache): the shared K_lo tile, the keys' scales 2^-s */
    int nt;              /* tiles of 8 keys a warp multiplies per staged tile: 8, or 2 (group) */
    int grp;             /* attn_group_*: the rows are the heads of a KV group, the keys split */
    int kb, k0;          /* .b32: the warp's first key within a tile (group), the block's first key */
    int i, part;         /* .b64 (group): the query; the scratch of the splits' partial results */
    int split, nsplit;   /* .b32 (group): this block's key range, the ranges */
} pf_regs;

static int row_bytes(const pf_regs *g) { return 2 * (g->dm + 8); }

static void pf_params(kern *k, pf_regs *g)
{
    g->out = param_global(k, "p_out");
    attn_read_params(k, &g->p);
    g->ot = param_u64(k, "p_ot");
    g->oh = param_u64(k, "p_oh");
    int s = param_f32(k, "p_scale");
    g->scale = nf(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(g->scale), F(s), C((float)LOG2E));
    if (g->grp)
        g->part = param_global(k, "p_part");
}

/* keys visible to query row i (.b64): n_kv, or n_kv - n_q + i + 1 when
 * causal (rows past n_q: at most n_kv) */
static int visible(kern *k, const pf_regs *g, int i)
{
    int v = nd(k), pc = np(k), o = nr(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pc), D(g->p.causal));
    emit(k, "mov.u64 %s, %s;", D(v), D(g->p.n_kv));
    emit(k, "@%s sub.u64 %s, %s, %s;", P(pc), D(v), D(v), D(g->p.n_q));
    emit(k, "@%s add.u64 %s, %s, %s;", P(pc), D(v), D(v), D(i));
    emit(k, "@%s add.u64 %s, %s, 1;", P(pc), D(v), D(v));
    emit(k, "min.u64 %s, %s, %s;", D(v), D(v), D(g->p.n_kv));
    emit(k, "cvt.u32.u64 %s, %s;", R(o), D(v));
    return o;
}

/* The shared tiles: K, V (an f32 cache: K_hi, K_lo, V, the keys' scales). */
static void pf_tiles(kern *k, pf_regs *g)
{
    g->ks = nr(k), g->vs = nr(k);
    emit(k, "mov.u32 %s, %s;", R(g->ks), g->f32 ? "attn_pf32_smem" : "attn_pf_smem");
    emit(k, "add.u32 %s, %s, %d;", R(g->vs), R(g->ks), (g->f32 ? 2 : 1) * PF_KEYS * row_bytes(g));
    if (g->f32) {
        g->kl = nr(k), g->ksc = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(g->kl), R(g->ks), PF_KEYS * row_bytes(g));
        emit(k, "add.u32 %s, %s, %d;", R(g->ksc), R(g->ks), 3 * PF_KEYS * row_bytes(g));
    }
}

static void pf_indices(kern *k, pf_regs *g)
{
    lane_warp(k, &g->tid, &g->lane, &g->warp);
    g->g = nr(k), g->t = nr(k), g->h = nd(k), g->kvh = nd(k), g->ra = nd(k), g->rb = nd(k);
    emit(k, "shr.u32 %s, %s, 2;", R(g->g), R(g->lane));
    emit(k, "and.b32 %s, %s, 3;", R(g->t), R(g->lane));
    emit(k, "cvt.u64.u32 %s, %s;", D(g->h), R(sreg(k, "%ctaid.y")));
    emit(k, "div.u64 %s, %s, %s;", D(g->kvh), D(g->h), D(g->p.group));
    int qb = nd(k), last = nd(k), lastq = nd(k), w = nr(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(qb), R(sreg(k, "%ctaid.x")));
    emit(k, "mul.lo.u64 %s, %s, %d;", D(qb), D(qb), PF_ROWS);
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(w), R(g->warp), R(g->g));
    emit(k, "cvt.u64.u32 %s, %s;", D(g->ra), R(w));
    emit(k, "add.u64 %s, %s, %s;", D(g->ra), D(g->ra), D(qb));
    emit(k, "add.u64 %s, %s, 8;", D(g->rb), D(g->ra));
    g->va = visible(k, g, g->ra);
    g->vb = visible(k, g, g->rb);
    emit(k, "add.u64 %s, %s, %d;", D(last), D(qb), PF_ROWS - 1);
    emit(k, "sub.u64 %s, %s, 1;", D(lastq), D(g->p.n_q));
    emit(k, "min.u64 %s, %s, %s;", D(last), D(last), D(lastq));
    g->kend = visible(k, g, last);
    pf_tiles(k, g);
}

/* two floats as f16x2 (x0 in the low half: the lower column) */
static int pack2(kern *k, int x0, int x1)
{
    int o = nr(k);
    emit(k, "cvt.rn.f16x2.f32 %s, %s, %s;", R(o), F(x1), F(x0));
    return o;
}

static void unpack2(kern *k, int w, int *x0, int *x1)
{
    *x0 = nf(k), *x1 = nf(k);
    emit(k, "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %s; cvt.f32.f16 %s, lo; cvt.f32.f16 %s, hi; }", R(w), F(*x0),
         F(*x1));
}

/* The lane's A fragments of q for k-steps of 16 dimensions: qh/ql[ks][4]
 * (rows g, g + 8; columns 2t, 2t + 1, 2t + 8, 2t + 9 of the step), q times
 * scale log2(e) times 2^-e of its row; fac[2] = 2^e of rows a, b. */
static void pf_load_q(kern *k, const pf_regs *g, int qh[][4], int ql[][4], int *fac)
{
    int nks = g->dm / 16, x[8][4][2], mx[2];
    for (int r = 0; r < 2; r++) {
        int pr = np(k), base = nd(k), c2 = nd(k), row = r ? g->rb : g->ra;
        if (g->grp) { /* row: head h + row of query i */
            int hr = nd(k);
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(row), D(g->p.group));
            emit(k, "add.u64 %s, %s, %s;", D(hr), D(g->h), D(row));
            emit(k, "mul.lo.u64 %s, %s, %s;", D(base), D(g->i), D(g->p.qt));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(base), D(hr), D(g->p.qh), D(base));
        } else {
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(row), D(g->p.n_q));
            emit(k, "mul.lo.u64 %s, %s, %s;", D(base), D(row), D(g->p.qt));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(base), D(g->h), D(g->p.qh), D(base));
        }
        emit(k, "cvt.u64.u32 %s, %s;", D(c2), R(g->t));
        emit(k, "mad.lo.u64 %s, %s, 2, %s;", D(base), D(c2), D(base));
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(base), D(base), D(g->p.q));
        mx[r] = fmov(k, 0.0f);
        for (int s = 0; s < nks; s++)
            for (int hi8 = 0; hi8 < 2; hi8++)
                for (int e = 0; e < 2; e++) {
                    int v = nf(k), a = nf(k);
                    emit(k, "mov.f32 %s, 0f00000000;", F(v));
                    emit(k, "@%s ld.global.f32 %s, [%s+%d];", P(pr), F(v), D(base), 4 * (16 * s + 8 * hi8 + e));
                    emit(k, "mul.rn.f32 %s, %s, %s;", F(v), F(v), F(g->scale));
                    emit(k, "abs.f32 %s, %s;", F(a), F(v));
                    emit(k, "max.f32 %s, %s, %s;", F(mx[r]), F(mx[r]), F(a));
                    x[s][2 * hi8 + r][e] = v;
                }
    }
    for (int r = 0; r < 2; r++) {
        for (int o = 1; o <= 2; o *= 2) {
            int t = nf(k);
            emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(mx[r]), o);
            emit(k, "max.f32 %s, %s, %s;", F(mx[r]), F(mx[r]), F(t));
        }
        /* e = max(-126, exponent(max) - 14): the row's largest value in
         * [2^14, 2^15) (no f16 overflow, and tiny rows keep their digits in
         * f16), a zero row or one below 2^-112 as close as the range allows */
        int eb = nr(k), down = nf(k), bits = nr(k);
        fac[r] = nf(k);
        emit(k, "mov.b32 %s, %s;", R(eb), F(mx[r]));
        emit(k, "bfe.u32 %s, %s, 23, 8;", R(eb), R(eb));
        emit(k, "sub.s32 %s, %s, %d;", R(eb), R(eb), 127 + 14);
        emit(k, "max.s32 %s, %s, -126;", R(eb), R(eb));
        emit(k, "sub.u32 %s, 127, %s;", R(bits), R(eb));
        emit(k, "shl.b32 %s, %s, 23;", R(bits), R(bits));
        emit(k, "mov.b32 %s, %s;", F(down), R(bits));
        emit(k, "add.u32 %s, %s, 127;", R(bits), R(eb));
        emit(k, "shl.b32 %s, %s, 23;", R(bits), R(bits));
        emit(k, "mov.b32 %s, %s;", F(fac[r]), R(bits));
        for (int s = 0; s < nks; s++)
            for (int hi8 = 0; hi8 < 2; hi8++)
                for (int e = 0; e < 2; e++)
                    emit(k, "mul.rn.f32 %s, %s, %s;", F(x[s][2 * hi8 + r][e]), F(x[s][2 * hi8 + r][e]), F(down));
    }
    for (int s = 0; s < nks; s++)
        for (int a = 0; a < 4; a++) {
            int y0, y1, d0 = nf(k), d1 = nf(k);
            qh[s][a] = pack2(k, x[s][a][0], x[s][a][1]);
            unpack2(k, qh[s][a], &y0, &y1);
            emit(k, "sub.rn.f32 %s, %s, %s;", F(d0), F(x[s][a][0]), F(y0));
            emit(k, "sub.rn.f32 %s, %s, %s;", F(d1), F(x[s][a][1]), F(y1));
            ql[s][a] = pack2(k, d0, d1);
        }
}

/* The lane's row kr of the tile and column col (of groups of per values:
 * the row's dm / per lanes are consecutive), and its place (.b32) in the
 * shared K tile. */
static int pf_slot(kern *k, const pf_regs *g, int per, int *kr, int *col)
{
    int per_row = g->dm / per, so = nr(k);
    *kr = nr(k), *col = nr(k);
    emit(k, "div.u32 %s, %s, %d;", R(*kr), R(g->tid), per_row);
    emit(k, "rem.u32 %s, %s, %d;", R(*col), R(g->tid), per_row);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(so), R(*kr), row_bytes(g), R(g->ks));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(so), R(*col), 2 * per, R(so));
    return so;
}

/* Where a lane stages from: its first key j (.b64: row kr of the tile
 * from j0), the global address ga (.b64) of its per values (from value
 * col * per) of that key's row of K (kv 0) or V (kv 1), elements of esize
 * bytes, and gstep (.b64) the address step of step keys. */
typedef struct pf_src {
    int j, ga, gstep;
} pf_src;

static pf_src pf_source(kern *k, const pf_regs *g, int kv, int kr, int col, int per, int esize, int step, int j0)
{
    int base = kv ? g->p.v : g->p.k, ts = kv ? g->p.vt : g->p.kt, hs = kv ? g->p.vh : g->p.kh;
    pf_src o = {nd(k), nd(k), nd(k)};
    int c64 = nd(k), j32 = nr(k);
    emit(k, "add.u32 %s, %s, %s;", R(j32), R(kr), R(j0));
    emit(k, "cvt.u64.u32 %s, %s;", D(o.j), R(j32));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(o.ga), D(o.j), D(ts));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(o.ga), D(g->kvh), D(hs), D(o.ga));
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(col));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(o.ga), D(c64), per, D(o.ga));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(o.ga), D(o.ga), esize, D(base));
    emit(k, "mul.lo.u64 %s, %s, %d;", D(o.gstep), D(ts), esize * step);
    return o;
}

/* A tile's K and V values as the lane loads them (f16: .b32 words of 8
 * values a piece; f32: .f32, 4 values a piece), pieces of rows kr + i step
 * of the tile. */
typedef struct pf_staged {
    int x[2][16][4]; /* [K, V][pass][value or word] */
    int per, step, passes;
} pf_staged;

static pf_staged pf_staged_regs(kern *k, const pf_regs *g)
{
    pf_staged t;
    t.per = g->f32 ? 4 : 8;
    t.step = 128 / (g->dm / t.per);
    t.passes = PF_KEYS / t.step;
    for (int kv = 0; kv < 2; kv++)
        for (int i = 0; i < t.passes; i++)
            for (int e = 0; e < 4; e++)
                t.x[kv][i][e] = g->f32 ? nf(k) : nr(k);
    return t;
}

/* Piece i of src into t's registers (zeros past n_kv); src then points
 * at piece i + 1. */
static void pf_load_piece(kern *k, const pf_regs *g, const pf_staged *t, int kv, int i, pf_src src)
{
    const int *x = t->x[kv][i];
    int pv = np(k);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pv), D(src.j), D(g->p.n_kv));
    for (int e = 0; e < 4; e++)
        emit(k, g->f32 ? "mov.b32 %s, 0f00000000;" : "mov.b32 %s, 0;", g->f32 ? F(x[e]) : R(x[e]));
    if (g->f32)
        emit(k, "@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s];", P(pv), F(x[0]), F(x[1]), F(x[2]), F(x[3]),
             D(src.ga));
    else
        emit(k, "@%s ld.global.nc.v4.b32 {%s, %s, %s, %s}, [%s];", P(pv), R(x[0]), R(x[1]), R(x[2]), R(x[3]),
             D(src.ga));
    if (i + 1 < t->passes) {
        emit(k, "add.u64 %s, %s, %d;", D(src.j), D(src.j), t->step);
        emit(k, "add.u64 %s, %s, %s;", D(src.ga), D(src.ga), D(src.gstep));
    }
}

static void mma_16816(kern *k, const int *a, int b0, int b1, int *c)
{
    emit(k, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%s, %s, %s, %s}, {%s, %s, %s, %s}, {%s, %s}, "
            "{%s, %s, %s, %s};",
         F(c[0]), F(c[1]), F(c[2]), F(c[3]), R(a[0]), R(a[1]), R(a[2]), R(a[3]), R(b0), R(b1), F(c[0]), F(c[1]),
         F(c[2]), F(c[3]));
}

/* The lane's 4 values x[4] of a key row (row < 64 of the tile, spread over
 * dm / 4 consecutive lanes) as K_hi and K_lo in shared memory at so + off:
 * the row scaled by 2^s, s the one (within [-113, 126]) that puts its
 * largest |k| in [2^14, 2^15) (a row of zeros: s = 0); the lane of its
 * first values stores 2^-s at ksc + 4 row. */
static void pf_split_k(kern *k, const pf_regs *g, const int *x, int so, int off, int row, int first)
{
    int mx = nr(k), sh = nr(k), pz = np(k), up = nf(k), bits = nr(k);
    emit(k, "mov.u32 %s, 0;", R(mx));
    for (int e = 0; e < 4; e++) {
        int a = nr(k);
        emit(k, "mov.b32 %s, %s;", R(a), F(x[e]));
        emit(k, "and.b32 %s, %s, 0x7fffffff;", R(a), R(a));
        emit(k, "max.u32 %s, %s, %s;", R(mx), R(mx), R(a));
    }
    for (int o = 1; o < g->dm / 4; o *= 2) {
        int t = nr(k);
        emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(t), R(mx), o);
        emit(k, "max.u32 %s, %s, %s;", R(mx), R(mx), R(t));
    }
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pz), R(mx));
    emit(k, "shr.u32 %s, %s, 23;", R(sh), R(mx));
    emit(k, "sub.s32 %s, %d, %s;", R(sh), 127 + 14, R(sh));
    emit(k, "min.s32 %s, %s, 126;", R(sh), R(sh));
    emit(k, "max.s32 %s, %s, -113;", R(sh), R(sh));
    emit(k, "selp.s32 %s, 0, %s, %s;", R(sh), R(sh), P(pz));
    emit(k, "add.s32 %s, %s, 127;", R(bits), R(sh));
    emit(k, "shl.b32 %s, %s, 23;", R(bits), R(bits));
    emit(k, "mov.b32 %s, %s;", F(up), R(bits));
    int hi[2], lo[2];
    for (int h = 0; h < 2; h++) {
        int y[2], z[2], d[2];
        for (int e = 0; e < 2; e++) {
            y[e] = nf(k), d[e] = nf(k);
            emit(k, "mul.rn.f32 %s, %s, %s;", F(y[e]), F(x[2 * h + e]), F(up));
        }
        hi[h] = pack2(k, y[0], y[1]);
        unpack2(k, hi[h], &z[0], &z[1]);
        for (int e = 0; e < 2; e++)
            emit(k, "sub.rn.f32 %s, %s, %s;", F(d[e]), F(y[e]), F(z[e]));
        lo[h] = pack2(k, d[0], d[1]);
    }
    emit(k, "st.shared.v2.b32 [%s+%d], {%s, %s};", R(so), off, R(hi[0]), R(hi[1]));
    emit(k, "st.shared.v2.b32 [%s+%d], {%s, %s};", R(so), off + PF_KEYS * row_bytes(g), R(lo[0]), R(lo[1]));
    int down = nf(k), a = nr(k);
    emit(k, "sub.s32 %s, 127, %s;", R(bits), R(sh));
    emit(k, "shl.b32 %s, %s, 23;", R(bits), R(bits));
    emit(k, "mov.b32 %s, %s;", F(down), R(bits));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(row), R(g->ksc));
    emit(k, "@%s st.shared.f32 [%s], %s;", P(first), R(a), F(down));
}

/* Where the lane stores its pieces: so, its place in the shared K tile (of
 * row kr, first value col); flag: the V values seen so far (f16: the
 * halves' exponent tests, f32: the largest |v| bits); first: the lane
 * that stores its row's scale (f32). */
typedef struct pf_dest {
    int so, kr, col, flag, first;
} pf_dest;

static pf_dest pf_dest_of(kern *k, const pf_regs *g, const pf_staged *t)
{
    pf_dest o;
    o.so = pf_slot(k, g, t->per, &o.kr, &o.col);
    o.flag = nr(k);
    if (g->f32) {
        o.first = np(k);
        emit(k, "setp.eq.u32 %s, %s, 0;", P(o.first), R(o.col));
        emit(k, "mov.u32 %s, 0;", R(o.flag));
    } else
        emit(k, "mov.u32 %s, 0x00200020;", R(o.flag));
    return o;
}

/* Piece i of K (kv 0) or V from t's registers into the shared tiles: an
 * f16 cache's words as they are; an f32 cache's K as K_hi, K_lo and the
 * keys' scales (pf_split_k), its V rounded to f16. */
static void pf_store_piece(kern *k, const pf_regs *g, const pf_staged *t, int kv, int i, const pf_dest *o)
{
    const int *x = t->x[kv][i];
    int off = i * t->step * row_bytes(g);
    if (!g->f32) {
        emit(k, "st.shared.v4.b32 [%s+%d], {%s, %s, %s, %s};", R(o->so), (kv ? PF_KEYS * row_bytes(g) : 0) + off,
             R(x[0]), R(x[1]), R(x[2]), R(x[3]));
        for (int e = 0; kv && e < 4; e++) { /* a half is inf or NaN where its 5 exponent bits are all ones */
            int u = nr(k);
            emit(k, "and.b32 %s, %s, 0x7c007c00;", R(u), R(x[e]));
            emit(k, "xor.b32 %s, %s, 0x7c007c00;", R(u), R(u));
            emit(k, "shr.u32 %s, %s, 10;", R(u), R(u));
            emit(k, "add.u32 %s, %s, 0x001f001f;", R(u), R(u));
            emit(k, "and.b32 %s, %s, %s;", R(o->flag), R(o->flag), R(u));
        }
    } else if (!kv) {
        int row = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(row), R(o->kr), i * t->step);
        pf_split_k(k, g, x, o->so, off, row, o->first);
    } else {
        for (int e = 0; e < 4; e++) {
            int a = nr(k);
            emit(k, "mov.b32 %s, %s;", R(a), F(x[e]));
            emit(k, "and.b32 %s, %s, 0x7fffffff;", R(a), R(a));
            emit(k, "max.u32 %s, %s, %s;", R(o->flag), R(o->flag), R(a));
        }
        int h0 = pack2(k, x[0], x[1]), h1 = pack2(k, x[2], x[3]);
        emit(k, "st.shared.v2.b32 [%s+%d], {%s, %s};", R(o->so), 2 * PF_KEYS * row_bytes(g) + off, R(h0), R(h1));
    }
}

/* The barrier after the stores; the result is set where some staged V
 * value is not finite (an f32 cache: or has |v| >= 65504, the largest
 * f16, above which rounding gives infinity). */
static int pf_dest_done(kern *k, const pf_regs *g, const pf_dest *o)
{
    int pb = np(k), all = np(k);
    if (g->f32)
        emit(k, "setp.ge.u32 %s, %s, 0x477fe000;", P(pb), R(o->flag)); /* 65504 */
    else {
        emit(k, "and.b32 %s, %s, 0x00200020;", R(o->flag), R(o->flag));
        emit(k, "setp.ne.u32 %s, %s, 0x00200020;", P(pb), R(o->flag));
    }
    emit(k, "bar.red.or.pred %s, 0, %s;", P(all), P(pb));
    return all;
}

/* Keys j0 .. j0 + 63 into the shared tiles, each piece stored as soon as
 * it is loaded, then the barrier; the result: a bad V value
 * (pf_dest_done). */
static int pf_stage_now(kern *k, const pf_regs *g, int j0, const pf_staged *t)
{
    pf_dest o = pf_dest_of(k, g, t);
    for (int kv = 0; kv < 2; kv++) {
        pf_src src = pf_source(k, g, kv, o.kr, o.col, t->per, g->f32 ? 4 : 2, t->step, j0);
        for (int i = 0; i < t->passes; i++) {
            pf_load_piece(k, g, t, kv, i, src);
            pf_store_piece(k, g, t, kv, i, &o);
        }
    }
    return pf_dest_done(k, g, &o);
}

/* S (.f32 s[8][4], the C fragments of 8 tiles of 8 keys) = q K^T, scaled
 * back by the rows' 2^e, masked past each row's visible keys. */
static void pf_scores(kern *k, const pf_regs *g, int qh[][4], int ql[][4], const int *fac, int j0, int s[8][4])
{
    int koff = nr(k), kj0 = j0;
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(koff), R(g->g), row_bytes(g), R(g->ks));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(koff), R(g->t), R(koff));
    if (g->grp) { /* the warp's 16 keys of the tile */
        kj0 = nr(k);
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(koff), R(g->kb), row_bytes(g), R(koff));
        emit(k, "add.u32 %s, %s, %s;", R(kj0), R(j0), R(g->kb));
    }
    for (int n = 0; n < g->nt; n++)
        for (int c = 0; c < 4; c++) {
            s[n][c] = nf(k);
            emit(k, "mov.f32 %s, 0f00000000;", F(s[n][c]));
        }
    for (int ks = 0; ks < g->dm / 16; ks++)
        for (int n = 0; n < g->nt; n++) {
            int b0 = nr(k), b1 = nr(k), off = n * 8 * row_bytes(g) + 32 * ks;
            emit(k, "ld.shared.b32 %s, [%s+%d];", R(b0), R(koff), off);
            emit(k, "ld.shared.b32 %s, [%s+%d];", R(b1), R(koff), off + 16);
            mma_16816(k, qh[ks], b0, b1, s[n]);
            mma_16816(k, ql[ks], b0, b1, s[n]);
            if (g->f32) { /* q_hi K_lo; q_lo K_lo is below the score's float32 rounding */
                int l0 = nr(k), l1 = nr(k), lo = PF_KEYS * row_bytes(g) + off;
                emit(k, "ld.shared.b32 %s, [%s+%d];", R(l0), R(koff), lo);
                emit(k, "ld.shared.b32 %s, [%s+%d];", R(l1), R(koff), lo + 16);
                mma_16816(k, qh[ks], l0, l1, s[n]);
            }
        }
    int key = nr(k), ksc[8][2];
    emit(k, "mad.lo.u32 %s, %s, 2, %s;", R(key), R(g->t), R(kj0));
    if (g->f32) {
        int a = nr(k);
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(a), R(g->t), R(g->ksc));
        if (g->grp)
            emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(g->kb), R(a));
        for (int n = 0; n < g->nt; n++) {
            ksc[n][0] = nf(k), ksc[n][1] = nf(k);
            emit(k, "ld.shared.v2.f32 {%s, %s}, [%s+%d];", F(ksc[n][0]), F(ksc[n][1]), R(a), 32 * n);
        }
    }
    for (int n = 0; n < g->nt; n++)
        for (int c = 0; c < 4; c++) {
            int pv = np(k), kc = nr(k), f = fac[c / 2];
            if (g->f32) { /* the row's 2^e times the key's 2^-s first: out of range only where the score is */
                f = nf(k);
                emit(k, "mul.rn.f32 %s, %s, %s;", F(f), F(fac[c / 2]), F(ksc[n][c % 2]));
            }
            emit(k, "mul.rn.f32 %s, %s, %s;", F(s[n][c]), F(s[n][c]), F(f));
            emit(k, "add.u32 %s, %s, %d;", R(kc), R(key), 8 * n + c % 2);
            emit(k, "setp.lt.u32 %s, %s, %s;", P(pv), R(kc), R(c / 2 ? g->vb : g->va));
            emit(k, "selp.f32 %s, %s, %s, %s;", F(s[n][c]), F(s[n][c]), C(-INFINITY), P(pv));
        }
}

/* The online softmax step of a tile for the lane's two rows: the new
 * maxima m[2] (a fully masked row so far keeps -inf and subtracts 0), the
 * sums l[2] (the lane's share) and accumulators rescaled, s[][] -> p. */
static void pf_softmax(kern *k, const pf_regs *g, int s[8][4], int *m, int *l, int acc[][4])
{
    for (int r = 0; r < 2; r++) {
        int mx = nf(k), use = nf(k), alpha = nf(k), d = nf(k), pinf = np(k), sum = nf(k);
        emit(k, "max.f32 %s, %s, %s;", F(mx), F(s[0][2 * r]), F(s[0][2 * r + 1]));
        for (int n = 1; n < g->nt; n++)
            for (int e = 0; e < 2; e++)
                emit(k, "max.f32 %s, %s, %s;", F(mx), F(mx), F(s[n][2 * r + e]));
        for (int o = 1; o <= 2; o *= 2) {
            int t = nf(k);
            emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(mx), o);
            emit(k, "max.f32 %s, %s, %s;", F(mx), F(mx), F(t));
        }
        emit(k, "max.f32 %s, %s, %s;", F(mx), F(mx), F(m[r]));
        emit(k, "setp.eq.f32 %s, %s, %s;", P(pinf), F(mx), C(-INFINITY));
        emit(k, "selp.f32 %s, 0f00000000, %s, %s;", F(use), F(mx), P(pinf));
        emit(k, "sub.rn.f32 %s, %s, %s;", F(d), F(m[r]), F(use));
        emit(k, "ex2.approx.ftz.f32 %s, %s;", F(alpha), F(d));
        emit(k, "mov.f32 %s, %s;", F(m[r]), F(mx));
        emit(k, "mov.f32 %s, 0f00000000;", F(sum));
        for (int n = 0; n < g->nt; n++)
            for (int e = 0; e < 2; e++) {
                int x = s[n][2 * r + e];
                emit(k, "sub.rn.f32 %s, %s, %s;", F(x), F(x), F(use));
                emit(k, "ex2.approx.ftz.f32 %s, %s;", F(x), F(x));
                emit(k, "add.rn.f32 %s, %s, %s;", F(sum), F(sum), F(x));
            }
        emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(l[r]), F(l[r]), F(alpha), F(sum));
        for (int n = 0; n < g->dm / 8; n++)
            for (int e = 0; e < 2; e++)
                emit(k, "mul.rn.f32 %s, %s, %s;", F(acc[n][2 * r + e]), F(acc[n][2 * r + e]), F(alpha));
    }
}

/* acc += P V on tensor cores: V's B fragments by ldmatrix .trans (lanes
 * 0-15 the rows of keys 0-15 of a step, lanes 16-31 the same at 8 more
 * dimensions), each used by P's f16 part and by its remainder. */
static void pf_pv_mma(kern *k, const pf_regs *g, int pa[4][4], int plo[4][4], int acc[][4])
{
    int voff = nr(k), t = nr(k);
    emit(k, "and.b32 %s, %s, 15;", R(voff), R(g->lane));
    if (g->grp)
        emit(k, "add.u32 %s, %s, %s;", R(voff), R(voff), R(g->kb));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(voff), R(voff), row_bytes(g), R(g->vs));
    emit(k, "shr.u32 %s, %s, 4;", R(t), R(g->lane));
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(voff), R(t), R(voff));
    for (int kk = 0; kk < g->nt / 2; kk++)
        for (int n2 = 0; n2 < g->dm / 16; n2++) {
            int b[4];
            for (int e = 0; e < 4; e++)
                b[e] = nr(k);
            emit(k, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%s, %s, %s, %s}, [%s+%d];", R(b[0]), R(b[1]),
                 R(b[2]), R(b[3]), R(voff), kk * 16 * row_bytes(g) + n2 * 32);
            mma_16816(k, pa[kk], b[0], b[1], acc[2 * n2]);
            mma_16816(k, pa[kk], b[2], b[3], acc[2 * n2 + 1]);
            mma_16816(k, plo[kk], b[0], b[1], acc[2 * n2]);
            mma_16816(k, plo[kk], b[2], b[3], acc[2 * n2 + 1]);
        }
}

/* The global address of the lane's first V values (dimensions 2t, 2t + 1)
 * of key key (.b32), f32 cache. */
static int pf_v_row_f32(kern *k, const pf_regs *g, int key)
{
    int a = nd(k), t = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(a), R(key));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(a), D(a), D(g->p.vt));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(a), D(g->kvh), D(g->p.vh), D(a));
    emit(k, "cvt.u64.u32 %s, %s;", D(t), R(g->t));
    emit(k, "mad.lo.u64 %s, %s, 2, %s;", D(a), D(t), D(a));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(a), D(a), D(g->p.v));
    return a;
}

/* acc += P V with float32 fused multiply-adds over each row's visible keys
 * only (a tile with a V value that is not finite, or with an f32 cache not
 * below 65504): the warp's f16 weights through shared memory, in the K
 * tile's place (after a barrier: every warp is done with K); V from the
 * shared tile, or with an f32 cache from global memory as f32. */
static void pf_pv_exact(kern *k, const pf_regs *g, int pa[4][4], int j0, int acc[][4])
{
    int pw = nr(k), j = nr(k), pj = np(k), l_top = nlabel(k);
    emit(k, "bar.sync 0;");
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(pw), R(g->warp), 16 * PF_KEYS * 2, R(g->ks));
    int own = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(own), R(g->g), PF_KEYS * 2, R(pw));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(own), R(g->t), R(own));
    for (int kk = 0; kk < g->nt / 2; kk++)
        for (int a = 0; a < 4; a++) /* a: row g or g + 8 (odd), keys 2t or 2t + 8 (a >= 2) */
            emit(k, "st.shared.b32 [%s+%d], %s;", R(own), (a % 2) * 8 * PF_KEYS * 2 + (kk * 16 + (a / 2) * 8) * 2,
                 R(pa[kk][a]));
    emit(k, "bar.warp.sync -1;");
    emit(k, "mov.u32 %s, 0;", R(j));
    label(k, l_top);
    {
        int key = nr(k), vis[2], p[2], prow = nr(k), vrow = nr(k), tj = j;
        if (g->grp) { /* the warp's keys kb .. kb + 15 of the tile */
            tj = nr(k);
            emit(k, "add.u32 %s, %s, %s;", R(tj), R(j), R(g->kb));
        }
        emit(k, "add.u32 %s, %s, %s;", R(key), R(j0), R(tj));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(prow), R(g->g), PF_KEYS * 2, R(pw));
        emit(k, "mad.lo.u32 %s, %s, 2, %s;", R(prow), R(j), R(prow));
        for (int r = 0; r < 2; r++) {
            vis[r] = np(k), p[r] = nf(k);
            emit(k, "setp.lt.u32 %s, %s, %s;", P(vis[r]), R(key), R(r ? g->vb : g->va));
            emit(k, "{ .reg .b16 h; ld.shared.b16 h, [%s+%d]; cvt.f32.f16 %s, h; }", R(prow), r * 8 * PF_KEYS * 2,
                 F(p[r]));
        }
        int vg = 0, seen = 0;
        if (g->f32) {
            vg = pf_v_row_f32(k, g, key), seen = np(k);
            emit(k, "setp.lt.u32 %s, %s, %s;", P(seen), R(key), R(g->vb)); /* vb >= va */
        }
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(vrow), R(tj), row_bytes(g), R(g->vs));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(vrow), R(g->t), R(vrow));
        for (int n = 0; n < g->dm / 8; n++) {
            int w = nr(k), v0, v1;
            if (g->f32) { /* the f32 values themselves: exact, whatever their size */
                v0 = fmov(k, 0.0f), v1 = fmov(k, 0.0f);
                emit(k, "@%s ld.global.nc.v2.f32 {%s, %s}, [%s+%d];", P(seen), F(v0), F(v1), D(vg), 32 * n);
            } else {
                emit(k, "ld.shared.b32 %s, [%s+%d];", R(w), R(vrow), 16 * n);
                unpack2(k, w, &v0, &v1);
            }
            for (int r = 0; r < 2; r++) {
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(vis[r]), F(acc[n][2 * r]), F(p[r]), F(v0),
                     F(acc[n][2 * r]));
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(vis[r]), F(acc[n][2 * r + 1]), F(p[r]), F(v1),
                     F(acc[n][2 * r + 1]));
            }
        }
    }
    emit(k, "add.u32 %s, %s, 1;", R(j), R(j));
    emit(k, "setp.lt.u32 %s, %s, %d;", P(pj), R(j), 8 * g->nt);
    emit(k, "@%s bra %s;", P(pj), L(l_top));
}

/* f16x2 of what rounding x0, x1 to the halves of `hi` left out (exact in
 * float32: p - f16(p) is representable) */
static int pack2_rest(kern *k, int x0, int x1, int hi)
{
    int h0, h1;
    unpack2(k, hi, &h0, &h1);
    emit(k, "sub.rn.f32 %s, %s, %s;", F(h0), F(x0), F(h0));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(h1), F(x1), F(h1));
    return pack2(k, h0, h1);
}

/* The weights as A fragments of P V: keys 16 kk .. 16 kk + 15 of the tile,
 * f16(p) in pa and f16(p - f16(p)) in plo: together within 2^-22 of p (or
 * 2^-25 absolutely, where the remainder is an f16 subnormal), where f16(p)
 * alone errs by 2^-11, a quarter of the relaxed contract's 2e-3 of
 * sum_j p_j |v_j| at scores near 3e3. */
static void pf_pack_p(kern *k, const pf_regs *g, int s[8][4], int pa[4][4], int plo[4][4])
{
    for (int kk = 0; kk < g->nt / 2; kk++)
        for (int a = 0; a < 4; a++) { /* a: row g or g + 8 (odd a), keys 2t or 2t + 8 (a >= 2) */
            const int *row = s[2 * kk + a / 2];
            int c = 2 * (a % 2);
            pa[kk][a] = pack2(k, row[c], row[c + 1]);
            plo[kk][a] = pack2_rest(k, row[c], row[c + 1], pa[kk][a]);
        }
}

/* Row r's outputs (the lane's 2 columns of each 8) acc / sum, where r < n_q */
static void pf_write(kern *k, const pf_regs *g, int l[2], int acc[][4])
{
    for (int r = 0; r < 2; r++) {
        int pr = np(k), base = nd(k), c2 = nd(k), inv = nf(k);
        for (int o = 1; o <= 2; o *= 2) {
            int t = nf(k);
            emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(l[r]), o);
            emit(k, "add.rn.f32 %s, %s, %s;", F(l[r]), F(l[r]), F(t));
        }
        emit(k, "rcp.rn.f32 %s, %s;", F(inv), F(l[r]));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(r ? g->rb : g->ra), D(g->p.n_q));
        emit(k, "mul.lo.u64 %s, %s, %s;", D(base), D(r ? g->rb : g->ra), D(g->ot));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(base), D(g->h), D(g->oh), D(base));
        emit(k, "cvt.u64.u32 %s, %s;", D(c2), R(g->t));
        emit(k, "mad.lo.u64 %s, %s, 2, %s;", D(base), D(c2), D(base));
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(base), D(base), D(g->out));
        for (int n = 0; n < g->dm / 8; n++)
            for (int e = 0; e < 2; e++) {
                int y = nf(k);
                emit(k, "mul.rn.f32 %s, %s, %s;", F(y), F(acc[n][2 * r + e]), F(inv));
                emit(k, "@%s st.global.f32 [%s+%d], %s;", P(pr), D(base), 4 * (8 * n + e), F(y));
            }
    }
}

/* attn_pf_* or attn_group_* (which also takes the scratch of its ranges)
 * into mod; the f32 cache's kernels use dynamic shared memory. */
static void pf_finish(strbuf *mod, kern *k, const pf_regs *g)
{
    char shared[96], name[32], params[600];
    snprintf(shared, sizeof shared, "\t.shared .align 16 .b8 attn_pf_smem[%d];\n", 2 * PF_KEYS * row_bytes(g));
    snprintf(name, sizeof name, "attn_%s_%s_d%d", g->grp ? "group" : "pf", g->f32 ? "f32" : "f16", g->dm);
    snprintf(params, sizeof params, "%s%s",
             ".param .u64 p_out, .param .u64 p_q, .param .u64 p_k, .param .u64 p_v, .param .u64 p_n_q, "
             ".param .u64 p_n_kv, .param .u64 p_group, .param .u64 p_d, .param .u64 p_causal, "
             ".param .u64 p_qt, .param .u64 p_qh, .param .u64 p_kt, .param .u64 p_kh, .param .u64 p_vt, "
             ".param .u64 p_vh, .param .u64 p_ot, .param .u64 p_oh, .param .f32 p_scale",
             g->grp ? ", .param .u64 p_part" : "");
    kern_finish(mod, k, name, params, ".maxntid 128, 1, 1\n", g->f32 ? NULL : shared);
}

/* The rows' running maxima -inf, sums and accumulators 0. */
static void pf_state_init(kern *k, const pf_regs *g, int *m, int *l, int acc[][4])
{
    for (int r = 0; r < 2; r++) {
        m[r] = nf(k), l[r] = nf(k);
        emit(k, "mov.f32 %s, %s;", F(m[r]), C(-INFINITY));
        emit(k, "mov.f32 %s, 0f00000000;", F(l[r]));
    }
    for (int n = 0; n < g->dm / 8; n++)
        for (int c = 0; c < 4; c++) {
            acc[n][c] = nf(k);
            emit(k, "mov.f32 %s, 0f00000000;", F(acc[n][c]));
        }
}

/* The q fragments and the state the tiles update. */
typedef struct pf_rows {
    int qh[8][4], ql[8][4], fac[2], m[2], l[2], acc[16][4];
} pf_rows;

/* The staged tile of keys j0 .. j0 + 63 into the rows' state (bad: a V
 * value that is not finite, or too big for f16), then the barrier that
 * frees the tiles. */
static void pf_tile(kern *k, const pf_regs *g, pf_rows *w, int j0, int bad)
{
    int s[8][4], pa[4][4], plo[4][4], l_exact = nlabel(k), l_next = nlabel(k);
    pf_scores(k, g, w->qh, w->ql, w->fac, j0, s);
    pf_softmax(k, g, s, w->m, w->l, w->acc);
    pf_pack_p(k, g, s, pa, plo);
    emit(k, "@%s bra %s;", P(bad), L(l_exact));
    pf_pv_mma(k, g, pa, plo, w->acc);
    emit(k, "bra.uni %s;", L(l_next));
    label(k, l_exact);
    pf_pv_exact(k, g, pa, j0, w->acc);
    label(k, l_next);
    emit(k, "bar.sync 0;");
}

static void pf_indices_group(kern *k, pf_regs *g);

/* The parameters, indices, q fragments and the rows' initial state. */
static void pf_begin(kern *k, pf_regs *g, pf_rows *w)
{
    pf_params(k, g);
    if (g->grp)
        pf_indices_group(k, g);
    else
        pf_indices(k, g);
    pf_load_q(k, g, w->qh, w->ql, w->fac);
    pf_state_init(k, g, w->m, w->l, w->acc);
}

static void gen_attn_pf(strbuf *mod, int dm, int f32)
{
    kern kk = {0}, *k = &kk;
    pf_regs g = {.dm = dm, .f32 = f32, .nt = PF_KEYS / 8};
    pf_rows w;
    pf_begin(k, &g, &w);
    pf_staged t = pf_staged_regs(k, &g);
    int j0 = nr(k), pj = np(k), l_top = nlabel(k);
    emit(k, "mov.u32 %s, 0;", R(j0));
    label(k, l_top);
    pf_tile(k, &g, &w, j0, pf_stage_now(k, &g, j0, &t));
    emit(k, "add.u32 %s, %s, %d;", R(j0), R(j0), PF_KEYS);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pj), R(j0), R(g.kend));
    emit(k, "@%s bra %s;", P(pj), L(l_top));
    pf_write(k, &g, w.l, w.acc);
    pf_finish(mod, k, &g);
}

/* ---- attn_group_<f16|f32>_d<D>: decode of grouped queries ---------------
 * A decode step's query heads of one KV head (4 to 16) are as many rows of
 * the products above, so a block reads each K and V row once for all of
 * them; one query has too few rows for a block of 64, so the block's 4 warps
 * share the rows and take 16 keys each of every staged tile, and the keys
 * are split into ranges over the grid (x: ranges, y: KV heads, z: queries).
 * The warps' online softmax states merge in shared memory at the end; the
 * ranges' by attn_merge, from float64 partials in its layout.  Precision
 * and NaN as above. */

/* The block's query i, KV head, key range and rows (the heads h .. h + 15
 * of the group, h = KV head times group; those past the group read zeros
 * and are never written): keys k0 .. kend of the tiles of 64 split over
 * nctaid.x ranges of whole tiles; every warp the rows, keys kb .. kb + 15
 * of each tile. */
static void pf_indices_group(kern *k, pf_regs *g)
{
    lane_warp(k, &g->tid, &g->lane, &g->warp);
    g->g = nr(k), g->t = nr(k), g->h = nd(k), g->kvh = nd(k), g->ra = nd(k), g->rb = nd(k), g->i = nd(k);
    emit(k, "shr.u32 %s, %s, 2;", R(g->g), R(g->lane));
    emit(k, "and.b32 %s, %s, 3;", R(g->t), R(g->lane));
    emit(k, "cvt.u64.u32 %s, %s;", D(g->kvh), R(sreg(k, "%ctaid.y")));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(g->h), D(g->kvh), D(g->p.group));
    emit(k, "cvt.u64.u32 %s, %s;", D(g->i), R(sreg(k, "%ctaid.z")));
    emit(k, "cvt.u64.u32 %s, %s;", D(g->ra), R(g->g));
    emit(k, "add.u64 %s, %s, 8;", D(g->rb), D(g->ra));
    g->split = sreg(k, "%ctaid.x"), g->nsplit = sreg(k, "%nctaid.x");
    int vis = visible(k, g, g->i), tiles = nr(k), per = nr(k), n32 = nr(k);
    g->k0 = nr(k), g->kend = nr(k), g->kb = nr(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(n32), D(g->p.n_kv));
    emit(k, "add.u32 %s, %s, %d;", R(tiles), R(n32), PF_KEYS - 1);
    emit(k, "shr.u32 %s, %s, 6;", R(tiles), R(tiles));
    emit(k, "add.u32 %s, %s, %s;", R(per), R(tiles), R(g->nsplit));
    emit(k, "sub.u32 %s, %s, 1;", R(per), R(per));
    emit(k, "div.u32 %s, %s, %s;", R(per), R(per), R(g->nsplit));
    emit(k, "shl.b32 %s, %s, 6;", R(per), R(per));
    emit(k, "mul.lo.u32 %s, %s, %s;", R(g->k0), R(g->split), R(per));
    emit(k, "add.u32 %s, %s, %s;", R(g->kend), R(g->k0), R(per));
    emit(k, "min.u32 %s, %s, %s;", R(g->kend), R(g->kend), R(vis));
    g->va = g->vb = g->kend;
    emit(k, "shl.b32 %s, %s, 4;", R(g->kb), R(g->warp));
    pf_tiles(k, g);
}

/* The warps' (m, l, acc) of the same rows meet in shared memory (in the
 * tiles' place): rows g and g + 8 of warp w at [w][row][dm] floats, then
 * the maxima and sums at [w][row] pairs. */
static void pf_group_store(kern *k, const pf_regs *g, int *m, int *l, int acc[][4])
{
    int wrow = nr(k), a = nr(k), ml = nr(k), p0 = np(k);
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(wrow), R(g->warp), R(g->g));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(a), R(wrow), 4 * g->dm, R(g->ks));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(a), R(g->t), R(a));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(ml), R(wrow), R(g->ks));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->t));
    for (int r = 0; r < 2; r++) {
        for (int o = 1; o <= 2; o *= 2) {
            int t = nf(k);
            emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", F(t), F(l[r]), o);
            emit(k, "add.rn.f32 %s, %s, %s;", F(l[r]), F(l[r]), F(t));
        }
        for (int n = 0; n < g->dm / 8; n++)
            emit(k, "st.shared.v2.f32 [%s+%d], {%s, %s};", R(a), 8 * r * 4 * g->dm + 32 * n, F(acc[n][2 * r]),
                 F(acc[n][2 * r + 1]));
        emit(k, "@%s st.shared.v2.f32 [%s+%d], {%s, %s};", P(p0), R(ml), 4 * 16 * 4 * g->dm + 8 * 8 * r, F(m[r]),
             F(l[r]));
    }
    emit(k, "bar.sync 0;");
}

/* Thread tid's values (rows tid / dm + u 128 / dm, column tid % dm) merged
 * over the warps: M the largest m (-inf: no key, every weight 0), then
 * out = sum_w 2^(m_w - M) acc_w / sum_w 2^(m_w - M) l_w with one range,
 * else (M ln 2, the sum, acc) widened to float64 where attn_merge reads
 * this range's (ptx/attention.c). */
static void pf_group_write(kern *k, const pf_regs *g)
{
    int row0 = nr(k), col = nr(k), c64 = nd(k), heads = nd(k), ps = np(k);
    emit(k, "div.u32 %s, %s, %d;", R(row0), R(g->tid), g->dm);
    emit(k, "rem.u32 %s, %s, %d;", R(col), R(g->tid), g->dm);
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(col));
    emit(k, "cvt.u64.u32 %s, %s;", D(heads), R(sreg(k, "%nctaid.y")));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(heads), D(heads), D(g->p.group));
    emit(k, "setp.gt.u32 %s, %s, 1;", P(ps), R(g->nsplit));
    for (int u = 0; u < 16 * g->dm / 128; u++) {
        int row = nr(k), pr = np(k), l_skip = nlabel(k), l_part = nlabel(k), mm = nf(k), none = np(k);
        int f[4], tot = nf(k), a = nf(k), h = nd(k);
        emit(k, "add.u32 %s, %s, %d;", R(row), R(row0), u * (128 / g->dm));
        {
            int r64 = nd(k);
            emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(row));
            emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(r64), D(g->p.group));
            emit(k, "add.u64 %s, %s, %s;", D(h), D(g->h), D(r64));
        }
        emit(k, "@%s bra %s;", P(pr), L(l_skip));
        int mv[4], lv[4], av[4];
        for (int w = 0; w < 4; w++) {
            int ma = nr(k), aa = nr(k);
            mv[w] = nf(k), lv[w] = nf(k), av[w] = nf(k);
            emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(ma), R(row), R(g->ks));
            emit(k, "ld.shared.v2.f32 {%s, %s}, [%s+%d];", F(mv[w]), F(lv[w]), R(ma), 4 * 16 * 4 * g->dm + 8 * 16 * w);
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(aa), R(row), 4 * g->dm, R(g->ks));
            emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(aa), R(col), R(aa));
            emit(k, "ld.shared.f32 %s, [%s+%d];", F(av[w]), R(aa), 4 * 16 * g->dm * w);
        }
        emit(k, "max.f32 %s, %s, %s;", F(mm), F(mv[0]), F(mv[1]));
        emit(k, "max.f32 %s, %s, %s;", F(mm), F(mm), F(mv[2]));
        emit(k, "max.f32 %s, %s, %s;", F(mm), F(mm), F(mv[3]));
        emit(k, "setp.eq.f32 %s, %s, %s;", P(none), F(mm), C(-INFINITY));
        emit(k, "mov.f32 %s, 0f00000000;", F(tot));
        emit(k, "mov.f32 %s, 0f00000000;", F(a));
        for (int w = 0; w < 4; w++) {
            f[w] = nf(k);
            emit(k, "sub.rn.f32 %s, %s, %s;", F(f[w]), F(mv[w]), F(mm));
            emit(k, "ex2.approx.ftz.f32 %s, %s;", F(f[w]), F(f[w]));
            emit(k, "@%s mov.f32 %s, 0f00000000;", P(none), F(f[w]));
            emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(tot), F(lv[w]), F(f[w]), F(tot));
            emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(a), F(av[w]), F(f[w]), F(a));
        }
        emit(k, "@%s bra %s;", P(ps), L(l_part));
        {
            int y = nf(k), oa = nd(k);
            emit(k, "div.rn.f32 %s, %s, %s;", F(y), F(a), F(tot));
            emit(k, "mul.lo.u64 %s, %s, %s;", D(oa), D(g->i), D(g->ot));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(oa), D(h), D(g->oh), D(oa));
            emit(k, "add.u64 %s, %s, %s;", D(oa), D(oa), D(c64));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(oa), D(oa), D(g->out));
            emit(k, "st.global.f32 [%s], %s;", D(oa), F(y));
            emit(k, "bra.uni %s;", L(l_skip));
        }
        label(k, l_part);
        { /* m, sum, acc[d] at attn_merge's place of this range */
            int base = attn_part_at(k, g->part, g->i, heads, h, g->split, g->nsplit, g->p.d), p0 = np(k), ad = nfd(k);
            emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(col));
            attn_part_m_sum(k, base, mm, tot, p0);
            emit(k, "cvt.f64.f32 %s, %s;", FD(ad), F(a));
            emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(base), D(c64), D(base));
            emit(k, "st.global.f64 [%s+16], %s;", D(base), FD(ad));
        }
        label(k, l_skip);
    }
}

static void gen_attn_group(strbuf *mod, int dm, int f32)
{
    kern kk = {0}, *k = &kk;
    pf_regs g = {.dm = dm, .f32 = f32, .nt = 2, .grp = 1};
    pf_rows w;
    pf_begin(k, &g, &w);
    pf_staged t = pf_staged_regs(k, &g);
    int j0 = nr(k), pj = np(k), l_top = nlabel(k), l_done = nlabel(k);
    emit(k, "mov.u32 %s, %s;", R(j0), R(g.k0));
    emit(k, "setp.ge.u32 %s, %s, %s;", P(pj), R(j0), R(g.kend)); /* causal: a range past the query's keys */
    emit(k, "@%s bra %s;", P(pj), L(l_done));
    label(k, l_top);
    pf_tile(k, &g, &w, j0, pf_stage_now(k, &g, j0, &t));
    emit(k, "add.u32 %s, %s, %d;", R(j0), R(j0), PF_KEYS);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pj), R(j0), R(g.kend));
    emit(k, "@%s bra %s;", P(pj), L(l_top));
    label(k, l_done);
    pf_group_store(k, &g, w.m, w.l, w.acc);
    pf_group_write(k, &g);
    pf_finish(mod, k, &g);
}

void infer_attention_prefill(strbuf *mod)
{
    gen_attn_pf(mod, 64, 0);
    gen_attn_pf(mod, 128, 0);
    /* K_hi, K_lo and V tiles and the keys' scales: more than the 48 KiB of
     * static shared memory at head_dim 128 */
    sb_printf(mod, "\n.extern .shared .align 16 .b8 attn_pf32_smem[];\n");
    gen_attn_pf(mod, 64, 1);
    gen_attn_pf(mod, 128, 1);
    for (int f32 = 0; f32 < 2; f32++) {
        gen_attn_group(mod, 64, f32);
        gen_attn_group(mod, 128, f32);
    }
}
