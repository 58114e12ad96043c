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

static void gen_tf32(strbuf *mod, const tf32_cfg *cfg)
{
    kern kk = {0}, *k = &kk;
    const int threads = 32 * cfg->warps_m * cfg->warps_n;
    const int bm_ = cfg->warps_m * cfg->mt * 16, bn_ = cfg->warps_n * cfg->nt * 8;
    const int wtm = cfg->mt * 16, wtn = cfg->nt * 8;
    const int a_row = tf32_a_row(cfg), b_row = tf32_b_row(cfg); /* floats */
    const int a_stage = bm_ * a_row * 4, stage = a_stage + TF_BK * b_row * 4;
    int c = param_global(k, "p_c"), a = param_global(k, "p_a"), b = param_global(k, "p_b");
    int M = param_u64(k, "p_m"), N = param_u64(k, "p_n"), K = param_u64(k, "p_k");
    int alpha = param_f32(k, "p_alpha"), beta = param_f32(k, "p_beta");
    (void)M;
    int tid = sreg(k, "%tid.x");
    int lane = nr(k), warp = nr(k), g = nr(k), t = nr(k), wm = nr(k), wn = nr(k);
    emit(k, "and.b32 %s, %s, 31;", R(lane), R(tid));
    emit(k, "shr.u32 %s, %s, 5;", R(warp), R(tid));
    emit(k, "shr.u32 %s, %s, 2;", R(g), R(lane));
    emit(k, "and.b32 %s, %s, 3;", R(t), R(lane));
    emit(k, "div.u32 %s, %s, %d;", R(wm), R(warp), cfg->warps_n);
    emit(k, "rem.u32 %s, %s, %d;", R(wn), R(warp), cfg->warps_n);
    int tile_m, tile_n;
    block_tile(k, cfg->raster, &tile_m, &tile_n);
    int bm = nd(k), bn = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(bm), R(tile_m), bm_);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(bn), R(tile_n), bn_);
    int smem = nr(k);
    emit(k, "mov.u32 %s, tf_smem;", R(smem));

    /* cp.async assignments: A tile bm_ x 32 (8 chunks of 16 bytes a row), B tile 32 x bn_ */
    const int a_loads = bm_ * TF_BK / 4 / threads, b_loads = TF_BK * bn_ / 4 / threads;
    int ag[8], as[8], bg[8], bs[8];
    for (int l = 0; l < a_loads; l++) {
        int q = nr(k), r = nr(k), cc = nr(k), r64 = nd(k), c64 = nd(k), idx = nd(k), phys = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(q), R(tid), l * threads);
        emit(k, "shr.u32 %s, %s, 3;", R(r), R(q));
        emit(k, "and.b32 %s, %s, 7;", R(cc), R(q));
        emit(k, "mov.u32 %s, %s;", R(phys), R(cc));
        if (cfg->swz) { /* chunk ^ 4 (row & 1) */
            int sw = nr(k);
            emit(k, "and.b32 %s, %s, 1;", R(sw), R(r));
            emit(k, "shl.b32 %s, %s, 2;", R(sw), R(sw));
            emit(k, "xor.b32 %s, %s, %s;", R(phys), R(phys), R(sw));
        }
        emit(k, "shl.b32 %s, %s, 2;", R(cc), R(cc));
        emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
        emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(cc));
        emit(k, "add.u64 %s, %s, %s;", D(r64), D(r64), D(bm));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(K), D(c64));
        ag[l] = nd(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(ag[l]), D(idx), D(a));
        as[l] = nr(k);
        emit(k, "shl.b32 %s, %s, 2;", R(phys), R(phys));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(as[l]), R(r), a_row, R(phys));
        emit(k, "shl.b32 %s, %s, 2;", R(as[l]), R(as[l]));
    }
    for (int l = 0; l < b_loads; l++) {
        int q = nr(k), r = nr(k), cc = nr(k), r64 = nd(k), c64 = nd(k), idx = nd(k), phys = nr(k);
        int per_row = bn_ / 4;
        emit(k, "add.u32 %s, %s, %d;", R(q), R(tid), l * threads);
        emit(k, "div.u32 %s, %s, %d;", R(r), R(q), per_row);
        emit(k, "rem.u32 %s, %s, %d;", R(cc), R(q), per_row);
        emit(k, "mov.u32 %s, %s;", R(phys), R(cc));
        if (cfg->swz) { /* chunk ^ 2 ((row >> 2) & 3) */
            int sw = nr(k);
            emit(k, "shr.u32 %s, %s, 2;", R(sw), R(r));
            emit(k, "and.b32 %s, %s, 3;", R(sw), R(sw));
            emit(k, "shl.b32 %s, %s, 1;", R(sw), R(sw));
            emit(k, "xor.b32 %s, %s, %s;", R(phys), R(phys), R(sw));
        }
        emit(k, "shl.b32 %s, %s, 2;", R(cc), R(cc));
        emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(r));
        emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(cc));
        emit(k, "add.u64 %s, %s, %s;", D(c64), D(c64), D(bn));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(r64), D(N), D(c64));
        bg[l] = nd(k);
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(bg[l]), D(idx), D(b));
        bs[l] = nr(k);
        emit(k, "shl.b32 %s, %s, 2;", R(phys), R(phys));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(bs[l]), R(r), b_row, R(phys));
        emit(k, "shl.b32 %s, %s, 2;", R(bs[l]), R(bs[l]));
        emit(k, "add.u32 %s, %s, %d;", R(bs[l]), R(bs[l]), a_stage);
    }
    int bstep = nd(k);
    emit(k, "mul.lo.u64 %s, %s, %d;", D(bstep), D(N), TF_BK * 4);

    int KT = nd(k);
    emit(k, "shr.u64 %s, %s, 5;", D(KT), D(K));
    /* issue: loads tile `fetched` into stage ld_stage if it exists; always commits
     * (empty groups keep the wait_group count right at the end) */
    int fetched = nd(k), ld_stage = nr(k);
    emit(k, "mov.u64 %s, 0;", D(fetched));
    emit(k, "mov.u32 %s, 0;", R(ld_stage));
#define TF_ISSUE()                                                                              \
    do {                                                                                        \
        int pv = np(k), base = nr(k);                                                            \
        emit(k, "setp.lt.u64 %s, %s, %s;", P(pv), D(fetched), D(KT));                            \
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(ld_stage), stage, R(smem));            \
        for (int l = 0; l < a_loads; l++) {                                                     \
            int sa = nr(k);                                                                     \
            emit(k, "add.u32 %s, %s, %s;", R(sa), R(base), R(as[l]));                           \
            emit(k, "@%s cp.async.cg.shared.global [%s], [%s], 16;", P(pv), R(sa), D(ag[l]));    \
            emit(k, "add.u64 %s, %s, %d;", D(ag[l]), D(ag[l]), TF_BK * 4);                       \
        }                                                                                       \
        for (int l = 0; l < b_loads; l++) {                                                     \
            int sb = nr(k);                                                                     \
            emit(k, "add.u32 %s, %s, %s;", R(sb), R(base), R(bs[l]));                           \
            emit(k, "@%s cp.async.cg.shared.global [%s], [%s], 16;", P(pv), R(sb), D(bg[l]));    \
            emit(k, "add.u64 %s, %s, %s;", D(bg[l]), D(bg[l]), D(bstep));                        \
        }                                                                                       \
        emit(k, "cp.async.commit_group;");                                                      \
        emit(k, "add.u64 %s, %s, 1;", D(fetched), D(fetched));                                   \
        int pw = np(k);                                                                         \
        emit(k, "add.u32 %s, %s, 1;", R(ld_stage), R(ld_stage));                                 \
        emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(ld_stage), cfg->stages);                    \
        emit(k, "@%s mov.u32 %s, 0;", P(pw), R(ld_stage));                                       \
    } while (0)
    for (int s = 0; s < cfg->stages - 1; s++)
        TF_ISSUE();

    int acc[8][8][4];
    for (int i = 0; i < cfg->mt; i++)
        for (int j = 0; j < cfg->nt; j++)
            for (int e = 0; e < 4; e++) {
                acc[i][j][e] = nf(k);
                emit(k, "mov.f32 %s, %s;", F(acc[i][j][e]), C(0.0f));
            }
    /* per-thread fragment offsets within a stage */
    int wrow = nr(k), wcol = nr(k);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(wrow), R(wm), wtm);
    emit(k, "add.u32 %s, %s, %s;", R(wrow), R(wrow), R(g));   /* the warp's row + g */
    emit(k, "mul.lo.u32 %s, %s, %d;", R(wcol), R(wn), wtn);
    int fa = nr(k), fb = nr(k), fa_s[2] = {-1, -1}, fb_j[8];
    if (!cfg->swz) {
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(fa), R(wrow), a_row, R(t));
        emit(k, "shl.b32 %s, %s, 2;", R(fa), R(fa));
        int col = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(col), R(wcol), R(g));
        emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(fb), R(t), b_row, R(col));
        emit(k, "shl.b32 %s, %s, 2;", R(fb), R(fb));
        emit(k, "add.u32 %s, %s, %d;", R(fb), R(fb), a_stage);
    } else {
        /* A: row wrow, chunk ((s16 ^ (g & 1)) << 2) + t of its 8 */
        int par = nr(k);
        emit(k, "and.b32 %s, %s, 1;", R(par), R(g));
        for (int s16 = 0; s16 < 2; s16++) {
            int ch = nr(k);
            fa_s[s16] = nr(k);
            emit(k, "xor.b32 %s, %s, %d;", R(ch), R(par), s16);
            emit(k, "shl.b32 %s, %s, 2;", R(ch), R(ch));
            emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(t));
            emit(k, "shl.b32 %s, %s, 2;", R(ch), R(ch));
            emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(fa_s[s16]), R(wrow), a_row, R(ch));
            emit(k, "shl.b32 %s, %s, 2;", R(fa_s[s16]), R(fa_s[s16]));
        }
        /* B: row 4t (+ immediates), column chunk wcol/4 + (2j ^ 2t), element g within the two chunks */
        int t2 = nr(k), rowoff = nr(k), wc4 = nr(k);
        emit(k, "shl.b32 %s, %s, 1;", R(t2), R(t));
        emit(k, "mul.lo.u32 %s, %s, %d;", R(rowoff), R(t), 4 * b_row);
        emit(k, "shr.u32 %s, %s, 2;", R(wc4), R(wcol));
        for (int j = 0; j < cfg->nt; j++) {
            int ch = nr(k);
            fb_j[j] = nr(k);
            emit(k, "xor.b32 %s, %s, %d;", R(ch), R(t2), 2 * j);
            emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(wc4));
            emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(ch), R(ch), R(g));
            emit(k, "add.u32 %s, %s, %s;", R(ch), R(ch), R(rowoff));
            emit(k, "shl.b32 %s, %s, 2;", R(fb_j[j]), R(ch));
            emit(k, "add.u32 %s, %s, %d;", R(fb_j[j]), R(fb_j[j]), a_stage);
        }
    }

    int kt = nd(k), cstage = nr(k), pl = np(k), l_loop = nlabel(k), l_done = nlabel(k);
    emit(k, "mov.u64 %s, 0;", D(kt));
    emit(k, "mov.u32 %s, 0;", R(cstage));
    emit(k, "setp.ge.u64 %s, %s, %s;", P(pl), D(kt), D(KT));
    emit(k, "@%s bra %s;", P(pl), L(l_done));
    label(k, l_loop);
    emit(k, "cp.async.wait_group %d;", cfg->stages - 2);
    emit(k, "bar.sync 0;");
    TF_ISSUE();
    int base = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(cstage), stage, R(smem));
    if (!cfg->swz) {
        int pa = nr(k), pbb = nr(k);
        emit(k, "add.u32 %s, %s, %s;", R(pa), R(base), R(fa));
        emit(k, "add.u32 %s, %s, %s;", R(pbb), R(base), R(fb));
        for (int ks = 0; ks < TF_BK / 8; ks++) {
            int af[8][4], bf[8][2];
            for (int i = 0; i < cfg->mt; i++)
                for (int e = 0; e < 4; e++) {
                    /* a0 (g, t) a1 (g+8, t) a2 (g, t+4) a3 (g+8, t+4) */
                    int off = ((i * 16 + (e & 1) * 8) * a_row + ks * 8 + (e >> 1) * 4) * 4;
                    af[i][e] = nr(k);
                    emit(k, "ld.shared.b32 %s, [%s+%d];", R(af[i][e]), R(pa), off);
                    if (cfg->round)
                        emit(k, "cvt.rna.tf32.f32 %s, %s;", R(af[i][e]), R(af[i][e]));
                }
            for (int j = 0; j < cfg->nt; j++)
                for (int e = 0; e < 2; e++) {
                    /* b0 (k = t, n = g) b1 (k = t+4, n = g) */
                    int off = ((ks * 8 + e * 4) * b_row + j * 8) * 4;
                    bf[j][e] = nr(k);
                    emit(k, "ld.shared.b32 %s, [%s+%d];", R(bf[j][e]), R(pbb), off);
                    if (cfg->round)
                        emit(k, "cvt.rna.tf32.f32 %s, %s;", R(bf[j][e]), R(bf[j][e]));
                }
            for (int i = 0; i < cfg->mt; i++)
                for (int j = 0; j < cfg->nt; j++)
                    emit(k, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%s, %s, %s, %s}, "
                            "{%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s};",
                         F(acc[i][j][0]), F(acc[i][j][1]), F(acc[i][j][2]), F(acc[i][j][3]),
                         R(af[i][0]), R(af[i][1]), R(af[i][2]), R(af[i][3]), R(bf[j][0]), R(bf[j][1]),
                         F(acc[i][j][0]), F(acc[i][j][1]), F(acc[i][j][2]), F(acc[i][j][3]));
        }
    } else {
        int pa[2], pb[8];
        for (int s16 = 0; s16 < 2; s16++) {
            pa[s16] = nr(k);
            emit(k, "add.u32 %s, %s, %s;", R(pa[s16]), R(base), R(fa_s[s16]));
        }
        for (int j = 0; j < cfg->nt; j++) {
            pb[j] = nr(k);
            emit(k, "add.u32 %s, %s, %s;", R(pb[j]), R(base), R(fb_j[j]));
        }
        for (int s16 = 0; s16 < TF_BK / 16; s16++) {
            /* x[i][h][0..3]: thread t's four k values of this k16 block, rows g (h 0) and g+8 */
            int x[8][2][4];
            for (int i = 0; i < cfg->mt; i++)
                for (int h = 0; h < 2; h++) {
                    for (int e = 0; e < 4; e++)
                        x[i][h][e] = nr(k);
                    emit(k, "ld.shared.v4.b32 {%s, %s, %s, %s}, [%s+%d];", R(x[i][h][0]), R(x[i][h][1]),
                         R(x[i][h][2]), R(x[i][h][3]), R(pa[s16]), (i * 16 + h * 8) * a_row * 4);
                }
            for (int step = 0; step < 2; step++) {
                int bf[8][2];
                for (int j = 0; j < cfg->nt; j++)
                    for (int e = 0; e < 2; e++) {
                        /* k row 16 s16 + 4t + 2 step + e, column as fb_j */
                        bf[j][e] = nr(k);
                        emit(k, "ld.shared.b32 %s, [%s+%d];", R(bf[j][e]), R(pb[j]),
                             (s16 * 16 + 2 * step + e) * b_row * 4);
                    }
                for (int i = 0; i < cfg->mt; i++)
                    for (int j = 0; j < cfg->nt; j++)
                        emit(k, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%s, %s, %s, %s}, "
                                "{%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s};",
                             F(acc[i][j][0]), F(acc[i][j][1]), F(acc[i][j][2]), F(acc[i][j][3]),
                             R(x[i][0][2 * step]), R(x[i][1][2 * step]), R(x[i][0][2 * step + 1]),
                             R(x[i][1][2 * step + 1]), R(bf[j][0]), R(bf[j][1]),
                             F(acc[i][j][0]), F(acc[i][j][1]), F(acc[i][j][2]), F(acc[i][j][3]));
            }
        }
    }
    int pw = np(k);
    emit(k, "add.u32 %s, %s, 1;", R(cstage), R(cstage));
    emit(k, "setp.eq.u32 %s, %s, %d;", P(pw), R(cstage), cfg->stages);
    emit(k, "@%s mov.u32 %s, 0;", P(pw), R(cstage));
    emit(k, "add.u64 %s, %s, 1;", D(kt), D(kt));
    emit(k, "setp.lt.u64 %s, %s, %s;", P(pl), D(kt), D(KT));
    emit(k, "@%s bra %s;", P(pl), L(l_loop));
    label(k, l_done);
    emit(k, "cp.async.wait_all;");
#undef TF_ISSUE

    /* epilogue: c0,c1 at (g, 2t..2t+1), c2,c3 at (g+8, 2t..2t+1) */
    int pb = np(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pb), F(beta), C(0.0f));
    int row0 = nd(k), col0 = nd(k), t64 = nd(k), ccol = nr(k);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(wrow));
    emit(k, "add.u64 %s, %s, %s;", D(row0), D(bm), D(t64));
    emit(k, "mad.lo.u32 %s, %s, 2, %s;", R(ccol), R(t), R(wcol));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(ccol));
    emit(k, "add.u64 %s, %s, %s;", D(col0), D(bn), D(t64));
    for (int i = 0; i < cfg->mt; i++)
        for (int h = 0; h < 2; h++) {
            int row = nd(k), rbase = nd(k);
            emit(k, "add.u64 %s, %s, %d;", D(row), D(row0), i * 16 + h * 8);
            emit(k, "mul.lo.u64 %s, %s, %s;", D(rbase), D(row), D(N));
            emit(k, "add.u64 %s, %s, %s;", D(rbase), D(rbase), D(col0));
            emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(rbase), D(rbase), D(c));
            for (int j = 0; j < cfg->nt; j++) {
                int r0 = nf(k), r1 = nf(k), o0 = nf(k), o1 = nf(k);
                emit(k, "mul.rn.f32 %s, %s, %s;", F(r0), F(acc[i][j][h * 2]), F(alpha));
                emit(k, "mul.rn.f32 %s, %s, %s;", F(r1), F(acc[i][j][h * 2 + 1]), F(alpha));
                emit(k, "@%s ld.global.v2.f32 {%s, %s}, [%s+%d];", P(pb), F(o0), F(o1), D(rbase), j * 32);
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pb), F(r0), F(o0), F(beta), F(r0));
                emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pb), F(r1), F(o1), F(beta), F(r1));
                emit(k, "st.global.v2.f32 [%s+%d], {%s, %s};", D(rbase), j * 32, F(r0), F(r1));
            }
        }
    char dir[96];
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n.minnctapersm %d\n", threads, cfg->min_ctas);
    kern_finish(mod, k, cfg->name,
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
