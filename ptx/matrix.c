/* SPDX-License-Identifier: MIT */
/* matrix.c - module "matrix": gemv (gemv.c), transpose (transpose.c),
 * bias + activation, and the general sgemm that handles any shape and
 * transpose (the fallback, and the edges the tiled gemm kernels leave). */
#include "gen-ptx.h"

/* col += step (step < nu), wrapped into [0, nu) */
static void col_advance(kern *k, int col, int step, int nu)
{
    int p = np(k);
    emit(k, "add.u64 %s, %s, %s;", D(col), D(col), D(step));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(col), D(nu));
    emit(k, "@%s sub.u64 %s, %s, %s;", P(p), D(col), D(col), D(nu));
}

/* y[u..u+width) = act(a + bias) for the units (width floats) idx[] at
 * columns col[]: every load first, then the math and the stores. */
static void bias_act_units(kern *k, int (*fn)(kern *, int), int width, const int *idx, const int *col, int count,
                           int y, int a, int bias)
{
    const char *ld = width == 4 ? "ld.global.v4.f32 {%s, %s, %s, %s}, [%s];" : "ld.global.f32 %s, [%s];";
    int x[2][4], bv[2][4];
    for (int u = 0; u < count; u++) {
        for (int i = 0; i < width; i++)
            x[u][i] = nf(k), bv[u][i] = nf(k);
        int ax = addr_of(k, a, idx[u], 4 * width), ab = addr_of(k, bias, col[u], 4 * width);
        if (width == 4) {
            emit(k, ld, F(x[u][0]), F(x[u][1]), F(x[u][2]), F(x[u][3]), D(ax));
            emit(k, ld, F(bv[u][0]), F(bv[u][1]), F(bv[u][2]), F(bv[u][3]), D(ab));
        } else {
            emit(k, ld, F(x[u][0]), D(ax));
            emit(k, ld, F(bv[u][0]), D(ab));
        }
    }
    for (int u = 0; u < count; u++) {
        int out[4];
        for (int i = 0; i < width; i++) {
            int v = nf(k);
            emit(k, "add.rn.f32 %s, %s, %s;", F(v), F(x[u][i]), F(bv[u][i]));
            out[i] = fn ? fn(k, v) : v;
        }
        int ay = addr_of(k, y, idx[u], 4 * width);
        if (width == 4)
            emit(k, "st.global.v4.f32 [%s], {%s, %s, %s, %s};", D(ay), F(out[0]), F(out[1]), F(out[2]), F(out[3]));
        else
            emit(k, "st.global.f32 [%s], %s;", D(ay), F(out[0]));
    }
}

/* y[i][j] = act(a[i][j] + bias[j]) as one grid-stride loop over the m x n
 * elements in units of `width` floats (4: n % 4 == 0 and 16-byte aligned
 * pointers), so that any row length fills the GPU; the column of each unit
 * is carried along (one remainder at the start, then adds).  Two strides
 * per trip while both are in range. */
static void gen_bias_act(strbuf *mod, const char *act, int (*fn)(kern *, int), int width)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), bias = param_global(k, "p_bias");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int gid, stride;
    grid_index(k, &gid, &stride);
    int nu = nd(k), total = nd(k), col = nd(k), step = nd(k), p = np(k), l_end = nlabel(k);
    emit(k, "shr.u64 %s, %s, %d;", D(nu), D(n), width == 4 ? 2 : 0);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(total), D(m), D(nu));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(gid), D(total));
    emit(k, "@%s bra %s;", P(p), L(l_end));
    emit(k, "rem.u64 %s, %s, %s;", D(col), D(gid), D(nu));
    emit(k, "rem.u64 %s, %s, %s;", D(step), D(stride), D(nu));
    int i = nd(k), l_loop = nlabel(k), l_one = nlabel(k), l_next = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(i), D(gid));
    label(k, l_loop);
    int i2 = nd(k), col2 = nd(k), p2 = np(k);
    emit(k, "add.u64 %s, %s, %s;", D(i2), D(i), D(stride));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(p2), D(i2), D(total));
    emit(k, "@%s bra %s;", P(p2), L(l_one));
    emit(k, "mov.u64 %s, %s;", D(col2), D(col));
    col_advance(k, col2, step, nu);
    int idx[2] = {i, i2}, cols[2] = {col, col2};
    bias_act_units(k, fn, width, idx, cols, 2, y, a, bias);
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i2), D(stride));
    emit(k, "mov.u64 %s, %s;", D(col), D(col2));
    col_advance(k, col, step, nu);
    emit(k, "bra.uni %s;", L(l_next));
    label(k, l_one);
    bias_act_units(k, fn, width, &i, &col, 1, y, a, bias);
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i), D(stride));
    col_advance(k, col, step, nu);
    label(k, l_next);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(i), D(total));
    emit(k, "@%s bra %s;", P(p), L(l_loop));
    label(k, l_end);
    char name[64];
    snprintf(name, sizeof name, "bias_act_%s_%s", act, width == 4 ? "v4" : "s1");
    kern_finish(mod, k, name,
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_bias, .param .u64 p_m, .param .u64 p_n",
                NULL, NULL);
}

/* k terms per float block of sgemm_general's blocked accumulation (a power
 * of two, a multiple of its BK of 16): the float error of a result grows
 * with this, not with k */
#define GG_BLOCK_K 256

/* tot[i] += acc[i] (float64), acc[i] = 0, for count accumulators */
static void flush_f64(kern *k, const int *acc, const int *tot, int count)
{
    for (int i = 0; i < count; i++) {
        int d = nfd(k);
        emit(k, "cvt.f64.f32 %s, %s;", FD(d), F(acc[i]));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(tot[i]), FD(tot[i]), FD(d));
        emit(k, "mov.f32 %s, %s;", F(acc[i]), C(0.0f));
    }
}

/* Output (gi, gj) again in float64 where its sum overflowed
 * (product-redo.c): A_op(gi, p) = A[gi*sai + p*sap], B_op(p, gj) =
 * B[p*sbp + gj*sbj].  Only outputs inside C (pin): the others are not
 * stored, and their operands lie outside A or B. */
static void redo_general(kern *k, int pin, int a, int b, int gi, int gj, int sai, int sap, int sbp, int sbj,
                         int K, int tot)
{
    int ia = nd(k), jb = nd(k), l_out = nlabel(k);
    emit(k, "@!%s bra %s;", P(pin), L(l_out));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(ia), D(gi), D(sai));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(jb), D(gj), D(sbj));
    redo_operand ar = {addr_of(k, a, ia, 4), sap, RAYO_DTYPE_F32}, br = {addr_of(k, b, jb, 4), sbp, RAYO_DTYPE_F32};
    redo_if_not_finite(k, tot, &ar, &br, K);
    label(k, l_out);
}

/* General sgemm, any shape and transpose, as the correctness fallback and
 * for the edges the tiled kernels leave.  A_op(i,p) = A[i*sai + p*sap],
 * B_op(p,j) = B[p*sbp + j*sbj].  64x64 tiles of C from (row0, col0), BK 16,
 * 256 threads each computing 4x4 (rows ty+16r, columns tx+16c).  The tile
 * loads map consecutive threads along whichever of the two source
 * dimensions is contiguous (flag bits 1: A's i, 2: B's j is contiguous). */
/* What the parts of sgemm_general share: its parameters, the thread's
 * place, the tile base addresses, where each thread loads the tiles from, and
 * the accumulators. */
typedef struct gg_ctx {
    int a, b, c, M, N, K, sai, sap, sbp, sbj, alpha, beta;
    int tid, tx, ty, bm, bn, sA, sB;
    int ai[4], ap[4], bp[4], bj[4];
    int acc[4][4], tot[4][4];
} gg_ctx;

/* The tile elements thread tid loads: consecutive threads along whichever
 * source dimension is contiguous. */
static void gg_thread_map(kern *k, gg_ctx *g)
{
    int tid = g->tid, sai = g->sai, sbj = g->sbj;
    /* A contiguous along i? then thread e -> (i = e & 63, p = e >> 6), else (i = e >> 4, p = e & 15) */
    int a_i_contig = np(k), b_j_contig = np(k);
    emit(k, "setp.eq.u64 %s, %s, 1;", P(a_i_contig), D(sai));
    emit(k, "setp.eq.u64 %s, %s, 1;", P(b_j_contig), D(sbj));
    for (int q = 0; q < 4; q++) {
        int e = nr(k), i1 = nr(k), p1 = nr(k), i2 = nr(k), p2 = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(e), R(tid), q * 256);
        emit(k, "and.b32 %s, %s, 63;", R(i1), R(e));
        emit(k, "shr.u32 %s, %s, 6;", R(p1), R(e));
        emit(k, "shr.u32 %s, %s, 4;", R(i2), R(e));
        emit(k, "and.b32 %s, %s, 15;", R(p2), R(e));
        g->ai[q] = nr(k);
        g->ap[q] = nr(k);
        emit(k, "selp.b32 %s, %s, %s, %s;", R(g->ai[q]), R(i1), R(i2), P(a_i_contig));
        emit(k, "selp.b32 %s, %s, %s, %s;", R(g->ap[q]), R(p1), R(p2), P(a_i_contig));
        /* B: j contiguous -> (j = e & 63, p = e >> 6), else (j = e >> 4, p = e & 15) */
        g->bj[q] = nr(k);
        g->bp[q] = nr(k);
        emit(k, "selp.b32 %s, %s, %s, %s;", R(g->bj[q]), R(i1), R(i2), P(b_j_contig));
        emit(k, "selp.b32 %s, %s, %s, %s;", R(g->bp[q]), R(p1), R(p2), P(b_j_contig));
    }
}

/* The 64x16 tile of A and the 16x64 tile of B at k0 into shared memory
 * (zeros outside the matrices). */
static void gg_load_tiles(kern *k, const gg_ctx *g, int k0)
{
    int a = g->a, b = g->b, M = g->M, N = g->N, K = g->K, sai = g->sai, sap = g->sap;
    int sbp = g->sbp, sbj = g->sbj, bm = g->bm, bn = g->bn, sA = g->sA, sB = g->sB;
    for (int q = 0; q < 4; q++) {
        /* A element (bm + ai, k0 + ap) -> As[ap][ai] */
        int gi = nd(k), gp = nd(k), t = nd(k), idx = nd(k), pin = np(k), pin2 = np(k), v = nf(k), sa = nr(k);
        emit(k, "cvt.u64.u32 %s, %s;", D(t), R(g->ai[q]));
        emit(k, "add.u64 %s, %s, %s;", D(gi), D(bm), D(t));
        emit(k, "cvt.u64.u32 %s, %s;", D(t), R(g->ap[q]));
        emit(k, "add.u64 %s, %s, %s;", D(gp), D(k0), D(t));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(gi), D(M));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin2), D(gp), D(K));
        emit(k, "and.pred %s, %s, %s;", P(pin), P(pin), P(pin2));
        emit(k, "mul.lo.u64 %s, %s, %s;", D(idx), D(gi), D(sai));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(gp), D(sap), D(idx));
        emit(k, "mov.f32 %s, %s;", F(v), C(0.0f));
        emit(k, "@%s ld.global.f32 %s, [%s];", P(pin), F(v), D(addr_of(k, a, idx, 4)));
        emit(k, "mad.lo.u32 %s, %s, 64, %s;", R(sa), R(g->ap[q]), R(g->ai[q]));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(sa), R(sA));
        emit(k, "st.shared.f32 [%s], %s;", R(sa), F(v));
        /* B element (k0 + bp, bn + bj) -> Bs[bp][bj] */
        int gj = nd(k), gq = nd(k), t2 = nd(k), idx2 = nd(k), qin = np(k), qin2 = np(k), w = nf(k), sb = nr(k);
        emit(k, "cvt.u64.u32 %s, %s;", D(t2), R(g->bj[q]));
        emit(k, "add.u64 %s, %s, %s;", D(gj), D(bn), D(t2));
        emit(k, "cvt.u64.u32 %s, %s;", D(t2), R(g->bp[q]));
        emit(k, "add.u64 %s, %s, %s;", D(gq), D(k0), D(t2));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(qin), D(gj), D(N));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(qin2), D(gq), D(K));
        emit(k, "and.pred %s, %s, %s;", P(qin), P(qin), P(qin2));
        emit(k, "mul.lo.u64 %s, %s, %s;", D(idx2), D(gq), D(sbp));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx2), D(gj), D(sbj), D(idx2));
        emit(k, "mov.f32 %s, %s;", F(w), C(0.0f));
        emit(k, "@%s ld.global.f32 %s, [%s];", P(qin), F(w), D(addr_of(k, b, idx2, 4)));
        emit(k, "mad.lo.u32 %s, %s, 64, %s;", R(sb), R(g->bp[q]), R(g->bj[q]));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sb), R(sb), R(sB));
        emit(k, "st.shared.f32 [%s], %s;", R(sb), F(w));
    }
}

/* acc += the tiles' products, 16 steps of k. */
static void gg_multiply_tiles(kern *k, const gg_ctx *g)
{
    int tx = g->tx, ty = g->ty, sA = g->sA, sB = g->sB;
    emit(k, "bar.sync 0;");
    int ra = nr(k), rb = nr(k);
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(ra), R(ty), R(sA));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(rb), R(tx), R(sB));
    for (int p = 0; p < 16; p++) {
        int av[4], bv[4];
        for (int r = 0; r < 4; r++) {
            av[r] = nf(k);
            emit(k, "ld.shared.f32 %s, [%s+%d];", F(av[r]), R(ra), (p * 64 + r * 16) * 4);
        }
        for (int cc = 0; cc < 4; cc++) {
            bv[cc] = nf(k);
            emit(k, "ld.shared.f32 %s, [%s+%d];", F(bv[cc]), R(rb), (p * 64 + cc * 16) * 4);
        }
        for (int r = 0; r < 4; r++)
            for (int cc = 0; cc < 4; cc++)
                emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(g->acc[r][cc]), F(av[r]), F(bv[cc]), F(g->acc[r][cc]));
    }
    emit(k, "bar.sync 0;");
}

/* C = alpha * tot + beta * C for the thread's 4x4 outputs (the sums redone
 * where not finite). */
static void gg_store(kern *k, const gg_ctx *g)
{
    int a = g->a, b = g->b, c = g->c, M = g->M, N = g->N, K = g->K, sai = g->sai, sap = g->sap;
    int sbp = g->sbp, sbj = g->sbj, alpha = g->alpha, beta = g->beta;
    int tx = g->tx, ty = g->ty, bm = g->bm, bn = g->bn;
    int pbeta = np(k), alpha_d = nfd(k), beta_d = nfd(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pbeta), F(beta), C(0.0f));
    emit(k, "cvt.f64.f32 %s, %s;", FD(alpha_d), F(alpha));
    emit(k, "cvt.f64.f32 %s, %s;", FD(beta_d), F(beta));
    for (int r = 0; r < 4; r++) {
        int gi = nd(k), t = nr(k), t64 = nd(k), pin = np(k);
        emit(k, "add.u32 %s, %s, %d;", R(t), R(ty), r * 16);
        emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(t));
        emit(k, "add.u64 %s, %s, %s;", D(gi), D(bm), D(t64));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(gi), D(M));
        for (int cc = 0; cc < 4; cc++) {
            int gj = nd(k), u = nr(k), u64 = nd(k), pc = np(k), idx = nd(k), ca = nd(k);
            int old = nf(k), res = nf(k);
            emit(k, "add.u32 %s, %s, %d;", R(u), R(tx), cc * 16);
            emit(k, "cvt.u64.u32 %s, %s;", D(u64), R(u));
            emit(k, "add.u64 %s, %s, %s;", D(gj), D(bn), D(u64));
            emit(k, "setp.lt.u64 %s, %s, %s;", P(pc), D(gj), D(N));
            emit(k, "and.pred %s, %s, %s;", P(pc), P(pc), P(pin));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(gi), D(N), D(gj));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ca), D(idx), D(c));
            redo_general(k, pc, a, b, gi, gj, sai, sap, sbp, sbj, K, g->tot[r][cc]);
            /* alpha * tot + beta * old in float64, rounded once */
            int rd = nfd(k), od = nfd(k);
            emit(k, "mul.rn.f64 %s, %s, %s;", FD(rd), FD(g->tot[r][cc]), FD(alpha_d));
            int pld = np(k);
            emit(k, "and.pred %s, %s, %s;", P(pld), P(pc), P(pbeta));
            emit(k, "@%s ld.global.f32 %s, [%s];", P(pld), F(old), D(ca));
            emit(k, "@%s cvt.f64.f32 %s, %s;", P(pld), FD(od), F(old));
            emit(k, "@%s fma.rn.f64 %s, %s, %s, %s;", P(pld), FD(rd), FD(od), FD(beta_d), FD(rd));
            emit(k, "cvt.rn.f32.f64 %s, %s;", F(res), FD(rd));
            emit(k, "@%s st.global.f32 [%s], %s;", P(pc), D(ca), F(res));
        }
    }
}

static void gen_sgemm_general(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    gg_ctx g;
    g.c = param_global(k, "p_c");
    g.a = param_global(k, "p_a");
    g.b = param_global(k, "p_b");
    g.M = param_u64(k, "p_m");
    g.N = param_u64(k, "p_n");
    g.K = param_u64(k, "p_k");
    g.sai = param_u64(k, "p_sai");
    g.sap = param_u64(k, "p_sap");
    g.sbp = param_u64(k, "p_sbp");
    g.sbj = param_u64(k, "p_sbj");
    g.alpha = param_f32(k, "p_alpha");
    g.beta = param_f32(k, "p_beta");
    int row0 = param_u64(k, "p_row0"), col0 = param_u64(k, "p_col0");
    g.tid = sreg(k, "%tid.x");
    int bx = sreg(k, "%ctaid.x"), by = sreg(k, "%ctaid.y");
    g.tx = nr(k);
    g.ty = nr(k);
    emit(k, "and.b32 %s, %s, 15;", R(g.tx), R(g.tid));
    emit(k, "shr.u32 %s, %s, 4;", R(g.ty), R(g.tid));
    g.bm = nd(k);
    g.bn = nd(k);
    emit(k, "mul.wide.u32 %s, %s, 64;", D(g.bm), R(by));
    emit(k, "add.u64 %s, %s, %s;", D(g.bm), D(g.bm), D(row0));
    emit(k, "mul.wide.u32 %s, %s, 64;", D(g.bn), R(bx));
    emit(k, "add.u64 %s, %s, %s;", D(g.bn), D(g.bn), D(col0));
    g.sA = nr(k);
    g.sB = nr(k);
    emit(k, "mov.u32 %s, gg_a;", R(g.sA));
    emit(k, "mov.u32 %s, gg_b;", R(g.sB));
    gg_thread_map(k, &g);
    /* blocked accumulation: float sums over GG_BLOCK_K terms (acc), added
     * into float64 totals (tot) between blocks, so the float rounding error
     * grows with the block, not with k */
    for (int r = 0; r < 4; r++)
        for (int cc = 0; cc < 4; cc++) {
            g.acc[r][cc] = nf(k);
            g.tot[r][cc] = nfd(k);
            emit(k, "mov.f32 %s, %s;", F(g.acc[r][cc]), C(0.0f));
            emit(k, "mov.f64 %s, %s;", FD(g.tot[r][cc]), CD(0.0));
        }
    int k0 = nd(k), pk = np(k), l_k = nlabel(k), l_kd = nlabel(k);
    emit(k, "mov.u64 %s, 0;", D(k0));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pk), D(k0), D(g.K));
    emit(k, "@%s bra %s;", P(pk), L(l_kd));
    label(k, l_k);
    gg_load_tiles(k, &g, k0);
    gg_multiply_tiles(k, &g);
    emit(k, "add.u64 %s, %s, 16;", D(k0), D(k0));
    int blk = nd(k), pflush = np(k), l_noflush = nlabel(k);
    emit(k, "and.b64 %s, %s, %d;", D(blk), D(k0), GG_BLOCK_K - 1);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pflush), D(blk));
    emit(k, "@%s bra %s;", P(pflush), L(l_noflush));
    flush_f64(k, &g.acc[0][0], &g.tot[0][0], 16);
    label(k, l_noflush);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pk), D(k0), D(g.K));
    emit(k, "@%s bra %s;", P(pk), L(l_k));
    label(k, l_kd);
    flush_f64(k, &g.acc[0][0], &g.tot[0][0], 16);
    gg_store(k, &g);
    kern_finish(mod, k, "sgemm_general",
                ".param .u64 p_c, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_k, .param .u64 p_sai, .param .u64 p_sap, .param .u64 p_sbp, "
                ".param .u64 p_sbj, .param .f32 p_alpha, .param .f32 p_beta, .param .u64 p_row0, "
                ".param .u64 p_col0",
                ".maxntid 256, 1, 1\n",
                "\t.shared .align 16 .b8 gg_a[4096];\n\t.shared .align 16 .b8 gg_b[4096];\n");
}

void module_matrix(strbuf *mod)
{
    gen_gemv_n(mod);
    gen_gemv_t(mod);
    gen_gemv_fast(mod);
    gen_transpose(mod);
    gen_bias_act(mod, "none", NULL, 4);
    gen_bias_act(mod, "none", NULL, 1);
    gen_bias_act(mod, "relu", m_relu, 4);
    gen_bias_act(mod, "relu", m_relu, 1);
    gen_bias_act(mod, "gelu", m_gelu, 4);
    gen_bias_act(mod, "gelu", m_gelu, 1);
    gen_bias_act(mod, "silu", m_silu, 4);
    gen_bias_act(mod, "silu", m_silu, 1);
    gen_bias_act(mod, "tanh", m_tanh, 4);
    gen_bias_act(mod, "tanh", m_tanh, 1);
    gen_bias_act(mod, "sigmoid", m_sigmoid, 4);
    gen_bias_act(mod, "sigmoid", m_sigmoid, 1);
    gen_sgemm_general(mod);
}
