/* SPDX-License-Identifier: MIT */
/* infer-gemv8.c - module "infer": gemv with Q8_0, Q4_0, Q4_K or Q6_K weights and
 * x rounded to 8 bits, for relaxed calls (gemv8_<dtype>; strict calls and
 * the other formats take the float kernels of infer-gemv.c).
 *
 * A block first rounds x into its shared memory, per 32 values as in Q8_0:
 * codes q = round(x / d) with d = max |x| / 127, d kept as a double, and
 * the sum of the 32 codes (Q4_0's offset of 8).  Then each warp takes one
 * row at a time: a Q8_0 block takes two lanes, a Q4_0 block one (a Q4_K
 * or Q6_K block eight: the sections "Q4_K" and "Q6_K" below), each
 * reading 16 bytes of the block's codes straight from global memory (four
 * words and a funnel shift each: blocks of 34 or 18 bytes start on 2 bytes)
 * and its f16 scale, UNROLL such loads in flight before the first is used.  The products are integer dot
 * products (dp4a) of 4 codes with 4 codes of x, exact; each block's integer
 * sum becomes a float (exact: below 2^22) times the weight scale, then a
 * double times x's scale into the lane's double sum, so no partial sum can
 * overflow; the warp adds its lanes' sums in double and rounds once.
 *
 * The error is x's rounding, at most d / 2 per value (1/254 of its block's
 * largest |x|).  For weights unrelated to those rounding errors (the
 * relaxed contract's statistical bound, core/rayo-ops.h) a dot's error has
 * a standard deviation of about rms|w| sqrt(sum d^2 / 12 per value); the
 * sum of |terms| is about mean|w| sum |x|.  Each block estimates it while
 * rounding x: where five of those deviations (rms|w| / mean|w| taken as
 * 1.5) could pass the contract (2e-3 of sum |terms|), or x is not finite,
 * the block's rows are summed in float instead: the codes times x as
 * floats, as the strict kernels do.  Random x of 1024 values passes with a
 * margin of 3.5; an outlier 100 times the rest in 2048 values does not.
 * The plugin takes these kernels for n >= RAYO_PTX_GEMV8_MIN_N.
 *
 * gemv8x_<dtype> runs up to RAYO_PTX_GEMV8_PARTS such gemvs of the same x
 * (a decode step's q, k and v, or gate and up) as one grid over their rows
 * together: x is rounded once per block for all of them, and each row is
 * computed exactly as gemv8_<dtype> computes it.  gemv8s_<dtype> runs a
 * gate and an up gemv of one x and swiglu of their outputs.  gemv8xr_* and
 * gemv8xnr_* are gemv8x_* and gemv8xn_* that also rope the outputs of some
 * parts (a decode step's q and k: the section "rope" below). */
#include "gen-ptx.h"
#include "../core/rayo-dtype.h"
#include "../plugins/cuda/cuda-ptx.h"

#define WARPS RAYO_PTX_GEMV8_WARPS
#define THREADS (32 * WARPS)
#define UNROLL 4      /* weight loads of this many steps issued before the first is used (Q8_0, Q4_0) */
#define LANE_BYTES 16 /* code bytes per lane and step: half a Q8_0 block, a whole Q4_0 one */
#define LANE_WORDS (LANE_BYTES / 4)
#ifndef WINDOW_UNROLL
#define WINDOW_UNROLL 4
#endif

/* 5 deviations within 2e-3 of sum |x| (rms|w| / mean|w| = 1.5): with
 * sum e^2 = 32 / 12 sum d^2, 7.5^2 * 32 / 12 sum d^2 <= (2e-3 sum |x|)^2 */
#define GATE_D2_PER_L1SQ (4e-6 / (7.5 * 7.5 * 32.0 / 12.0))

typedef struct g8format {
    const char *name;
    rayo_dtype dtype;
    int block_bytes, block_elems;
    int lanes_per_block; /* each lane takes LANE_BYTES of the block's codes */
    int nibbles;         /* Q4_0: byte i holds value i (low nibble) and i + 16 (high), each plus 8 */
    int unroll;          /* steps of loads issued before the first is used */
} g8format;

/* Q4_K: a lane takes 16 bytes of one of the four 32-byte chunks of codes
 * (16 values of each of two sub-blocks) and the block's 16-byte head (d,
 * dmin, the 12 scale bytes): 32 bytes per step, so half the steps in flight. */
static const g8format formats[] = {
    {"q8_0", RAYO_DTYPE_Q8_0, RAYO_Q8_0_BYTES, 32, 2, 0, UNROLL},
    {"q4_0", RAYO_DTYPE_Q4_0, RAYO_Q4_0_BYTES, 32, 1, 1, UNROLL},
    {"q4_k", RAYO_DTYPE_Q4_K, RAYO_Q4_K_BYTES, RAYO_QK_K, 8, 1, UNROLL / 2},
    {"q6_k", RAYO_DTYPE_Q6_K, RAYO_Q6_K_BYTES, RAYO_QK_K, 8, 1, UNROLL / 2},
};
#define FORMAT_COUNT (sizeof formats / sizeof formats[0])

typedef struct g8_regs {
    int a, x, y, m, n, lda;   /* .b64 parameters (a, x, y global addresses); m: all parts' rows */
    int parts;                /* matrices sharing x (gemv8x_*), 1 for gemv8_* */
    int pa[RAYO_PTX_GEMV8_PARTS], py[RAYO_PTX_GEMV8_PARTS]; /* .b64 each part's A and y */
    int first[RAYO_PTX_GEMV8_PARTS]; /* .b64 each part's first row among all rows */
    int alpha, beta;          /* .f32 */
    int tid, lane, warp;      /* .b32 */
    int qx, dx, sx;           /* .b32 shared: x's codes, their scales (f64), their sums (s32) */
    int nb;                   /* .b32 blocks of 32 values per row (x's scales and sums) */
    int nbr;                  /* .b32 weight blocks per row (nb but for Q4_K) */
    int l1, s2;               /* .f64 this thread's sum |x| and sum d^2 (rounding x) */
    int norm;                 /* the rmsnorm prologue (gemv8xn_*, gemv8sn_*): x is rmsnorm's input */
    int gamma, xn, eps;       /* its .b64 gamma and output, .f32 eps */
    int rstd, pxn;            /* .f64 1 / rms(x) (while x is rounded); the block that writes xn (pred) */
    int rope;                 /* parts' outputs roped in the launch (gemv8xr_*, gemv8xnr_*) */
} g8_regs;

/* ---- rounding x ------------------------------------------------------------ */
/* The 4 codes of x (x = v[0..3]) times inv, rounded, packed in one word. */
static int pack_codes(kern *k, const int *v, int inv)
{
    int q[4];
    for (int i = 0; i < 4; i++) {
        int t = nf(k);
        q[i] = nr(k);
        emit(k, "mul.rn.f32 %s, %s, %s;", F(t), F(v[i]), F(inv));
        emit(k, "cvt.rni.s32.f32 %s, %s;", R(q[i]), F(t));
    }
    int lo = nr(k), hi = nr(k), w = nr(k);
    emit(k, "prmt.b32 %s, %s, %s, 0x0040;", R(lo), R(q[0]), R(q[1]));
    emit(k, "prmt.b32 %s, %s, %s, 0x0040;", R(hi), R(q[2]), R(q[3]));
    emit(k, "prmt.b32 %s, %s, %s, 0x5410;", R(w), R(lo), R(hi));
    return w;
}

/* v over the 8 lanes that hold one block of 32 values: op is max.f32,
 * add.f32 (v an F register) or add.s32 (v an R register) */
static void group_reduce(kern *k, int v, const char *op, int is_float)
{
    for (int o = 1; o <= 4; o *= 2) {
        int b = nr(k), t = nr(k);
        if (is_float) {
            int f = nf(k);
            emit(k, "mov.b32 %s, %s;", R(b), F(v));
            emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(t), R(b), o);
            emit(k, "mov.b32 %s, %s;", F(f), R(t));
            emit(k, "%s %s, %s, %s;", op, F(v), F(v), F(f));
        } else {
            emit(k, "shfl.sync.bfly.b32 %s, %s, %d, 31, -1;", R(t), R(v), o);
            emit(k, "%s %s, %s, %s;", op, R(v), R(v), R(t));
        }
    }
}

/* The block's scale d (f64, NaN where a value is not finite) and 127 / max
 * of the 4 values v of each of the 8 lanes; v are scaled by 2^64 where the
 * block's largest |x| is below 2^-64 (exactly), so that 127 / max stays
 * finite.  Adds the values' |x| to l1. */
static void block_scale(kern *k, const g8_regs *g, int *v, int *dd, int *inv)
{
    int amax = nf(k), bad = nf(k);
    emit(k, "abs.f32 %s, %s;", F(amax), F(v[0]));
    emit(k, "mul.rn.f32 %s, %s, 0f00000000;", F(bad), F(v[0])); /* NaN where a value is not finite */
    for (int j = 0; j < 4; j++) {
        int t = nf(k), t64 = nfd(k);
        emit(k, "abs.f32 %s, %s;", F(t), F(v[j]));
        emit(k, "max.f32 %s, %s, %s;", F(amax), F(amax), F(t));
        if (j)
            emit(k, "fma.rn.f32 %s, %s, 0f00000000, %s;", F(bad), F(v[j]), F(bad));
        emit(k, "cvt.f64.f32 %s, %s;", FD(t64), F(t));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(g->l1), FD(g->l1), FD(t64));
    }
    group_reduce(k, amax, "max.f32", 1);
    group_reduce(k, bad, "add.f32", 1);
    int tiny = np(k), up = nf(k), down = nfd(k), d = nf(k), pz = np(k);
    emit(k, "setp.lt.f32 %s, %s, %s;", P(tiny), F(amax), C(0x1p-64f));
    emit(k, "selp.f32 %s, %s, 0f3F800000, %s;", F(up), C(0x1p64f), P(tiny));
    emit(k, "selp.f64 %s, %s, 0d3FF0000000000000, %s;", FD(down), CD(0x1p-64), P(tiny));
    emit(k, "mul.f32 %s, %s, %s;", F(amax), F(amax), F(up));
    for (int j = 0; j < 4; j++)
        emit(k, "mul.f32 %s, %s, %s;", F(v[j]), F(v[j]), F(up));
    *dd = nfd(k);
    *inv = nf(k);
    emit(k, "mul.rn.f32 %s, %s, %s;", F(d), F(amax), C(1.0f / 127.0f));
    emit(k, "add.f32 %s, %s, %s;", F(d), F(d), F(bad));
    emit(k, "cvt.f64.f32 %s, %s;", FD(*dd), F(d));
    emit(k, "mul.f64 %s, %s, %s;", FD(*dd), FD(*dd), FD(down));
    emit(k, "div.full.f32 %s, %s, %s;", F(*inv), C(127.0f), F(amax));
    emit(k, "setp.gt.f32 %s, %s, 0f00000000;", P(pz), F(amax));
    emit(k, "selp.f32 %s, %s, 0f00000000, %s;", F(*inv), F(*inv), P(pz));
}

/* base[4i .. 4i + 4) into v (zeros where !pin: 4i >= n) */
static void load_f4(kern *k, int base, int i, int pin, const int *v)
{
    int ga = nd(k);
    for (int j = 0; j < 4; j++)
        emit(k, "mov.f32 %s, 0f00000000;", F(v[j]));
    emit(k, "mul.wide.u32 %s, %s, 16;", D(ga), R(i));
    emit(k, "add.u64 %s, %s, %s;", D(ga), D(ga), D(base));
    emit(k, "@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s];", P(pin), F(v[0]), F(v[1]), F(v[2]), F(v[3]), D(ga));
}

/* x[4i .. 4i + 4) into v, and gamma's into gv when the kernel normalises x */
static void load_x4(kern *k, const g8_regs *g, int i, int pin, const int *v, const int *gv)
{
    load_f4(k, g->x, i, pin, v);
    if (g->norm)
        load_f4(k, g->gamma, i, pin, gv);
}

/* ---- the rmsnorm prologue ------------------------------------------------ */
/* g->rstd: 1 / sqrt(mean x^2 + eps) of x, as the rmsnorm kernels compute it
 * (module rows: squares summed in float64, norm_rstd), by every block from
 * x in L2 (a few thousand floats); g->pxn: block 0, which writes xn. */
static void norm_stats(kern *k, g8_regs *g)
{
    int nq = nr(k), i = nr(k), pin = np(k), acc = nfd(k), v[4], l_loop = nlabel(k), l_done = nlabel(k);
    for (int j = 0; j < 4; j++)
        v[j] = nf(k);
    emit(k, "mov.f64 %s, 0d0000000000000000;", FD(acc));
    emit(k, "cvt.u32.u64 %s, %s;", R(nq), D(g->n));
    emit(k, "shr.u32 %s, %s, 2;", R(nq), R(nq));
    emit(k, "mov.u32 %s, %s;", R(i), R(g->tid));
    label(k, l_loop);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pin), R(i), R(nq));
    emit(k, "@!%s bra %s;", P(pin), L(l_done));
    load_f4(k, g->x, i, pin, v);
    for (int j = 0; j < 4; j++) {
        int xd = nfd(k);
        emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(v[j]));
        emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc), FD(xd), FD(xd), FD(acc));
    }
    emit(k, "add.u32 %s, %s, %d;", R(i), R(i), THREADS);
    emit(k, "bra.uni %s;", L(l_loop));
    label(k, l_done);
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_f64(k, acc, o);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(t));
    }
    int p0 = np(k), base = nr(k), a = nr(k), ss = nfd(k), nd64 = nfd(k), inv_n = nfd(k), ctaid = sreg(k, "%ctaid.x");
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->lane));
    emit(k, "mov.u32 %s, g8_red;", R(base));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(a), R(g->warp), R(base));
    emit(k, "@%s st.shared.f64 [%s], %s;", P(p0), R(a), FD(acc));
    emit(k, "bar.sync 0;");
    emit(k, "ld.shared.f64 %s, [%s];", FD(ss), R(base));
    for (int w = 1; w < WARPS; w++) {
        int t = nfd(k);
        emit(k, "ld.shared.f64 %s, [%s+%d];", FD(t), R(base), 8 * w);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(ss), FD(ss), FD(t));
    }
    emit(k, "bar.sync 0;"); /* all have read g8_red before block_gate writes it */
    emit(k, "cvt.rn.f64.u64 %s, %s;", FD(nd64), D(g->n));
    emit(k, "rcp.rn.f64 %s, %s;", FD(inv_n), FD(nd64));
    g->rstd = nfd(k);
    norm_rstd(k, ss, inv_n, g->eps, g->rstd);
    g->pxn = np(k);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(g->pxn), R(ctaid));
    emit(k, "st.shared.f64 [g8_rstd], %s;", FD(g->rstd)); /* for the rows' rare paths (block_gate's barrier) */
}

/* The rare paths' rstd and gamma, from shared memory and the parameters:
 * no registers held through the rows for them. */
static int saved_rstd(kern *k)
{
    int r = nfd(k);
    emit(k, "ld.shared.f64 %s, [g8_rstd];", FD(r));
    return r;
}

/* x's 4 floats at global address xa + off (zeros where !ok) for the float
 * paths: as given, or in the rmsnorm kernels rmsnorm's output of them,
 * computed again (the values block 0 stores, which the other blocks cannot
 * read back within the launch). */
static void x_floats(kern *k, const g8_regs *g, int ok, int xa, int off, int *x)
{
    for (int j = 0; j < 4; j++) {
        x[j] = nf(k);
        emit(k, "mov.f32 %s, 0f00000000;", F(x[j]));
    }
    emit(k, "@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s+%d];", P(ok), F(x[0]), F(x[1]), F(x[2]), F(x[3]), D(xa),
         off);
    if (!g->norm)
        return;
    int ga = nd(k), gv[4], rstd = saved_rstd(k);
    for (int j = 0; j < 4; j++) {
        gv[j] = nf(k);
        emit(k, "mov.f32 %s, 0f00000000;", F(gv[j]));
    }
    emit(k, "sub.u64 %s, %s, %s;", D(ga), D(xa), D(g->x));
    emit(k, "add.u64 %s, %s, %s;", D(ga), D(ga), D(param_global(k, "p_gamma")));
    emit(k, "@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s+%d];", P(ok), F(gv[0]), F(gv[1]), F(gv[2]), F(gv[3]),
         D(ga), off);
    for (int j = 0; j < 4; j++) {
        x[j] = rmsnorm_value(k, x[j], rstd, gv[j]);
        emit(k, "@!%s mov.f32 %s, 0f00000000;", P(ok), F(x[j]));
    }
}

/* The rmsnorm kernels' slow path for a sum that is not finite (as
 * redo_if_not_finite, product-redo.c): the row's terms again in float64,
 * x normalised again as x_floats does. rs: the row's global address. */
static void norm_redo_if_not_finite(kern *k, const g8format *f, const g8_regs *g, int acc, int rs)
{
    int ok = np(k), more = np(k), i = nd(k), l_loop = nlabel(k), l_done = nlabel(k);
    emit(k, "testp.finite.f64 %s, %s;", P(ok), FD(acc));
    emit(k, "@%s bra %s;", P(ok), L(l_done));
    int rstd = saved_rstd(k), gamma = param_global(k, "p_gamma");
    emit(k, "mov.f64 %s, %s;", FD(acc), CD(0.0));
    emit(k, "mov.u64 %s, 0;", D(i));
    label(k, l_loop);
    int xv = nf(k), gv = nf(k), b = nd(k), e = nd(k), e32 = nr(k), blk = nd(k), xd = nfd(k), wd = nfd(k);
    emit(k, "ld.global.f32 %s, [%s];", F(xv), D(addr_of(k, g->x, i, 4)));
    emit(k, "ld.global.f32 %s, [%s];", F(gv), D(addr_of(k, gamma, i, 4)));
    emit(k, "cvt.f64.f32 %s, %s;", FD(xd), F(rmsnorm_value(k, xv, rstd, gv)));
    emit(k, "div.u64 %s, %s, %d;", D(b), D(i), f->block_elems);
    emit(k, "rem.u64 %s, %s, %d;", D(e), D(i), f->block_elems);
    emit(k, "cvt.u32.u64 %s, %s;", R(e32), D(e));
    emit(k, "mad.lo.u64 %s, %s, %d, %s;", D(blk), D(b), f->block_bytes, D(rs));
    emit(k, "cvt.f64.f32 %s, %s;", FD(wd), F(dequant_value(k, f->dtype, blk, e32)));
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc), FD(wd), FD(xd), FD(acc));
    emit(k, "add.u64 %s, %s, 1;", D(i), D(i));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(more), D(i), D(g->n));
    emit(k, "@%s bra %s;", P(more), L(l_loop));
    label(k, l_done);
}

/* v = rmsnorm of x's 4 values v (gamma gv) at 4i, stored to xn by block 0 */
static void norm_x4(kern *k, const g8_regs *g, int i, int pin, int *v, const int *gv)
{
    for (int j = 0; j < 4; j++)
        v[j] = rmsnorm_value(k, v[j], g->rstd, gv[j]);
    int pw = np(k), ga = nd(k);
    emit(k, "and.pred %s, %s, %s;", P(pw), P(pin), P(g->pxn));
    emit(k, "mul.wide.u32 %s, %s, 16;", D(ga), R(i));
    emit(k, "add.u64 %s, %s, %s;", D(ga), D(ga), D(g->xn));
    emit(k, "@%s st.global.v4.f32 [%s], {%s, %s, %s, %s};", P(pw), D(ga), F(v[0]), F(v[1]), F(v[2]), F(v[3]));
}

/* One step of the rounding of x: thread i takes x[4i .. 4i + 4) (8 threads
 * a block of 32), loaded in `loaded`; pin: 4i < n. */
static void quantize_step(kern *k, const g8_regs *g, int i, int pin, const int *loaded)
{
    int v[4], dd, inv;
    for (int j = 0; j < 4; j++) {
        v[j] = nf(k);
        emit(k, "mov.f32 %s, %s;", F(v[j]), F(loaded[j]));
    }
    block_scale(k, g, v, &dd, &inv);
    int w = pack_codes(k, v, inv), sum = nr(k);
    emit(k, "dp4a.s32.s32 %s, %s, 0x01010101, 0;", R(sum), R(w));
    group_reduce(k, sum, "add.s32", 0);
    int sa = nr(k), blk = nr(k), first = np(k);
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(i), R(g->qx));
    emit(k, "@%s st.shared.u32 [%s], %s;", P(pin), R(sa), R(w));
    emit(k, "and.b32 %s, %s, 7;", R(blk), R(i));
    emit(k, "setp.eq.and.u32 %s, %s, 0, %s;", P(first), R(blk), P(pin));
    emit(k, "shr.u32 %s, %s, 3;", R(blk), R(i));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(sa), R(blk), R(g->dx));
    emit(k, "@%s st.shared.f64 [%s], %s;", P(first), R(sa), FD(dd));
    emit(k, "@%s fma.rn.f64 %s, %s, %s, %s;", P(first), FD(g->s2), FD(dd), FD(dd), FD(g->s2));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(blk), R(g->sx));
    emit(k, "@%s st.shared.u32 [%s], %s;", P(first), R(sa), R(sum));
}

/* x rounded into shared memory by the whole block; the loop runs while any
 * lane of the warp has values (the shuffles need the whole warp), each
 * step's loads issued before the step before it is rounded, so that the
 * loop waits for memory once rather than once a step.  The barrier after
 * it is block_gate's. */
static void quantize_x(kern *k, g8_regs *g)
{
    int nq = nr(k), i = nr(k), inext = nr(k), base = nr(k), pin = np(k), pnext = np(k), pdone = np(k);
    int l_loop = nlabel(k), l_done = nlabel(k), next[4], nextg[4];
    for (int j = 0; j < 4; j++)
        next[j] = nf(k), nextg[j] = g->norm ? nf(k) : -1;
    emit(k, "cvt.u32.u64 %s, %s;", R(nq), D(g->n));
    emit(k, "shr.u32 %s, %s, 2;", R(nq), R(nq));
    emit(k, "mov.u32 %s, %s;", R(i), R(g->tid));
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pnext), R(i), R(nq));
    load_x4(k, g, i, pnext, next, nextg);
    if (g->norm) /* its loads of x issued with the first step's: one wait for memory */
        norm_stats(k, g);
    label(k, l_loop);
    emit(k, "sub.u32 %s, %s, %s;", R(base), R(i), R(g->lane));
    emit(k, "setp.ge.u32 %s, %s, %s;", P(pdone), R(base), R(nq));
    emit(k, "@%s bra %s;", P(pdone), L(l_done));
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pin), R(i), R(nq));
    int cur[4], curg[4];
    for (int j = 0; j < 4; j++) {
        cur[j] = nf(k);
        emit(k, "mov.f32 %s, %s;", F(cur[j]), F(next[j]));
        if (g->norm) {
            curg[j] = nf(k);
            emit(k, "mov.f32 %s, %s;", F(curg[j]), F(nextg[j]));
        }
    }
    emit(k, "add.u32 %s, %s, %d;", R(inext), R(i), THREADS);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pnext), R(inext), R(nq));
    load_x4(k, g, inext, pnext, next, nextg);
    if (g->norm)
        norm_x4(k, g, i, pin, cur, curg);
    quantize_step(k, g, i, pin, cur);
    emit(k, "mov.u32 %s, %s;", R(i), R(inext));
    emit(k, "bra.uni %s;", L(l_loop));
    label(k, l_done);
}

/* Whether the block's rows may take x's codes (the estimate at the head of
 * the file; false where x is not finite): the threads' sums |x| and d^2
 * added over the warp, then over the block through g8_red. */
static int block_gate(kern *k, const g8_regs *g)
{
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_f64(k, g->l1, o), u = shfl_f64(k, g->s2, o);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(g->l1), FD(g->l1), FD(t));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(g->s2), FD(g->s2), FD(u));
    }
    int p0 = np(k), base = nr(k), a = nr(k), l1 = nfd(k), s2 = nfd(k), lim = nfd(k), ok = np(k);
    emit(k, "setp.eq.u32 %s, %s, 0;", P(p0), R(g->lane));
    emit(k, "mov.u32 %s, g8_red;", R(base));
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(a), R(g->warp), R(base));
    emit(k, "@%s st.shared.v2.f64 [%s], {%s, %s};", P(p0), R(a), FD(g->l1), FD(g->s2));
    emit(k, "bar.sync 0;"); /* also: x's codes are all in shared memory */
    emit(k, "mov.f64 %s, 0d0000000000000000;", FD(l1));
    emit(k, "mov.f64 %s, 0d0000000000000000;", FD(s2));
    for (int w = 0; w < WARPS; w++) {
        int t = nfd(k), u = nfd(k);
        emit(k, "ld.shared.v2.f64 {%s, %s}, [%s+%d];", FD(t), FD(u), R(base), 16 * w);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(l1), FD(l1), FD(t));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(s2), FD(s2), FD(u));
    }
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(lim), FD(l1), FD(l1));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(lim), FD(lim), CD(GATE_D2_PER_L1SQ));
    emit(k, "setp.le.f64 %s, %s, %s;", P(ok), FD(s2), FD(lim));
    return ok;
}

/* ---- the rows ---------------------------------------------------------------- */
/* What one lane loads for one step: its block, whether it is in the row,
 * the f16 scale and the LANE_BYTES code bytes (LANE_WORDS words). */
typedef struct lane_step {
    int blk, ok, dh, q[LANE_WORDS];
    int head[4]; /* Q4_K: the block's first 16 bytes (d and dmin, then the 12 scale bytes) */
    int win[16];           /* Q6_K: the 16-byte pieces that hold its low bits (8 words), then its high bits */
    int odd, two, sh;      /* Q6_K: where in them its bytes start (window_pick) */
    int sc[2];             /* Q6_K: its two sub-blocks' scales (s8) */
} lane_step;

/* The lane's block in step u of a super-block format (8 lanes a block) and
 * whether it is in the row. */
static void super_block(kern *k, const g8_regs *g, int blk0, int u, lane_step *s)
{
    s->blk = nr(k);
    s->ok = np(k);
    emit(k, "shr.u32 %s, %s, 3;", R(s->blk), R(g->lane));
    emit(k, "add.u32 %s, %s, %s;", R(s->blk), R(s->blk), R(blk0));
    emit(k, "add.u32 %s, %s, %d;", R(s->blk), R(s->blk), u * 4);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(s->ok), R(s->blk), R(g->nbr));
}

/* Q4_K: the block is 16-byte aligned (rows are, blocks are 144 bytes), so
 * the head and the lane's 16 code bytes are one vector load each. */
static void load_step_q4_k(kern *k, const g8_regs *g, int rs, int blk0, int u, lane_step *s)
{
    int sub = nr(k), ba = nd(k), qa = nd(k);
    super_block(k, g, blk0, u, s);
    emit(k, "and.b32 %s, %s, 7;", R(sub), R(g->lane));
    emit(k, "mad.wide.u32 %s, %s, %d, %s;", D(ba), R(s->blk), RAYO_Q4_K_BYTES, D(rs));
    emit(k, "mad.wide.u32 %s, %s, %d, %s;", D(qa), R(sub), LANE_BYTES, D(ba));
    for (int i = 0; i < 4; i++) {
        s->head[i] = nr(k);
        s->q[i] = nr(k);
        emit(k, "mov.b32 %s, 0;", R(s->head[i]));
        emit(k, "mov.b32 %s, 0;", R(s->q[i]));
    }
    emit(k, "@%s ld.global.nc.v4.u32 {%s, %s, %s, %s}, [%s];", P(s->ok), R(s->head[0]), R(s->head[1]),
         R(s->head[2]), R(s->head[3]), D(ba));
    emit(k, "@%s ld.global.nc.v4.u32 {%s, %s, %s, %s}, [%s+%d];", P(s->ok), R(s->q[0]), R(s->q[1]), R(s->q[2]),
         R(s->q[3]), D(qa), RAYO_Q4_K_QS);
    s->dh = s->head[0];
}

/* The step's f16 scale at ba + off and its 16 code bytes from the words at
 * al + off on (al: the codes' address rounded down to 4 bytes, sh: the
 * difference in bits, mis: sh != 0), predicated on ok (ok < 0: none). */
static void load_words(kern *k, int ok, int ba, int al, int off, int mis, int sh, lane_step *s)
{
    char pred[16] = "";
    int w[LANE_WORDS + 1];
    if (ok >= 0)
        snprintf(pred, sizeof pred, "@%s ", P(ok));
    s->dh = nr(k);
    if (ok >= 0)
        emit(k, "mov.b32 %s, 0;", R(s->dh));
    for (int i = 0; i <= LANE_WORDS; i++) {
        w[i] = nr(k);
        if (ok >= 0 || i == LANE_WORDS)
            emit(k, "mov.b32 %s, 0;", R(w[i]));
    }
    emit(k, "%sld.global.nc.u16 %s, [%s+%d];", pred, R(s->dh), D(ba), off);
    for (int i = 0; i < LANE_WORDS; i++)
        emit(k, "%sld.global.nc.u32 %s, [%s+%d];", pred, R(w[i]), D(al), off + 4 * i);
    /* not word-aligned: the last two bytes (a word would pass the block's end) */
    emit(k, "@%s ld.global.nc.u16 %s, [%s+%d];", P(mis), R(w[LANE_WORDS]), D(al), off + LANE_BYTES);
    for (int i = 0; i < LANE_WORDS; i++) {
        s->q[i] = nr(k);
        emit(k, "shf.r.wrap.b32 %s, %s, %s, %s;", R(s->q[i]), R(w[i]), R(w[i + 1]), R(sh));
    }
}

static void load_step(kern *k, const g8format *f, const g8_regs *g, int rs, int blk0, int u, lane_step *s)
{
    if (f->dtype == RAYO_DTYPE_Q4_K) {
        load_step_q4_k(k, g, rs, blk0, u, s);
        return;
    }
    int lpb = f->lanes_per_block, bpi = 32 / lpb;
    int sub = nr(k), ba = nd(k), qo = nd(k), al = nd(k), sh = nr(k), mis = np(k);
    s->blk = nr(k);
    s->ok = np(k);
    emit(k, "shr.u32 %s, %s, %d;", R(s->blk), R(g->lane), __builtin_ctz((unsigned)lpb));
    emit(k, "add.u32 %s, %s, %s;", R(s->blk), R(s->blk), R(blk0));
    emit(k, "add.u32 %s, %s, %d;", R(s->blk), R(s->blk), u * bpi);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(s->ok), R(s->blk), R(g->nbr));
    emit(k, "and.b32 %s, %s, %d;", R(sub), R(g->lane), lpb - 1);
    emit(k, "mad.wide.u32 %s, %s, %d, %s;", D(ba), R(s->blk), f->block_bytes, D(rs));
    emit(k, "mul.wide.u32 %s, %s, %d;", D(qo), R(sub), LANE_BYTES);
    emit(k, "add.u64 %s, %s, %s;", D(qo), D(qo), D(ba));
    emit(k, "add.u64 %s, %s, 2;", D(qo), D(qo));
    emit(k, "and.b64 %s, %s, -4;", D(al), D(qo));
    emit(k, "cvt.u32.u64 %s, %s;", R(sh), D(qo));
    emit(k, "and.b32 %s, %s, 3;", R(sh), R(sh));
    emit(k, "shl.b32 %s, %s, 3;", R(sh), R(sh));
    emit(k, "setp.ne.and.u32 %s, %s, 0, %s;", P(mis), R(sh), P(s->ok));
    load_words(k, s->ok, ba, al, 0, mis, sh, s);
}

/* 16 bytes of x's codes at shared address base + off (zeros when !ok; ok < 0:
 * always there) */
static void load_x16(kern *k, int base, int off, int ok, int *x)
{
    char pred[16] = "";
    for (int i = 0; i < 4; i++) {
        x[i] = nr(k);
        if (ok >= 0)
            emit(k, "mov.b32 %s, 0;", R(x[i]));
    }
    if (ok >= 0)
        snprintf(pred, sizeof pred, "@%s ", P(ok));
    emit(k, "%sld.shared.v4.u32 {%s, %s, %s, %s}, [%s+%d];", pred, R(x[0]), R(x[1]), R(x[2]), R(x[3]), R(base), off);
}

/* The integer dot product of the lane's code words q with x's codes x (Q8_0)
 * or, for Q4_0's nibbles, x (low) and xh (high); without Q4_0's offset. */
static int codes_dot(kern *k, const g8format *f, const int *q, const int *x, const int *xh)
{
    int dot = nr(k);
    emit(k, "mov.b32 %s, 0;", R(dot));
    for (int i = 0; i < LANE_WORDS; i++) {
        if (!f->nibbles) {
            emit(k, "dp4a.s32.s32 %s, %s, %s, %s;", R(dot), R(q[i]), R(x[i]), R(dot));
            continue;
        }
        int lo = nr(k), hi = nr(k);
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(lo), R(q[i]));
        emit(k, "shr.u32 %s, %s, 4;", R(hi), R(q[i]));
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(hi), R(hi));
        emit(k, "dp4a.u32.s32 %s, %s, %s, %s;", R(dot), R(lo), R(x[i]), R(dot));
        emit(k, "dp4a.u32.s32 %s, %s, %s, %s;", R(dot), R(hi), R(xh[i]), R(dot));
    }
    return dot;
}

/* The step's integer dot product of the lane's codes with x's. */
static int step_dot(kern *k, const g8format *f, const g8_regs *g, const lane_step *s)
{
    int sub = nr(k), xa = nr(k), x[4], dot;
    emit(k, "and.b32 %s, %s, %d;", R(sub), R(g->lane), f->lanes_per_block - 1);
    emit(k, "shl.b32 %s, %s, 5;", R(xa), R(s->blk));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(xa), R(sub), LANE_BYTES, R(xa));
    emit(k, "add.u32 %s, %s, %s;", R(xa), R(xa), R(g->qx));
    load_x16(k, xa, 0, s->ok, x);
    if (!f->nibbles)
        return codes_dot(k, f, s->q, x, NULL);
    int xh[4];
    load_x16(k, xa, 16, s->ok, xh);
    dot = codes_dot(k, f, s->q, x, xh);
    /* the codes' offset: 8 times the sum of the block's 32 x codes, once
     * per block (by its first lane) */
    int first = np(k), xs = nr(k), sa = nr(k);
    emit(k, "setp.eq.and.u32 %s, %s, 0, %s;", P(first), R(sub), P(s->ok));
    emit(k, "mov.b32 %s, 0;", R(xs));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(s->blk), R(g->sx));
    emit(k, "@%s ld.shared.u32 %s, [%s];", P(first), R(xs), R(sa));
    emit(k, "mad.lo.s32 %s, %s, -8, %s;", R(dot), R(xs), R(dot));
    return dot;
}

/* the step's f16 weight scale as f32 */
static int weight_scale(kern *k, const lane_step *s)
{
    int dw = nf(k);
    emit(k, "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %s; cvt.f32.f16 %s, lo; }", R(s->dh), F(dw));
    return dw;
}

/* An integer (|v| < 2^22) as a float, exactly: added to 1.5 * 2^23. */
static int small_int_f32(kern *k, int v)
{
    int t = nr(k), f = nf(k);
    emit(k, "add.s32 %s, %s, 0x4B400000;", R(t), R(v));
    emit(k, "mov.b32 %s, %s;", F(f), R(t));
    emit(k, "sub.f32 %s, %s, %s;", F(f), F(f), C(12582912.0f));
    return f;
}

/* acc += f * x's scale at shared address sa + off (zero when !ok; ok < 0:
 * always there), in double */
static void x_scale_fma(kern *k, int sa, int off, int ok, int f, int acc)
{
    int f64 = nfd(k), dx = nfd(k);
    emit(k, "cvt.f64.f32 %s, %s;", FD(f64), F(f));
    if (ok >= 0) {
        emit(k, "mov.f64 %s, 0d0000000000000000;", FD(dx));
        emit(k, "@%s ld.shared.f64 %s, [%s+%d];", P(ok), FD(dx), R(sa), off);
    } else {
        emit(k, "ld.shared.f64 %s, [%s+%d];", FD(dx), R(sa), off);
    }
    emit(k, "fma.rn.f64 %s, %s, %s, %s;", FD(acc), FD(f64), FD(dx), FD(acc));
}

/* acc += f * x's scale of 32-value block blk32 (zero when !ok), in double */
static void times_x_scale(kern *k, const g8_regs *g, int blk32, int ok, int f, int acc)
{
    int sa = nr(k);
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(sa), R(blk32), R(g->dx));
    x_scale_fma(k, sa, 0, ok, f, acc);
}

/* acc += dot * weight scale * x scale: the integer (|dot| < 2^22) to float
 * exactly, the product with x's scale in double */
/* dot (|dot| < 2^22) as a float, exactly, times the step's weight scale */
static int dot_times_scale(kern *k, const lane_step *s, int dot)
{
    int fdot = small_int_f32(k, dot), dw = weight_scale(k, s), fw = nf(k);
    emit(k, "mul.f32 %s, %s, %s;", F(fw), F(fdot), F(dw));
    return fw;
}

static void step_accumulate(kern *k, const g8_regs *g, const lane_step *s, int dot, int acc)
{
    times_x_scale(k, g, s->blk, s->ok, dot_times_scale(k, s, dot), acc);
}

/* ---- Q4_K ------------------------------------------------------------------ */
/* The lane's place in its block: sub = lane % 8 takes code bytes 16 sub ..,
 * chunk c = sub / 2 (sub-blocks 2c in the low nibbles, 2c + 1 in the high),
 * values 16 (sub % 2) .. of each; *first: the lane's first value in the row. */
static void q4_k_place(kern *k, const g8_regs *g, const lane_step *s, int *c, int *first)
{
    int sub = nr(k), half = nr(k);
    *c = nr(k);
    *first = nr(k);
    emit(k, "and.b32 %s, %s, 7;", R(sub), R(g->lane));
    emit(k, "shr.u32 %s, %s, 1;", R(*c), R(sub));
    emit(k, "and.b32 %s, %s, 1;", R(half), R(sub));
    emit(k, "shl.b32 %s, %s, 8;", R(*first), R(s->blk));
    emit(k, "mad.lo.u32 %s, %s, 64, %s;", R(*first), R(*c), R(*first));
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(*first), R(half), R(*first));
}

/* acc += the sub-block's d sc part - dmin m xsum, times x's scale when
 * blk32 >= 0 (the integer path; in float otherwise), sc and m its 6-bit
 * scale and min (q4_k_scale_min, sub-block 2c + e). */
static void q4_k_subblock(kern *k, const g8_regs *g, const lane_step *s, int c, int e, int part, int xsum, int acc,
                          int blk32)
{
    int scf, mf, d = nf(k), dmin = nf(k), t = nf(k), mt = nf(k), res = nf(k);
    q4_k_scale_min(k, &s->head[1], c, e, &scf, &mf);
    emit(k, "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %s; cvt.f32.f16 %s, lo; cvt.f32.f16 %s, hi; }", R(s->head[0]),
         F(d), F(dmin));
    emit(k, "mul.f32 %s, %s, %s;", F(t), F(scf), F(part));
    emit(k, "mul.f32 %s, %s, %s;", F(mt), F(mf), F(xsum));
    emit(k, "mul.f32 %s, %s, %s;", F(mt), F(mt), F(dmin));
    emit(k, "neg.f32 %s, %s;", F(mt), F(mt));
    emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(res), F(d), F(t), F(mt));
    if (blk32 >= 0) {
        times_x_scale(k, g, blk32, s->ok, res, acc);
        return;
    }
    int r64 = nfd(k);
    emit(k, "cvt.f64.f32 %s, %s;", FD(r64), F(res));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(r64));
}

/* The integer path: the dots of the lane's low and high nibbles with x's
 * codes (exact: |dot| < 16 * 15 * 127, times a scale below 64 still exact
 * in float); the mins take the sub-block's sum of x's codes, added by the
 * even lane of each pair. */
static void step_q4_k_int(kern *k, const g8_regs *g, const lane_step *s, int acc)
{
    int c, first, xa = nr(k), x[4], xh[4], dot[2] = {nr(k), nr(k)};
    q4_k_place(k, g, s, &c, &first);
    emit(k, "add.u32 %s, %s, %s;", R(xa), R(first), R(g->qx));
    load_x16(k, xa, 0, s->ok, x);
    load_x16(k, xa, 32, s->ok, xh);
    emit(k, "mov.b32 %s, 0;", R(dot[0]));
    emit(k, "mov.b32 %s, 0;", R(dot[1]));
    for (int i = 0; i < LANE_WORDS; i++) {
        int lo = nr(k), hi = nr(k);
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(lo), R(s->q[i]));
        emit(k, "shr.u32 %s, %s, 4;", R(hi), R(s->q[i]));
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(hi), R(hi));
        emit(k, "dp4a.u32.s32 %s, %s, %s, %s;", R(dot[0]), R(lo), R(x[i]), R(dot[0]));
        emit(k, "dp4a.u32.s32 %s, %s, %s, %s;", R(dot[1]), R(hi), R(xh[i]), R(dot[1]));
    }
    int even = np(k), half = nr(k);
    emit(k, "and.b32 %s, %s, 1;", R(half), R(g->lane));
    emit(k, "setp.eq.and.u32 %s, %s, 0, %s;", P(even), R(half), P(s->ok));
    for (int e = 0; e < 2; e++) {
        int blk32 = nr(k), sa = nr(k), xs = nr(k);
        emit(k, "shr.u32 %s, %s, 5;", R(blk32), R(first));
        emit(k, "add.u32 %s, %s, %d;", R(blk32), R(blk32), e);
        emit(k, "mov.b32 %s, 0;", R(xs));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(blk32), R(g->sx));
        emit(k, "@%s ld.shared.u32 %s, [%s];", P(even), R(xs), R(sa));
        q4_k_subblock(k, g, s, c, e, small_int_f32(k, dot[e]), small_int_f32(k, xs), acc, blk32);
    }
}

/* The float path: the lane's codes times x as floats, and its 16 values'
 * sum of x for each sub-block's min. */
static void step_q4_k_float(kern *k, const g8_regs *g, const lane_step *s, int acc)
{
    int c, first, xa = nd(k), part[2], xsum[2];
    q4_k_place(k, g, s, &c, &first);
    emit(k, "mad.wide.u32 %s, %s, 4, %s;", D(xa), R(first), D(g->x));
    for (int e = 0; e < 2; e++) {
        part[e] = nf(k);
        xsum[e] = nf(k);
        emit(k, "mov.f32 %s, 0f00000000;", F(part[e]));
        emit(k, "mov.f32 %s, 0f00000000;", F(xsum[e]));
    }
    for (int i = 0; i < LANE_WORDS; i++) {
        int w[2] = {nr(k), nr(k)};
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(w[0]), R(s->q[i]));
        emit(k, "shr.u32 %s, %s, 4;", R(w[1]), R(s->q[i]));
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(w[1]), R(w[1]));
        for (int e = 0; e < 2; e++) {
            int x[4];
            x_floats(k, g, s->ok, xa, 128 * e + 16 * i, x);
            codes_dot4(k, w[e], 0.0f, x, part[e]);
            for (int j = 0; j < 4; j++)
                emit(k, "add.f32 %s, %s, %s;", F(xsum[e]), F(xsum[e]), F(x[j]));
        }
    }
    for (int e = 0; e < 2; e++)
        q4_k_subblock(k, g, s, c, e, part[e], xsum[e], acc, -1);
}

/* The lane's code words and the byte offsets of their x (floats) from the
 * lane's first value: Q8_0 as 128 + q, Q4_0 as nibbles (values 0..7 low,
 * 16 further high); returns how many. */
static int code_words(kern *k, const g8format *f, const lane_step *s, int *words, int *offs)
{
    if (!f->nibbles) {
        for (int i = 0; i < LANE_WORDS; i++) {
            words[i] = nr(k);
            emit(k, "xor.b32 %s, %s, 0x80808080;", R(words[i]), R(s->q[i]));
            offs[i] = 16 * i;
        }
        return LANE_WORDS;
    }
    for (int i = 0; i < LANE_WORDS; i++) {
        int hi = LANE_WORDS + i;
        words[i] = nr(k);
        words[hi] = nr(k);
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(words[i]), R(s->q[i]));
        emit(k, "shr.u32 %s, %s, 4;", R(words[hi]), R(s->q[i]));
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(words[hi]), R(words[hi]));
        offs[i] = 16 * i, offs[hi] = 64 + 16 * i;
    }
    return 2 * LANE_WORDS;
}

/* The gate's other side: the step's codes as floats times x (f32, from
 * global memory; zeros past the row), times the weight scale, into acc. */
static void step_float(kern *k, const g8format *f, const g8_regs *g, const lane_step *s, int acc)
{
    int sub = nr(k), e = nr(k), xa = nd(k), part = nf(k), words[2 * LANE_WORDS], offs[2 * LANE_WORDS];
    emit(k, "and.b32 %s, %s, %d;", R(sub), R(g->lane), f->lanes_per_block - 1);
    emit(k, "shl.b32 %s, %s, 5;", R(e), R(s->blk));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(e), R(sub), LANE_BYTES, R(e));
    emit(k, "mad.wide.u32 %s, %s, 4, %s;", D(xa), R(e), D(g->x));
    emit(k, "mov.f32 %s, 0f00000000;", F(part));
    int count = code_words(k, f, s, words, offs);
    for (int i = 0; i < count; i++) {
        int x[4];
        x_floats(k, g, s->ok, xa, offs[i], x);
        codes_dot4(k, words[i], f->nibbles ? 8.0f : 128.0f, x, part);
    }
    int dw = weight_scale(k, s), p64 = nfd(k);
    emit(k, "mul.f32 %s, %s, %s;", F(part), F(part), F(dw));
    emit(k, "cvt.f64.f32 %s, %s;", FD(p64), F(part));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(p64));
}

/* y[row] = alpha * sum + beta * y[row] (y read only when beta != 0), the
 * warp's double sum rounded once; a sum that overflowed in float is redone
 * in float64 (product-redo.c) */
static int store_row(kern *k, const g8format *f, const g8_regs *g, int row, int acc)
{
    for (int o = 16; o >= 1; o /= 2) {
        int t = shfl_f64(k, acc, o);
        emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(t));
    }
    int pw = np(k), pb = np(k), l_skip = nlabel(k), ya = nd(k), old = nf(k), res = nfd(k), t = nfd(k), out = nf(k);
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pw), R(g->lane));
    emit(k, "@%s bra %s;", P(pw), L(l_skip));
    int rs = nd(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(rs), D(row), D(g->lda), D(g->a));
    redo_operand wr = {rs, -1, f->dtype}, xr = {g->x, -1, RAYO_DTYPE_F32};
    if (g->norm)
        norm_redo_if_not_finite(k, f, g, acc, rs);
    else
        redo_if_not_finite(k, acc, &wr, &xr, g->n);
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ya), D(row), D(g->y));
    emit(k, "cvt.f64.f32 %s, %s;", FD(t), F(g->alpha));
    emit(k, "mul.rn.f64 %s, %s, %s;", FD(res), FD(acc), FD(t));
    emit(k, "setp.ne.f32 %s, %s, 0f00000000;", P(pb), F(g->beta));
    emit(k, "mov.f32 %s, 0f00000000;", F(old));
    emit(k, "@%s ld.global.f32 %s, [%s];", P(pb), F(old), D(ya));
    emit(k, "@%s mul.rn.f32 %s, %s, %s;", P(pb), F(old), F(old), F(g->beta));
    emit(k, "cvt.f64.f32 %s, %s;", FD(t), F(old));
    emit(k, "add.rn.f64 %s, %s, %s;", FD(res), FD(res), FD(t));
    emit(k, "cvt.rn.f32.f64 %s, %s;", F(out), FD(res));
    emit(k, "st.global.f32 [%s], %s;", D(ya), F(out));
    label(k, l_skip);
    return out;
}

/* ---- full steps (Q8_0, Q4_0) ---------------------------------------------- */
/* While a row has UNROLL whole steps left, the lane's addresses only move
 * by constants: its block in a step is lane / lanes_per_block plus a
 * multiple of 8, and as blocks are of 18 or 34 bytes its codes' offset
 * within 16 bytes is the same in every step (rows on 16 bytes).  So these
 * steps load at immediate offsets from pointers set once a row, with no
 * bounds and no predicates, and a lane reads its 16 code bytes as the two
 * aligned 16-byte pieces that hold them (two vector loads where the
 * predicated loop takes five, the busy unit being L1), then picks its
 * words out of the eight by that offset. */
typedef struct lane_ptrs {
    int scale, win, win2; /* .b64 global: the first step's f16 scale, the two 16-byte pieces of its codes */
    int sh, odd, two;     /* .b32 the codes' offset within a word in bits; .pred bits 2 and 3 of the offset */
    int xq, xq2, xs, xd;  /* .b32 shared: x's codes of the lane's values (Q4_0: halves), its block's sum, scale */
    int nlo, nhi;         /* .b32 Q4_0: shifts of the nibbles that go with xq and xq2 */
} lane_ptrs;

/* Q4_0: lanes with bit 2 set read x's high 16 codes first, so that the 8
 * lanes of a 16-byte shared load hit 8 different banks (a block's 32 codes
 * per lane put lanes 0 and 4 on the same ones); their nibbles swap too. */
static void q4_0_x_halves(kern *k, const g8_regs *g, lane_ptrs *p)
{
    int sw = nr(k);
    emit(k, "and.b32 %s, %s, 4;", R(sw), R(g->lane));
    emit(k, "add.u32 %s, %s, 16;", R(p->xq2), R(p->xq));
    emit(k, "shl.b32 %s, %s, 2;", R(sw), R(sw));
    emit(k, "add.u32 %s, %s, %s;", R(p->xq), R(p->xq), R(sw));
    emit(k, "sub.u32 %s, %s, %s;", R(p->xq2), R(p->xq2), R(sw));
    emit(k, "shr.u32 %s, %s, 2;", R(p->nlo), R(sw));
    emit(k, "sub.u32 %s, 4, %s;", R(p->nhi), R(p->nlo));
}

static lane_ptrs lane_ptrs_at(kern *k, const g8format *f, const g8_regs *g, int rs)
{
    lane_ptrs p = {nd(k), nd(k), nd(k), nr(k), np(k), np(k), nr(k), nr(k), nr(k), nr(k), nr(k), nr(k)};
    int lpb = f->lanes_per_block, lb = nr(k), sub = nr(k), qo = nd(k), t = nr(k), bit = nr(k), zero = np(k);
    emit(k, "shr.u32 %s, %s, %d;", R(lb), R(g->lane), __builtin_ctz((unsigned)lpb));
    emit(k, "and.b32 %s, %s, %d;", R(sub), R(g->lane), lpb - 1);
    emit(k, "mad.wide.u32 %s, %s, %d, %s;", D(p.scale), R(lb), f->block_bytes, D(rs));
    emit(k, "mad.wide.u32 %s, %s, %d, %s;", D(qo), R(sub), LANE_BYTES, D(p.scale));
    emit(k, "add.u64 %s, %s, 2;", D(qo), D(qo));
    emit(k, "and.b64 %s, %s, -16;", D(p.win), D(qo));
    emit(k, "cvt.u32.u64 %s, %s;", R(t), D(qo));
    emit(k, "and.b32 %s, %s, 15;", R(t), R(t));
    emit(k, "and.b32 %s, %s, 3;", R(p.sh), R(t));
    emit(k, "shl.b32 %s, %s, 3;", R(p.sh), R(p.sh));
    emit(k, "and.b32 %s, %s, 4;", R(bit), R(t));
    emit(k, "setp.ne.u32 %s, %s, 0;", P(p.odd), R(bit));
    emit(k, "and.b32 %s, %s, 8;", R(bit), R(t));
    emit(k, "setp.ne.u32 %s, %s, 0;", P(p.two), R(bit));
    /* codes on 16 bytes need the first piece only: the second may be past
     * the matrix, so it is read again there */
    emit(k, "setp.eq.u32 %s, %s, 0;", P(zero), R(t));
    emit(k, "add.u64 %s, %s, 16;", D(p.win2), D(p.win));
    emit(k, "@%s mov.u64 %s, %s;", P(zero), D(p.win2), D(p.win));
    emit(k, "shl.b32 %s, %s, 5;", R(p.xq), R(lb));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(p.xq), R(sub), LANE_BYTES, R(p.xq));
    emit(k, "add.u32 %s, %s, %s;", R(p.xq), R(p.xq), R(g->qx));
    if (f->nibbles)
        q4_0_x_halves(k, g, &p);
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(p.xs), R(lb), R(g->sx));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(p.xd), R(lb), R(g->dx));
    return p;
}

/* Step u's scale into s and the two 16-byte pieces that hold its codes
 * into w (bytes off on from the row's first step). */
static void window_load(kern *k, const lane_ptrs *p, int off, lane_step *s, int *w)
{
    s->dh = nr(k);
    for (int i = 0; i < 8; i++)
        w[i] = nr(k);
    emit(k, "ld.global.nc.v4.u32 {%s, %s, %s, %s}, [%s+%d];", R(w[0]), R(w[1]), R(w[2]), R(w[3]), D(p->win), off);
    emit(k, "ld.global.nc.v4.u32 {%s, %s, %s, %s}, [%s+%d];", R(w[4]), R(w[5]), R(w[6]), R(w[7]), D(p->win2), off);
    emit(k, "ld.global.nc.u16 %s, [%s+%d];", R(s->dh), D(p->scale), off);
}

/* The code words out of the window w: its words from the codes' word j
 * on (two rounds of selp by j's bits), then funnel shifts by the offset
 * within a word. */
static void window_pick(kern *k, const lane_ptrs *p, const int *w, int *q)
{
    int v[7], x[5];
    for (int i = 0; i < 7; i++) {
        v[i] = nr(k);
        emit(k, "selp.b32 %s, %s, %s, %s;", R(v[i]), R(w[i + 1]), R(w[i]), P(p->odd));
    }
    for (int i = 0; i <= LANE_WORDS; i++) {
        x[i] = nr(k);
        emit(k, "selp.b32 %s, %s, %s, %s;", R(x[i]), R(v[i + 2]), R(v[i]), P(p->two));
    }
    for (int i = 0; i < LANE_WORDS; i++) {
        q[i] = nr(k);
        emit(k, "shf.r.wrap.b32 %s, %s, %s, %s;", R(q[i]), R(x[i]), R(x[i + 1]), R(p->sh));
    }
}

/* Q4_0's dot of the lane's nibbles with x's two halves as q4_0_x_halves
 * laid them out. */
static int q4_0_dot(kern *k, const lane_ptrs *p, const lane_step *s, const int *xa, const int *xb)
{
    int dot = nr(k);
    emit(k, "mov.b32 %s, 0;", R(dot));
    for (int i = 0; i < LANE_WORDS; i++) {
        int a = nr(k), b = nr(k);
        emit(k, "shr.u32 %s, %s, %s;", R(a), R(s->q[i]), R(p->nlo));
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(a), R(a));
        emit(k, "shr.u32 %s, %s, %s;", R(b), R(s->q[i]), R(p->nhi));
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(b), R(b));
        emit(k, "dp4a.u32.s32 %s, %s, %s, %s;", R(dot), R(a), R(xa[i]), R(dot));
        emit(k, "dp4a.u32.s32 %s, %s, %s, %s;", R(dot), R(b), R(xb[i]), R(dot));
    }
    return dot;
}

/* Step u's products into acc, as step_dot and step_accumulate make them. */
static void full_step(kern *k, const g8format *f, const lane_ptrs *p, int u, const lane_step *s, int acc)
{
    int blocks = u * 32 / f->lanes_per_block, x[4], xh[4], dot;
    load_x16(k, p->xq, 32 * blocks, -1, x);
    if (f->nibbles) {
        int xs = nr(k);
        load_x16(k, p->xq2, 32 * blocks, -1, xh);
        dot = q4_0_dot(k, p, s, x, xh);
        emit(k, "ld.shared.u32 %s, [%s+%d];", R(xs), R(p->xs), 4 * blocks);
        emit(k, "mad.lo.s32 %s, %s, -8, %s;", R(dot), R(xs), R(dot));
    } else {
        dot = codes_dot(k, f, s->q, x, NULL);
    }
    x_scale_fma(k, p->xd, 8 * blocks, -1, dot_times_scale(k, s, dot), acc);
}

/* The row's whole steps of `unroll` steps each from block blk0 on, p's
 * pointers at blk0; blk0 and p end at the first block they leave. */
static void full_steps(kern *k, const g8format *f, const g8_regs *g, const lane_ptrs *p, int acc, int blk0, int unroll)
{
    int blocks = unroll * 32 / f->lanes_per_block, bytes = blocks * f->block_bytes;
    int next = nr(k), pout = np(k), l_loop = nlabel(k), l_end = nlabel(k);
    label(k, l_loop);
    emit(k, "add.u32 %s, %s, %d;", R(next), R(blk0), blocks);
    emit(k, "setp.gt.u32 %s, %s, %s;", P(pout), R(next), R(g->nbr));
    emit(k, "@%s bra %s;", P(pout), L(l_end));
    lane_step s[WINDOW_UNROLL];
    int w[WINDOW_UNROLL][8];
    for (int u = 0; u < unroll; u++)
        window_load(k, p, u * bytes / unroll, &s[u], w[u]);
    for (int u = 0; u < unroll; u++) {
        window_pick(k, p, w[u], s[u].q);
        full_step(k, f, p, u, &s[u], acc);
    }
    emit(k, "add.u64 %s, %s, %d;", D(p->scale), D(p->scale), bytes);
    emit(k, "add.u64 %s, %s, %d;", D(p->win), D(p->win), bytes);
    emit(k, "add.u64 %s, %s, %d;", D(p->win2), D(p->win2), bytes);
    emit(k, "add.u32 %s, %s, %d;", R(p->xq), R(p->xq), 32 * blocks);
    if (f->nibbles)
        emit(k, "add.u32 %s, %s, %d;", R(p->xq2), R(p->xq2), 32 * blocks);
    emit(k, "add.u32 %s, %s, %d;", R(p->xs), R(p->xs), 4 * blocks);
    emit(k, "add.u32 %s, %s, %d;", R(p->xd), R(p->xd), 8 * blocks);
    emit(k, "mov.u32 %s, %s;", R(blk0), R(next));
    emit(k, "bra.uni %s;", L(l_loop));
    label(k, l_end);
}

/* Q8_0 and Q4_0 in integers, a row on 16 bytes: its whole steps,
 * WINDOW_UNROLL at a time, then two at a time (a 2048-value Q4_0 row). */
static void row_full_steps(kern *k, const g8format *f, const g8_regs *g, int rs, int acc, int blk0)
{
    int low = nd(k), tail = nr(k), pmis = np(k), l_end = nlabel(k);
    /* rows that start and end on 16 bytes (a multiple of 8 blocks), so that
     * no 16-byte piece reaches past the matrix */
    emit(k, "and.b64 %s, %s, 15;", D(low), D(rs));
    emit(k, "and.b32 %s, %s, 7;", R(tail), R(g->nbr));
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pmis), D(low));
    emit(k, "setp.ne.or.u32 %s, %s, 0, %s;", P(pmis), R(tail), P(pmis));
    emit(k, "@%s bra %s;", P(pmis), L(l_end));
    lane_ptrs p = lane_ptrs_at(k, f, g, rs);
    full_steps(k, f, g, &p, acc, blk0, WINDOW_UNROLL);
    if (WINDOW_UNROLL > 2)
        full_steps(k, f, g, &p, acc, blk0, 2);
    label(k, l_end);
}

/* ---- Q6_K ------------------------------------------------------------------ */
/* A lane takes sub = lane % 8 of its block: code bytes ql[16 sub ..], whose
 * low nibbles are values 16 t .. 16 t + 16 (t = sub + (sub & 4), the first
 * of its two sub-blocks) and high nibbles the 16 values 64 further (sub-block
 * t + 4); their high two bits are bits (sub & 2) and (sub & 2) + 4 of the 16
 * qh bytes from 32 (sub / 4) + 16 (sub % 2) on.  Blocks of 210 bytes start
 * on 2 bytes: the lane reads the two aligned 16-byte pieces that hold each
 * of its 16-byte runs (all within the block, but for the first piece of
 * ql, which may start up to 14 bytes before it: still in the matrix's
 * 16-byte extent) and picks its words out as full_steps does. */
/* the lane's first value in the row: 256 blk + 16 t */
static int q6_k_first(kern *k, const g8_regs *g, const lane_step *s)
{
    int sub = nr(k), t = nr(k), first = nr(k);
    emit(k, "and.b32 %s, %s, 7;", R(sub), R(g->lane));
    emit(k, "and.b32 %s, %s, 4;", R(t), R(sub));
    emit(k, "add.u32 %s, %s, %s;", R(t), R(t), R(sub));
    emit(k, "shl.b32 %s, %s, 8;", R(first), R(s->blk));
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(first), R(t), R(first));
    return first;
}

static void load_step_q6_k(kern *k, const g8_regs *g, int rs, int blk0, int u, lane_step *s)
{
    int sub = nr(k), t = nr(k), hq = nr(k), m = nr(k), bit = nr(k);
    int ba = nd(k), base = nd(k), qla = nd(k), qha = nd(k), sca = nd(k);
    super_block(k, g, blk0, u, s);
    emit(k, "mad.wide.u32 %s, %s, %d, %s;", D(ba), R(s->blk), RAYO_Q6_K_BYTES, D(rs));
    emit(k, "cvt.u32.u64 %s, %s;", R(m), D(ba));
    emit(k, "and.b32 %s, %s, 15;", R(m), R(m));
    emit(k, "and.b64 %s, %s, -16;", D(base), D(ba));
    s->odd = np(k), s->two = np(k), s->sh = nr(k);
    emit(k, "and.b32 %s, %s, 4;", R(bit), R(m));
    emit(k, "setp.ne.u32 %s, %s, 0;", P(s->odd), R(bit));
    emit(k, "and.b32 %s, %s, 8;", R(bit), R(m));
    emit(k, "setp.ne.u32 %s, %s, 0;", P(s->two), R(bit));
    emit(k, "and.b32 %s, %s, 3;", R(s->sh), R(m));
    emit(k, "shl.b32 %s, %s, 3;", R(s->sh), R(s->sh));
    /* ql at 16 sub, qh at 128 + 16 (2 (sub / 4) + sub % 2), scales at 192 + t */
    emit(k, "and.b32 %s, %s, 7;", R(sub), R(g->lane));
    emit(k, "mad.wide.u32 %s, %s, 16, %s;", D(qla), R(sub), D(base));
    emit(k, "shr.u32 %s, %s, 1;", R(hq), R(sub));
    emit(k, "and.b32 %s, %s, 2;", R(hq), R(hq));
    emit(k, "and.b32 %s, %s, 1;", R(t), R(sub));
    emit(k, "or.b32 %s, %s, %s;", R(hq), R(hq), R(t));
    emit(k, "mad.wide.u32 %s, %s, 16, %s;", D(qha), R(hq), D(base));
    emit(k, "and.b32 %s, %s, 4;", R(t), R(sub));
    emit(k, "add.u32 %s, %s, %s;", R(t), R(t), R(sub));
    emit(k, "cvt.u64.u32 %s, %s;", D(sca), R(t));
    emit(k, "add.u64 %s, %s, %s;", D(sca), D(sca), D(ba));
    for (int i = 0; i < 16; i++) {
        s->win[i] = nr(k);
        emit(k, "mov.b32 %s, 0;", R(s->win[i]));
    }
    s->dh = nr(k), s->sc[0] = nr(k), s->sc[1] = nr(k);
    emit(k, "mov.b32 %s, 0;", R(s->dh));
    emit(k, "mov.b32 %s, 0;", R(s->sc[0]));
    emit(k, "mov.b32 %s, 0;", R(s->sc[1]));
    for (int j = 0; j < 4; j++) {
        const int *w = &s->win[4 * j];
        emit(k, "@%s ld.global.nc.v4.u32 {%s, %s, %s, %s}, [%s+%d];", P(s->ok), R(w[0]), R(w[1]), R(w[2]), R(w[3]),
             D(j < 2 ? qla : qha), (j < 2 ? 0 : RAYO_Q6_K_QH) + 16 * (j % 2));
    }
    emit(k, "@%s ld.global.nc.s8 %s, [%s+%d];", P(s->ok), R(s->sc[0]), D(sca), RAYO_Q6_K_SCALES);
    emit(k, "@%s ld.global.nc.s8 %s, [%s+%d];", P(s->ok), R(s->sc[1]), D(sca), RAYO_Q6_K_SCALES + 4);
    emit(k, "@%s ld.global.nc.u16 %s, [%s+%d];", P(s->ok), R(s->dh), D(ba), RAYO_Q6_K_D);
}

/* The lane's 6-bit codes (0..63, one a byte), 4 words for each of its two
 * sub-blocks: the low bits' nibbles with the high bits' pairs above them. */
static void q6_k_codes(kern *k, const g8_regs *g, const lane_step *s, int code[2][LANE_WORDS])
{
    lane_ptrs p = {.odd = s->odd, .two = s->two, .sh = s->sh};
    int lo[LANE_WORDS], hi[LANE_WORDS], shift = nr(k);
    window_pick(k, &p, &s->win[0], lo);
    window_pick(k, &p, &s->win[8], hi);
    emit(k, "and.b32 %s, %s, 2;", R(shift), R(g->lane));
    for (int i = 0; i < LANE_WORDS; i++) {
        int h = nr(k), h4 = nr(k), l4 = nr(k);
        code[0][i] = nr(k);
        code[1][i] = nr(k);
        emit(k, "shr.u32 %s, %s, %s;", R(h), R(hi[i]), R(shift));
        emit(k, "shl.b32 %s, %s, 4;", R(h4), R(h));
        emit(k, "and.b32 %s, %s, 0x30303030;", R(h4), R(h4));
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(code[0][i]), R(lo[i]));
        emit(k, "or.b32 %s, %s, %s;", R(code[0][i]), R(code[0][i]), R(h4));
        emit(k, "and.b32 %s, %s, 0x30303030;", R(h), R(h));
        emit(k, "shr.u32 %s, %s, 4;", R(l4), R(lo[i]));
        emit(k, "and.b32 %s, %s, 0x0f0f0f0f;", R(l4), R(l4));
        emit(k, "or.b32 %s, %s, %s;", R(code[1][i]), R(l4), R(h));
    }
}

/* sub-block e's scale times d, as a float */
static int q6_k_scale(kern *k, const lane_step *s, int e)
{
    int sc = nf(k), ds = nf(k);
    emit(k, "cvt.rn.f32.s32 %s, %s;", F(sc), R(s->sc[e]));
    emit(k, "mul.f32 %s, %s, %s;", F(ds), F(weight_scale(k, s)), F(sc));
    return ds;
}

/* The integer path: codes minus 32 as signed bytes (code + 96 fits a byte;
 * flipping its top bit takes 128 off), dp4a with x's codes, a sum per
 * sub-block (|dot| <= 16 * 32 * 127, exact as a float), times d sc, then
 * x's scale of its 32 values. */
static void step_q6_k_int(kern *k, const g8_regs *g, const lane_step *s, int acc)
{
    int first = q6_k_first(k, g, s), code[2][LANE_WORDS], xa = nr(k);
    q6_k_codes(k, g, s, code);
    emit(k, "add.u32 %s, %s, %s;", R(xa), R(first), R(g->qx));
    for (int e = 0; e < 2; e++) {
        int x[4], dot = nr(k), blk32 = nr(k), part = nf(k);
        load_x16(k, xa, 64 * e, s->ok, x);
        emit(k, "mov.b32 %s, 0;", R(dot));
        for (int i = 0; i < LANE_WORDS; i++) {
            int c = nr(k);
            emit(k, "add.u32 %s, %s, 0x60606060;", R(c), R(code[e][i]));
            emit(k, "xor.b32 %s, %s, 0x80808080;", R(c), R(c));
            emit(k, "dp4a.s32.s32 %s, %s, %s, %s;", R(dot), R(c), R(x[i]), R(dot));
        }
        emit(k, "mul.f32 %s, %s, %s;", F(part), F(small_int_f32(k, dot)), F(q6_k_scale(k, s, e)));
        emit(k, "shr.u32 %s, %s, 5;", R(blk32), R(first));
        emit(k, "add.u32 %s, %s, %d;", R(blk32), R(blk32), 2 * e);
        times_x_scale(k, g, blk32, s->ok, part, acc);
    }
}

/* The float path: the codes minus 32 times x as floats, per sub-block, times
 * d sc, into acc. */
static void step_q6_k_float(kern *k, const g8_regs *g, const lane_step *s, int acc)
{
    int first = q6_k_first(k, g, s), code[2][LANE_WORDS], xa = nd(k);
    q6_k_codes(k, g, s, code);
    emit(k, "mad.wide.u32 %s, %s, 4, %s;", D(xa), R(first), D(g->x));
    for (int e = 0; e < 2; e++) {
        int part = nf(k), p64 = nfd(k);
        emit(k, "mov.f32 %s, 0f00000000;", F(part));
        for (int i = 0; i < LANE_WORDS; i++) {
            int x[4];
            x_floats(k, g, s->ok, xa, 256 * e + 16 * i, x);
            codes_dot4(k, code[e][i], 32.0f, x, part);
        }
        emit(k, "mul.f32 %s, %s, %s;", F(part), F(part), F(q6_k_scale(k, s, e)));
        emit(k, "cvt.f64.f32 %s, %s;", FD(p64), F(part));
        emit(k, "add.rn.f64 %s, %s, %s;", FD(acc), FD(acc), FD(p64));
    }
}

/* The row's blocks, UNROLL steps of loads, then their products, in
 * integers (int8) or in float: Q8_0 and Q4_0's whole steps in integers by
 * row_full_steps, the rest (and the last, partial step) here. */
static void row_steps(kern *k, const g8format *f, const g8_regs *g, int rs, int acc, int int8)
{
    int blk0 = nr(k), pmore = np(k), l_loop = nlabel(k), l_end = nlabel(k);
    emit(k, "mov.u32 %s, 0;", R(blk0));
    if (int8 && f->block_elems == 32) {
        row_full_steps(k, f, g, rs, acc, blk0);
        emit(k, "setp.ge.u32 %s, %s, %s;", P(pmore), R(blk0), R(g->nbr));
        emit(k, "@%s bra %s;", P(pmore), L(l_end));
    }
    label(k, l_loop);
    lane_step s[UNROLL];
    for (int u = 0; u < f->unroll; u++)
        if (f->dtype == RAYO_DTYPE_Q6_K)
            load_step_q6_k(k, g, rs, blk0, u, &s[u]);
        else
            load_step(k, f, g, rs, blk0, u, &s[u]);
    for (int u = 0; u < f->unroll; u++) {
        if (f->dtype == RAYO_DTYPE_Q6_K)
            (int8 ? step_q6_k_int : step_q6_k_float)(k, g, &s[u], acc);
        else if (f->dtype == RAYO_DTYPE_Q4_K)
            (int8 ? step_q4_k_int : step_q4_k_float)(k, g, &s[u], acc);
        else if (int8)
            step_accumulate(k, g, &s[u], step_dot(k, f, g, &s[u]), acc);
        else
            step_float(k, f, g, &s[u], acc);
    }
    emit(k, "add.u32 %s, %s, %d;", R(blk0), R(blk0), f->unroll * 32 / f->lanes_per_block);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(pmore), R(blk0), R(g->nbr));
    emit(k, "@%s bra %s;", P(pmore), L(l_loop));
    label(k, l_end);
}

/* The warp's row, by the block's gate (a branch the whole block takes
 * alike); returns the value stored (lane 0's register). */
static int row_dot(kern *k, const g8format *f, const g8_regs *g, int row, int gate)
{
    int rs = nd(k), acc = nfd(k), l_float = nlabel(k), l_store = nlabel(k);
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(rs), D(row), D(g->lda), D(g->a));
    emit(k, "mov.f64 %s, 0d0000000000000000;", FD(acc));
    emit(k, "@!%s bra %s;", P(gate), L(l_float));
    row_steps(k, f, g, rs, acc, 1);
    emit(k, "bra.uni %s;", L(l_store));
    label(k, l_float);
    row_steps(k, f, g, rs, acc, 0);
    label(k, l_store);
    return store_row(k, f, g, row, acc);
}

/* Row r of all parts as the row of one part: *part gets that part's A and
 * y, *row the row's index there. */
static void part_row(kern *k, const g8_regs *g, int r, g8_regs *part, int *row)
{
    *part = *g;
    *row = r;
    if (g->parts == 1)
        return;
    part->a = nd(k);
    part->y = nd(k);
    *row = nd(k);
    emit(k, "mov.u64 %s, %s;", D(part->a), D(g->pa[0]));
    emit(k, "mov.u64 %s, %s;", D(part->y), D(g->py[0]));
    emit(k, "mov.u64 %s, %s;", D(*row), D(r));
    for (int i = 1; i < g->parts; i++) {
        int in = np(k);
        emit(k, "setp.ge.u64 %s, %s, %s;", P(in), D(r), D(g->first[i]));
        emit(k, "@%s mov.u64 %s, %s;", P(in), D(part->a), D(g->pa[i]));
        emit(k, "@%s mov.u64 %s, %s;", P(in), D(part->y), D(g->py[i]));
        emit(k, "@%s sub.u64 %s, %s, %s;", P(in), D(*row), D(r), D(g->first[i]));
    }
}

/* The parts' A, y and rows (gemv8x_*: p_y0, p_a0, p_m0, p_y1, ...): g->m
 * their rows together, g->first[i] part i's first row among them. */
static void part_params(kern *k, g8_regs *g, strbuf *decl)
{
    g->m = nd(k);
    emit(k, "mov.u64 %s, 0;", D(g->m));
    for (int i = 0; i < g->parts; i++) {
        char ny[8], na[8], nm[8];
        snprintf(ny, sizeof ny, "p_y%d", i);
        snprintf(na, sizeof na, "p_a%d", i);
        snprintf(nm, sizeof nm, "p_m%d", i);
        sb_printf(decl, ".param .u64 %s, .param .u64 %s, .param .u64 %s, ", ny, na, nm);
        g->py[i] = param_global(k, ny);
        g->pa[i] = param_global(k, na);
        g->first[i] = nd(k);
        emit(k, "mov.u64 %s, %s;", D(g->first[i]), D(g->m));
        emit(k, "add.u64 %s, %s, %s;", D(g->m), D(g->m), D(param_u64(k, nm)));
    }
    g->y = g->py[0];
    g->a = g->pa[0];
}

/* ---- rope ------------------------------------------------------------------ */
/* gemv8xr_*, gemv8xnr_*: parts whose p_r<i> is not 0 are roped after their
 * products, one token (rope_* of one row at position p_pos[0], head_dim
 * p_hd, all of it rotated; p_neox: pairs half a head apart, else adjacent;
 * p_ratio and p_scale as rope_* takes them), the result at p_r<i> (which
 * may be the part's y).  A rotated pair needs both its rows' products: the
 * part's row slots are taken in pairs, slot 2j the first row of pair j and
 * 2j + 1 its second, so that warps 2w and 2w + 1 of a block take a pair in
 * the same pass over the rows (the plugin has each roped part start at an
 * even slot; a pass's slots are a block's warps in order).  Each stores
 * its product as gemv8x_* does, then lane 0 puts it in g8_pair, the two
 * warps meet at a barrier of their own, and each rotates the pair as
 * rope_* does (the same float operations on the same rounded products) and
 * stores its own half. */
typedef struct rope_slot {
    int ry;   /* .b64 the part's rope output (global) */
    int on;   /* .pred the part is roped */
    int odd;  /* .pred the slot is its pair's second row */
    int i;    /* .b32 the pair's index within its head */
} rope_slot;

/* The rope output of the part that holds row slot r (as part_row finds it). */
static void rope_part(kern *k, const g8_regs *g, int r, rope_slot *rs)
{
    int ry = nd(k);
    emit(k, "ld.param.u64 %s, [p_r0];", D(ry));
    for (int i = 1; i < g->parts; i++) {
        int in = np(k), t = nd(k);
        char name[8];
        snprintf(name, sizeof name, "p_r%d", i);
        emit(k, "ld.param.u64 %s, [%s];", D(t), name);
        emit(k, "setp.ge.u64 %s, %s, %s;", P(in), D(r), D(g->first[i]));
        emit(k, "@%s mov.u64 %s, %s;", P(in), D(ry), D(t));
    }
    rs->on = np(k);
    rs->ry = nd(k);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(rs->on), D(ry));
    emit(k, "cvta.to.global.u64 %s, %s;", D(rs->ry), D(ry));
}

/* Row slot *row of a roped part as the row it stands for (in place):
 * pair j = slot / 2 is pair i of head h, its rows h hd + 2i and + 1, or
 * for neox h hd + i and + hd / 2. */
static void rope_slot_row(kern *k, const g8_regs *g, int r, int *row, rope_slot *rs)
{
    rope_part(k, g, r, rs);
    int hd = nr(k), half = nr(k), j = nr(k), h = nr(k), bit = nr(k), other = nr(k), neox = np(k), hb = nd(k);
    int t = nd(k);
    rs->odd = np(k);
    rs->i = nr(k);
    emit(k, "ld.param.u64 %s, [p_hd];", D(t));
    emit(k, "cvt.u32.u64 %s, %s;", R(hd), D(t));
    emit(k, "ld.param.u64 %s, [p_neox];", D(t));
    emit(k, "setp.ne.and.u64 %s, %s, 0, %s;", P(neox), D(t), P(rs->on));
    emit(k, "shr.u32 %s, %s, 1;", R(half), R(hd));
    emit(k, "cvt.u32.u64 %s, %s;", R(j), D(*row));
    emit(k, "and.b32 %s, %s, 1;", R(bit), R(j));
    emit(k, "setp.ne.u32 %s, %s, 0;", P(rs->odd), R(bit));
    emit(k, "shr.u32 %s, %s, 1;", R(j), R(j));
    emit(k, "div.u32 %s, %s, %s;", R(h), R(j), R(half));
    emit(k, "mul.lo.u32 %s, %s, %s;", R(other), R(h), R(half));
    emit(k, "sub.u32 %s, %s, %s;", R(rs->i), R(j), R(other));
    /* neox: h hd + i + (odd ? half : 0); the slot itself otherwise */
    emit(k, "mul.lo.u32 %s, %s, %s;", R(other), R(half), R(bit));
    emit(k, "add.u32 %s, %s, %s;", R(other), R(other), R(rs->i));
    emit(k, "mul.wide.u32 %s, %s, %s;", D(hb), R(h), R(hd));
    emit(k, "cvt.u64.u32 %s, %s;", D(t), R(other));
    emit(k, "add.u64 %s, %s, %s;", D(hb), D(hb), D(t));
    emit(k, "@%s mov.u64 %s, %s;", P(neox), D(*row), D(hb));
}

/* The warp's half of a rotated pair at ry[row], its product `out` in lane
 * 0 (the section's head). */
static void rope_pair_store(kern *k, const g8_regs *g, const rope_slot *rs, int row, int out)
{
    int l_skip = nlabel(k), lane0 = np(k), base = nr(k), mine = nr(k), id = nr(k), other = nf(k);
    emit(k, "@!%s bra.uni %s;", P(rs->on), L(l_skip));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(lane0), R(g->lane));
    emit(k, "mov.u32 %s, g8_pair;", R(base));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(mine), R(g->warp), R(base));
    emit(k, "@%s st.shared.f32 [%s], %s;", P(lane0), R(mine), F(out));
    emit(k, "shr.u32 %s, %s, 1;", R(id), R(g->warp));
    emit(k, "add.u32 %s, %s, 1;", R(id), R(id)); /* barrier 0 is the block's */
    emit(k, "bar.sync %s, 64;", R(id));
    emit(k, "xor.b32 %s, %s, 4;", R(mine), R(mine));
    emit(k, "mov.f32 %s, 0f00000000;", F(other));
    emit(k, "@%s ld.shared.f32 %s, [%s];", P(lane0), F(other), R(mine));
    emit(k, "bar.sync %s, 64;", R(id)); /* both read before either writes again */
    int u = nf(k), v = nf(k), pos = nr(k), o1, o2, res = nf(k);
    emit(k, "selp.f32 %s, %s, %s, %s;", F(u), F(other), F(out), P(rs->odd));
    emit(k, "selp.f32 %s, %s, %s, %s;", F(v), F(out), F(other), P(rs->odd));
    emit(k, "ld.global.nc.u32 %s, [%s];", R(pos), D(param_global(k, "p_pos")));
    int ratio = nfd(k), scale = nfd(k);
    emit(k, "ld.param.f64 %s, [p_ratio];", FD(ratio));
    emit(k, "ld.param.f64 %s, [p_scale];", FD(scale));
    rope_rotate(k, pos, rs->i, ratio, scale, u, v, &o1, &o2);
    emit(k, "selp.f32 %s, %s, %s, %s;", F(res), F(o2), F(o1), P(rs->odd));
    emit(k, "@%s st.global.f32 [%s], %s;", P(lane0), D(addr_of(k, rs->ry, row, 4)), F(res));
    label(k, l_skip);
}

/* Everything before the rows: x rounded into shared memory, the block's
 * gate (returned), the warp's first row and the rows' stride.  g's
 * parameters from p_x on are read here. */
static int g8_prologue(kern *k, const g8format *f, g8_regs *g, int *row, int *stride)
{
    g->x = param_global(k, "p_x");
    if (g->parts == 1)
        g->m = param_u64(k, "p_m");
    g->n = param_u64(k, "p_n");
    g->lda = param_u64(k, "p_lda");
    g->alpha = param_f32(k, "p_alpha");
    g->beta = param_f32(k, "p_beta");
    lane_warp(k, &g->tid, &g->lane, &g->warp);
    g->qx = nr(k);
    g->dx = nr(k);
    g->sx = nr(k);
    g->nb = nr(k);
    g->l1 = nfd(k);
    g->s2 = nfd(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(g->nb), D(g->n));
    emit(k, "shr.u32 %s, %s, 5;", R(g->nb), R(g->nb));
    g->nbr = g->nb;
    if (f->block_elems != 32) {
        g->nbr = nr(k);
        emit(k, "shr.u32 %s, %s, %d;", R(g->nbr), R(g->nb), __builtin_ctz((unsigned)f->block_elems / 32));
    }
    /* shared: n codes, then nb f64 scales, then nb s32 sums (n % 32 == 0) */
    emit(k, "mov.u32 %s, gq_smem;", R(g->qx));
    emit(k, "mad.lo.u32 %s, %s, 32, %s;", R(g->dx), R(g->nb), R(g->qx));
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(g->sx), R(g->nb), R(g->dx));
    emit(k, "mov.f64 %s, 0d0000000000000000;", FD(g->l1));
    emit(k, "mov.f64 %s, 0d0000000000000000;", FD(g->s2));
    int ctaid = sreg(k, "%ctaid.x"), nctaid = sreg(k, "%nctaid.x"), w64 = nd(k);
    *row = nd(k);
    *stride = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(*row), R(ctaid), WARPS);
    emit(k, "cvt.u64.u32 %s, %s;", D(w64), R(g->warp));
    emit(k, "add.u64 %s, %s, %s;", D(*row), D(*row), D(w64));
    emit(k, "mul.wide.u32 %s, %s, %d;", D(*stride), R(nctaid), WARPS);
    if (g->norm) {
        g->gamma = param_global(k, "p_gamma");
        g->xn = param_global(k, "p_xn");
        g->eps = param_f32(k, "p_eps");
    }
    quantize_x(k, g);
    return block_gate(k, g);
}

/* The kernel's end: its name, parameters (decl, then those from p_x on) and
 * the launch bounds. */
static void g8_finish(strbuf *mod, kern *k, const char *name, strbuf *decl, int has_m, const g8_regs *g)
{
    char dir[64], shared[160], pair[48] = "";
    /* two blocks per SM, as the plugin launches them (one wave): without
     * .minnctapersm the driver's JIT gave gemv8_q4_0 126 registers (the
     * offline ptxas 55) and the SMs ran one block each */
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n.minnctapersm 2\n", THREADS);
    if (g->rope)
        snprintf(pair, sizeof pair, "\t.shared .align 4 .b8 g8_pair[%d];\n", 4 * WARPS);
    snprintf(shared, sizeof shared, "\t.shared .align 16 .b8 g8_red[%d];\n%s%s", 16 * WARPS,
             g->norm ? "\t.shared .align 8 .f64 g8_rstd;\n" : "", pair);
    sb_printf(decl, ".param .u64 p_x, %s.param .u64 p_n, .param .u64 p_lda, .param .f32 p_alpha, .param .f32 p_beta%s",
              has_m ? ".param .u64 p_m, " : "", g->norm ? ", .param .u64 p_gamma, .param .u64 p_xn, .param .f32 p_eps" : "");
    if (g->rope)
        sb_printf(decl, ", .param .u64 p_r0, .param .u64 p_r1, .param .u64 p_r2, .param .u64 p_pos, .param .u64 p_hd, "
                  ".param .u64 p_neox, .param .f64 p_ratio, .param .f64 p_scale");
    kern_finish(mod, k, name, decl->p, dir, shared);
    sb_free(decl);
}

static void gen_gemv8(strbuf *mod, const g8format *f, int parts, int norm, int rope)
{
    kern kk = {0}, *k = &kk;
    g8_regs g = {.parts = parts, .norm = norm, .rope = rope};
    strbuf decl = {0};
    if (parts == 1) {
        sb_printf(&decl, ".param .u64 p_y, .param .u64 p_a, ");
        g.y = param_global(k, "p_y");
        g.a = param_global(k, "p_a");
    } else {
        part_params(k, &g, &decl);
    }
    int row, stride, pdone = np(k), l_row = nlabel(k), l_end = nlabel(k);
    int gate = g8_prologue(k, f, &g, &row, &stride);
    label(k, l_row);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pdone), D(row), D(g.m));
    emit(k, "@%s bra %s;", P(pdone), L(l_end));
    g8_regs pg;
    int prow;
    rope_slot rs;
    part_row(k, &g, row, &pg, &prow);
    if (rope)
        rope_slot_row(k, &g, row, &prow, &rs);
    int out = row_dot(k, f, &pg, prow, gate);
    if (rope) { /* the slot's row and pair again: no registers held through the row for them */
        part_row(k, &g, row, &pg, &prow);
        rope_slot_row(k, &g, row, &prow, &rs);
        rope_pair_store(k, &g, &rs, prow, out);
    }
    emit(k, "add.u64 %s, %s, %s;", D(row), D(row), D(stride));
    emit(k, "bra.uni %s;", L(l_row));
    label(k, l_end);
    char name[32];
    snprintf(name, sizeof name, "gemv8%s%s%s_%s", parts == 1 ? "" : "x", norm ? "n" : "", rope ? "r" : "", f->name);
    g8_finish(mod, k, name, &decl, parts == 1, &g);
}

/* gemv8s_<dtype>: a decode step's gate and up gemvs of one x (p_a0, p_a1
 * into p_y0, p_y1, p_m rows each) and swiglu of their outputs into p_ys:
 * a warp takes row r of both, each stored as gemv8_* stores it, then lane 0
 * stores silu(gate) up as glu_swiglu computes it from those two values. */
static void gen_gemv8s(strbuf *mod, const g8format *f, int norm)
{
    kern kk = {0}, *k = &kk;
    g8_regs g = {.parts = 1, .norm = norm}, up;
    strbuf decl = {0};
    sb_printf(&decl, ".param .u64 p_ys, .param .u64 p_y0, .param .u64 p_a0, .param .u64 p_y1, .param .u64 p_a1, ");
    int ys = param_global(k, "p_ys");
    g.y = param_global(k, "p_y0");
    g.a = param_global(k, "p_a0");
    int y1 = param_global(k, "p_y1"), a1 = param_global(k, "p_a1");
    int row, stride, pdone = np(k), pw = np(k), l_row = nlabel(k), l_next = nlabel(k), l_end = nlabel(k);
    int gate = g8_prologue(k, f, &g, &row, &stride);
    up = g;
    up.y = y1;
    up.a = a1;
    label(k, l_row);
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pdone), D(row), D(g.m));
    emit(k, "@%s bra %s;", P(pdone), L(l_end));
    int vg = row_dot(k, f, &g, row, gate), vu = row_dot(k, f, &up, row, gate);
    emit(k, "setp.ne.u32 %s, %s, 0;", P(pw), R(g.lane));
    emit(k, "@%s bra %s;", P(pw), L(l_next));
    emit(k, "st.global.f32 [%s], %s;", D(addr_of(k, ys, row, 4)), F(swiglu_value(k, vg, vu)));
    label(k, l_next);
    emit(k, "add.u64 %s, %s, %s;", D(row), D(row), D(stride));
    emit(k, "bra.uni %s;", L(l_row));
    label(k, l_end);
    char name[32];
    snprintf(name, sizeof name, norm ? "gemv8sn_%s" : "gemv8s_%s", f->name);
    g8_finish(mod, k, name, &decl, 1, &g);
}

void infer_gemv8(strbuf *mod)
{
    for (size_t i = 0; i < FORMAT_COUNT; i++) {
        gen_gemv8(mod, &formats[i], 1, 0, 0);
        gen_gemv8(mod, &formats[i], RAYO_PTX_GEMV8_PARTS, 0, 0);
        gen_gemv8s(mod, &formats[i], 0);
        /* the same after rmsnorm of x (one launch for rmsnorm and the products of its output) */
        gen_gemv8(mod, &formats[i], RAYO_PTX_GEMV8_PARTS, 1, 0);
        gen_gemv8s(mod, &formats[i], 1);
        /* q, k, v with the rope of q and k (after rmsnorm of x, or not) */
        gen_gemv8(mod, &formats[i], RAYO_PTX_GEMV8_PARTS, 0, 1);
        gen_gemv8(mod, &formats[i], RAYO_PTX_GEMV8_PARTS, 1, 1);
    }
}
