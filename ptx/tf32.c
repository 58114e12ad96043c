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
    int round;     /* round operands to tf32 (cvt.rna) rather than truncating */
    int min_ctas;  /* .minnctapersm hint: caps registers so this many blocks fit an SM */
    int swz;       /* swizzled layout with vector A fragments */
    int raster;    /* grouped block order */
} tf32_cfg;

static const tf32_cfg tf32_cfgs[] = {
    {"tf32_128x128_w2x4", 2, 4, 4, 4, 3, 0, 1, 0, 0},
    {"tf32_128x128_w2x4_2cta", 2, 4, 4, 4, 3, 0, 2, 0, 0},
    {"tf32_128x128_w2x2", 2, 2, 4, 8, 3, 0, 2, 0, 0},
    {"tf32_256x128_w4x2", 4, 2, 4, 8, 3, 0, 1, 0, 0},
    {"tf32_128x128_w2x4_rna", 2, 4, 4, 4, 3, 1, 1, 0, 0},
    {"tf32_128x128_w2x2_r", 2, 2, 4, 8, 3, 0, 2, 0, 1},
    {"tf32_128x128_w2x2_swz", 2, 2, 4, 8, 3, 0, 2, 1, 1},
    {"tf32_128x128_w2x2_swz4", 2, 2, 4, 8, 4, 0, 1, 1, 1},
    {"tf32_256x128_w4x2_swz", 4, 2, 4, 8, 3, 0, 1, 1, 1},
    {"tf32_128x256_w2x4_swz", 2, 4, 4, 8, 3, 0, 1, 1, 1},
};

#define TF_BK 32
#define TF_APAD 4
#define TF_BPAD 8

static int tf32_a_row(const tf32_cfg *cfg) { return cfg->swz ? TF_BK : TF_BK + TF_APAD; }
static int tf32_b_row(const tf32_cfg *cfg) { return cfg->warps_n * cfg->nt * 8 + (cfg->swz ? 0 : TF_BPAD); }

static int tf32_smem_bytes(const tf32_cfg *cfg)
{
    int bm = cfg->warps_m * cfg->mt * 16;
    return cfg->stages * (bm * tf32_a_row(cfg) + TF_BK * tf32_b_row(cfg)) * 4;
}

/* The state of one TF32 kernel while it is written: its shape (from the
 * config) and the registers the steps below share. */
typedef struct tf32_kernel {
    kern *k;
    const tf32_cfg *cfg;
    int threads, bm_, bn_, wtm, wtn; /* threads; block and warp tile (elements) */
    int a_row, b_row;                /* floats per shared row of A and B */
    int a_stage, stage;              /* bytes: A's part of a stage, a whole stage */
    int c, a, b, N, K, alpha, beta;  /* parameters */
    int tid, g, t, wm, wn;           /* thread; its group and thread in group; warp row, column */
    int bm, bn, smem;                /* the block's first row and column of C; tf_smem */
    int a_loads, b_loads;            /* cp.async copies per thread per tile */
    int ag[8], as[8], bg[8], bs[8];  /* their global addresses and stage offsets */
    int bstep, KT, fetched, ld_stage;
    int acc[8][8][4];                /* C fragments: [mt][nt][4] */
    int wrow, wcol;                  /* the thread's first row, the warp's first column */
    int fa, fb, fa_s[2], fb_j[8];    /* fragment offsets within a stage (padded, swizzled) */
} tf32_kernel;

/* Parameters, thread and warp indices, the block's tile. */
static void tf32_setup(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    tk->c = param_global(k, "p_c");
    tk->a = param_global(k, "p_a");
    tk->b = param_global(k, "p_b");
    param_u64(k, "p_m"); /* M: the grid covers it */
    tk->N = param_u64(k, "p_n");
    tk->K = param_u64(k, "p_k");
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
    emit(k, "cp.async.commit_group;");
    emit(k, "add.u64 %s, %s, 1;", D(tk->fetched), D(tk->fetched));
    int pw = np(k);
    emit(k, "add.u32 %s, %s, 1;", R(tk->ld_stage), R(tk->ld_stage));
    emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(tk->ld_stage), tk->cfg->stages);
    emit(k, "@%s mov.u32 %s, 0;", P(pw), R(tk->ld_stage));
}

/* The copy assignments, then the first stages - 1 tiles in flight. */
static void tf32_prologue(tf32_kernel *tk)
{
    kern *k = tk->k;
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
    tk->fetched = nd(k);
    tk->ld_stage = nr(k);
    emit(k, "mov.u64 %s, 0;", D(tk->fetched));
    emit(k, "mov.u32 %s, 0;", R(tk->ld_stage));
    for (int s = 0; s < tk->cfg->stages - 1; s++)
        tf32_issue(tk);
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
            }
    tk->wrow = nr(k);
    tk->wcol = nr(k);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(tk->wrow), R(tk->wm), tk->wtm);
    emit(k, "add.u32 %s, %s, %s;", R(tk->wrow), R(tk->wrow), R(tk->g)); /* the warp's row + g */
    emit(k, "mul.lo.u32 %s, %s, %d;", R(tk->wcol), R(tk->wn), tk->wtn);
    tk->fa = nr(k);
    tk->fb = nr(k);
    tk->fa_s[0] = tk->fa_s[1] = -1;
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
                if (cfg->round)
                    emit(k, "cvt.rna.tf32.f32 %s, %s;", R(af[i][e]), R(af[i][e]));
            }
        for (int j = 0; j < cfg->nt; j++)
            for (int e = 0; e < 2; e++) {
                /* b0 (k = t, n = g) b1 (k = t+4, n = g) */
                int off = ((ks * 8 + e * 4) * tk->b_row + j * 8) * 4;
                bf[j][e] = nr(k);
                emit(k, "ld.shared.b32 %s, [%s+%d];", R(bf[j][e]), R(pbb), off);
                if (cfg->round)
                    emit(k, "cvt.rna.tf32.f32 %s, %s;", R(bf[j][e]), R(bf[j][e]));
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
    tf32_issue(tk);
    int base = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(cstage), tk->stage, R(tk->smem));
    if (!cfg->swz)
        tf32_tile_padded(tk, base);
    else
        tf32_tile_swizzled(tk, base);
    int pw = np(k);
    emit(k, "add.u32 %s, %s, 1;", R(cstage), R(cstage));
    emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(cstage), cfg->stages);
    emit(k, "@%s mov.u32 %s, 0;", P(pw), R(cstage));
    emit(k, "add.u64 %s, %s, 1;", D(kt), D(kt));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pl), D(kt), D(tk->KT));
    emit(k, "@%s bra %s;", P(pl), L(l_loop));
    label(k, l_done);
    emit(k, "cp.async.wait_all;");
}

/* C = alpha acc + beta C: c0,c1 at (g, 2t..2t+1), c2,c3 at (g+8, 2t..2t+1). */
static void tf32_epilogue(tf32_kernel *tk)
{
    kern *k = tk->k;
    const tf32_cfg *cfg = tk->cfg;
    int pb = np(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(tk->beta), C(0.0f));
    int row0 = nd(k), col0 = nd(k), t64 = nd(k), ccol = nr(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(tk->wrow));
    emit(k, "add.u64 %s, %s, %s;", D(row0), D(tk->bm), D(t64));
    emit(k, "mad.lo.u32 %s, %s, 2, %s;", R(ccol), R(tk->t), R(tk->wcol));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(ccol));
    emit(k, "add.u64 %s, %s, %s;", D(col0), D(tk->bn), D(t64));
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
}

static void gen_tf32(strbuf *mod, const tf32_cfg *cfg)
{
    kern kk = {0};
    tf32_kernel tk = {.k = &kk, .cfg = cfg};
    tk.threads = 32 * cfg->warps_m * cfg->warps_n;
    tk.bm_ = cfg->warps_m * cfg->mt * 16;
    tk.bn_ = cfg->warps_n * cfg->nt * 8;
    tk.wtm = cfg->mt * 16;
    tk.wtn = cfg->nt * 8;
    tk.a_row = tf32_a_row(cfg);
    tk.b_row = tf32_b_row(cfg);
    tk.a_stage = tk.bm_ * tk.a_row * 4;
    tk.stage = tk.a_stage + TF_BK * tk.b_row * 4;
    tf32_setup(&tk);
    tf32_prologue(&tk);
    tf32_fragments(&tk);
    tf32_main_loop(&tk);
    tf32_epilogue(&tk);
    char dir[96];
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n.minnctapersm %d\n", tk.threads, cfg->min_ctas);
    kern_finish(mod, &kk, cfg->name,
                ".param .u64 p_c, .param .u64 p_a, .param .u64 p_b, .param .u64 p_m, .param .u64 p_n, "
                ".param .u64 p_k, .param .f32 p_alpha, .param .f32 p_beta",
                dir, NULL);
}

void module_tf32(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 16 .b8 tf_smem[];\n");
    for (size_t i = 0; i < sizeof tf32_cfgs / sizeof tf32_cfgs[0]; i++)
        gen_tf32(mod, &tf32_cfgs[i]);
}

/* The launch shape of every variant, as the C table the plugin reads. */
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
}
