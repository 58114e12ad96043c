/* SPDX-License-Identifier: MIT */
/* sgemm.c - module "sgemm": the fast fp32 SIMT gemm kernels (sgemm_*), and
 * block_tile, the block-to-tile order shared with tf32.c. */
#include "gen-ptx.h"
#include "../plugins/cuda/cuda-ptx.h"

#define RASTER_GROUP 8

/* The block's tile of C (row and column tile indices).  raster: groups of
 * RASTER_GROUP tile rows are walked column by column. */
void block_tile(kern *k, int raster, int *tile_m, int *tile_n)
{
    int bx = sreg(k, "%ctaid.x"), by = sreg(k, "%ctaid.y");
    if (!raster) {
        *tile_m = by;
        *tile_n = bx;
        return;
    }
    int gx = sreg(k, "%nctaid.x"), gy = sreg(k, "%nctaid.y");
    int pid = nr(k), width = nr(k), group = nr(k), first = nr(k), gsize = nr(k), local = nr(k);
    int tm = nr(k), tn = nr(k), r = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %s, %s;", R(pid), R(by), R(gx), R(bx));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(width), R(gx), RASTER_GROUP);
    emit(k, "div.u32 %s, %s, %s;", R(group), R(pid), R(width));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(first), R(group), RASTER_GROUP);
    emit(k, "sub.u32 %s, %s, %s;", R(gsize), R(gy), R(first));
    emit(k, "min.u32 %s, %s, %d;", R(gsize), R(gsize), RASTER_GROUP);
    emit(k, "rem.u32 %s, %s, %s;", R(local), R(pid), R(width));
    emit(k, "rem.u32 %s, %s, %s;", R(r), R(local), R(gsize));
    emit(k, "add.u32 %s, %s, %s;", R(tm), R(first), R(r));
    emit(k, "div.u32 %s, %s, %s;", R(tn), R(local), R(gsize));
    *tile_m = tm;
    *tile_n = tn;
}

/* ---- module: fast fp32 sgemm (SIMT) --------------------------------------
 * 128x128 tiles of C, 256 threads, each computing 8x8 (two 4-row by two
 * 4-column groups so that shared-memory reads are 16-byte vectors), BK 8 or
 * 16, double-buffered shared memory with one barrier per k-tile.  The next
 * k-tile is fetched while the current one is multiplied: into registers
 * (then stored into the other buffer), or with cp.async straight into it
 * where the tile needs no transposition.  Warps cover 8 x 4 threads so a
 * shared load serves a warp in one wavefront.  Any M and N: the tiles on
 * the bottom and right edges read the last row or column again in place of
 * those past the edge, and store only what lies inside.
 * Requires K a multiple of BK, 16-byte aligned rows, N a multiple of 4 (M
 * too with A transposed).
 *
 * Blocked accumulation: the registers hold float sums over blocks of
 * RAYO_PTX_SGEMM_BLOCK_K terms, which are added into a second float sum per
 * element kept in dynamic shared memory (sg_acc, RAYO_PTX_SGEMM_ACC_BYTES:
 * elements 4q..4q+3 of thread t as one float4 at (q * 256 + t) * 16, so a
 * warp's float4 accesses are contiguous).  The
 * rounding error then grows with BLOCK_K + K / BLOCK_K terms, not with K
 * (the registers are all taken: 128 a thread with two blocks an SM).
 * A thread with a sum that is not finite (products near 1e38 that cancel)
 * computes its outputs again in float64 (product-redo.c). */
typedef struct sgemm_cfg {
    const char *name;
    int bk;          /* 8 or 16 */
    int trans_a, trans_b;
    int cp_async;    /* cp.async for the tiles that are copied as they are */
    int raster;      /* grouped block order (L2 reuse) */
} sgemm_cfg;

static const sgemm_cfg sgemm_cfgs[] = {
    /* A, B as stored: the kernels that won their benchmarks (their
     * register-staged twins lost at every size: doc/benchmarks-cuda.md) */
    {"sgemm_nn_k8_async", 8, 0, 0, 1, 0},
    {"sgemm_nn_k16_async", 16, 0, 0, 1, 0},
    {"sgemm_nn_k16_async_r", 16, 0, 0, 1, 1},
    /* the transposed products (cp.async only where a tile is copied as it is) */
    {"sgemm_tn_k8", 8, 1, 0, 0, 0},
    {"sgemm_nt_k8", 8, 0, 1, 0, 0},
    {"sgemm_tt_k8", 8, 1, 1, 0, 0},
    {"sgemm_tn_k16_async", 16, 1, 0, 1, 0},
    {"sgemm_nt_k16", 16, 0, 1, 0, 0},
    {"sgemm_tt_k16_async", 16, 1, 1, 1, 0},
};

#define SG_BM 128
#define SG_BN 128
#define SG_PAD 4 /* floats of padding on transposed-stored tiles (bank conflicts) */

/* Per-thread loader of one 128 x BK operand tile.
 * contiguous_k: source rows run along k (A not transposed, B transposed):
 *   the thread reads float4s along k and stores them transposed (4 scalar
 *   stores) into the [BK][128 + PAD] tile.
 * otherwise: source rows run along m/n; float4s go to [BK][128] as they are. */
typedef struct tile_loader {
    int contiguous_k, async, loads;
    int gaddr[4];    /* global address of each float4 (advanced per k-tile) */
    int soff[4];     /* shared byte offset within a buffer */
    int step;        /* bytes to advance per k-tile: .b64 register */
    int regs[4][4];  /* staged values */
    int row_floats;  /* floats per shared row */
} tile_loader;

static void loader_init(kern *k, tile_loader *t, int contiguous_k, int async, int bk, int tid,
                        int gbase, int ld, int tile0, int limit)
{
    /* gbase: matrix base; ld: leading dimension (elements, .b64); tile0: the
     * tile's first row/col (m or n index, .b64); limit: M or N (.b64).  A
     * row (or float4 of columns) past the limit reads the last one instead:
     * its values reach only rows or columns of C past the edge, which are
     * not stored, and the loop needs no predicates. */
    int last = nd(k);
    emit(k, "sub.u64 %s, %s, %d;", D(last), D(limit), contiguous_k ? 1 : 4);
    t->contiguous_k = contiguous_k;
    t->async = async && !contiguous_k;
    t->loads = SG_BM * bk / 4 / 256;
    t->row_floats = contiguous_k ? SG_BM + SG_PAD : SG_BM;
    t->step = nd(k);
    if (contiguous_k)
        emit(k, "mov.u64 %s, %d;", D(t->step), bk * 4);
    else
        emit(k, "mul.lo.u64 %s, %s, %d;", D(t->step), D(ld), bk * 4);
    for (int l = 0; l < t->loads; l++) {
        int q = nr(k), r = nr(k), c = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(q), R(tid), l * 256);
        int r64 = nd(k), c64 = nd(k), idx = nd(k);
        if (contiguous_k) {
            /* q -> row r = q / (bk/4) of the 128, k offset c = (q % (bk/4)) * 4 */
            emit(k, "shr.u32 %s, %s, %d;", R(r), R(q), bk == 8 ? 1 : 2);
            emit(k, "and.b32 %s, %s, %d;", R(c), R(q), bk / 4 - 1);
            emit(k, "shl.b32 %s, %s, 2;", R(c), R(c));
            emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
            emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(c));
            emit(k, "add.u64 %s, %s, %s;", D(r64), D(r64), D(tile0));
            emit(k, "min.u64 %s, %s, %s;", D(r64), D(r64), D(last));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(ld), D(c64));
            /* shared: element (k = c + j, row r) at (c + j) * row_floats + r */
            t->soff[l] = nr(k);
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(t->soff[l]), R(c), t->row_floats, R(r));
            emit(k, "shl.b32 %s, %s, 2;", R(t->soff[l]), R(t->soff[l]));
        } else {
            /* q -> k row kk = q / 32, column c = (q % 32) * 4 */
            emit(k, "shr.u32 %s, %s, 5;", R(r), R(q));
            emit(k, "and.b32 %s, %s, 31;", R(c), R(q));
            emit(k, "shl.b32 %s, %s, 2;", R(c), R(c));
            emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
            emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(c));
            emit(k, "add.u64 %s, %s, %s;", D(c64), D(c64), D(tile0));
            emit(k, "min.u64 %s, %s, %s;", D(c64), D(c64), D(last)); /* limit % 4 == 0 */
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(ld), D(c64));
            t->soff[l] = nr(k);
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(t->soff[l]), R(r), t->row_floats, R(c));
            emit(k, "shl.b32 %s, %s, 2;", R(t->soff[l]), R(t->soff[l]));
        }
        t->gaddr[l] = nd(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(t->gaddr[l]), D(idx), D(gbase));
        for (int j = 0; j < 4; j++)
            t->regs[l][j] = nf(k);
    }
}

/* Starts fetching the tile at the loader's addresses (into registers, or
 * with cp.async into the buffer at shared address sbuf), then advances the
 * addresses to the next k-tile.  guard: predicate (-1 = always). */
static void loader_fetch(kern *k, tile_loader *t, int sbuf, int guard)
{
    char g[32] = "";
    if (guard >= 0)
        snprintf(g, sizeof g, "@%s ", P(guard));
    for (int l = 0; l < t->loads; l++) {
        if (t->async) {
            int sa = nr(k);
            emit(k, "add.u32 %s, %s, %s;", R(sa), R(sbuf), R(t->soff[l]));
            emit(k, "%scp.async.cg.shared.global [%s], [%s], 16;", g, R(sa), D(t->gaddr[l]));
        } else {
            emit(k, "%sld.global.v4.f32 {%s, %s, %s, %s}, [%s];", g, F(t->regs[l][0]), F(t->regs[l][1]),
                 F(t->regs[l][2]), F(t->regs[l][3]), D(t->gaddr[l]));
        }
        emit(k, "add.u64 %s, %s, %s;", D(t->gaddr[l]), D(t->gaddr[l]), D(t->step));
    }
    if (t->async)
        emit(k, "%scp.async.commit_group;", g);
}

/* Completes the fetch into the buffer at shared address sbuf. */
static void loader_store(kern *k, tile_loader *t, int sbuf, int guard)
{
    char g[32] = "";
    if (guard >= 0)
        snprintf(g, sizeof g, "@%s ", P(guard));
    if (t->async) {
        emit(k, "%scp.async.wait_all;", g);
        return;
    }
    for (int l = 0; l < t->loads; l++) {
        int sa = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(sa), R(sbuf), R(t->soff[l]));
        if (t->contiguous_k) {
            for (int j = 0; j < 4; j++)
                emit(k, "%sst.shared.f32 [%s+%d], %s;", g, R(sa), j * t->row_floats * 4, F(t->regs[l][j]));
        } else {
            emit(k, "%sst.shared.v4.f32 [%s], {%s, %s, %s, %s};", g, R(sa), F(t->regs[l][0]),
                 F(t->regs[l][1]), F(t->regs[l][2]), F(t->regs[l][3]));
        }
    }
}

/* The thread's 64 second sums in sg_acc: SUMS_ZERO sets them to 0,
 * SUMS_FLUSH adds the registers' sums into them and zeroes the registers,
 * SUMS_TOTAL adds them into the registers (the result). */
enum sums_step { SUMS_ZERO, SUMS_FLUSH, SUMS_TOTAL };

static void sums_visit(kern *k, const int *acc, enum sums_step step)
{
    int tid = sreg(k, "%tid.x"), base = nr(k);
    emit(k, "mov.u32 %s, sg_acc;", R(base));
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(base), R(tid), R(base));
    for (int q = 0; q < 16; q++) {
        const int *a = acc + 4 * q, off = q * 256 * 16;
        int t[4] = {nf(k), nf(k), nf(k), nf(k)};
        if (step == SUMS_ZERO) {
            emit(k, "st.shared.v4.f32 [%s+%d], {%s, %s, %s, %s};", R(base), off, C(0.0f), C(0.0f), C(0.0f),
                 C(0.0f));
            continue;
        }
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(t[0]), F(t[1]), F(t[2]), F(t[3]), R(base), off);
        for (int j = 0; j < 4; j++) {
            if (step == SUMS_TOTAL) {
                emit(k, "add.rn.f32 %s, %s, %s;", F(a[j]), F(a[j]), F(t[j]));
            } else {
                emit(k, "add.rn.f32 %s, %s, %s;", F(t[j]), F(t[j]), F(a[j]));
                emit(k, "mov.f32 %s, %s;", F(a[j]), C(0.0f));
            }
        }
        if (step == SUMS_FLUSH)
            emit(k, "st.shared.v4.f32 [%s+%d], {%s, %s, %s, %s};", R(base), off, F(t[0]), F(t[1]), F(t[2]), F(t[3]));
    }
}

/* Split-K (plugins/cuda/cuda-matmul-small.c): block z of a grid nctaid.z
 * deep multiplies the z-th slab of about K / nctaid.z terms into the z-th m x n
 * partial at C + z M N; a grid of depth 1 multiplies all of K into C.
 * Moves the a, b and c addresses to the slab; returns its length (.b64). */
static int k_slab(kern *k, const sgemm_cfg *cfg, int a, int b, int c, int M, int N, int K)
{
    int z = sreg(k, "%ctaid.z"), nz = sreg(k, "%nctaid.z");
    int z64 = nd(k), nz64 = nd(k), ks = nd(k), k0 = nd(k), step = nd(k), len = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(z64), R(z));
    emit(k, "cvt.u64.u32 %s, %s;", D(nz64), R(nz));
    /* slabs of ceil(K / (nz BK)) BK terms, the last one shorter (the host
     * leaves none empty) */
    emit(k, "mul.lo.u64 %s, %s, %d;", D(nz64), D(nz64), cfg->bk);
    emit(k, "add.u64 %s, %s, %s;", D(ks), D(K), D(nz64));
    emit(k, "sub.u64 %s, %s, 1;", D(ks), D(ks));
    emit(k, "div.u64 %s, %s, %s;", D(ks), D(ks), D(nz64));
    emit(k, "mul.lo.u64 %s, %s, %d;", D(ks), D(ks), cfg->bk);
    emit(k, "mul.lo.u64 %s, %s, %s;", D(k0), D(z64), D(ks));
    emit(k, "sub.u64 %s, %s, %s;", D(len), D(K), D(k0));
    emit(k, "min.u64 %s, %s, %s;", D(len), D(len), D(ks));
    /* the slab starts k0 columns into A (k0 rows when A is transposed) and
     * k0 rows into B (k0 columns when B is transposed) */
    emit(k, "shl.b64 %s, %s, 2;", D(step), D(k0));
    if (cfg->trans_a)
        emit(k, "mul.lo.u64 %s, %s, %s;", D(step), D(step), D(M));
    emit(k, "add.u64 %s, %s, %s;", D(a), D(a), D(step));
    emit(k, "shl.b64 %s, %s, 2;", D(step), D(k0));
    if (!cfg->trans_b)
        emit(k, "mul.lo.u64 %s, %s, %s;", D(step), D(step), D(N));
    emit(k, "add.u64 %s, %s, %s;", D(b), D(b), D(step));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(step), D(M), D(N));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(step), D(step), D(z64));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(c), D(step), D(c));
    return len;
}

/* The registers gen_sgemm_fast's epilogue reads. */
typedef struct sg_regs {
    int c, a, b, M, N, alpha, beta, lda, ldb, KS, tx, ty, bm, bn;
} sg_regs;

/* The thread's place in the 16x16 grid of 8x8 outputs: warp w covers tx in
 * [8 (w & 1), +8), ty in [4 (w >> 1), +4). */
static void sg_thread_place(kern *k, int tid, int *tx_out, int *ty_out)
{
    int lane = nr(k), w = nr(k), tx = nr(k), ty = nr(k), t1 = nr(k);
    *tx_out = tx;
    *ty_out = ty;
    emit(k, "and.b32 %s, %s, 31;", R(lane), R(tid));
    emit(k, "shr.u32 %s, %s, 5;", R(w), R(tid));
    emit(k, "and.b32 %s, %s, 1;", R(t1), R(w));
    emit(k, "shl.b32 %s, %s, 3;", R(t1), R(t1));
    emit(k, "and.b32 %s, %s, 7;", R(tx), R(lane));
    emit(k, "add.u32 %s, %s, %s;", R(tx), R(tx), R(t1));
    int t2 = nr(k), t3 = nr(k);
    emit(k, "shr.u32 %s, %s, 1;", R(t2), R(w));
    emit(k, "shl.b32 %s, %s, 2;", R(t2), R(t2));
    emit(k, "shr.u32 %s, %s, 3;", R(t3), R(lane));
    emit(k, "add.u32 %s, %s, %s;", R(ty), R(t2), R(t3));
}

/* acc += the bk steps of the shared tiles at ra (A, rows of a_row floats)
 * and rb (B, rows of b_row floats): 8 + 8 values a step, 64 FMAs. */
static void sg_multiply_tiles(kern *k, int bk, int a_row, int b_row, int ra, int rb, int acc[8][8])
{
    for (int p = 0; p < bk; p++) {
        int av[8], bv[8];
        for (int i = 0; i < 8; i++) {
            av[i] = nf(k);
            bv[i] = nf(k);
        }
        int ao = p * a_row * 4, bo = p * b_row * 4;
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(av[0]), F(av[1]), F(av[2]), F(av[3]), R(ra), ao);
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(av[4]), F(av[5]), F(av[6]), F(av[7]), R(ra), ao + 64 * 4);
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(bv[0]), F(bv[1]), F(bv[2]), F(bv[3]), R(rb), bo);
        emit(k, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", F(bv[4]), F(bv[5]), F(bv[6]), F(bv[7]), R(rb), bo + 64 * 4);
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++)
                emit(k, "fma.rn.f32 %s, %s, %s, %s;", F(acc[i][j]), F(av[i]), F(bv[j]), F(acc[i][j]));
    }
}

/* The 8x8 outputs of a thread whose sums are finite: C = alpha acc + beta C
 * (C read where pb, beta != 0).  Rows and columns of the tile past M or N
 * (edge tiles) are not stored; N % 4 == 0, so a float4 of C is all in or
 * all out. */
static void sg_store_tile(kern *k, const sg_regs *g, int acc[8][8], int ty4, int tx4, int pb)
{
    int c = g->c, M = g->M, N = g->N, alpha = g->alpha, beta = g->beta;
    int col_in[2], pbr = np(k);
    for (int h = 0; h < 2; h++) {
        int col = nd(k);
        col_in[h] = np(k);
        emit(k, "add.u64 %s, %s, %d;", D(col), D(tx4), h * 64);
        emit(k, "setp.lt.u64 %s, %s, %s;", P(col_in[h]), D(col), D(N));
    }
    for (int i = 0; i < 8; i++) {
        int row = nd(k), row_in = np(k);
        emit(k, "add.u64 %s, %s, %d;", D(row), D(ty4), (i & 3) + (i >> 2) * 64);
        emit(k, "setp.lt.u64 %s, %s, %s;", P(row_in), D(row), D(M));
        for (int h = 0; h < 2; h++) {
            int col = nd(k), idx = nd(k), ca = nd(k), o[4], r[4], ps = np(k);
            emit(k, "and.pred %s, %s, %s;", P(ps), P(row_in), P(col_in[h]));
            emit(k, "and.pred %s, %s, %s;", P(pbr), P(ps), P(pb));
            emit(k, "add.u64 %s, %s, %d;", D(col), D(tx4), h * 64);
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(row), D(N), D(col));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ca), D(idx), D(c));
            for (int j = 0; j < 4; j++) {
                o[j] = nf(k);
                r[j] = nf(k);
                emit(k, "mul.rn.f32 %s, %s, %s;", F(r[j]), F(acc[i][h * 4 + j]), F(alpha));
            }
            emit(k, "@%s ld.global.v4.f32 {%s, %s, %s, %s}, [%s];", P(pbr), F(o[0]), F(o[1]), F(o[2]), F(o[3]), D(ca));
            for (int j = 0; j < 4; j++)
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pbr), F(r[j]), F(o[j]), F(beta), F(r[j]));
            emit(k, "@%s st.global.v4.f32 [%s], {%s, %s, %s, %s};", P(ps), D(ca), F(r[0]), F(r[1]), F(r[2]), F(r[3]));
        }
    }
}

/* C = alpha acc + beta C (C read only when beta != 0); a thread with a sum
 * that is not finite computes its 64 outputs again in float64. */
static void sg_epilogue(kern *k, const sgemm_cfg *cfg, const sg_regs *g, int acc[8][8])
{
    int a = g->a, b = g->b, c = g->c, M = g->M, N = g->N, alpha = g->alpha, beta = g->beta;
    int lda = g->lda, ldb = g->ldb, KS = g->KS, tx = g->tx, ty = g->ty, bm = g->bm, bn = g->bn;
    int pb = np(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(beta), C(0.0f));
    int ty4 = nd(k), tx4 = nd(k), t64 = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(ty));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ty4), D(t64), D(bm));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tx));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(tx4), D(t64), D(bn));
    /* a sum that is not finite: the thread's 64 outputs again in float64 */
    int l_fast = nlabel(k), l_end = nlabel(k), bad = any_not_finite(k, &acc[0][0], 64), one = nd(k);
    emit(k, "@!%s bra %s;", P(bad), L(l_fast));
    emit(k, "mov.u64 %s, 1;", D(one));
    redo_product rp = {a, b, cfg->trans_a ? one : lda, cfg->trans_a ? lda : one,
                       cfg->trans_b ? ldb : one, cfg->trans_b ? one : ldb, M, N, KS, RAYO_DTYPE_F32};
    redo_span rows = {ty4, 2, 64, 4}, cols = {tx4, 2, 64, 4};
    redo_tile(k, &rp, &rows, &cols, c, N, alpha, beta);
    emit(k, "bra %s;", L(l_end));
    label(k, l_fast);
    sg_store_tile(k, g, acc, ty4, tx4, pb);
    label(k, l_end);
}

/* The thread's 64 float sums, and the second sums behind them, set to 0. */
static void sg_zero_sums(kern *k, int acc[8][8])
{
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            acc[i][j] = nf(k);
            emit(k, "mov.f32 %s, %s;", F(acc[i][j]), C(0.0f));
        }
    sums_visit(k, &acc[0][0], SUMS_ZERO);
}

/* After every RAYO_PTX_SGEMM_BLOCK_K terms (kt1 tiles of bk done): the float
 * sums into the second sums. */
static void sg_flush_after_block(kern *k, int bk, int kt1, int acc[8][8])
{
    int blk = nd(k), pkeep = np(k), l_keep = nlabel(k);
    emit(k, "and.b64 %s, %s, %d;", D(blk), D(kt1), RAYO_PTX_SGEMM_BLOCK_K / bk - 1);
    emit(k, "setp.ne.u64 %s, %s, 0;", P(pkeep), D(blk));
    emit(k, "@%s bra %s;", P(pkeep), L(l_keep));
    sums_visit(k, &acc[0][0], SUMS_FLUSH);
    label(k, l_keep);
}

/* The prologue of the k loop: tile 0 of A and B into buffer 0. */
static void sg_load_first_tiles(kern *k, tile_loader *la, tile_loader *lb, int sA, int sB)
{
    loader_fetch(k, la, sA, -1);
    loader_fetch(k, lb, sB, -1);
    loader_store(k, la, sA, -1);
    loader_store(k, lb, sB, -1);
    emit(k, "bar.sync 0;");
}

static void gen_sgemm_fast(strbuf *mod, const sgemm_cfg *cfg)
{
    kern kk = {0}, *k = &kk;
    const int bk = cfg->bk;
    int c = param_global(k, "p_c"), a = param_global(k, "p_a"), b = param_global(k, "p_b");
    int M = param_u64(k, "p_m"), N = param_u64(k, "p_n"), K = param_u64(k, "p_k");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    int tid = sreg(k, "%tid.x"), bx, by;
    block_tile(k, cfg->raster, &by, &bx);
    int KS = k_slab(k, cfg, a, b, c, M, N, K);
    int tx, ty;
    sg_thread_place(k, tid, &tx, &ty);
    int bm = nd(k), bn = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(bm), R(by), SG_BM);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(bn), R(bx), SG_BN);

    /* A_op tile (128 rows of m x bk): contiguous along k unless A is transposed;
     * B_op tile (bk x 128 of n): contiguous along n unless B is transposed. */
    tile_loader la, lb;
    int lda = nd(k), ldb = nd(k);
    emit(k, "mov.u64 %s, %s;", D(lda), D(cfg->trans_a ? M : K));
    emit(k, "mov.u64 %s, %s;", D(ldb), D(cfg->trans_b ? K : N));
    loader_init(k, &la, !cfg->trans_a, cfg->cp_async, bk, tid, a, lda, bm, M);
    loader_init(k, &lb, cfg->trans_b, cfg->cp_async, bk, tid, b, ldb, bn, N);
    const int a_buf = bk * la.row_floats * 4, b_buf = bk * lb.row_floats * 4;
    int sA = nr(k), sB = nr(k);
    emit(k, "mov.u32 %s, sg_a;", R(sA));
    emit(k, "mov.u32 %s, sg_b;", R(sB));

    int acc[8][8];
    sg_zero_sums(k, acc);
    sg_load_first_tiles(k, &la, &lb, sA, sB);

    int kt = nd(k), KT = nd(k), cur = nr(k), pn = np(k), l_loop = nlabel(k);
    emit(k, "shr.u64 %s, %s, %d;", D(KT), D(KS), bk == 8 ? 3 : 4);
    emit(k, "mov.u64 %s, 0;", D(kt));
    emit(k, "mov.u32 %s, 0;", R(cur));
    /* per-thread fragment base offsets */
    int fa = nr(k), fb = nr(k);
    emit(k, "shl.b32 %s, %s, 4;", R(fa), R(ty)); /* ty * 4 floats * 4 bytes */
    emit(k, "shl.b32 %s, %s, 4;", R(fb), R(tx));
    label(k, l_loop);
    int nxt = nr(k), curA = nr(k), curB = nr(k), nxtA = nr(k), nxtB = nr(k), kt1 = nd(k);
    emit(k, "xor.b32 %s, %s, 1;", R(nxt), R(cur));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(curA), R(cur), a_buf, R(sA));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(curB), R(cur), b_buf, R(sB));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(nxtA), R(nxt), a_buf, R(sA));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(nxtB), R(nxt), b_buf, R(sB));
    emit(k, "add.u64 %s, %s, 1;", D(kt1), D(kt));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pn), D(kt1), D(KT));
    loader_fetch(k, &la, nxtA, pn);
    loader_fetch(k, &lb, nxtB, pn);
    int ra = nr(k), rb = nr(k);
    emit(k, "add.u32 %s, %s, %s;", R(ra), R(curA), R(fa));
    emit(k, "add.u32 %s, %s, %s;", R(rb), R(curB), R(fb));
    sg_multiply_tiles(k, bk, la.row_floats, lb.row_floats, ra, rb, acc);
    loader_store(k, &la, nxtA, pn);
    loader_store(k, &lb, nxtB, pn);
    sg_flush_after_block(k, bk, kt1, acc);
    emit(k, "bar.sync 0;");
    emit(k, "mov.u32 %s, %s;", R(cur), R(nxt));
    emit(k, "mov.u64 %s, %s;", D(kt), D(kt1));
    emit(k, "@%s bra %s;", P(pn), L(l_loop));

    sums_visit(k, &acc[0][0], SUMS_TOTAL);
    sg_regs g = { .c = c, .a = a, .b = b, .M = M, .N = N, .alpha = alpha, .beta = beta, .lda = lda,
                  .ldb = ldb, .KS = KS, .tx = tx, .ty = ty, .bm = bm, .bn = bn };
    sg_epilogue(k, cfg, &g, acc);
    char shared[256];
    snprintf(shared, sizeof shared, "\t.shared .align 16 .b8 sg_a[%d];\n\t.shared .align 16 .b8 sg_b[%d];\n",
             2 * a_buf, 2 * b_buf);
    kern_finish(mod, k, cfg->name,
                ".param .u64 p_c, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_k, .param .f32 p_alpha, .param .f32 p_beta",
                ".maxntid 256, 1, 1\n.minnctapersm 2\n", shared);
}

void module_sgemm(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 16 .b8 sg_acc[];\n");
    for (size_t i = 0; i < sizeof sgemm_cfgs / sizeof sgemm_cfgs[0]; i++)
        gen_sgemm_fast(mod, &sgemm_cfgs[i]);
}
