/* SPDX-License-Identifier: MIT */
/* tf32.c - module "tf32": TF32 tensor-core gemm kernels (tf32_*), one per
 * entry of tf32_cfgs, and the table of their launch shapes for the plugin. */
#include "gen-ptx.h"

/* ---- module: TF32 tensor-core gemm (mma.sync m16n8k8) ---------------------
 * Used only when the configuration allows reduced precision.  C row-major,
 * A (m x k) and B (k x n) row-major, no transposes.  Block tile BM x BN,
 * BK 32, a STAGES-deep cp.async pipeline in dynamic shared memory; each warp
 * owns a (MT*16) x (NT*8) piece of C in registers.
 * Two shared-memory layouts:
 *   padded (swz = 0): A rows padded by 4 floats, B rows by 8, so that the
 *     scalar fragment loads are free of bank conflicts;
 *   swizzled (swz = 1): no padding; 16-byte chunks of a row are permuted
 *     (A: chunk ^ 4 (row & 1); B: chunk ^ 2 ((row >> 2) & 3)).  The k order
 *     inside each 16-wide k block is permuted too (the product does not
 *     depend on it as long as A and B agree): thread t's four k values of a
 *     k16 block become adjacent, so A fragments load as 16-byte vectors, a
 *     quarter of the load instructions, and B's scalar loads stay
 *     conflict-free.
 * raster: blocks walk C in groups of 8 block rows, so that consecutive
 * blocks share A and B tiles in L2.
 * Requires M % BM == 0, N % BN == 0, K % 32 == 0 and 16-byte aligned rows. */
typedef struct tf32_cfg {
    const char *name;
    int warps_m, warps_n, mt, nt, stages;
    int min_ctas;  /* .minnctapersm hint: caps registers so this many blocks fit an SM */
    int swz;       /* swizzled layout with vector A fragments */
    int raster;    /* grouped block order */
    /* the 16-bit kernels of module "mma16" (below) only: */
    int elem;      /* TF_TF32, or the f16/bf16 inputs of mma m16n8k16 */
    int ta, tb;    /* A stored k x m, B stored n x k */
    int blk;       /* second sums every blk k values (0: one sum) */
    int bk;        /* k values per tile (0: TF_BK) */
    int pipe;      /* fragments loaded a k16 step ahead, across tiles */
} tf32_cfg;

enum { TF_TF32, TF_F16, TF_BF16 };

/* The kernels that won their benchmarks on the H100 and H200 (one size each
 * or more; doc/benchmarks-cuda.md keeps the figures of the variants that
 * lost at every size and are no longer generated). */
static const tf32_cfg tf32_cfgs[] = {
    /* the fastest at 4096^3 */
    {.name = "tf32_128x128_w2x2", .warps_m = 2, .warps_n = 2, .mt = 4, .nt = 8, .stages = 3, .min_ctas = 2},
    /* within noise of it and steadier at 8192^3: the default */
    {.name = "tf32_128x128_w2x2_r", .warps_m = 2, .warps_n = 2, .mt = 4, .nt = 8, .stages = 3, .min_ctas = 2,
     .raster = 1},
    /* the fastest at 8192^3 */
    {.name = "tf32_128x128_w2x2_swz", .warps_m = 2, .warps_n = 2, .mt = 4, .nt = 8, .stages = 3, .min_ctas = 2,
     .swz = 1, .raster = 1},
};

#define TF_BK 32
#define TF_APAD 4
#define TF_BPAD 8

typedef struct tf32_kernel tf32_kernel;
static void mma16_copies(tf32_kernel *tk);
static void mma16_issue(tf32_kernel *tk);
static void mma16_fragments(tf32_kernel *tk);
static void mma16_tile(tf32_kernel *tk, int base);
static void mma16_fold(tf32_kernel *tk);
static void mma16_fold_every(tf32_kernel *tk, int kt);
static void mma16_main_loop_pipelined(tf32_kernel *tk);
static void mma16_epilogue(tf32_kernel *tk);
static void tf32_issue(tf32_kernel *tk);

static int cfg_bk(const tf32_cfg *cfg) { return cfg->bk ? cfg->bk : TF_BK; }
static int log2i(int v)
{
    int l = 0;
    while ((1 << l) < v)
        l++;
    return l;
}

static int tf32_a_row(const tf32_cfg *cfg) { return cfg->swz ? TF_BK : TF_BK + TF_APAD; }
static int tf32_b_row(const tf32_cfg *cfg) { return cfg->warps_n * cfg->nt * 8 + (cfg->swz ? 0 : TF_BPAD); }

static int tf32_smem_bytes(const tf32_cfg *cfg)
{
    int bm = cfg->warps_m * cfg->mt * 16;
    return cfg->stages * (bm * tf32_a_row(cfg) + TF_BK * tf32_b_row(cfg)) * 4;
}

/* The state of one TF32 kernel while it is written: its shape (from the
 * config) and the registers the steps below share. */
struct tf32_kernel {
    kern *k;
    const tf32_cfg *cfg;
    int threads, bm_, bn_, wtm, wtn; /* threads; block and warp tile (elements) */
    int a_row, b_row;                /* floats per shared row of A and B */
    int a_stage, stage;              /* bytes: A's part of a stage, a whole stage */
    int c, a, b, M, N, K, alpha, beta; /* parameters */
    int tid, g, t, wm, wn;           /* thread; its group and thread in group; warp row, column */
    int bm, bn, smem;                /* the block's first row and column of C; tf_smem */
    int a_loads, b_loads;            /* cp.async copies per thread per tile */
    int ag[8], as[8], bg[8], bs[8];  /* their global addresses and stage offsets */
    int bstep, KT, fetched, ld_stage;
    int acc[8][8][4];                /* C fragments: [mt][nt][4] */
    int acc2[8][8][4];               /* 16-bit, blk: the second sums */
    int M32, K32, lda, ldb, ldc;     /* 16-bit: limits and row strides */
    int a_rowb, b_rowb;              /* 16-bit: bytes per shared row of A and B */
    int glim[16], grow[16];          /* 16-bit copies: their limits (below) */
    int gstep[16];                   /* 16-bit copies: register step per tile, or -1 (BK * 2 bytes) */
    int wrow, wcol;                  /* the thread's first row, the warp's first column */
    int fa, fb, fa_s[2], fb_j[8];    /* fragment offsets within a stage (padded, swizzled; 16-bit: lanes' rows) */
};

/* Parameters, thread and warp indices, the block's tile. */
static void tf32_setup(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    tk->c = param_global(k, "p_c");
    tk->a = param_global(k, "p_a");
    tk->b = param_global(k, "p_b");
    int M = tk->M = param_u64(k, "p_m"); /* the TF32 kernels: the grid covers M */
    tk->N = param_u64(k, "p_n");
    tk->K = param_u64(k, "p_k");
    if (cfg->elem != TF_TF32) {
        tk->lda = param_u64(k, "p_lda");
        tk->ldb = param_u64(k, "p_ldb");
        tk->ldc = param_u64(k, "p_ldc");
        tk->M32 = nr(k);
        tk->K32 = nr(k);
        emit(k, "cvt.u32.u64 %s, %s;", R(tk->M32), D(M));
        emit(k, "cvt.u32.u64 %s, %s;", R(tk->K32), D(tk->K));
    }
    tk->alpha = param_f32(k, "p_alpha");
    tk->beta = param_f32(k, "p_beta");
    tk->tid = sreg(k, "%tid.x");
    int lane = nr(k), warp = nr(k);
    tk->g = nr(k);
    tk->t = nr(k);
    tk->wm = nr(k);
    tk->wn = nr(k);
    emit(k, "and.b32 %s, %s, 31;", R(lane), R(tk->tid));
    emit(k, "shr.u32 %s, %s, 5;", R(warp), R(tk->tid));
    emit(k, "shr.u32 %s, %s, 2;", R(tk->g), R(lane));
    emit(k, "and.b32 %s, %s, 3;", R(tk->t), R(lane));
    emit(k, "div.u32 %s, %s, %d;", R(tk->wm), R(warp), cfg->warps_n);
    emit(k, "rem.u32 %s, %s, %d;", R(tk->wn), R(warp), cfg->warps_n);
    int tile_m, tile_n;
    block_tile(k, cfg->raster, &tile_m, &tile_n);
    tk->bm = nd(k);
    tk->bn = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(tk->bm), R(tile_m), tk->bm_);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(tk->bn), R(tile_n), tk->bn_);
    tk->smem = nr(k);
    emit(k, "mov.u32 %s, tf_smem;", R(tk->smem));
}

/* The thread's l-th 16-byte copy of the A tile (bm_ x 32, 8 chunks a row):
 * its global address ag[l] and stage offset as[l]. */
static void tf32_a_copy(tf32_kernel *tk, int l)
{
    kern *k = tk->k;
    int q = nr(k), r = nr(k), cc = nr(k), r64 = nd(k), c64 = nd(k), idx = nd(k), phys = nr(k);
    emit(k, "add.u32 %s, %s, %d;", R(q), R(tk->tid), l * tk->threads);
    emit(k, "shr.u32 %s, %s, 3;", R(r), R(q));
    emit(k, "and.b32 %s, %s, 7;", R(cc), R(q));
    emit(k, "mov.u32 %s, %s;", R(phys), R(cc));
    if (tk->cfg->swz) { /* chunk ^ 4 (row & 1) */
        int sw = nr(k);
        emit(k, "and.b32 %s, %s, 1;", R(sw), R(r));
        emit(k, "shl.b32 %s, %s, 2;", R(sw), R(sw));
        emit(k, "xor.b32 %s, %s, %s;", R(phys), R(phys), R(sw));
    }
    emit(k, "shl.b32 %s, %s, 2;", R(cc), R(cc));
    emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(cc));
    emit(k, "add.u64 %s, %s, %s;", D(r64), D(r64), D(tk->bm));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(tk->K), D(c64));
    tk->ag[l] = nd(k);
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(tk->ag[l]), D(idx), D(tk->a));
    tk->as[l] = nr(k);
    emit(k, "shl.b32 %s, %s, 2;", R(phys), R(phys));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(tk->as[l]), R(r), tk->a_row, R(phys));
    emit(k, "shl.b32 %s, %s, 2;", R(tk->as[l]), R(tk->as[l]));
}

/* The thread's l-th 16-byte copy of the B tile (32 x bn_): bg[l], bs[l]. */
static void tf32_b_copy(tf32_kernel *tk, int l)
{
    kern *k = tk->k;
    int q = nr(k), r = nr(k), cc = nr(k), r64 = nd(k), c64 = nd(k), idx = nd(k), phys = nr(k);
    int per_row = tk->bn_ / 4;
    emit(k, "add.u32 %s, %s, %d;", R(q), R(tk->tid), l * tk->threads);
    emit(k, "div.u32 %s, %s, %d;", R(r), R(q), per_row);
    emit(k, "rem.u32 %s, %s, %d;", R(cc), R(q), per_row);
    emit(k, "mov.u32 %s, %s;", R(phys), R(cc));
    if (tk->cfg->swz) { /* chunk ^ 2 ((row >> 2) & 3) */
        int sw = nr(k);
        emit(k, "shr.u32 %s, %s, 2;", R(sw), R(r));
        emit(k, "and.b32 %s, %s, 3;", R(sw), R(sw));
        emit(k, "shl.b32 %s, %s, 1;", R(sw), R(sw));
        emit(k, "xor.b32 %s, %s, %s;", R(phys), R(phys), R(sw));
    }
    emit(k, "shl.b32 %s, %s, 2;", R(cc), R(cc));
    emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(cc));
    emit(k, "add.u64 %s, %s, %s;", D(c64), D(c64), D(tk->bn));
    emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(tk->N), D(c64));
    tk->bg[l] = nd(k);
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(tk->bg[l]), D(idx), D(tk->b));
    tk->bs[l] = nr(k);
    emit(k, "shl.b32 %s, %s, 2;", R(phys), R(phys));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(tk->bs[l]), R(r), tk->b_row, R(phys));
    emit(k, "shl.b32 %s, %s, 2;", R(tk->bs[l]), R(tk->bs[l]));
    emit(k, "add.u32 %s, %s, %d;", R(tk->bs[l]), R(tk->bs[l]), tk->a_stage);
}

/* Loads tile `fetched` into stage ld_stage if it exists; always commits
 * (empty groups keep the wait_group count right at the end). */
static void tile_issue(tf32_kernel *tk)
{
    kern *k = tk->k;
    if (tk->cfg->elem != TF_TF32)
        mma16_issue(tk);
    else
        tf32_issue(tk);
    emit(k, "cp.async.commit_group;");
    emit(k, "add.u64 %s, %s, 1;", D(tk->fetched), D(tk->fetched));
    int pw = np(k);
    emit(k, "add.u32 %s, %s, 1;", R(tk->ld_stage), R(tk->ld_stage));
    emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(tk->ld_stage), tk->cfg->stages);
    emit(k, "@%s mov.u32 %s, 0;", P(pw), R(tk->ld_stage));
}

static void tf32_issue(tf32_kernel *tk)
{
    kern *k = tk->k;
    int pv = np(k), base = nr(k);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pv), D(tk->fetched), D(tk->KT));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(tk->ld_stage), tk->stage, R(tk->smem));
    for (int l = 0; l < tk->a_loads; l++) {
        int sa = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(sa), R(base), R(tk->as[l]));
        emit(k, "@%s cp.async.cg.shared.global [%s], [%s], 16;", P(pv), R(sa), D(tk->ag[l]));
        emit(k, "add.u64 %s, %s, %d;", D(tk->ag[l]), D(tk->ag[l]), TF_BK * 4);
    }
    for (int l = 0; l < tk->b_loads; l++) {
        int sb = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(sb), R(base), R(tk->bs[l]));
        emit(k, "@%s cp.async.cg.shared.global [%s], [%s], 16;", P(pv), R(sb), D(tk->bg[l]));
        emit(k, "add.u64 %s, %s, %s;", D(tk->bg[l]), D(tk->bg[l]), D(tk->bstep));
    }
}

/* The copy assignments, then the first stages - 1 tiles in flight. */
static void tf32_prologue(tf32_kernel *tk)
{
    kern *k = tk->k;
    if (tk->cfg->elem != TF_TF32) {
        mma16_copies(tk);
        tk->KT = nd(k);
        emit(k, "add.u64 %s, %s, %d;", D(tk->KT), D(tk->K), cfg_bk(tk->cfg) - 1); /* a last partial tile */
        emit(k, "shr.u64 %s, %s, %d;", D(tk->KT), D(tk->KT), log2i(cfg_bk(tk->cfg)));
    } else {
        tk->a_loads = tk->bm_ * TF_BK / 4 / tk->threads;
        tk->b_loads = TF_BK * tk->bn_ / 4 / tk->threads;
        for (int l = 0; l < tk->a_loads; l++)
            tf32_a_copy(tk, l);
        for (int l = 0; l < tk->b_loads; l++)
            tf32_b_copy(tk, l);
        tk->bstep = nd(k);
        emit(k, "mul.lo.u64 %s, %s, %d;", D(tk->bstep), D(tk->N), TF_BK * 4);
        tk->KT = nd(k);
        emit(k, "shr.u64 %s, %s, 5;", D(tk->KT), D(tk->K));
    }
    tk->fetched = nd(k);
    tk->ld_stage = nr(k);
    emit(k, "mov.u64 %s, 0;", D(tk->fetched));
    emit(k, "mov.u32 %s, 0;", R(tk->ld_stage));
    for (int s = 0; s < tk->cfg->stages - 1; s++)
        tile_issue(tk);
}

/* Zeroed accumulators, and each thread's fragment offsets within a stage. */
static void tf32_fragments(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    for (int i = 0; i < cfg->mt; i++)
        for (int j = 0; j < cfg->nt; j++)
            for (int e = 0; e < 4; e++) {
                tk->acc[i][j][e] = nf(k);
                emit(k, "mov.f32 %s, %s;", F(tk->acc[i][j][e]), C(0.0f));
                if (cfg->blk) {
                    tk->acc2[i][j][e] = nf(k);
                    emit(k, "mov.f32 %s, %s;", F(tk->acc2[i][j][e]), C(0.0f));
                }
            }
    tk->wrow = nr(k);
    tk->wcol = nr(k);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(tk->wrow), R(tk->wm), tk->wtm);
    emit(k, "add.u32 %s, %s, %s;", R(tk->wrow), R(tk->wrow), R(tk->g)); /* the warp's row + g */
    emit(k, "mul.lo.u32 %s, %s, %d;", R(tk->wcol), R(tk->wn), tk->wtn);
    tk->fa = nr(k);
    tk->fb = nr(k);
    tk->fa_s[0] = tk->fa_s[1] = -1;
    if (cfg->elem != TF_TF32) {
        mma16_fragments(tk);
        return;
    }
    if (!cfg->swz) {
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(tk->fa), R(tk->wrow), tk->a_row, R(tk->t));
        emit(k, "shl.b32 %s, %s, 2;", R(tk->fa), R(tk->fa));
        int col = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(col), R(tk->wcol), R(tk->g));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(tk->fb), R(tk->t), tk->b_row, R(col));
        emit(k, "shl.b32 %s, %s, 2;", R(tk->fb), R(tk->fb));
        emit(k, "add.u32 %s, %s, %d;", R(tk->fb), R(tk->fb), tk->a_stage);
        return;
    }
    /* A: row wrow, chunk ((s16 ^ (g & 1)) << 2) + t of its 8 */
    int par = nr(k);
    emit(k, "and.b32 %s, %s, 1;", R(par), R(tk->g));
    for (int s16 = 0; s16 < 2; s16++) {
        int ch = nr(k);
        tk->fa_s[s16] = nr(k);
        emit(k, "xor.b32 %s, %s, %d;", R(ch), R(par), s16);
        emit(k, "shl.b32 %s, %s, 2;", R(ch), R(ch));
        emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(tk->t));
        emit(k, "shl.b32 %s, %s, 2;", R(ch), R(ch));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(tk->fa_s[s16]), R(tk->wrow), tk->a_row, R(ch));
        emit(k, "shl.b32 %s, %s, 2;", R(tk->fa_s[s16]), R(tk->fa_s[s16]));
    }
    /* B: row 4t (+ immediates), column chunk wcol/4 + (2j ^ 2t), element g within the two chunks */
    int t2 = nr(k), rowoff = nr(k), wc4 = nr(k);
    emit(k, "shl.b32 %s, %s, 1;", R(t2), R(tk->t));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(rowoff), R(tk->t), 4 * tk->b_row);
    emit(k, "shr.u32 %s, %s, 2;", R(wc4), R(tk->wcol));
    for (int j = 0; j < cfg->nt; j++) {
        int ch = nr(k);
        tk->fb_j[j] = nr(k);
        emit(k, "xor.b32 %s, %s, %d;", R(ch), R(t2), 2 * j);
        emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(wc4));
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(ch), R(ch), R(tk->g));
        emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(rowoff));
        emit(k, "shl.b32 %s, %s, 2;", R(tk->fb_j[j]), R(ch));
        emit(k, "add.u32 %s, %s, %d;", R(tk->fb_j[j]), R(tk->fb_j[j]), tk->a_stage);
    }
}

/* acc[i][j] += A fragment a[0..3] x B fragment b[0..1] */
static void tf32_mma(tf32_kernel *tk, int i, int j, const int a[4], const int b[2])
{
    const int *d = tk->acc[i][j];
    emit(tk->k, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%s, %s, %s, %s}, "
                "{%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s};",
         F(d[0]), F(d[1]), F(d[2]), F(d[3]), R(a[0]), R(a[1]), R(a[2]), R(a[3]), R(b[0]), R(b[1]),
         F(d[0]), F(d[1]), F(d[2]), F(d[3]));
}

/* One k-tile from the stage at `base`, padded layout: scalar fragment loads. */
static void tf32_tile_padded(tf32_kernel *tk, int base)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int pa = nr(k), pbb = nr(k);
    emit(k, "add.u32 %s, %s, %s;", R(pa), R(base), R(tk->fa));
    emit(k, "add.u32 %s, %s, %s;", R(pbb), R(base), R(tk->fb));
    for (int ks = 0; ks < TF_BK / 8; ks++) {
        int af[8][4], bf[8][2];
        for (int i = 0; i < cfg->mt; i++)
            for (int e = 0; e < 4; e++) {
                /* a0 (g, t) a1 (g+8, t) a2 (g, t+4) a3 (g+8, t+4) */
                int off = ((i * 16 + (e & 1) * 8) * tk->a_row + ks * 8 + (e >> 1) * 4) * 4;
                af[i][e] = nr(k);
                emit(k, "ld.shared.b32 %s, [%s+%d];", R(af[i][e]), R(pa), off);
            }
        for (int j = 0; j < cfg->nt; j++)
            for (int e = 0; e < 2; e++) {
                /* b0 (k = t, n = g) b1 (k = t+4, n = g) */
                int off = ((ks * 8 + e * 4) * tk->b_row + j * 8) * 4;
                bf[j][e] = nr(k);
                emit(k, "ld.shared.b32 %s, [%s+%d];", R(bf[j][e]), R(pbb), off);
            }
        for (int i = 0; i < cfg->mt; i++)
            for (int j = 0; j < cfg->nt; j++)
                tf32_mma(tk, i, j, af[i], bf[j]);
    }
}

/* One k-tile from the stage at `base`, swizzled layout: A fragments as
 * 16-byte vectors. */
static void tf32_tile_swizzled(tf32_kernel *tk, int base)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int pa[2], pb[8];
    for (int s16 = 0; s16 < 2; s16++) {
        pa[s16] = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(pa[s16]), R(base), R(tk->fa_s[s16]));
    }
    for (int j = 0; j < cfg->nt; j++) {
        pb[j] = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(pb[j]), R(base), R(tk->fb_j[j]));
    }
    for (int s16 = 0; s16 < TF_BK / 16; s16++) {
        /* x[i][h][0..3]: thread t's four k values of this k16 block, rows g (h 0) and g+8 */
        int x[8][2][4];
        for (int i = 0; i < cfg->mt; i++)
            for (int h = 0; h < 2; h++) {
                for (int e = 0; e < 4; e++)
                    x[i][h][e] = nr(k);
                emit(k, "ld.shared.v4.b32 {%s, %s, %s, %s}, [%s+%d];", R(x[i][h][0]), R(x[i][h][1]),
                     R(x[i][h][2]), R(x[i][h][3]), R(pa[s16]), (i * 16 + h * 8) * tk->a_row * 4);
            }
        for (int step = 0; step < 2; step++) {
            int bf[8][2];
            for (int j = 0; j < cfg->nt; j++)
                for (int e = 0; e < 2; e++) {
                    /* k row 16 s16 + 4t + 2 step + e, column as fb_j */
                    bf[j][e] = nr(k);
                    emit(k, "ld.shared.b32 %s, [%s+%d];", R(bf[j][e]), R(pb[j]),
                         (s16 * 16 + 2 * step + e) * tk->b_row * 4);
                }
            for (int i = 0; i < cfg->mt; i++) {
                const int af[4] = {x[i][0][2 * step], x[i][1][2 * step], x[i][0][2 * step + 1],
                                   x[i][1][2 * step + 1]};
                for (int j = 0; j < cfg->nt; j++)
                    tf32_mma(tk, i, j, af, bf[j]);
            }
        }
    }
}

/* The k loop: wait for the oldest stage, start the next copy, multiply. */
static void tf32_main_loop(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int kt = nd(k), cstage = nr(k), pl = np(k), l_loop = nlabel(k), l_done = nlabel(k);
    emit(k, "mov.u64 %s, 0;", D(kt));
    emit(k, "mov.u32 %s, 0;", R(cstage));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pl), D(kt), D(tk->KT));
    emit(k, "@%s bra %s;", P(pl), L(l_done));
    label(k, l_loop);
    emit(k, "cp.async.wait_group %d;", cfg->stages - 2);
    emit(k, "bar.sync 0;");
    tile_issue(tk);
    int base = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(cstage), tk->stage, R(tk->smem));
    if (cfg->elem != TF_TF32)
        mma16_tile(tk, base);
    else if (!cfg->swz)
        tf32_tile_padded(tk, base);
    else
        tf32_tile_swizzled(tk, base);
    mma16_fold_every(tk, kt);
    int pw = np(k);
    emit(k, "add.u32 %s, %s, 1;", R(cstage), R(cstage));
    emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(cstage), cfg->stages);
    emit(k, "@%s mov.u32 %s, 0;", P(pw), R(cstage));
    emit(k, "add.u64 %s, %s, 1;", D(kt), D(kt));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pl), D(kt), D(tk->KT));
    emit(k, "@%s bra %s;", P(pl), L(l_loop));
    label(k, l_done);
    emit(k, "cp.async.wait_all;");
    if (cfg->blk) { /* the last sums; the epilogue writes the second ones */
        mma16_fold(tk);
        memcpy(tk->acc, tk->acc2, sizeof tk->acc);
    }
}

/* The thread's first row and column of C (u64): c0,c1 at (g, 2t..2t+1),
 * c2,c3 at (g+8, 2t..2t+1) of each m16 x n8 tile. */
static void c_origin(tf32_kernel *tk, int *row0, int *col0)
{
    kern *k = tk->k;
    *row0 = nd(k);
    *col0 = nd(k);
    int t64 = nd(k), ccol = nr(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tk->wrow));
    emit(k, "add.u64 %s, %s, %s;", D(*row0), D(tk->bm), D(t64));
    emit(k, "mad.lo.u32 %s, %s, 2, %s;", R(ccol), R(tk->t), R(tk->wcol));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(ccol));
    emit(k, "add.u64 %s, %s, %s;", D(*col0), D(tk->bn), D(t64));
}

/* A thread with a sum that is not finite (products near 1e38 that cancel)
 * computes its outputs again in float64 from A and B (product-redo.c) and
 * goes to l_end: rows row0 + 16 i + 8 h, columns col0 + 8 j + {0, 1}, as
 * the fragments.  TF32: A and B row-major, C N wide; bf16: as stored (lda,
 * ldb, transposed or not), C ldc apart. */
static void tf32_redo(tf32_kernel *tk, int row0, int col0, int l_end)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int v[8 * 8 * 4], n = 0, l_fast = nlabel(k), one = nd(k);
    for (int i = 0; i < cfg->mt; i++)
        for (int j = 0; j < cfg->nt; j++)
            for (int e = 0; e < 4; e++)
                v[n++] = tk->acc[i][j][e];
    int bad = any_not_finite(k, v, n);
    emit(k, "@!%s bra %s;", P(bad), L(l_fast));
    emit(k, "mov.u64 %s, 1;", D(one));
    /* TF32: A[row][p] = a[row K + p], B[p][col] = b[p N + col] */
    redo_product rp = {tk->a, tk->b, tk->K, -1, one, tk->N, tk->M, tk->N, tk->K, RAYO_DTYPE_F32};
    int ldc = tk->N;
    if (cfg->elem == TF_BF16) {
        redo_product h = {tk->a, tk->b, cfg->ta ? one : tk->lda, cfg->ta ? tk->lda : one, cfg->tb ? tk->ldb : one,
                          cfg->tb ? one : tk->ldb, tk->M, tk->N, tk->K, RAYO_DTYPE_BF16};
        rp = h;
        ldc = tk->ldc;
    }
    redo_span rows = {row0, 2 * cfg->mt, 8, 1}, cols = {col0, cfg->nt, 8, 2};
    redo_tile(k, &rp, &rows, &cols, tk->c, ldc, tk->alpha, tk->beta);
    emit(k, "bra %s;", L(l_end));
    label(k, l_fast);
}

/* C = alpha acc + beta C. */
static void tf32_epilogue(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int pb = np(k), l_end = nlabel(k);
    int row0, col0;
    c_origin(tk, &row0, &col0);
    tf32_redo(tk, row0, col0, l_end);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(tk->beta), C(0.0f));
    for (int i = 0; i < cfg->mt; i++)
        for (int h = 0; h < 2; h++) {
            int row = nd(k), rbase = nd(k);
            emit(k, "add.u64 %s, %s, %d;", D(row), D(row0), i * 16 + h * 8);
            emit(k, "mul.lo.u64 %s, %s, %s;", D(rbase), D(row), D(tk->N));
            emit(k, "add.u64 %s, %s, %s;", D(rbase), D(rbase), D(col0));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(rbase), D(rbase), D(tk->c));
            for (int j = 0; j < cfg->nt; j++) {
                const int *acc = tk->acc[i][j];
                int r0 = nf(k), r1 = nf(k), o0 = nf(k), o1 = nf(k);
                emit(k, "mul.rn.f32 %s, %s, %s;", F(r0), F(acc[h * 2]), F(tk->alpha));
                emit(k, "mul.rn.f32 %s, %s, %s;", F(r1), F(acc[h * 2 + 1]), F(tk->alpha));
                emit(k, "@%s ld.global.v2.f32 {%s, %s}, [%s+%d];", P(pb), F(o0), F(o1), D(rbase), j * 32);
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pb), F(r0), F(o0), F(tk->beta), F(r0));
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pb), F(r1), F(o1), F(tk->beta), F(r1));
                emit(k, "st.global.v2.f32 [%s+%d], {%s, %s};", D(rbase), j * 32, F(r0), F(r1));
            }
        }
    label(k, l_end);
}

/* ---- the 16-bit kernels (module "mma16"): mma m16n8k16 --------------------
 * f16 or bf16 A and B, float sums, C in f32; the TF32 kernels' block tile,
 * warp layout, cp.async pipeline and k loop, with these differences:
 *   - bk (32 or 64) k values per tile;
 *   - each operand is stored by rows in one of two ways: k-contiguous (A
 *     m x k, B n x k with TRANS_B: rows of bk k values) or k-strided (A
 *     k x m with TRANS_A, B k x n: bk rows of the block's m or n values),
 *     each row padded by 16 bytes, which puts the 8 row addresses of an
 *     8x8 ldmatrix in 8 different bank groups (rows of 80, 144 or 16 (2j+1)
 *     bytes);
 *   - fragments load with ldmatrix.x4 (.trans for the k-strided layouts);
 *   - any M, N, K: copies past the matrix's edge read fewer bytes (cp.async
 *     src-size) and the rest of their 16 bytes is zero; C is written element
 *     by element where it exists;
 *   - row strides lda, ldb (multiples of 8 elements, 16-byte aligned rows)
 *     and ldc as parameters;
 *   - blk: the float sums go into second sums every blk values of k (the
 *     strict contract for long k). */

/* Bytes per shared row: k-contiguous rows of BK values, or k-strided rows
 * of `outer` values, each padded by 16 bytes. */
static int mma16_row_bytes(int kc, int outer, int bk) { return (kc ? bk : outer) * 2 + 16; }
static int mma16_a_rowb(const tf32_cfg *cfg) { return mma16_row_bytes(!cfg->ta, cfg->warps_m * cfg->mt * 16, cfg_bk(cfg)); }
static int mma16_b_rowb(const tf32_cfg *cfg) { return mma16_row_bytes(cfg->tb, cfg->warps_n * cfg->nt * 8, cfg_bk(cfg)); }
static int mma16_a_stage(const tf32_cfg *cfg)
{
    return mma16_a_rowb(cfg) * (cfg->ta ? cfg_bk(cfg) : cfg->warps_m * cfg->mt * 16);
}
static int mma16_stage(const tf32_cfg *cfg)
{
    return mma16_a_stage(cfg) + mma16_b_rowb(cfg) * (cfg->tb ? cfg->warps_n * cfg->nt * 8 : cfg_bk(cfg));
}

/* One operand tile as the copies see it. */
typedef struct mma16_operand {
    int ptr, ld, first, limit; /* registers: base, row stride, the block's first m or n, M or N (u64) */
    int kc, outer;             /* k-contiguous rows; m or n values of the block */
    int row_bytes, stage_off;  /* shared rows, the operand's offset in a stage */
} mma16_operand;

/* The thread's copy l (8 elements) of operand o: its global address ag/bg,
 * stage offset, and limit: k-contiguous: K - (its k in the tile), 0 past M
 * or N; k-strided: the bytes of its row that exist (grow: its k row). */
static void mma16_copy(tf32_kernel *tk, const mma16_operand *o, int l, int *g, int *s, int slot)
{
    kern *k = tk->k;
    int per_row = o->kc ? cfg_bk(tk->cfg) / 8 : o->outer / 8;
    int q = nr(k), r = nr(k), c = nr(k), r64 = nd(k), c64 = nd(k), idx = nd(k);
    emit(k, "add.u32 %s, %s, %d;", R(q), R(tk->tid), l * tk->threads);
    emit(k, "div.u32 %s, %s, %d;", R(r), R(q), per_row);
    emit(k, "rem.u32 %s, %s, %d;", R(c), R(q), per_row);
    emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
    emit(k, "mul.wide.u32 %s, %s, 8;", D(c64), R(c));
    int lim = nr(k), p = np(k);
    if (o->kc) { /* element (first + r, 8c) */
        emit(k, "add.u64 %s, %s, %s;", D(r64), D(r64), D(o->first));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(o->ld), D(c64));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(r64), D(o->limit));
        emit(k, "mad.lo.s32 %s, %s, -8, %s;", R(lim), R(c), R(tk->K32));
        emit(k, "selp.b32 %s, %s, 0, %s;", R(lim), R(lim), P(p));
        tk->grow[slot] = -1;
    } else {     /* element (r, first + 8c) */
        int x = nd(k);
        emit(k, "add.u64 %s, %s, %s;", D(c64), D(c64), D(o->first));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(o->ld), D(c64));
        emit(k, "sub.u64 %s, %s, %s;", D(x), D(o->limit), D(c64)); /* wraps when past the edge */
        emit(k, "min.u64 %s, %s, 8;", D(x), D(x));
        emit(k, "setp.lt.u64 %s, %s, %s;", P(p), D(c64), D(o->limit));
        emit(k, "selp.b64 %s, %s, 0, %s;", D(x), D(x), P(p));
        emit(k, "cvt.u32.u64 %s, %s;", R(lim), D(x));
        emit(k, "shl.b32 %s, %s, 1;", R(lim), R(lim));
        tk->grow[slot] = r;
    }
    tk->glim[slot] = lim;
    *g = nd(k);
    emit(k, "mad.lo.u64 %s, %s, 2, %s;", D(*g), D(idx), D(o->ptr));
    *s = nr(k);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(*s), R(r), o->row_bytes);
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(*s), R(c), R(*s));
    emit(k, "add.u32 %s, %s, %d;", R(*s), R(*s), o->stage_off);
    if (o->kc) {
        tk->gstep[slot] = -1;
    } else {
        tk->gstep[slot] = nd(k);
        emit(k, "mul.lo.u64 %s, %s, %d;", D(tk->gstep[slot]), D(o->ld), cfg_bk(tk->cfg) * 2);
    }
}

static void mma16_copies(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int M = nd(k), N = nd(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(M), R(tk->M32));
    emit(k, "mov.u64 %s, %s;", D(N), D(tk->N));
    mma16_operand oa = {tk->a, tk->lda, tk->bm, M, !cfg->ta, tk->bm_, tk->a_rowb, 0};
    mma16_operand ob = {tk->b, tk->ldb, tk->bn, N, cfg->tb, tk->bn_, tk->b_rowb, tk->a_stage};
    tk->a_loads = tk->bm_ * cfg_bk(tk->cfg) / 8 / tk->threads;
    tk->b_loads = cfg_bk(tk->cfg) * tk->bn_ / 8 / tk->threads;
    for (int l = 0; l < tk->a_loads; l++)
        mma16_copy(tk, &oa, l, &tk->ag[l], &tk->as[l], l);
    for (int l = 0; l < tk->b_loads; l++)
        mma16_copy(tk, &ob, l, &tk->bg[l], &tk->bs[l], 8 + l);
}

/* One copy of tile `fetched`: its bytes that exist, the rest zero. */
static void mma16_copy_issue(tf32_kernel *tk, int pv, int base, int k0, int kleft, int g, int s, int slot)
{
    kern *k = tk->k;
    int n = nr(k), sa = nr(k);
    if (tk->grow[slot] < 0) { /* 2 * clamp(K - k - k0, 0, 8) */
        emit(k, "sub.s32 %s, %s, %s;", R(n), R(tk->glim[slot]), R(k0));
        emit(k, "max.s32 %s, %s, 0;", R(n), R(n));
        emit(k, "min.s32 %s, %s, 8;", R(n), R(n));
        emit(k, "shl.b32 %s, %s, 1;", R(n), R(n));
    } else {                  /* the row's bytes if k0 + its row < K */
        int p = np(k);
        emit(k, "setp.lt.u32 %s, %s, %s;", P(p), R(tk->grow[slot]), R(kleft));
        emit(k, "selp.b32 %s, %s, 0, %s;", R(n), R(tk->glim[slot]), P(p));
    }
    emit(k, "add.u32 %s, %s, %s;", R(sa), R(base), R(s));
    emit(k, "@%s cp.async.cg.shared.global [%s], [%s], 16, %s;", P(pv), R(sa), D(g), R(n));
    if (tk->gstep[slot] < 0)
        emit(k, "add.u64 %s, %s, %d;", D(g), D(g), cfg_bk(tk->cfg) * 2);
    else
        emit(k, "add.u64 %s, %s, %s;", D(g), D(g), D(tk->gstep[slot]));
}

static void mma16_issue(tf32_kernel *tk)
{
    kern *k = tk->k;
    int pv = np(k), base = nr(k), k0 = nr(k), kleft = nr(k);
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pv), D(tk->fetched), D(tk->KT));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(tk->ld_stage), tk->stage, R(tk->smem));
    emit(k, "cvt.u32.u64 %s, %s;", R(k0), D(tk->fetched));
    emit(k, "shl.b32 %s, %s, %d;", R(k0), R(k0), log2i(cfg_bk(tk->cfg)));
    emit(k, "sub.u32 %s, %s, %s;", R(kleft), R(tk->K32), R(k0));
    for (int l = 0; l < tk->a_loads; l++)
        mma16_copy_issue(tk, pv, base, k0, kleft, tk->ag[l], tk->as[l], l);
    for (int l = 0; l < tk->b_loads; l++)
        mma16_copy_issue(tk, pv, base, k0, kleft, tk->bg[l], tk->bs[l], 8 + l);
}

/* A lane's ldmatrix row address within a stage (lane l gives row l & 7 =
 * r of matrix l >> 3): out = the offset of (outer w + r + 8 qo, k 8 qk) in
 * k-contiguous rows, or of (k r + 8 qk, outer w + 8 qo) in k-strided ones. */
static void mma16_lane_offset(kern *k, int out, int kc, int row_bytes, int w, int r, int qo, int qk)
{
    int x = nr(k);
    if (kc) {
        emit(k, "add.u32 %s, %s, %s;", R(x), R(w), R(r));
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(x), R(qo), R(x));
        emit(k, "mul.lo.u32 %s, %s, %d;", R(out), R(x), row_bytes);
        emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(out), R(qk), R(out));
    } else {
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(x), R(qk), R(r));
        emit(k, "mul.lo.u32 %s, %s, %d;", R(out), R(x), row_bytes);
        emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(x), R(qo), R(w));
        emit(k, "mad.lo.u32 %s, %s, 2, %s;", R(out), R(x), R(out));
    }
}

/* The lanes' fragment rows: A's matrices (m 0/8 by q & 1, k 0/8 by q >> 1)
 * in a0..a3 order; B's (k 0/8 by q & 1, n 0/8 by q >> 1: two n8 tiles) in
 * b[j][0], b[j][1], b[j+1][0], b[j+1][1]. */
static void mma16_fragments(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int lane = nr(k), q = nr(k), r = nr(k), q0 = nr(k), q1 = nr(k), wa = nr(k), wb = nr(k);
    emit(k, "and.b32 %s, %s, 31;", R(lane), R(tk->tid));
    emit(k, "shr.u32 %s, %s, 3;", R(q), R(lane));
    emit(k, "and.b32 %s, %s, 7;", R(r), R(lane));
    emit(k, "and.b32 %s, %s, 1;", R(q0), R(q));
    emit(k, "shr.u32 %s, %s, 1;", R(q1), R(q));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(wa), R(tk->wm), tk->wtm);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(wb), R(tk->wn), tk->wtn);
    mma16_lane_offset(k, tk->fa, !cfg->ta, tk->a_rowb, wa, r, q0, q1);
    mma16_lane_offset(k, tk->fb, cfg->tb, tk->b_rowb, wb, r, q1, q0);
    emit(k, "add.u32 %s, %s, %d;", R(tk->fb), R(tk->fb), tk->a_stage);
}

/* The fragments of k16 step ks of the stage at `base` (lane rows added):
 * af[i][0..3] for A's m16 tiles, bf[j][0..1] for B's n8 tiles. */
typedef struct mma16_frags {
    int a[8][4], b[8][2];
} mma16_frags;

static void mma16_frags_new(kern *k, const tf32_cfg *cfg, mma16_frags *f)
{
    for (int i = 0; i < cfg->mt; i++)
        for (int e = 0; e < 4; e++)
            f->a[i][e] = nr(k);
    for (int j = 0; j < cfg->nt; j++)
        for (int e = 0; e < 2; e++)
            f->b[j][e] = nr(k);
}

static void mma16_load(tf32_kernel *tk, int pa, int pb, int ks, const mma16_frags *f)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    for (int i = 0; i < cfg->mt; i++) {
        int off = cfg->ta ? ks * 16 * tk->a_rowb + i * 32 : i * 16 * tk->a_rowb + ks * 32;
        emit(k, "ldmatrix.sync.aligned.m8n8.x4%s.shared.b16 {%s, %s, %s, %s}, [%s+%d];", cfg->ta ? ".trans" : "",
             R(f->a[i][0]), R(f->a[i][1]), R(f->a[i][2]), R(f->a[i][3]), R(pa), off);
    }
    for (int jp = 0; jp < cfg->nt / 2; jp++) {
        int off = cfg->tb ? jp * 16 * tk->b_rowb + ks * 32 : ks * 16 * tk->b_rowb + jp * 32;
        emit(k, "ldmatrix.sync.aligned.m8n8.x4%s.shared.b16 {%s, %s, %s, %s}, [%s+%d];", cfg->tb ? "" : ".trans",
             R(f->b[2 * jp][0]), R(f->b[2 * jp][1]), R(f->b[2 * jp + 1][0]), R(f->b[2 * jp + 1][1]), R(pb), off);
    }
}

static void mma16_mmas(tf32_kernel *tk, const mma16_frags *f)
{
    const tf32_cfg *cfg = tk->cfg;
    const char *ty = cfg->elem == TF_BF16 ? "bf16" : "f16";
    for (int i = 0; i < cfg->mt; i++)
        for (int j = 0; j < cfg->nt; j++) {
            const int *d = tk->acc[i][j], *a = f->a[i], *b = f->b[j];
            emit(tk->k, "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {%s, %s, %s, %s}, "
                        "{%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s};",
                 ty, ty, F(d[0]), F(d[1]), F(d[2]), F(d[3]), R(a[0]), R(a[1]), R(a[2]), R(a[3]), R(b[0]), R(b[1]),
                 F(d[0]), F(d[1]), F(d[2]), F(d[3]));
        }
}

/* The stage at `base` plus the lane rows of A and B. */
static void mma16_lane_bases(tf32_kernel *tk, int base, int pa, int pb)
{
    emit(tk->k, "add.u32 %s, %s, %s;", R(pa), R(base), R(tk->fa));
    emit(tk->k, "add.u32 %s, %s, %s;", R(pb), R(base), R(tk->fb));
}

/* One k-tile from the stage at `base`: its k16 steps. */
static void mma16_tile(tf32_kernel *tk, int base)
{
    kern *k = tk->k;
    int pa = nr(k), pb = nr(k);
    mma16_lane_bases(tk, base, pa, pb);
    for (int ks = 0; ks < cfg_bk(tk->cfg) / 16; ks++) {
        mma16_frags f;
        mma16_frags_new(k, tk->cfg, &f);
        mma16_load(tk, pa, pb, ks, &f);
        mma16_mmas(tk, &f);
    }
}

/* The k loop with the fragments loaded a k16 step ahead, across tiles too
 * (cfg->pipe): the wait and barrier for tile kt + 1 come before tile kt's
 * last step, whose products then cover the loads of tile kt + 1's first
 * fragments.  The copies into the stage of tile kt - 1 start at tile kt's
 * first step, after the barrier that followed the last reads of it. */
static void mma16_main_loop_pipelined(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int nks = cfg_bk(cfg) / 16;
    int kt = nd(k), cstage = nr(k), pl = np(k), l_loop = nlabel(k), l_done = nlabel(k);
    int base = nr(k), pa = nr(k), pb = nr(k);
    mma16_frags f[2];
    mma16_frags_new(k, cfg, &f[0]);
    mma16_frags_new(k, cfg, &f[1]);
    emit(k, "mov.u64 %s, 0;", D(kt));
    emit(k, "mov.u32 %s, 0;", R(cstage));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pl), D(kt), D(tk->KT));
    emit(k, "@%s bra %s;", P(pl), L(l_done));
    emit(k, "cp.async.wait_group %d;", cfg->stages - 2);
    emit(k, "bar.sync 0;");
    emit(k, "mov.u32 %s, %s;", R(base), R(tk->smem));
    mma16_lane_bases(tk, base, pa, pb);
    mma16_load(tk, pa, pb, 0, &f[0]);
    label(k, l_loop);
    for (int g = 0; g < nks; g++) {
        if (g == nks - 1) { /* the next tile's stage */
            int pw = np(k);
            emit(k, "add.u32 %s, %s, 1;", R(cstage), R(cstage));
            emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(cstage), cfg->stages);
            emit(k, "@%s mov.u32 %s, 0;", P(pw), R(cstage));
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(cstage), tk->stage, R(tk->smem));
            mma16_lane_bases(tk, base, pa, pb);
        }
        mma16_load(tk, pa, pb, (g + 1) % nks, &f[(g + 1) % 2]);
        if (g == 0)
            tile_issue(tk);
        mma16_mmas(tk, &f[g % 2]);
        if (g == nks - 2) {
            emit(k, "cp.async.wait_group %d;", cfg->stages - 2);
            emit(k, "bar.sync 0;");
        }
    }
    mma16_fold_every(tk, kt);
    emit(k, "add.u64 %s, %s, 1;", D(kt), D(kt));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pl), D(kt), D(tk->KT));
    emit(k, "@%s bra %s;", P(pl), L(l_loop));
    label(k, l_done);
    emit(k, "cp.async.wait_all;");
    if (cfg->blk) {
        mma16_fold(tk);
        memcpy(tk->acc, tk->acc2, sizeof tk->acc);
    }
}

/* blk: the sums into the second sums, then zero. */
static void mma16_fold(tf32_kernel *tk)
{
    for (int i = 0; i < tk->cfg->mt; i++)
        for (int j = 0; j < tk->cfg->nt; j++)
            for (int e = 0; e < 4; e++) {
                emit(tk->k, "add.rn.f32 %s, %s, %s;", F(tk->acc2[i][j][e]), F(tk->acc2[i][j][e]),
                     F(tk->acc[i][j][e]));
                emit(tk->k, "mov.f32 %s, %s;", F(tk->acc[i][j][e]), C(0.0f));
            }
}

/* blk: the fold after tile kt when it ends a block of blk values of k. */
static void mma16_fold_every(tf32_kernel *tk, int kt)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    if (!cfg->blk)
        return;
    int r = nd(k), pf = np(k), l_skip = nlabel(k);
    emit(k, "and.b64 %s, %s, %d;", D(r), D(kt), cfg->blk / cfg_bk(cfg) - 1);
    emit(k, "setp.ne.u64 %s, %s, %d;", P(pf), D(r), cfg->blk / cfg_bk(cfg) - 1);
    emit(k, "@%s bra %s;", P(pf), L(l_skip));
    mma16_fold(tk);
    label(k, l_skip);
}

/* C = alpha acc + beta C where C exists (rows < M, columns < N, rows ldc
 * apart).  bf16 sums can pass FLT_MAX (tf32_redo); f16 ones cannot:
 * |f16| <= 65504. */
static void mma16_epilogue(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int pbeta = np(k), M = nd(k), l_end = nlabel(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pbeta), F(tk->beta), C(0.0f));
    emit(k, "cvt.u64.u32 %s, %s;", D(M), R(tk->M32));
    int row0, col0;
    c_origin(tk, &row0, &col0);
    if (cfg->elem == TF_BF16)
        tf32_redo(tk, row0, col0, l_end);
    int colp[8][2];
    for (int j = 0; j < cfg->nt; j++)
        for (int e = 0; e < 2; e++) {
            int col = nd(k);
            colp[j][e] = np(k);
            emit(k, "add.u64 %s, %s, %d;", D(col), D(col0), j * 8 + e);
            emit(k, "setp.lt.u64 %s, %s, %s;", P(colp[j][e]), D(col), D(tk->N));
        }
    for (int i = 0; i < cfg->mt; i++)
        for (int h = 0; h < 2; h++) {
            int row = nd(k), rbase = nd(k), prow = np(k);
            emit(k, "add.u64 %s, %s, %d;", D(row), D(row0), i * 16 + h * 8);
            emit(k, "setp.lt.u64 %s, %s, %s;", P(prow), D(row), D(M));
            emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(rbase), D(row), D(tk->ldc), D(col0));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(rbase), D(rbase), D(tk->c));
            for (int j = 0; j < cfg->nt; j++)
                for (int e = 0; e < 2; e++) {
                    int p = np(k), pb = np(k), r = nf(k), o = nf(k);
                    emit(k, "and.pred %s, %s, %s;", P(p), P(prow), P(colp[j][e]));
                    emit(k, "and.pred %s, %s, %s;", P(pb), P(p), P(pbeta));
                    emit(k, "mul.rn.f32 %s, %s, %s;", F(r), F(tk->acc[i][j][h * 2 + e]), F(tk->alpha));
                    emit(k, "@%s ld.global.f32 %s, [%s+%d];", P(pb), F(o), D(rbase), (j * 8 + e) * 4);
                    emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pb), F(r), F(o), F(tk->beta), F(r));
                    emit(k, "@%s st.global.f32 [%s+%d], %s;", P(p), D(rbase), (j * 8 + e) * 4, F(r));
                }
        }
    label(k, l_end);
}

static void gen_tf32(strbuf *mod, const tf32_cfg *cfg)
{
    kern kk = {0};
    tf32_kernel tk = {.k = &kk, .cfg = cfg};
    int half = cfg->elem != TF_TF32;
    tk.threads = 32 * cfg->warps_m * cfg->warps_n;
    tk.bm_ = cfg->warps_m * cfg->mt * 16;
    tk.bn_ = cfg->warps_n * cfg->nt * 8;
    tk.wtm = cfg->mt * 16;
    tk.wtn = cfg->nt * 8;
    tk.a_row = tf32_a_row(cfg);
    tk.b_row = tf32_b_row(cfg);
    tk.a_stage = tk.bm_ * tk.a_row * 4;
    tk.stage = tk.a_stage + TF_BK * tk.b_row * 4;
    if (half) {
        tk.a_rowb = mma16_a_rowb(cfg);
        tk.b_rowb = mma16_b_rowb(cfg);
        tk.a_stage = mma16_a_stage(cfg);
        tk.stage = mma16_stage(cfg);
    }
    tf32_setup(&tk);
    tf32_prologue(&tk);
    tf32_fragments(&tk);
    if (cfg->pipe)
        mma16_main_loop_pipelined(&tk);
    else
        tf32_main_loop(&tk);
    if (half)
        mma16_epilogue(&tk);
    else
        tf32_epilogue(&tk);
    char dir[96];
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n.minnctapersm %d\n", tk.threads, cfg->min_ctas);
    kern_finish(mod, &kk, cfg->name,
                half ? ".param .u64 p_c, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                       ".param .u64 p_k, .param .u64 p_lda, .param .u64 p_ldb, .param .u64 p_ldc, "
                       ".param .f32 p_alpha, .param .f32 p_beta"
                     : ".param .u64 p_c, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                       ".param .u64 p_k, .param .f32 p_alpha, .param .f32 p_beta",
                dir, NULL);
}

void module_tf32(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 16 .b8 tf_smem[];\n");
    for (size_t i = 0; i < sizeof tf32_cfgs / sizeof tf32_cfgs[0]; i++)
        gen_tf32(mod, &tf32_cfgs[i]);
}

/* The 16-bit kernels: every shape for each input type and operand layout,
 * named mma16_<f16|bf16>_<a><b>_<shape> (a, b: n as stored for A B, t
 * transposed: the plugin's kernel names follow this rule). */
typedef struct mma16_shape {
    const char *name;
    int warps_m, warps_n, mt, nt, stages, min_ctas, blk, bk, pipe;
} mma16_shape;

static const mma16_shape mma16_shapes[] = {
    {"128x128_w2x2_p", 2, 2, 4, 8, 3, 2, 0, 32, 1},
    {"128x128_w2x4_b256_p", 2, 4, 4, 4, 3, 1, 256, 32, 1},
};

#define MMA16_COUNT (sizeof mma16_shapes / sizeof mma16_shapes[0] * 8)

static tf32_cfg mma16_cfg(size_t i, char *name, size_t len)
{
    const mma16_shape *sh = &mma16_shapes[i / 8];
    int elem = (i & 4) ? TF_BF16 : TF_F16, ta = (i >> 1) & 1, tb = i & 1;
    snprintf(name, len, "mma16_%s_%c%c_%s", elem == TF_BF16 ? "bf16" : "f16", ta ? 't' : 'n', tb ? 't' : 'n',
             sh->name);
    tf32_cfg cfg = {.name = name, .warps_m = sh->warps_m, .warps_n = sh->warps_n, .mt = sh->mt, .nt = sh->nt,
                    .stages = sh->stages, .min_ctas = sh->min_ctas, .raster = 1, .elem = elem, .ta = ta, .tb = tb,
                    .blk = sh->blk, .bk = sh->bk, .pipe = sh->pipe};
    return cfg;
}

void module_mma16(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 16 .b8 tf_smem[];\n");
    for (size_t i = 0; i < MMA16_COUNT; i++) {
        char name[64];
        tf32_cfg cfg = mma16_cfg(i, name, sizeof name);
        gen_tf32(mod, &cfg);
    }
}

/* The launch shape of every variant (TF32 and 16-bit), as the C tables the
 * plugin reads. */
void tf32_write_config_table(strbuf *c)
{
    sb_printf(c, "const rayo_ptx_tf32_config rayo_cuda_tf32_configs[] = {\n");
    for (size_t i = 0; i < sizeof tf32_cfgs / sizeof tf32_cfgs[0]; i++) {
        const tf32_cfg *cf = &tf32_cfgs[i];
        sb_printf(c, "    {\"%s\", %d, %d, %d, %d},\n", cf->name, cf->warps_m * cf->mt * 16,
                  cf->warps_n * cf->nt * 8, 32 * cf->warps_m * cf->warps_n, tf32_smem_bytes(cf));
    }
    sb_printf(c, "};\nconst unsigned rayo_cuda_tf32_config_count = %u;\n",
              (unsigned)(sizeof tf32_cfgs / sizeof tf32_cfgs[0]));
    sb_printf(c, "const rayo_ptx_tf32_config rayo_cuda_mma16_configs[] = {\n");
    for (size_t i = 0; i < MMA16_COUNT; i++) {
        char name[64];
        tf32_cfg cf = mma16_cfg(i, name, sizeof name);
        sb_printf(c, "    {\"%s\", %d, %d, %d, %d},\n", name, cf.warps_m * cf.mt * 16, cf.warps_n * cf.nt * 8,
                  32 * cf.warps_m * cf.warps_n, cf.stages * mma16_stage(&cf));
    }
    sb_printf(c, "};\nconst unsigned rayo_cuda_mma16_config_count = %u;\n", (unsigned)MMA16_COUNT);
}
