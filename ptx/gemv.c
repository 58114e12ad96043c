/* SPDX-License-Identifier: MIT */
/* gemv.c - the gemv kernels of module "matrix": gemv_n (a warp per row) and
 * gemv_n_block_* (a block per row, 16-byte loads) for A as stored;
 * gemv_t_part, gemv_t_part_v4 (16-byte loads) and gemv_t_final for A
 * transposed; float64 accumulation (sums that overflowed in float are
 * redone in float64: product-redo.c). */
#include "gen-ptx.h"

/* y = alpha*acc + beta*y_old (y_old read only when beta != 0), in float64 */
void store_scaled(kern *k, int acc, int ya, int alpha, int beta)
{
    int ad = nfd(k), bd = nfd(k), r = nfd(k), pb = np(k), old = nf(k), od = nfd(k), out = nf(k);
    emit(k, "cvt.f64.f32 %s, %s;", FD(ad), F(alpha));
    emit(k, "cvt.f64.f32 %s, %s;", FD(bd), F(beta));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(r), FD(acc), FD(ad));
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(beta), C(0.0f));
    emit(k, "mov.f32 %s, %s;", F(old), C(0.0f));
    emit(k, "@%s ld.global.f32 %s, [%s];", P(pb), F(old), D(ya));
    emit(k, "cvt.f64.f32 %s, %s;", FD(od), F(old));
    emit(k, "@%s fma.rn.f64 %s, %s, %s, %s;", P(pb), FD(r), FD(od), FD(bd), FD(r));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(out), FD(r));
    emit(k, "st.global.f32 [%s], %s;", D(ya), F(out));
}

/* gemv, A not transposed: one warp per row, float64 accumulation. */
void gen_gemv_n(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), x = param_global(k, "p_x");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    int gid, stride;
    grid_index(k, &gid, &stride);
    int row = nd(k), wstep = nd(k), lane = nd(k), pr = np(k);
    emit(k, "shr.u64 %s, %s, 5;", D(row), D(gid));
    emit(k, "shr.u64 %s, %s, 5;", D(wstep), D(stride));
    emit(k, "and.b64 %s, %s, 31;", D(lane), D(gid));
    int l_row = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_row);
    int off = nd(k), ra = nd(k), acc = nfd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(off), D(row), D(n));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ra), D(off), D(a));
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    int j = nd(k), pj = np(k), l_j = nlabel(k), l_jd = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(j), D(lane));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_jd));
    label(k, l_j);
    int av = nf(k), xv = nf(k), ad = nfd(k), xd = nfd(k);
    emit(k, "ld.global.f32 %s, [%s];", F(av), D(addr_of(k, ra, j, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(xv), D(addr_of(k, x, j, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(ad), F(av));
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(xv));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc), FD(ad), FD(xd), FD(acc));
    emit(k, "add.u64 %s, %s, 32;", D(j), D(j));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_j));
    label(k, l_jd);
    int sum = acc;
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_f64(k, sum, o), s = nfd(k);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(sum), FD(t));
        sum = s;
    }
    int pl = np(k), l_skip = nlabel(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pl), D(lane));
    emit(k, "@%s bra %s;", P(pl), L(l_skip));
    store_scaled(k, sum, addr_of(k, y, row, 4), alpha, beta);
    label(k, l_skip);
    emit(k, "add.u64 %s, %s, %s;", D(row), D(row), D(wstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_row));
    label(k, l_end);
    kern_finish(mod, k, "gemv_n",
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_x, .param .u64 p_m, .param .u64 p_n, "
                ".param .f32 p_alpha, .param .f32 p_beta", NULL, NULL);
}

/* gemv, A transposed: y[j] = sum_i A[i][j] x[i].  Grid (ceil(n/256), S):
 * block (bx, s) sums rows [s*chunk, (s+1)*chunk) for its 256 columns into
 * part[s*n + j] (float64); gemv_t_final adds the S partials (in a fixed
 * order: 8 interleaved sums, then those in order). */
/* gemv_t_part: part[s][j] = sum over the rows i of split s of a[i][j] x[i],
 * in float64, one thread per column j. */
static void gen_gemv_t_part(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int part = param_global(k, "p_part"), a = param_global(k, "p_a"), x = param_global(k, "p_x");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n"), chunk = param_u64(k, "p_chunk");
    int ctaid = sreg(k, "%ctaid.x"), tid = sreg(k, "%tid.x"), cy = sreg(k, "%ctaid.y");
    int j = nd(k), t64 = nd(k), s = nd(k), pj = np(k), l_end = nlabel(k);
    emit(k, "mul.wide.u32 %s, %s, 256;", D(j), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tid));
    emit(k, "add.u64 %s, %s, %s;", D(j), D(j), D(t64));
    emit(k, "cvt.u64.u32 %s, %s;", D(s), R(cy));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pj), D(j), D(n));
    emit(k, "@%s bra %s;", P(pj), L(l_end));
    int i0 = nd(k), i1 = nd(k), acc = nfd(k), i = nd(k), pi = np(k), l_i = nlabel(k), l_id = nlabel(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(i0), D(s), D(chunk));
    emit(k, "add.u64 %s, %s, %s;", D(i1), D(i0), D(chunk));
    emit(k, "min.u64 %s, %s, %s;", D(i1), D(i1), D(m));
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    emit(k, "mov.u64 %s, %s;", D(i), D(i0));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(i), D(i1));
    emit(k, "@%s bra %s;", P(pi), L(l_id));
    label(k, l_i);
    int idx = nd(k), av = nf(k), xv = nf(k), ad = nfd(k), xd = nfd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(i), D(n), D(j));
    emit(k, "ld.global.f32 %s, [%s];", F(av), D(addr_of(k, a, idx, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(xv), D(addr_of(k, x, i, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(ad), F(av));
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(xv));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc), FD(ad), FD(xd), FD(acc));
    emit(k, "add.u64 %s, %s, 1;", D(i), D(i));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pi), D(i), D(i1));
    emit(k, "@%s bra %s;", P(pi), L(l_i));
    label(k, l_id);
    int pidx = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(pidx), D(s), D(n), D(j));
    emit(k, "st.global.f64 [%s], %s;", D(addr_of(k, part, pidx, 8)), FD(acc));
    label(k, l_end);
    kern_finish(mod, k, "gemv_t_part",
                ".param .u64 p_part, .param .u64 p_a, .param .u64 p_x, .param .u64 p_m, "
                ".param .u64 p_n, .param .u64 p_chunk", NULL, NULL);
}

/* gemv_t_final: y[j] = alpha * sum_s part[s][j] + beta * y[j].  A block of
 * 256 threads per 32 columns: thread (g, c) adds splits g, g + 8, ... of
 * column c, then group 0 adds the 8 sums in order (fixed order: the same
 * result every run). */
static void gen_gemv_t_final(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y");
    int part = param_global(k, "p_part");
    int n = param_u64(k, "p_n");
    int splits = param_u64(k, "p_splits");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    int ftid = sreg(k, "%tid.x"), fcta = sreg(k, "%ctaid.x");
    int g32 = nr(k), c32 = nr(k), col = nd(k), g64 = nd(k), c64 = nd(k), pin = np(k);
    emit(k, "shr.u32 %s, %s, 5;", R(g32), R(ftid));
    emit(k, "and.b32 %s, %s, 31;", R(c32), R(ftid));
    emit(k, "cvt.u64.u32 %s, %s;", D(g64), R(g32));
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(c32));
    emit(k, "mul.wide.u32 %s, %s, 32;", D(col), R(fcta));
    emit(k, "add.u64 %s, %s, %s;", D(col), D(col), D(c64));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(col), D(n));
    int tot = nfd(k), si = nd(k), ps = np(k), l_s = nlabel(k), l_sd = nlabel(k);
    emit(k, "mov.f64 %s, %s;", FD(tot), CD(0.0));
    emit(k, "mov.u64 %s, %s;", D(si), D(g64));
    int pout = np(k);
    emit(k, "not.pred %s, %s;", P(pout), P(pin));
    emit(k, "@%s bra %s;", P(pout), L(l_sd));
    label(k, l_s);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(ps), D(si), D(splits));
    emit(k, "@%s bra %s;", P(ps), L(l_sd));
    int pi2 = nd(k), v = nfd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(pi2), D(si), D(n), D(col));
    emit(k, "ld.global.f64 %s, [%s];", FD(v), D(addr_of(k, part, pi2, 8)));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(tot), FD(tot), FD(v));
    emit(k, "add.u64 %s, %s, 8;", D(si), D(si));
    emit(k, "bra.uni %s;", L(l_s));
    label(k, l_sd);
    int sb = nr(k), slot = nr(k);
    emit(k, "mov.u32 %s, gtf_smem;", R(sb));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(slot), R(ftid), R(sb));
    emit(k, "st.shared.f64 [%s], %s;", R(slot), FD(tot));
    emit(k, "bar.sync 0;");
    int l_e = nlabel(k), pg = np(k), pskip = np(k);
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pg), R(g32));
    emit(k, "or.pred %s, %s, %s;", P(pskip), P(pg), P(pout));
    emit(k, "@%s bra %s;", P(pskip), L(l_e));
    for (int g = 1; g < 8; g++) {
        int t = nfd(k);
        emit(k, "ld.shared.f64 %s, [%s+%d];", FD(t), R(slot), g * 32 * 8);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(tot), FD(tot), FD(t));
    }
    store_scaled(k, tot, addr_of(k, y, col, 4), alpha, beta);
    label(k, l_e);
    kern_finish(mod, k, "gemv_t_final",
                ".param .u64 p_y, .param .u64 p_part, .param .u64 p_n, .param .u64 p_splits, "
                ".param .f32 p_alpha, .param .f32 p_beta", ".maxntid 256, 1, 1\n",
                "\t.shared .align 8 .b8 gtf_smem[2048];\n");
}

void gen_gemv_t(strbuf *mod)
{
    gen_gemv_t_part(mod);
    gen_gemv_t_final(mod);
}

/* ---- the bandwidth kernels: 16-byte loads (width 4: n % 4 == 0 and aligned
 * pointers) and four units per trip, every load of the trip first. ---------
 * Float sums of one trip's products (at most 16 terms) go into float64
 * sums, so the float rounding stays at 16 terms' worth whatever the length. */
#define GEMV_UNROLL 4

static void ld_vec(kern *k, int width, int *v, int addr)
{
    for (int i = 0; i < width; i++)
        v[i] = nf(k);
    if (width == 4)
        emit(k, "ld.global.v4.f32 {%s, %s, %s, %s}, [%s];", F(v[0]), F(v[1]), F(v[2]), F(v[3]), D(addr));
    else
        emit(k, "ld.global.f32 %s, [%s];", F(v[0]), D(addr));
}

/* gemv, A not transposed: a block of 256 threads per row (rows in a
 * grid-stride loop), so that a matrix of a few thousand rows spreads evenly
 * over the GPU; the threads stride along the row in units of `width`. */
static void gen_gemv_n_block(strbuf *mod, int width)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a"), x = param_global(k, "p_x");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    int tid, lane, warp;
    lane_warp(k, &tid, &lane, &warp);
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x");
    int row = nd(k), rstep = nd(k), nu = nd(k), t64 = nd(k), pr = np(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(row), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(nctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tid));
    emit(k, "shr.u64 %s, %s, %d;", D(nu), D(n), width == 4 ? 2 : 0);
    int l_row = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_row);
    int off = nd(k), ra = nd(k), acc = nfd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(off), D(row), D(n));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ra), D(off), D(a));
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    int u = nd(k), last = nd(k), p = np(k);
    int l_big = nlabel(k), l_small = nlabel(k), l_done = nlabel(k);
    emit(k, "mov.u64 %s, %s;", D(u), D(t64));
    for (int unroll = GEMV_UNROLL; unroll >= 1; unroll -= GEMV_UNROLL - 1) {
        int l_top = unroll > 1 ? l_big : l_small;
        label(k, l_top);
        emit(k, "add.u64 %s, %s, %d;", D(last), D(u), (unroll - 1) * RED_THREADS);
        emit(k, "setp.ge.u64 %s, %s, %s;", P(p), D(last), D(nu));
        emit(k, "@%s bra %s;", P(p), L(unroll > 1 ? l_small : l_done));
        int av[GEMV_UNROLL][4], xv[GEMV_UNROLL][4];
        for (int q = 0; q < unroll; q++) {
            int uq = nd(k);
            emit(k, "add.u64 %s, %s, %d;", D(uq), D(u), q * RED_THREADS);
            ld_vec(k, width, av[q], addr_of(k, ra, uq, 4 * width));
            ld_vec(k, width, xv[q], addr_of(k, x, uq, 4 * width));
        }
        int s = fmov(k, 0.0f), sd = nfd(k);
        for (int q = 0; q < unroll; q++)
            for (int i = 0; i < width; i++) {
                int t = nf(k);
                emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(t), F(av[q][i]), F(xv[q][i]), F(s));
                s = t;
            }
        emit(k, "cvt.f64.f32 %s, %s;", FD(sd), F(s));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(sd));
        emit(k, "add.u64 %s, %s, %d;", D(u), D(u), unroll * RED_THREADS);
        emit(k, "bra.uni %s;", L(l_top));
    }
    label(k, l_done);
    int sum = block_sum_f64(k, acc, lane, warp);
    int pl = np(k), l_skip = nlabel(k);
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pl), R(tid));
    emit(k, "@%s bra %s;", P(pl), L(l_skip));
    redo_operand ar = {ra, -1, RAYO_DTYPE_F32}, xr = {x, -1, RAYO_DTYPE_F32};
    redo_if_not_finite(k, sum, &ar, &xr, n);
    store_scaled(k, sum, addr_of(k, y, row, 4), alpha, beta);
    label(k, l_skip);
    emit(k, "add.u64 %s, %s, %s;", D(row), D(row), D(rstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_row));
    label(k, l_end);
    char name[32];
    snprintf(name, sizeof name, "gemv_n_block_%s", width == 4 ? "v4" : "s1");
    kern_finish(mod, k, name,
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_x, .param .u64 p_m, .param .u64 p_n, "
                ".param .f32 p_alpha, .param .f32 p_beta", ".maxntid 256, 1, 1\n", RED_SHARED);
}

/* gemv with A transposed, 4 columns per lane (16-byte loads): tile (cb, s)
 * is columns [128 cb, 128 cb + 128) (a warp's width) of rows
 * [s*chunk, (s+1)*chunk); the blocks take the tiles t = cb + s * ncb in a
 * grid-stride loop (the launch makes their number a multiple of the grid,
 * so every multiprocessor gets the same work).  A block's 8 warps take
 * every 8th row of the tile, four rows per trip, and add their sums in warp
 * order through shared memory into part[s*n + j] (float64). */
#define GT_WARPS 8

/* The tile's 4 column sums over rows [i0, i1) (acc[4], .f64) where float
 * sums overflowed (product-redo.c): column col + c is A[i][col + c], n apart. */
static void redo_tile_columns(kern *k, int a, int x, int n, int col, int i0, int i1, const int *acc)
{
    int count = nd(k), x0 = addr_of(k, x, i0, 4), first = nd(k);
    emit(k, "sub.u64 %s, %s, %s;", D(count), D(i1), D(i0));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(first), D(i0), D(n), D(col));
    for (int c = 0; c < 4; c++) {
        int idx = nd(k);
        emit(k, "add.u64 %s, %s, %d;", D(idx), D(first), c);
        redo_operand ar = {addr_of(k, a, idx, 4), n, RAYO_DTYPE_F32}, xr = {x0, -1, RAYO_DTYPE_F32};
        redo_if_not_finite(k, acc[c], &ar, &xr, count);
    }
}
/* The registers of one gemv_t_part_v4 tile that its parts share. */
typedef struct gt_tile {
    int part, a, x, n, col, i0, i1, s, rowb, tid, warp, pn;
} gt_tile;

/* One trip of `unroll` rows (i, i + GT_WARPS, ...) of the tile's 4 columns:
 * every load first, then the float sums of the trip into acc (.f64). */
static void gt_trip(kern *k, const gt_tile *g, int i, int unroll, const int *acc)
{
    int a = g->a, x = g->x, n = g->n, col = g->col, rowb = g->rowb;
    int av[GEMV_UNROLL][4], xv[GEMV_UNROLL];
    int base = nd(k), ad = nd(k), xa = addr_of(k, x, i, 4);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(base), D(i), D(n), D(col));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ad), D(base), D(a));
    for (int q = 0; q < unroll; q++) {
        int aq = ad;
        if (q) {
            aq = nd(k);
            emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(aq), D(rowb), q * GT_WARPS, D(ad));
        }
        ld_vec(k, 4, av[q], aq);
        xv[q] = nf(k);
        emit(k, "ld.global.f32 %s, [%s+%d];", F(xv[q]), D(xa), 4 * q * GT_WARPS);
    }
    for (int c = 0; c < 4; c++) {
        int sum = fmov(k, 0.0f), sd = nfd(k);
        for (int q = 0; q < unroll; q++) {
            int t = nf(k);
            emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(t), F(av[q][c]), F(xv[q]), F(sum));
            sum = t;
        }
        emit(k, "cvt.f64.f32 %s, %s;", FD(sd), F(sum));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(acc[c]), FD(acc[c]), FD(sd));
    }
}

/* The warps' sums of the tile (gt_smem[warp][lane][4]) added by warp 0 in
 * order, redone where not finite, and stored in part[s][col..col + 4). */
static void gt_combine_store(kern *k, const gt_tile *g, const int *acc)
{
    int sb = nr(k), slot = nr(k);
    emit(k, "mov.u32 %s, gt_smem;", R(sb));
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(slot), R(g->tid), R(sb));
    emit(k, "st.shared.v2.f64 [%s], {%s, %s};", R(slot), FD(acc[0]), FD(acc[1]));
    emit(k, "st.shared.v2.f64 [%s+16], {%s, %s};", R(slot), FD(acc[2]), FD(acc[3]));
    emit(k, "bar.sync 0;");
    int l_end = nlabel(k), pw = np(k), pout = np(k);
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pw), R(g->warp));
    emit(k, "or.pred %s, %s, %s;", P(pout), P(pw), P(g->pn));
    emit(k, "@%s bra %s;", P(pout), L(l_end));
    for (int w = 1; w < GT_WARPS; w++) {
        int t[4];
        for (int c = 0; c < 4; c++)
            t[c] = nfd(k);
        emit(k, "ld.shared.v2.f64 {%s, %s}, [%s+%d];", FD(t[0]), FD(t[1]), R(slot), w * 32 * 32);
        emit(k, "ld.shared.v2.f64 {%s, %s}, [%s+%d];", FD(t[2]), FD(t[3]), R(slot), w * 32 * 32 + 16);
        for (int c = 0; c < 4; c++)
            emit(k, "add.rn.f64 %s, %s, %s;", FD(acc[c]), FD(acc[c]), FD(t[c]));
    }
    redo_tile_columns(k, g->a, g->x, g->n, g->col, g->i0, g->i1, acc);
    int pidx = nd(k), pa = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(pidx), D(g->s), D(g->n), D(g->col));
    emit(k, "mad.lo.u64 %s, %s, 8, %s;", D(pa), D(pidx), D(g->part));
    emit(k, "st.global.v2.f64 [%s], {%s, %s};", D(pa), FD(acc[0]), FD(acc[1]));
    emit(k, "st.global.v2.f64 [%s+16], {%s, %s};", D(pa), FD(acc[2]), FD(acc[3]));
    label(k, l_end);
}

static void gen_gemv_t_part_v4(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int part = param_global(k, "p_part"), a = param_global(k, "p_a"), x = param_global(k, "p_x");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n"), chunk = param_u64(k, "p_chunk");
    int tiles = param_u64(k, "p_tiles");
    int tid, lane, warp;
    lane_warp(k, &tid, &lane, &warp);
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x");
    int j4 = nd(k), l64 = nd(k), w64 = nd(k), s = nd(k), n4 = nd(k), pj = np(k);
    int tile = nd(k), tstep = nd(k), ncb = nd(k), cb = nd(k), ptile = np(k), l_tile = nlabel(k), l_fin = nlabel(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(l64), R(lane));
    emit(k, "cvt.u64.u32 %s, %s;", D(w64), R(warp));
    emit(k, "shr.u64 %s, %s, 2;", D(n4), D(n));
    emit(k, "add.u64 %s, %s, 31;", D(ncb), D(n4));
    emit(k, "shr.u64 %s, %s, 5;", D(ncb), D(ncb));
    emit(k, "cvt.u64.u32 %s, %s;", D(tile), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(tstep), R(nctaid));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(ptile), D(tile), D(tiles));
    emit(k, "@%s bra %s;", P(ptile), L(l_fin));
    label(k, l_tile);
    emit(k, "div.u64 %s, %s, %s;", D(s), D(tile), D(ncb));
    emit(k, "rem.u64 %s, %s, %s;", D(cb), D(tile), D(ncb));
    emit(k, "shl.b64 %s, %s, 5;", D(j4), D(cb));
    emit(k, "add.u64 %s, %s, %s;", D(j4), D(j4), D(l64));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pj), D(j4), D(n4));
    int i0 = nd(k), i1 = nd(k), i = nd(k), col = nd(k), rowb = nd(k), pi = np(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(i0), D(s), D(chunk));
    emit(k, "add.u64 %s, %s, %s;", D(i1), D(i0), D(chunk));
    emit(k, "min.u64 %s, %s, %s;", D(i1), D(i1), D(m));
    emit(k, "shl.b64 %s, %s, 2;", D(col), D(j4));
    emit(k, "shl.b64 %s, %s, 2;", D(rowb), D(n));
    int acc[4];
    for (int c = 0; c < 4; c++) {
        acc[c] = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(acc[c]), CD(0.0));
    }
    /* lanes past the last column skip the rows but join the barrier */
    int l_done = nlabel(k), l_big = nlabel(k), l_small = nlabel(k), last = nd(k), pn = np(k);
    gt_tile g = { .part = part, .a = a, .x = x, .n = n, .col = col, .i0 = i0, .i1 = i1, .s = s,
                  .rowb = rowb, .tid = tid, .warp = warp, .pn = pn };
    emit(k, "add.u64 %s, %s, %s;", D(i), D(i0), D(w64));
    emit(k, "not.pred %s, %s;", P(pn), P(pj));
    emit(k, "@%s bra %s;", P(pn), L(l_done));
    for (int unroll = GEMV_UNROLL; unroll >= 1; unroll -= GEMV_UNROLL - 1) {
        int l_top = unroll > 1 ? l_big : l_small;
        label(k, l_top);
        emit(k, "add.u64 %s, %s, %d;", D(last), D(i), (unroll - 1) * GT_WARPS);
        emit(k, "setp.ge.u64 %s, %s, %s;", P(pi), D(last), D(i1));
        emit(k, "@%s bra %s;", P(pi), L(unroll > 1 ? l_small : l_done));
        gt_trip(k, &g, i, unroll, acc);
        emit(k, "add.u64 %s, %s, %d;", D(i), D(i), unroll * GT_WARPS);
        emit(k, "bra.uni %s;", L(l_top));
    }
    label(k, l_done);
    gt_combine_store(k, &g, acc);
    emit(k, "bar.sync 0;"); /* gt_smem is read before the next tile writes it */
    emit(k, "add.u64 %s, %s, %s;", D(tile), D(tile), D(tstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(ptile), D(tile), D(tiles));
    emit(k, "@%s bra %s;", P(ptile), L(l_tile));
    label(k, l_fin);
    kern_finish(mod, k, "gemv_t_part_v4",
                ".param .u64 p_part, .param .u64 p_a, .param .u64 p_x, .param .u64 p_m, "
                ".param .u64 p_n, .param .u64 p_chunk, .param .u64 p_tiles", ".maxntid 256, 1, 1\n",
                "\t.shared .align 16 .b8 gt_smem[8192];\n");
}

void gen_gemv_fast(strbuf *mod)
{
    gen_gemv_n_block(mod, 4);
    gen_gemv_n_block(mod, 1);
    gen_gemv_t_part_v4(mod);
}
