/* SPDX-License-Identifier: MIT */
/* rows.c - modules "rows" and "rows_cluster": softmax, log_softmax,
 * layernorm and rmsnorm.  The row-cached kernels (rowc_*: the row read
 * once, kept in shared memory; a warp, a block or, on sm_90, a cluster of
 * blocks per row) for rows that fit, and the three-pass kernels (row_*, one
 * block per row, any length) for longer ones. */
#include "gen-ptx.h"
#include "../plugins/cuda/cuda-ptx.h"

/* ---- module: row-wise ops (softmax, log_softmax, layernorm, rmsnorm) ----
 * One block of 256 threads per row (rows in a grid-stride loop); each pass
 * over the row is a strided loop; block reductions in between. */
enum row_kind { ROW_SOFTMAX, ROW_LOG_SOFTMAX, ROW_LAYERNORM, ROW_RMSNORM };

/* The registers the passes of a row kernel share. */
typedef struct row_regs {
    enum row_kind kind;
    int n, tid64, lane, warp;   /* .b64 n and thread index; .b32 lane and warp */
    int xa, ya;                 /* .b64: the row in a and y */
    int nfd64, eps;             /* .f64 n, .f32 eps */
    int has_g, has_b, gg, bg;   /* gamma and beta: given?, global addresses */
} row_regs;

/* softmax, log_softmax: the max (NaN propagates), the sum of exp(x - max)
 * in float64, then the write. */
static void row_softmax_passes(kern *k, const row_regs *r)
{
    int n = r->n, tid64 = r->tid64, xa = r->xa;
    int mx = nf(k);
    emit(k, "mov.f32 %s, %s;", F(mx), CB(0xff800000u));
    ptx_loop rl = ptx_loop_begin(k, tid64, n, RED_THREADS);
    int x = nf(k);
    emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, xa, rl.i, 4)));
    emit(k, "max.NaN.f32 %s, %s, %s;", F(mx), F(mx), F(x));
    ptx_loop_end(k, rl, n);
    int rmax = block_minmax_f32(k, mx, r->lane, r->warp, 1);
    int s = nfd(k);
    emit(k, "mov.f64 %s, %s;", FD(s), CD(0.0));
    rl = ptx_loop_begin(k, tid64, n, RED_THREADS);
    int x2 = nf(k), d = nf(k), ed = nfd(k);
    emit(k, "ld.global.f32 %s, [%s];", F(x2), D(addr_of(k, xa, rl.i, 4)));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(d), F(x2), F(rmax));
    int e = m_exp(k, d);
    emit(k, "cvt.f64.f32 %s, %s;", FD(ed), F(e));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(s), FD(ed));
    ptx_loop_end(k, rl, n);
    int tot = block_sum_f64(k, s, r->lane, r->warp), totf = nf(k);
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(totf), FD(tot));
    int lsum = r->kind == ROW_LOG_SOFTMAX ? m_log(k, totf) : -1;
    rl = ptx_loop_begin(k, tid64, n, RED_THREADS);
    int x3 = nf(k), d3 = nf(k), out = nf(k);
    emit(k, "ld.global.f32 %s, [%s];", F(x3), D(addr_of(k, xa, rl.i, 4)));
    emit(k, "sub.rn.f32 %s, %s, %s;", F(d3), F(x3), F(rmax));
    if (r->kind == ROW_SOFTMAX) {
        int e3 = m_exp(k, d3);
        emit(k, "div.rn.f32 %s, %s, %s;", F(out), F(e3), F(totf));
    } else {
        emit(k, "sub.rn.f32 %s, %s, %s;", F(out), F(d3), F(lsum));
    }
    emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, r->ya, rl.i, 4)), F(out));
    ptx_loop_end(k, rl, n);
}

/* The row's mean in float64 (layernorm; 0 for rmsnorm). */
static int row_mean(kern *k, const row_regs *r)
{
    int mean = nfd(k);
    if (r->kind != ROW_LAYERNORM) {
        emit(k, "mov.f64 %s, %s;", FD(mean), CD(0.0));
        return mean;
    }
    int s = nfd(k);
    emit(k, "mov.f64 %s, %s;", FD(s), CD(0.0));
    ptx_loop rl = ptx_loop_begin(k, r->tid64, r->n, RED_THREADS);
    int x = nf(k), xd = nfd(k);
    emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, r->xa, rl.i, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(s), FD(xd));
    ptx_loop_end(k, rl, r->n);
    int tot = block_sum_f64(k, s, r->lane, r->warp);
    emit(k, "div.rn.f64 %s, %s, %s;", FD(mean), FD(tot), FD(r->nfd64));
    return mean;
}

/* 1 / sqrt(var + eps) in float64 from the sum of squares about the mean. */
static int row_rstd(kern *k, const row_regs *r, int mean)
{
    int s2 = nfd(k);
    emit(k, "mov.f64 %s, %s;", FD(s2), CD(0.0));
    ptx_loop rl = ptx_loop_begin(k, r->tid64, r->n, RED_THREADS);
    int x = nf(k), xd = nfd(k), dd = nfd(k);
    emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, r->xa, rl.i, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
    emit(k, "sub.rn.f64 %s, %s, %s;", FD(dd), FD(xd), FD(mean));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(s2), FD(dd), FD(dd), FD(s2));
    ptx_loop_end(k, rl, r->n);
    int ss = block_sum_f64(k, s2, r->lane, r->warp);
    int var = nfd(k), epsd = nfd(k), ve = nfd(k), sd = nfd(k), rstd = nfd(k);
    emit(k, "div.rn.f64 %s, %s, %s;", FD(var), FD(ss), FD(r->nfd64));
    emit(k, "cvt.f64.f32 %s, %s;", FD(epsd), F(r->eps));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(ve), FD(var), FD(epsd));
    emit(k, "sqrt.rn.f64 %s, %s;", FD(sd), FD(ve));
    emit(k, "rcp.rn.f64 %s, %s;", FD(rstd), FD(sd));
    /* var + eps = 0 (a constant row with eps = 0): the row normalises to
     * 0 (y = beta), not 0 * inf = NaN (core/rayo-ops.h) */
    int pz = np(k);
    emit(k, "setp.eq.f64 %s, %s, %s;", P(pz), FD(ve), CD(0.0));
    emit(k, "selp.f64 %s, %s, %s, %s;", FD(rstd), CD(0.0), FD(rstd), P(pz));
    return rstd;
}

/* y = (x - mean) rstd gamma + beta, in float64 and rounded once. */
static void row_norm_write(kern *k, const row_regs *r, int mean, int rstd)
{
    ptx_loop rl = ptx_loop_begin(k, r->tid64, r->n, RED_THREADS);
    int x3 = nf(k), xd3 = nfd(k), d3 = nfd(k), t3 = nfd(k), gv = nf(k), bv = nf(k), out = nf(k);
    int gd = nfd(k), bd = nfd(k), yd = nfd(k);
    emit(k, "ld.global.f32 %s, [%s];", F(x3), D(addr_of(k, r->xa, rl.i, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd3), F(x3));
    emit(k, "sub.rn.f64 %s, %s, %s;", FD(d3), FD(xd3), FD(mean));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(t3), FD(d3), FD(rstd));
    emit(k, "mov.f32 %s, %s;", F(gv), C(1.0f));
    emit(k, "mov.f32 %s, %s;", F(bv), C(0.0f));
    emit(k, "@%s ld.global.f32 %s, [%s];", P(r->has_g), F(gv), D(addr_of(k, r->gg, rl.i, 4)));
    if (r->kind == ROW_LAYERNORM)
        emit(k, "@%s ld.global.f32 %s, [%s];", P(r->has_b), F(bv), D(addr_of(k, r->bg, rl.i, 4)));
    /* gamma x^ + beta in double, rounded once: with gamma ~ 100 and beta ~
     * -100 the result cancels, and a float x^ would carry 100 ulps of it */
    emit(k, "cvt.f64.f32 %s, %s;", FD(gd), F(gv));
    emit(k, "cvt.f64.f32 %s, %s;", FD(bd), F(bv));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(yd), FD(t3), FD(gd), FD(bd));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(out), FD(yd));
    emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, r->ya, rl.i, 4)), F(out));
    ptx_loop_end(k, rl, r->n);
}

static void gen_row_kernel(strbuf *mod, enum row_kind kind)
{
    kern kk = {0}, *k = &kk;
    row_regs r = {.kind = kind};
    int y = param_global(k, "p_y"), a = param_global(k, "p_a");
    int g = param_u64(k, "p_gamma"), bt = param_u64(k, "p_beta");
    int m = param_u64(k, "p_m");
    r.n = param_u64(k, "p_n");
    r.eps = param_f32(k, "p_eps");
    int tid;
    lane_warp(k, &tid, &r.lane, &r.warp);
    r.tid64 = nd(k);
    int row = nd(k), rstep = nd(k), pr = np(k);
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x");
    emit(k, "cvt.u64.u32 %s, %s;", D(r.tid64), R(tid));
    emit(k, "cvt.u64.u32 %s, %s;", D(row), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(nctaid));
    r.nfd64 = nfd(k);
    emit(k, "cvt.rn.f64.u64 %s, %s;", FD(r.nfd64), D(r.n));
    r.has_g = np(k);
    r.has_b = np(k);
    r.gg = nd(k);
    r.bg = nd(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(r.has_g), D(g));
    emit(k, "setp.ne.u64 %s, %s, 0;", P(r.has_b), D(bt));
    emit(k, "cvta.to.global.u64 %s, %s;", D(r.gg), D(g));
    emit(k, "cvta.to.global.u64 %s, %s;", D(r.bg), D(bt));
    int l_row = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_row);
    int off = nd(k);
    r.xa = nd(k);
    r.ya = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(off), D(row), D(r.n));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(r.xa), D(off), D(a));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(r.ya), D(off), D(y));
    if (kind == ROW_SOFTMAX || kind == ROW_LOG_SOFTMAX) {
        row_softmax_passes(k, &r);
    } else {
        int mean = row_mean(k, &r);
        row_norm_write(k, &r, mean, row_rstd(k, &r, mean));
    }
    emit(k, "add.u64 %s, %s, %s;", D(row), D(row), D(rstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_row));
    label(k, l_end);
    static const char *const names[] = {"row_softmax", "row_log_softmax", "row_layernorm", "row_rmsnorm"};
    kern_finish(mod, k, names[kind],
                ".param .u64 p_y, .param .u64 p_a, .param .u64 p_gamma, .param .u64 p_beta, "
                ".param .u64 p_m, .param .u64 p_n, .param .f32 p_eps",
                ".maxntid 256, 1, 1\n", RED_SHARED);
}


/* ---- the row-cached kernels (rowc_<op>_<warp|block>_<v4|s1>) --------------
 * The row is read from global memory once: the first pass stores it in
 * shared memory (dynamic, n floats per row) while it takes the first
 * statistic, the later passes read it from there, the last one writes y.
 * Each thread visits the same units (width floats: 4 when n % 4 == 0 and
 * the pointers are 16-byte aligned, else 1) in every pass, so the cached
 * row needs no barrier; only the reductions synchronise.
 *   warp:  a warp per row (cuda-ptx.h: RAYO_PTX_ROWC_WARP_*), reduced
 *          with shuffles alone;
 *   block: a block of any multiple of 32 threads up to 1024 per row (rows up
 *          to the shared memory a block may opt in to), reduced through
 *          rowc_red.
 * The global passes (load, write) take four units per trip while they
 * last: every load of the trip first, so that each thread has 64 bytes in
 * flight.  Statistics as in the kernels above (float64 sums, NaN-propagating
 * max); rows longer than the cache use those.
 *   rowc_add_rmsnorm_block_v4: rmsnorm of the row a + b, the sum (the same
 *          add.rn.f32 as ew_add) also stored to s in the first pass: a
 *          residual add and the next layer's norm in one kernel. */
#define ROWC_UNROLL 4
#define STR_(x) #x
#define STR(x) STR_(x)
#define ROWC_SHARED "\t.shared .align 16 .b8 rowc_red[" STR(RAYO_PTX_ROWC_STATIC_SMEM) "];\n"

typedef struct rowc {
    enum row_kind kind;
    int add;           /* the row is a + b, stored to s on the way (rowc_add_rmsnorm_*) */
    int bsum, ssum;    /* .b64: with add, the row in b and in s */
    int width;
    int warp_group;    /* lanes per row (32, 16, 8, 4) for the warp kind, else 0 */
    int nu, G, gt;     /* .b32: units in the row, threads in the group, this thread's rank */
    int cluster;       /* CTAs per row (block kind): each caches units [lo, hi) */
    int lo, hi;        /* .b32 */
    int parity;        /* .b32: 0/1 by row, picks the cluster slots (see group_reduce) */
    int nreduce;       /* reductions so far in this row */
    int pred[ROWC_UNROLL]; /* .pred of each unit of a trip (-1: always in range) */
    int xg, yg;        /* .b64: the row in a and y */
    int sb;            /* .b32: the row's shared-memory cache */
    int gg, bg, has_g, has_b;
    int lane, warp, nwarps;
    int acc_f, acc_d;  /* the running statistic (f32 max, f64 sum) */
    int mx, inv, lsum; /* .f32: max, 1/sum, log(sum) */
    int mean, rstd;    /* .f64 */
} rowc;

typedef void (*rowc_body)(kern *k, rowc *c, const int *u, int count);

/* byte offset of unit u (a .b32 register) as .b64 / .b32 */
static int unit_off64(kern *k, rowc *c, int u)
{
    int o = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(o), R(u), 4 * c->width);
    return o;
}

static int smem_addr(kern *k, rowc *c, int u)
{
    int a = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(a), R(u), 4 * c->width, R(c->sb)); /* sb: minus lo's offset */
    return a;
}

static void ld_units(kern *k, rowc *c, const char *space, int *v, const char *addr, const char *pred)
{
    for (int i = 0; i < c->width; i++)
        v[i] = nf(k);
    if (c->width == 4)
        emit(k, "%s ld.%s.v4.f32 {%s, %s, %s, %s}, [%s];", pred, space, F(v[0]), F(v[1]), F(v[2]), F(v[3]), addr);
    else
        emit(k, "%s ld.%s.f32 %s, [%s];", pred, space, F(v[0]), addr);
}

static void st_units(kern *k, rowc *c, const char *space, const int *v, const char *addr, const char *pred)
{
    if (c->width == 4)
        emit(k, "%s st.%s.v4.f32 [%s], {%s, %s, %s, %s};", pred, space, addr, F(v[0]), F(v[1]), F(v[2]), F(v[3]));
    else
        emit(k, "%s st.%s.f32 [%s], %s;", pred, space, addr, F(v[0]));
}

/* "@%p" for unit q of the trip when it may be out of range, else "" */
static const char *unit_pred(rowc *c, int q, char *buf, size_t size)
{
    if (c->pred[q] < 0)
        buf[0] = '\0';
    else
        snprintf(buf, size, "@%s", P(c->pred[q]));
    return buf;
}

/* body over every unit of this thread.  unroll: ROWC_UNROLL units per trip,
 * the ones past the end predicated off (no serial tail: a thread with fewer
 * units than the others does not lag behind with one load at a time);
 * else one per trip */
static void unit_loop(kern *k, rowc *c, int unroll, rowc_body body)
{
    int u = nr(k), p = np(k), l_small = nlabel(k), l_done = nlabel(k);
    for (int q = 0; q < ROWC_UNROLL; q++)
        c->pred[q] = -1;
    emit(k, "add.u32 %s, %s, %s;", R(u), R(c->lo), R(c->gt));
    if (unroll) {
        int l_big = nlabel(k), units[ROWC_UNROLL];
        label(k, l_big);
        emit(k, "setp.ge.u32 %s, %s, %s;", P(p), R(u), R(c->hi));
        emit(k, "@%s bra %s;", P(p), L(l_done));
        units[0] = u;
        for (int q = 1; q < ROWC_UNROLL; q++) {
            units[q] = nr(k);
            c->pred[q] = np(k);
            emit(k, "add.u32 %s, %s, %s;", R(units[q]), R(units[q - 1]), R(c->G));
            emit(k, "setp.lt.u32 %s, %s, %s;", P(c->pred[q]), R(units[q]), R(c->hi));
        }
        body(k, c, units, ROWC_UNROLL);
        for (int q = 0; q < ROWC_UNROLL; q++)
            c->pred[q] = -1;
        emit(k, "add.u32 %s, %s, %s;", R(u), R(units[ROWC_UNROLL - 1]), R(c->G));
        emit(k, "bra.uni %s;", L(l_big));
    }
    label(k, l_small);
    emit(k, "setp.ge.u32 %s, %s, %s;", P(p), R(u), R(c->hi));
    emit(k, "@%s bra %s;", P(p), L(l_done));
    body(k, c, &u, 1);
    emit(k, "add.u32 %s, %s, %s;", R(u), R(u), R(c->G));
    emit(k, "bra.uni %s;", L(l_small));
    label(k, l_done);
}

/* v += the same units of b (the identity 0 past the end), the sums stored
 * to s: the add of ew_add, so the row is bit for bit add's y. */
static void add_units(kern *k, rowc *c, const int *u, int count, int (*v)[4])
{
    int w[ROWC_UNROLL][4];
    char pb[16];
    for (int q = 0; q < count; q++) {
        int a = nd(k);
        emit(k, "add.u64 %s, %s, %s;", D(a), D(c->bsum), D(unit_off64(k, c, u[q])));
        for (int i = 0; i < c->width; i++)
            w[q][i] = fmov(k, 0.0f);
        const char *pred = unit_pred(c, q, pb, sizeof pb);
        if (c->width == 4)
            emit(k, "%s ld.global.v4.f32 {%s, %s, %s, %s}, [%s];", pred, F(w[q][0]), F(w[q][1]), F(w[q][2]),
                 F(w[q][3]), D(a));
        else
            emit(k, "%s ld.global.f32 %s, [%s];", pred, F(w[q][0]), D(a));
    }
    for (int q = 0; q < count; q++) {
        for (int i = 0; i < c->width; i++)
            emit(k, "add.rn.f32 %s, %s, %s;", F(v[q][i]), F(v[q][i]), F(w[q][i]));
        int a = nd(k);
        emit(k, "add.u64 %s, %s, %s;", D(a), D(c->ssum), D(unit_off64(k, c, u[q])));
        st_units(k, c, "global", v[q], D(a), unit_pred(c, q, pb, sizeof pb));
    }
}

/* pass 1: global -> shared, first statistic */
static void body_load(kern *k, rowc *c, const int *u, int count)
{
    int v[ROWC_UNROLL][4];
    char pb[16];
    int softmax = c->kind == ROW_SOFTMAX || c->kind == ROW_LOG_SOFTMAX;
    for (int q = 0; q < count; q++) {
        int a = nd(k);
        emit(k, "add.u64 %s, %s, %s;", D(a), D(c->xg), D(unit_off64(k, c, u[q])));
        if (c->pred[q] >= 0) {
            /* a unit past the end: the statistic's identity (no effect) */
            for (int i = 0; i < c->width; i++) {
                v[q][i] = nf(k);
                emit(k, "mov.f32 %s, %s;", F(v[q][i]), softmax ? CB(0xff800000u) : C(0.0f));
            }
            char line[160];
            if (c->width == 4)
                snprintf(line, sizeof line, "@%s ld.global.v4.f32 {%s, %s, %s, %s}, [%s];", P(c->pred[q]),
                         F(v[q][0]), F(v[q][1]), F(v[q][2]), F(v[q][3]), D(a));
            else
                snprintf(line, sizeof line, "@%s ld.global.f32 %s, [%s];", P(c->pred[q]), F(v[q][0]), D(a));
            emit(k, "%s", line);
        } else {
            ld_units(k, c, "global", v[q], D(a), "");
        }
    }
    if (c->add)
        add_units(k, c, u, count, v);
    for (int q = 0; q < count; q++) {
        st_units(k, c, "shared", v[q], R(smem_addr(k, c, u[q])), unit_pred(c, q, pb, sizeof pb));
        for (int i = 0; i < c->width; i++) {
            int x = v[q][i];
            if (c->kind == ROW_SOFTMAX || c->kind == ROW_LOG_SOFTMAX) {
                emit(k, "max.NaN.f32 %s, %s, %s;", F(c->acc_f), F(c->acc_f), F(x));
            } else {
                int xd = nfd(k);
                emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
                if (c->kind == ROW_LAYERNORM)
                    emit(k, "add.rn.f64 %s, %s, %s;", FD(c->acc_d), FD(c->acc_d), FD(xd));
                else
                    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(c->acc_d), FD(xd), FD(xd), FD(c->acc_d));
            }
        }
    }
}

/* softmax pass 2: e = exp(x - max) (kept in place of x for softmax), sum e */
static void body_sum_exp(kern *k, rowc *c, const int *u, int count)
{
    int sa = smem_addr(k, c, u[0]), v[4], e[4];
    (void)count;
    ld_units(k, c, "shared", v, R(sa), "");
    for (int i = 0; i < c->width; i++) {
        int d = nf(k), ed = nfd(k);
        emit(k, "sub.rn.f32 %s, %s, %s;", F(d), F(v[i]), F(c->mx));
        e[i] = m_exp_act(k, d);
        emit(k, "cvt.f64.f32 %s, %s;", FD(ed), F(e[i]));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(c->acc_d), FD(c->acc_d), FD(ed));
    }
    if (c->kind == ROW_SOFTMAX)
        st_units(k, c, "shared", e, R(sa), "");
}

/* layernorm pass 2: sum (x - mean)^2 */
static void body_var(kern *k, rowc *c, const int *u, int count)
{
    int v[4];
    (void)count;
    ld_units(k, c, "shared", v, R(smem_addr(k, c, u[0])), "");
    for (int i = 0; i < c->width; i++) {
        int xd = nfd(k), dd = nfd(k);
        emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(v[i]));
        emit(k, "sub.rn.f64 %s, %s, %s;", FD(dd), FD(xd), FD(c->mean));
        emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(c->acc_d), FD(dd), FD(dd), FD(c->acc_d));
    }
}

/* last pass: y from the cached row (and gamma, beta) */
static void body_write(kern *k, rowc *c, const int *u, int count)
{
    int v[ROWC_UNROLL][4], gv[ROWC_UNROLL][4], bv[ROWC_UNROLL][4];
    int norm = c->kind == ROW_LAYERNORM || c->kind == ROW_RMSNORM;
    char pu[16];
    for (int q = 0; q < count; q++) {
        ld_units(k, c, "shared", v[q], R(smem_addr(k, c, u[q])), unit_pred(c, q, pu, sizeof pu));
        if (!norm)
            continue;
        int off = unit_off64(k, c, u[q]), ga = nd(k), ba = nd(k);
        emit(k, "add.u64 %s, %s, %s;", D(ga), D(c->gg), D(off));
        emit(k, "add.u64 %s, %s, %s;", D(ba), D(c->bg), D(off));
        for (int i = 0; i < c->width; i++) {
            gv[q][i] = fmov(k, 1.0f);
            bv[q][i] = fmov(k, 0.0f);
        }
        int hg = c->has_g, hb = c->has_b;
        if (c->pred[q] >= 0) { /* and the unit in range */
            hg = np(k);
            hb = np(k);
            emit(k, "and.pred %s, %s, %s;", P(hg), P(c->has_g), P(c->pred[q]));
            emit(k, "and.pred %s, %s, %s;", P(hb), P(c->has_b), P(c->pred[q]));
        }
        char pg[16], pb[16];
        snprintf(pg, sizeof pg, "@%s", P(hg));
        snprintf(pb, sizeof pb, "@%s", P(hb));
        if (c->width == 4) {
            emit(k, "%s ld.global.v4.f32 {%s, %s, %s, %s}, [%s];", pg, F(gv[q][0]), F(gv[q][1]), F(gv[q][2]),
                 F(gv[q][3]), D(ga));
            if (c->kind == ROW_LAYERNORM)
                emit(k, "%s ld.global.v4.f32 {%s, %s, %s, %s}, [%s];", pb, F(bv[q][0]), F(bv[q][1]),
                     F(bv[q][2]), F(bv[q][3]), D(ba));
        } else {
            emit(k, "%s ld.global.f32 %s, [%s];", pg, F(gv[q][0]), D(ga));
            if (c->kind == ROW_LAYERNORM)
                emit(k, "%s ld.global.f32 %s, [%s];", pb, F(bv[q][0]), D(ba));
        }
    }
    for (int q = 0; q < count; q++) {
        int out[4];
        for (int i = 0; i < c->width; i++) {
            int x = v[q][i], o = nf(k);
            if (c->kind == ROW_SOFTMAX) {
                emit(k, "mul.rn.f32 %s, %s, %s;", F(o), F(x), F(c->inv));
            } else if (c->kind == ROW_LOG_SOFTMAX) {
                int d = nf(k);
                emit(k, "sub.rn.f32 %s, %s, %s;", F(d), F(x), F(c->mx));
                emit(k, "sub.rn.f32 %s, %s, %s;", F(o), F(d), F(c->lsum));
            } else if (c->kind == ROW_RMSNORM) {
                /* (conversions to and from float64 are the slow part here:
                 * rmsnorm has neither mean nor beta) */
                o = rmsnorm_value(k, x, c->rstd, gv[q][i]);
            } else {
                /* gamma x^ + beta in double, rounded once (see row_layernorm) */
                int xd = nfd(k), d = nfd(k), t = nfd(k), gd = nfd(k), bd = nfd(k), yd = nfd(k);
                emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
                emit(k, "sub.rn.f64 %s, %s, %s;", FD(d), FD(xd), FD(c->mean));
                emit(k, "mul.rn.f64 %s, %s, %s;", FD(t), FD(d), FD(c->rstd));
                emit(k, "cvt.f64.f32 %s, %s;", FD(gd), F(gv[q][i]));
                emit(k, "cvt.f64.f32 %s, %s;", FD(bd), F(bv[q][i]));
                emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(yd), FD(t), FD(gd), FD(bd));
                emit(k, "cvt.rn.f32.f64 %s, %s;", F(o), FD(yd));
            }
            out[i] = o;
        }
        int a = nd(k);
        emit(k, "add.u64 %s, %s, %s;", D(a), D(c->yg), D(unit_off64(k, c, u[q])));
        st_units(k, c, "global", out, D(a), unit_pred(c, q, pu, sizeof pu));
    }
}

/* The group's reduction of a .f32 max (NaN propagating) or a .f64 sum; every
 * thread of the group gets it, in a fixed order (deterministic). */
static int group_reduce(kern *k, rowc *c, int v, int is_max)
{
    int acc = v;
    for (int off = c->warp_group ? c->warp_group / 2 : 16; off >= 1; off /= 2) {
        if (is_max) {
            int b = nr(k), o = nr(k), f = nf(k), s = nf(k);
            emit(k, "mov.b32 %s, %s;", R(b), F(acc));
            emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(o), R(b), off);
            emit(k, "mov.b32 %s, %s;", F(f), R(o));
            emit(k, "max.NaN.f32 %s, %s, %s;", F(s), F(acc), F(f));
            acc = s;
        } else {
            int o = shfl_f64(k, acc, off), s = nfd(k);
            emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(acc), FD(o));
            acc = s;
        }
    }
    if (c->warp_group)
        return acc;
    /* across the block's warps: lane 0 of each posts, everyone adds in order */
    int base = nr(k), pl = np(k), slot = nr(k), w = nr(k), pw = np(k), l_w = nlabel(k), l_wd = nlabel(k);
    int total = is_max ? nf(k) : nfd(k);
    const char *ty = is_max ? "f32" : "f64";
    emit(k, "mov.u32 %s, rowc_red;", R(base));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(pl), R(c->lane));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(slot), R(c->warp), R(base));
    emit(k, "@%s st.shared.%s [%s], %s;", P(pl), ty, R(slot), is_max ? F(acc) : FD(acc));
    emit(k, "bar.sync 0;");
    emit(k, "ld.shared.%s %s, [%s];", ty, is_max ? F(total) : FD(total), R(base));
    emit(k, "mov.u32 %s, 1;", R(w));
    label(k, l_w);
    emit(k, "setp.ge.u32 %s, %s, %s;", P(pw), R(w), R(c->nwarps));
    emit(k, "@%s bra %s;", P(pw), L(l_wd));
    int sa = nr(k);
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(sa), R(w), R(base));
    if (is_max) {
        int t = nf(k);
        emit(k, "ld.shared.f32 %s, [%s];", F(t), R(sa));
        emit(k, "max.NaN.f32 %s, %s, %s;", F(total), F(total), F(t));
    } else {
        int t = nfd(k);
        emit(k, "ld.shared.f64 %s, [%s];", FD(t), R(sa));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(total), FD(total), FD(t));
    }
    emit(k, "add.u32 %s, %s, 1;", R(w), R(w));
    emit(k, "bra.uni %s;", L(l_w));
    label(k, l_wd);
    emit(k, "bar.sync 0;");
    if (c->cluster == 1)
        return total;
    /* across the cluster's CTAs: thread 0 of each posts its CTA's value in
     * slot (row parity, reduction), all read them in rank order through
     * distributed shared memory.  Slots alternate by row, so a slot is
     * rewritten only after a later cluster barrier has passed its readers. */
    int slot_off = RAYO_PTX_ROWC_WARP_SLOTS + 8 * c->nreduce++, cs = nr(k), p0 = np(k);
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(cs), R(c->parity), R(base));
    emit(k, "add.u32 %s, %s, %d;", R(cs), R(cs), slot_off);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(c->gt));
    emit(k, "@%s st.shared.%s [%s], %s;", P(p0), ty, R(cs), is_max ? F(total) : FD(total));
    emit(k, "barrier.cluster.arrive.aligned; /* release by default */");
    emit(k, "barrier.cluster.wait.aligned; /* acquire by default */");
    int all = is_max ? nf(k) : nfd(k);
    for (int q = 0; q < c->cluster; q++) {
        int ra = nr(k), v = is_max ? nf(k) : nfd(k);
        emit(k, "mapa.shared::cluster.u32 %s, %s, %d;", R(ra), R(cs), q);
        emit(k, "ld.shared::cluster.%s %s, [%s];", ty, is_max ? F(v) : FD(v), R(ra));
        if (q == 0)
            emit(k, "mov.%s %s, %s;", is_max ? "f32" : "f64", is_max ? F(all) : FD(all), is_max ? F(v) : FD(v));
        else if (is_max)
            emit(k, "max.NaN.f32 %s, %s, %s;", F(all), F(all), F(v));
        else
            emit(k, "add.rn.f64 %s, %s, %s;", FD(all), FD(all), FD(v));
    }
    return all;
}

/* 1/sqrt(var + eps) from the sum of squares (inv_n = 1/n), as in
 * row_layernorm but without float64 division and square root, which cost
 * more than a short row's data: rsqrt.approx (about 2^-22) and one Newton
 * step (its error squared: ~2^-44); var + eps = 0 gives 0.  Also the
 * rmsnorm prologue of the gemv8 kernels (infer-gemv8.c). */
void norm_rstd(kern *k, int ss, int inv_n, int eps, int rstd)
{
    int var = nfd(k), epsd = nfd(k), ve = nfd(k), r0 = nfd(k), h = nfd(k), t = nfd(k), u = nfd(k), pz = np(k);
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(var), FD(ss), FD(inv_n));
    emit(k, "cvt.f64.f32 %s, %s;", FD(epsd), F(eps));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(ve), FD(var), FD(epsd));
    emit(k, "rsqrt.approx.f64 %s, %s;", FD(r0), FD(ve));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(h), FD(ve), CD(0.5));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(t), FD(r0), FD(r0));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(u), FD(h), FD(t), CD(-1.5)); /* v r^2 / 2 - 3/2 */
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(u), FD(u), FD(r0));
    emit(k, "neg.f64 %s, %s;", FD(rstd), FD(u));                            /* r (3 - v r^2) / 2 */
    emit(k, "setp.eq.f64 %s, %s, %s;", P(pz), FD(ve), CD(0.0));
    emit(k, "selp.f64 %s, %s, %s, %s;", FD(rstd), CD(0.0), FD(rstd), P(pz));
}

/* x rstd gamma in float64, rounded once: one rmsnorm output (f32 x, gamma;
 * f64 rstd). */
int rmsnorm_value(kern *k, int x, int rstd, int gamma)
{
    int xd = nfd(k), t = nfd(k), gd = nfd(k), yd = nfd(k), o = nf(k);
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(t), FD(xd), FD(rstd));
    emit(k, "cvt.f64.f32 %s, %s;", FD(gd), F(gamma));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(yd), FD(t), FD(gd));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(o), FD(yd));
    return o;
}

/* The warp kind's group: warp_group lanes per row, 32 / warp_group rows
 * per warp; its first row, row step, the warp's first row and its cache. */
static void rowc_warp_group(kern *k, rowc *c, int ctaid, int nctaid, int n32, int row, int rstep, int wrow)
{
    int warp_group = c->warp_group;
    int rpw = 32 / warp_group, lg = warp_group == 32 ? 5 : warp_group == 16 ? 4 : warp_group == 8 ? 3 : 2;
    int w32 = nr(k), sub = nr(k), slot = nr(k), rowbytes = nr(k), s64 = nd(k);
    emit(k, "mov.u32 %s, %d;", R(c->G), warp_group);
    emit(k, "and.b32 %s, %s, %d;", R(c->gt), R(c->lane), warp_group - 1);
    emit(k, "shr.u32 %s, %s, %d;", R(sub), R(c->lane), lg);
    emit(k, "mad.lo.u32 %s, %s, %s, %s;", R(w32), R(ctaid), R(c->nwarps), R(c->warp));
    emit(k, "mul.wide.u32 %s, %s, %d;", D(wrow), R(w32), rpw);
    emit(k, "cvt.u64.u32 %s, %s;", D(s64), R(sub));
    emit(k, "add.u64 %s, %s, %s;", D(row), D(wrow), D(s64));
    emit(k, "mul.lo.u32 %s, %s, %s;", R(w32), R(nctaid), R(c->nwarps));
    emit(k, "mul.wide.u32 %s, %s, %d;", D(rstep), R(w32), rpw);
    emit(k, "shl.b32 %s, %s, 2;", R(rowbytes), R(n32));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(slot), R(c->warp), rpw, R(sub));
    emit(k, "mad.lo.u32 %s, %s, %s, %s;", R(c->sb), R(slot), R(rowbytes), R(c->sb));
}

/* A cluster per row; CTA `rank` caches units [rank per, rank per + per). */
static void rowc_cluster_group(kern *k, rowc *c, int ntid, int tid, int row, int rstep)
{
    int cluster = c->cluster;
    int cid = sreg(k, "%clusterid.x"), ncid = sreg(k, "%nclusterid.x"), rank = sreg(k, "%cluster_ctarank");
    int per = nr(k), lob = nr(k);
    emit(k, "mov.u32 %s, %s;", R(c->G), R(ntid));
    emit(k, "mov.u32 %s, %s;", R(c->gt), R(tid));
    emit(k, "cvt.u64.u32 %s, %s;", D(row), R(cid));
    emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(ncid));
    emit(k, "add.u32 %s, %s, %d;", R(per), R(c->nu), cluster - 1);
    emit(k, "shr.u32 %s, %s, %d;", R(per), R(per), cluster == 2 ? 1 : cluster == 4 ? 2 : 3);
    c->lo = nr(k);
    c->hi = nr(k);
    emit(k, "mul.lo.u32 %s, %s, %s;", R(c->lo), R(rank), R(per));
    emit(k, "add.u32 %s, %s, %s;", R(c->hi), R(c->lo), R(per));
    emit(k, "min.u32 %s, %s, %s;", R(c->hi), R(c->hi), R(c->nu));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(lob), R(c->lo), 4 * c->width);
    emit(k, "sub.u32 %s, %s, %s;", R(c->sb), R(c->sb), R(lob));
}

/* After the first pass (max or sum in c->acc_*): the softmaxes' 1/sum or
 * log(sum), the norms' mean and rstd, for body_write. */
static void rowc_statistics(kern *k, rowc *c, int inv_n, int eps)
{
    if (c->kind == ROW_SOFTMAX || c->kind == ROW_LOG_SOFTMAX) {
        c->mx = group_reduce(k, c, c->acc_f, 1);
        emit(k, "mov.f64 %s, %s;", FD(c->acc_d), CD(0.0));
        unit_loop(k, c, 0, body_sum_exp);
        int tot = group_reduce(k, c, c->acc_d, 0), totf = nf(k);
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(totf), FD(tot));
        if (c->kind == ROW_SOFTMAX) {
            c->inv = nf(k);
            emit(k, "rcp.rn.f32 %s, %s;", F(c->inv), F(totf));
        } else {
            c->lsum = m_log(k, totf);
        }
        return;
    }
    int s1 = group_reduce(k, c, c->acc_d, 0);
    c->mean = nfd(k);
    c->rstd = nfd(k);
    if (c->kind == ROW_LAYERNORM) {
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(c->mean), FD(s1), FD(inv_n));
        emit(k, "mov.f64 %s, %s;", FD(c->acc_d), CD(0.0));
        unit_loop(k, c, 0, body_var);
        norm_rstd(k, group_reduce(k, c, c->acc_d, 0), inv_n, eps, c->rstd);
    } else {
        emit(k, "mov.f64 %s, %s;", FD(c->mean), CD(0.0));
        norm_rstd(k, s1, inv_n, eps, c->rstd);
    }
}

/* rowc_[add_]<op>_<warpN|block|clusterN>_<v4|s1>, its directives, its
 * parameters. */
static void rowc_finish(strbuf *mod, kern *k, const rowc *c)
{
    static const char *const names[] = {"softmax", "log_softmax", "layernorm", "rmsnorm"};
    char name[64];
    char kind_name[16], directives[96];
    if (c->warp_group)
        snprintf(kind_name, sizeof kind_name, "warp%d", c->warp_group);
    else if (c->cluster == 1)
        snprintf(kind_name, sizeof kind_name, "block");
    else
        snprintf(kind_name, sizeof kind_name, "cluster%d", c->cluster);
    snprintf(name, sizeof name, "rowc_%s%s_%s_%s", c->add ? "add_" : "", names[c->kind], kind_name,
             c->width == 4 ? "v4" : "s1");
    snprintf(directives, sizeof directives, ".maxntid %d, 1, 1\n",
             c->warp_group ? RAYO_PTX_ROWC_WARP_THREADS : 1024);
    if (c->cluster > 1)
        snprintf(directives + strlen(directives), sizeof directives - strlen(directives),
                 ".reqnctapercluster %d, 1, 1\n", c->cluster);
    kern_finish(mod, k, name,
                c->add ? ".param .u64 p_y, .param .u64 p_a, .param .u64 p_gamma, .param .u64 p_beta, "
                         ".param .u64 p_m, .param .u64 p_n, .param .f32 p_eps, .param .u64 p_b, .param .u64 p_s"
                       : ".param .u64 p_y, .param .u64 p_a, .param .u64 p_gamma, .param .u64 p_beta, "
                         ".param .u64 p_m, .param .u64 p_n, .param .f32 p_eps",
                directives, ROWC_SHARED);
}

/* A row's start: which lanes take units, the row's addresses, the first
 * pass's accumulators. */
static void rowc_row_start(kern *k, rowc *c, int row, int m, int n, int a, int y, int b, int sum)
{
    if (c->warp_group < 32 && c->warp_group) {
        /* a lane group past the last row takes no units but joins the shuffles */
        int pin = np(k);
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pin), D(row), D(m));
        emit(k, "selp.b32 %s, %s, 0, %s;", R(c->hi), R(c->nu), P(pin));
    }
    int off = nd(k);
    c->xg = nd(k);
    c->yg = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(off), D(row), D(n));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(c->xg), D(off), D(a));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(c->yg), D(off), D(y));
    if (c->add) {
        c->bsum = nd(k);
        c->ssum = nd(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(c->bsum), D(off), D(b));
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(c->ssum), D(off), D(sum));
    }
    c->acc_f = nf(k);
    c->acc_d = nfd(k);
    emit(k, "mov.f32 %s, %s;", F(c->acc_f), CB(0xff800000u));
    emit(k, "mov.f64 %s, %s;", FD(c->acc_d), CD(0.0));
    c->nreduce = 0;
}

static void gen_rowc_kernel(strbuf *mod, enum row_kind kind, int warp_group, int width, int cluster, int add)
{
    kern kk = {0}, *k = &kk;
    rowc cc = {.kind = kind, .add = add, .width = width, .warp_group = warp_group, .cluster = cluster}, *c = &cc;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a");
    int b = add ? param_global(k, "p_b") : -1, sum = add ? param_global(k, "p_s") : -1;
    int g = param_u64(k, "p_gamma"), bt = param_u64(k, "p_beta");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int eps = param_f32(k, "p_eps");
    int tid;
    lane_warp(k, &tid, &c->lane, &c->warp);
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x"), ntid = sreg(k, "%ntid.x");
    c->nwarps = nr(k);
    emit(k, "shr.u32 %s, %s, 5;", R(c->nwarps), R(ntid));
    int n32 = nr(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(n32), D(n));
    c->nu = nr(k);
    emit(k, "shr.u32 %s, %s, %d;", R(c->nu), R(n32), width == 4 ? 2 : 0);
    int nfd64 = nfd(k), inv_n = nfd(k);
    emit(k, "cvt.rn.f64.u64 %s, %s;", FD(nfd64), D(n));
    emit(k, "rcp.rn.f64 %s, %s;", FD(inv_n), FD(nfd64));
    c->has_g = np(k);
    c->has_b = np(k);
    c->gg = nd(k);
    c->bg = nd(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(c->has_g), D(g));
    emit(k, "setp.ne.u64 %s, %s, 0;", P(c->has_b), D(bt));
    emit(k, "cvta.to.global.u64 %s, %s;", D(c->gg), D(g));
    emit(k, "cvta.to.global.u64 %s, %s;", D(c->bg), D(bt));
    /* the group: its rank, size, first row, row step and cache */
    int row = nd(k), rstep = nd(k);
    c->G = nr(k);
    c->gt = nr(k);
    c->sb = nr(k);
    emit(k, "mov.u32 %s, rowc_data;", R(c->sb));
    int wrow = nd(k); /* the warp's first row: the loop runs while it is < m */
    if (warp_group) {
        rowc_warp_group(k, c, ctaid, nctaid, n32, row, rstep, wrow);
    } else if (cluster == 1) {
        emit(k, "mov.u32 %s, %s;", R(c->G), R(ntid));
        emit(k, "mov.u32 %s, %s;", R(c->gt), R(tid));
        emit(k, "cvt.u64.u32 %s, %s;", D(row), R(ctaid));
        emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(nctaid));
    } else {
        rowc_cluster_group(k, c, ntid, tid, row, rstep);
    }
    if (cluster == 1) {
        c->lo = nr(k);
        c->hi = nr(k);
        emit(k, "mov.u32 %s, 0;", R(c->lo));
        emit(k, "mov.u32 %s, %s;", R(c->hi), R(c->nu));
    }
    if (!warp_group)
        emit(k, "mov.u64 %s, %s;", D(wrow), D(row));
    c->parity = nr(k);
    emit(k, "mov.u32 %s, 0;", R(c->parity));
    int pr = np(k), l_row = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(wrow), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_row);
    rowc_row_start(k, c, row, m, n, a, y, b, sum);
    unit_loop(k, c, 1, body_load);
    rowc_statistics(k, c, inv_n, eps);
    unit_loop(k, c, 1, body_write);
    emit(k, "xor.b32 %s, %s, 1;", R(c->parity), R(c->parity));
    emit(k, "add.u64 %s, %s, %s;", D(row), D(row), D(rstep));
    emit(k, "add.u64 %s, %s, %s;", D(wrow), D(wrow), D(rstep));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pr), D(wrow), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_row));
    label(k, l_end);
    if (cluster > 1) {
        /* no CTA leaves while another may still read its slots */
        emit(k, "barrier.cluster.arrive.aligned; /* release by default */");
        emit(k, "barrier.cluster.wait.aligned; /* acquire by default */");
    }
    rowc_finish(mod, k, c);
}

void module_rows(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 16 .b8 rowc_data[];\n");
    for (int kind = ROW_SOFTMAX; kind <= ROW_RMSNORM; kind++) {
        gen_row_kernel(mod, (enum row_kind)kind);
        for (int width = 4; width >= 1; width -= 3) {
            for (int lanes = 32; lanes >= 4; lanes /= 2)
                gen_rowc_kernel(mod, (enum row_kind)kind, lanes, width, 1, 0);
            gen_rowc_kernel(mod, (enum row_kind)kind, 0, width, 1, 0);
        }
    }
    /* a residual add, then rmsnorm of the sum (a decode step's rows) */
    gen_rowc_kernel(mod, ROW_RMSNORM, 0, 4, 1, 1);
}

/* module rows_cluster (sm_90 on: clusters, distributed shared memory): the
 * row-cached kernels with a row spread over 2, 4 or 8 CTAs */
void module_rows_cluster(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 16 .b8 rowc_data[];\n");
    for (int kind = ROW_SOFTMAX; kind <= ROW_RMSNORM; kind++)
        for (int width = 4; width >= 1; width -= 3)
            for (int cluster = 2; cluster <= RAYO_PTX_ROWC_MAX_CLUSTER; cluster *= 2)
                gen_rowc_kernel(mod, (enum row_kind)kind, 0, width, cluster, 0);
}
