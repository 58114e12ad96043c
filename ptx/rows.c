/* rows.c - module "rows": softmax, log_softmax, layernorm and rmsnorm, one
 * block per row (row_softmax, row_log_softmax, row_layernorm, row_rmsnorm). */
#include "gen-ptx.h"

/* ---- module: row-wise ops (softmax, log_softmax, layernorm, rmsnorm) ----
 * One block of 256 threads per row (rows in a grid-stride loop); each pass
 * over the row is a strided loop; block reductions in between. */
typedef struct row_loop {
    int j, p, l_loop, l_done;
} row_loop;

static row_loop row_loop_begin(kern *k, int tid64, int n)
{
    row_loop rl = {nd(k), np(k), nlabel(k), nlabel(k)};
    emit(k, "mov.u64 %s, %s;", D(rl.j), D(tid64));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(rl.p), D(rl.j), D(n));
    emit(k, "@%s bra %s;", P(rl.p), L(rl.l_done));
    label(k, rl.l_loop);
    return rl;
}

static void row_loop_end(kern *k, row_loop rl, int n)
{
    emit(k, "add.u64 %s, %s, %d;", D(rl.j), D(rl.j), RED_THREADS);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(rl.p), D(rl.j), D(n));
    emit(k, "@%s bra %s;", P(rl.p), L(rl.l_loop));
    label(k, rl.l_done);
}

enum row_kind { ROW_SOFTMAX, ROW_LOG_SOFTMAX, ROW_LAYERNORM, ROW_RMSNORM };

static void gen_row_kernel(strbuf *mod, enum row_kind kind)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a");
    int g = param_u64(k, "p_gamma"), bt = param_u64(k, "p_beta");
    int m = param_u64(k, "p_m"), n = param_u64(k, "p_n");
    int eps = param_f32(k, "p_eps");
    int tid, lane, warp;
    lane_warp(k, &tid, &lane, &warp);
    int tid64 = nd(k), row = nd(k), rstep = nd(k), pr = np(k);
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x");
    emit(k, "cvt.u64.u32 %s, %s;", D(tid64), R(tid));
    emit(k, "cvt.u64.u32 %s, %s;", D(row), R(ctaid));
    emit(k, "cvt.u64.u32 %s, %s;", D(rstep), R(nctaid));
    int nfd64 = nfd(k);
    emit(k, "cvt.rn.f64.u64 %s, %s;", FD(nfd64), D(n));
    int has_g = np(k), has_b = np(k), gg = nd(k), bg = nd(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(has_g), D(g));
    emit(k, "setp.ne.u64 %s, %s, 0;", P(has_b), D(bt));
    emit(k, "cvta.to.global.u64 %s, %s;", D(gg), D(g));
    emit(k, "cvta.to.global.u64 %s, %s;", D(bg), D(bt));
    int l_row = nlabel(k), l_end = nlabel(k);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pr), D(row), D(m));
    emit(k, "@%s bra %s;", P(pr), L(l_end));
    label(k, l_row);
    int off = nd(k), xa = nd(k), ya = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(off), D(row), D(n));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(xa), D(off), D(a));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ya), D(off), D(y));

    if (kind == ROW_SOFTMAX || kind == ROW_LOG_SOFTMAX) {
        /* pass 1: the row's maximum (NaN propagates) */
        int mx = nf(k);
        emit(k, "mov.f32 %s, %s;", F(mx), CB(0xff800000u));
        row_loop rl = row_loop_begin(k, tid64, n);
        int x = nf(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "max.NaN.f32 %s, %s, %s;", F(mx), F(mx), F(x));
        row_loop_end(k, rl, n);
        int rmax = block_minmax_f32(k, mx, lane, warp, 1);
        /* pass 2: sum of exp(x - max) in float64 */
        int s = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(s), CD(0.0));
        rl = row_loop_begin(k, tid64, n);
        int x2 = nf(k), d = nf(k), ed = nfd(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x2), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "sub.rn.f32 %s, %s, %s;", F(d), F(x2), F(rmax));
        int e = m_exp(k, d);
        emit(k, "cvt.f64.f32 %s, %s;", FD(ed), F(e));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(s), FD(ed));
        row_loop_end(k, rl, n);
        int tot = block_sum_f64(k, s, lane, warp), totf = nf(k);
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(totf), FD(tot));
        int lsum = kind == ROW_LOG_SOFTMAX ? m_log(k, totf) : -1;
        /* pass 3: write */
        rl = row_loop_begin(k, tid64, n);
        int x3 = nf(k), d3 = nf(k), out = nf(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x3), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "sub.rn.f32 %s, %s, %s;", F(d3), F(x3), F(rmax));
        if (kind == ROW_SOFTMAX) {
            int e3 = m_exp(k, d3);
            emit(k, "div.rn.f32 %s, %s, %s;", F(out), F(e3), F(totf));
        } else {
            emit(k, "sub.rn.f32 %s, %s, %s;", F(out), F(d3), F(lsum));
        }
        emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, ya, rl.j, 4)), F(out));
        row_loop_end(k, rl, n);
    } else {
        int mean = nfd(k);
        if (kind == ROW_LAYERNORM) {
            int s = nfd(k);
            emit(k, "mov.f64 %s, %s;", FD(s), CD(0.0));
            row_loop rl = row_loop_begin(k, tid64, n);
            int x = nf(k), xd = nfd(k);
            emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, xa, rl.j, 4)));
            emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
            emit(k, "add.rn.f64 %s, %s, %s;", FD(s), FD(s), FD(xd));
            row_loop_end(k, rl, n);
            int tot = block_sum_f64(k, s, lane, warp);
            emit(k, "div.rn.f64 %s, %s, %s;", FD(mean), FD(tot), FD(nfd64));
        } else {
            emit(k, "mov.f64 %s, %s;", FD(mean), CD(0.0));
        }
        /* sum of squares about the mean (0 for rmsnorm) */
        int s2 = nfd(k);
        emit(k, "mov.f64 %s, %s;", FD(s2), CD(0.0));
        row_loop rl = row_loop_begin(k, tid64, n);
        int x = nf(k), xd = nfd(k), dd = nfd(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(x));
        emit(k, "sub.rn.f64 %s, %s, %s;", FD(dd), FD(xd), FD(mean));
        emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(s2), FD(dd), FD(dd), FD(s2));
        row_loop_end(k, rl, n);
        int ss = block_sum_f64(k, s2, lane, warp);
        int var = nfd(k), epsd = nfd(k), ve = nfd(k), sd = nfd(k), rstd = nfd(k);
        emit(k, "div.rn.f64 %s, %s, %s;", FD(var), FD(ss), FD(nfd64));
        emit(k, "cvt.f64.f32 %s, %s;", FD(epsd), F(eps));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(ve), FD(var), FD(epsd));
        emit(k, "sqrt.rn.f64 %s, %s;", FD(sd), FD(ve));
        emit(k, "rcp.rn.f64 %s, %s;", FD(rstd), FD(sd));
        /* var + eps = 0 (a constant row with eps = 0): the row normalises to
         * 0 (y = beta), not 0 * inf = NaN (core/rayo-ops.h) */
        int pz = np(k);
        emit(k, "setp.eq.f64 %s, %s, %s;", P(pz), FD(ve), CD(0.0));
        emit(k, "selp.f64 %s, %s, %s, %s;", FD(rstd), CD(0.0), FD(rstd), P(pz));
        rl = row_loop_begin(k, tid64, n);
        int x3 = nf(k), xd3 = nfd(k), d3 = nfd(k), t3 = nfd(k), gv = nf(k), bv = nf(k), out = nf(k);
        int gd = nfd(k), bd = nfd(k), yd = nfd(k);
        emit(k, "ld.global.f32 %s, [%s];", F(x3), D(addr_of(k, xa, rl.j, 4)));
        emit(k, "cvt.f64.f32 %s, %s;", FD(xd3), F(x3));
        emit(k, "sub.rn.f64 %s, %s, %s;", FD(d3), FD(xd3), FD(mean));
        emit(k, "mul.rn.f64 %s, %s, %s;", FD(t3), FD(d3), FD(rstd));
        emit(k, "mov.f32 %s, %s;", F(gv), C(1.0f));
        emit(k, "mov.f32 %s, %s;", F(bv), C(0.0f));
        emit(k, "@%s ld.global.f32 %s, [%s];", P(has_g), F(gv), D(addr_of(k, gg, rl.j, 4)));
        if (kind == ROW_LAYERNORM)
            emit(k, "@%s ld.global.f32 %s, [%s];", P(has_b), F(bv), D(addr_of(k, bg, rl.j, 4)));
        /* gamma x^ + beta in double, rounded once: with gamma ~ 100 and beta ~
         * -100 the result cancels, and a float x^ would carry 100 ulps of it */
        emit(k, "cvt.f64.f32 %s, %s;", FD(gd), F(gv));
        emit(k, "cvt.f64.f32 %s, %s;", FD(bd), F(bv));
        emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(yd), FD(t3), FD(gd), FD(bd));
        emit(k, "cvt.rn.f32.f64 %s, %s;", F(out), FD(yd));
        emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, ya, rl.j, 4)), F(out));
        row_loop_end(k, rl, n);
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

void module_rows(strbuf *mod)
{
    for (int kind = ROW_SOFTMAX; kind <= ROW_RMSNORM; kind++)
        gen_row_kernel(mod, (enum row_kind)kind);
}
