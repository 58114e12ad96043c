/* SPDX-License-Identifier: MIT */
/* wgmma.c - module "wgmma" (sm_90a only): gemm on Hopper's warpgroup
 * tensor-core instructions, TF32 (f32 operands) and f16 / bf16, C in f32;
 * one kernel per entry of the list that wg_cfg_at() walks, and the table of
 * their launch shapes for the plugin.
 *
 * C (m x n, row stride ldc) = alpha A B + beta C.  Each operand is read from
 * shared memory either K-major (A as m rows of k, B as n rows of k) or, for
 * the 16-bit types only, MN-major (A as k rows of m: RAYO_TRANS_A; B as k
 * rows of n: a row-major B), which wgmma reads transposed (imm-trans-a /
 * imm-trans-b).  TF32 wgmma reads K-major operands only: the plugin
 * transposes a row-major B (and a transposed A) into scratch first.
 *
 * One block computes a (64 * consumers) x bn tile of C with 1 + consumers
 * warpgroups of 128 threads:
 *   warpgroup 0, the producer: one thread issues the bulk tensor copies
 *     (cp.async.bulk.tensor, tensor maps made by the plugin with
 *     cuTensorMapEncodeTiled, 128-byte swizzle) of each k tile (one 128-byte
 *     row of k: 32 floats or 64 halves) into a ring of `stages` shared-memory
 *     stages; each copy completes on the stage's "full" mbarrier (expect_tx);
 *   warpgroups 1.. (consumers): each owns 64 rows of the tile, waits for a
 *     stage, issues 4 wgmma.mma_async m64n<bn>k8 (tf32) or k16 (f16, bf16)
 *     (operands described by shared-memory matrix descriptors, accumulators
 *     in registers), keeps one group in flight, and frees the stage (its
 *     "empty" mbarrier, one arrival per consumer warp) once that group has
 *     completed.
 * The copies zero-fill outside the matrices, so any m, n and k work: the
 * epilogue stores only inside C.  Stage layout: A tile, then B tile, each of
 * 128-byte rows whose 16-byte chunks the copy engine's 128-byte swizzle
 * permutes (chunk ^ row % 8), the layout the descriptors name (swizzle mode
 * 1).  A K-major tile: one row per m (or n), one copy of a box of k tile x
 * rows; 1024 bytes between groups of 8 rows (stride offset), one k step 32
 * bytes along the rows.  An MN-major tile: one row per k, 64 halves of m (n)
 * wide, so (64 * consumers) / 64 (bn / 64) copies of 64 x 64 boxes, one
 * after the other (8192 bytes: the leading offset between groups of 64 m or
 * n); 1024 bytes between groups of 8 k (stride offset); one k step 16 rows.
 * Requires (plugin side): row strides multiples of 16 bytes (the copy
 * engine), 16-byte aligned A and B, ldc even and C 8-byte aligned.
 *
 * Split k (wg_f16_nt_<shape>_sk): a product with too few tiles of C to
 * fill the GPU (an LLM prompt of 128 tokens by a 2048-row weight: 16 tiles
 * on 132 SMs) runs a grid of z slices of k, each whole k tiles
 * (ceil(tiles / slices), the last one cut at k: no copy starts past k), and
 * block z stores its partial product into the z-th m x ldc slice of C, which the caller
 * sums (module infer's half_scale_c_parts). */
#include "gen-ptx.h"
#include "../plugins/cuda/cuda-ptx.h"

enum wg_type { WG_TF32, WG_F16, WG_BF16 };
static const char *const wg_type_names[] = {"tf32", "f16", "bf16"};

/* The tile shapes, each made for every type and layout. */
typedef struct wg_shape {
    const char *name;
    int bn;        /* tile columns: one wgmma m64n<bn> per k step */
    int consumers; /* consumer warpgroups, 64 tile rows each */
    int stages;
} wg_shape;

static const wg_shape wg_shapes[] = {
    {"128x256", 256, 2, 4},
    {"128x128", 128, 2, 6},
};
#define WG_SHAPE_COUNT (sizeof wg_shapes / sizeof wg_shapes[0])
/* per shape: tf32 (K-major only), then f16 and bf16 in four layouts each,
 * then the split-k f16 A x B^T kernel (the prompt's products) */
#define WG_PER_SHAPE 10
#define WG_CFG_COUNT (WG_SHAPE_COUNT * WG_PER_SHAPE)

typedef struct wg_cfg {
    char name[40]; /* wg_tf32_<shape>, wg_<f16|bf16>_<n|t><n|t>_<shape> (RAYO_TRANS_A, RAYO_TRANS_B),
                    * wg_f16_nt_<shape>_sk */
    int type;
    int split;      /* block z sums its slice of the k tiles into C + z m ldc */
    int mn_a, mn_b; /* operand MN-major in shared memory (read transposed) */
    int bn, consumers, stages;
} wg_cfg;

/* Kernel i of the module (i < WG_CFG_COUNT). */
static wg_cfg wg_cfg_at(size_t i)
{
    const wg_shape *sh = &wg_shapes[i / WG_PER_SHAPE];
    int v = (int)(i % WG_PER_SHAPE);
    wg_cfg c = {.bn = sh->bn, .consumers = sh->consumers, .stages = sh->stages};
    if (v == 0) {
        c.type = WG_TF32;
        snprintf(c.name, sizeof c.name, "wg_tf32_%s", sh->name);
        return c;
    }
    if (v == 9) {
        c.type = WG_F16;
        c.split = 1;
        snprintf(c.name, sizeof c.name, "wg_f16_nt_%s_sk", sh->name);
        return c;
    }
    int ta = ((v - 1) >> 1) & 1, tb = (v - 1) & 1;
    c.type = v <= 4 ? WG_F16 : WG_BF16;
    c.mn_a = ta;  /* A^T stored: k rows of m */
    c.mn_b = !tb; /* B stored k x n: rows of n */
    snprintf(c.name, sizeof c.name, "wg_%s_%c%c_%s", wg_type_names[c.type], ta ? 't' : 'n', tb ? 't' : 'n',
             sh->name);
    return c;
}

#define WG_ROW 128 /* bytes per shared row */
#define WG_MN 64   /* halves of m or n per row of an MN-major tile */
/* descriptor bits: 128-byte swizzle (62), 1024 bytes between 8-row groups
 * (stride offset 64 << 32); K-major: leading offset 1 (unused when
 * swizzled); MN-major: 8192 bytes between groups of 64 m or n (512 << 16) */
#define WG_DESC_K "0x4000004000010000"
#define WG_DESC_MN "0x4000004002000000"

static int wg_esize(const wg_cfg *c) { return c->type == WG_TF32 ? 4 : 2; }
/* k per stage (one 128-byte row) and per wgmma */
static int wg_bk(const wg_cfg *c) { return WG_ROW / wg_esize(c); }
static int wg_kstep(const wg_cfg *c) { return 32 / wg_esize(c); }
static int wg_block_m(const wg_cfg *c) { return 64 * c->consumers; }
static int wg_stage_bytes(const wg_cfg *c) { return (wg_block_m(c) + c->bn) * WG_ROW; }
/* descriptor units (16 bytes) from one k step to the next */
static int wg_kstep_units(int mn) { return mn ? 16 * WG_ROW >> 4 : 32 >> 4; }

/* Dynamic shared memory: 1024 bytes of slack to align the stages, the
 * stages, then two mbarriers (full, empty) per stage. */
static int wg_smem_bytes(const wg_cfg *c) { return 1024 + c->stages * wg_stage_bytes(c) + 16 * c->stages; }

typedef struct wg_kernel {
    kern *k;
    const wg_cfg *cfg;
    int tid, wg, base, bars;        /* thread, warpgroup, aligned stages, barriers */
    int row0, col0, M, N, KT;       /* tile origin (u32), sizes (u32), k tiles */
    int kt0;                        /* split kernels: the block's first k tile (u32) */
    int ldc;                        /* C's row stride (u64) */
    int c, alpha, beta;
    int a, b, m64, n64, k64;        /* sizes (u64), also for the float64 redo (TF32, bf16) */
} wg_kernel;

/* Spins on mbarrier `bar` until the phase of parity `par` completed. */
static void wg_wait(kern *k, int bar, int par)
{
    int l = nlabel(k), p = np(k);
    label(k, l);
    emit(k, "mbarrier.try_wait.parity.shared::cta.b64 %s, [%s], %s;", P(p), R(bar), R(par));
    emit(k, "@!%s bra %s;", P(p), L(l));
}

/* A loop over the k tiles, walking the ring: tile kt in stage s, whose
 * barriers are in the phase of parity `phase`. */
typedef struct wg_ring {
    int kt, s, phase, pl, l_loop, l_done;
} wg_ring;

static wg_ring wg_loop_begin(wg_kernel *w)
{
    kern *k = w->k;
    wg_ring g;
    g.kt = nr(k); /* one by one: the order of an initializer list's calls is unspecified */
    g.s = nr(k);
    g.phase = nr(k);
    g.pl = np(k);
    g.l_loop = nlabel(k);
    g.l_done = nlabel(k);
    emit(k, "mov.u32 %s, 0;", R(g.kt));
    emit(k, "mov.u32 %s, 0;", R(g.s));
    emit(k, "mov.u32 %s, 0;", R(g.phase));
    emit(k, "setp.ge.u32 %s, %s, %s;", P(g.pl), R(g.kt), R(w->KT));
    emit(k, "@%s bra %s;", P(g.pl), L(g.l_done));
    label(k, g.l_loop);
    return g;
}

/* The next stage (and phase after the last), the next tile, loop. */
static void wg_loop_end(wg_kernel *w, const wg_ring *g)
{
    kern *k = w->k;
    int p = np(k);
    emit(k, "add.u32 %s, %s, 1;", R(g->s), R(g->s));
    emit(k, "setp.eq.u32 %s, %s, %d;", P(p), R(g->s), w->cfg->stages);
    emit(k, "@%s mov.u32 %s, 0;", P(p), R(g->s));
    emit(k, "@%s xor.b32 %s, %s, 1;", P(p), R(g->phase), R(g->phase));
    emit(k, "add.u32 %s, %s, 1;", R(g->kt), R(g->kt));
    emit(k, "setp.lt.u32 %s, %s, %s;", P(g->pl), R(g->kt), R(w->KT));
    emit(k, "@%s bra %s;", P(g->pl), L(g->l_loop));
    label(k, g->l_done);
}

/* Address of stage s's full (which 0) or empty (1) barrier. */
static int wg_bar(wg_kernel *w, int s, int which)
{
    kern *k = w->k;
    int a = nr(k);
    emit(k, "mad.lo.u32 %s, %s, 8, %s;", R(a), R(s), R(w->bars));
    if (which)
        emit(k, "add.u32 %s, %s, %d;", R(a), R(a), 8 * w->cfg->stages);
    return a;
}

/* A split kernel's block z of nz: k tiles [z per, z per + per) of the KT
 * tiles of all of k, per = ceil(KT / nz), cut at KT (so no copy starts past
 * k; a slice past the end would sum nothing and store zeros), its partial
 * product into the z-th m x ldc slice of C. */
static void wg_split_setup(wg_kernel *w)
{
    kern *k = w->k;
    int z = sreg(k, "%ctaid.z"), nz = sreg(k, "%nctaid.z"), per = nr(k), left = nr(k), pin = np(k), off = nd(k);
    w->kt0 = nr(k);
    emit(k, "add.u32 %s, %s, %s;", R(per), R(w->KT), R(nz));
    emit(k, "sub.u32 %s, %s, 1;", R(per), R(per));
    emit(k, "div.u32 %s, %s, %s;", R(per), R(per), R(nz));
    emit(k, "mul.lo.u32 %s, %s, %s;", R(w->kt0), R(z), R(per));
    emit(k, "setp.gt.u32 %s, %s, %s;", P(pin), R(w->KT), R(w->kt0));
    emit(k, "sub.u32 %s, %s, %s;", R(left), R(w->KT), R(w->kt0));
    emit(k, "selp.u32 %s, %s, 0, %s;", R(left), R(left), P(pin));
    emit(k, "min.u32 %s, %s, %s;", R(w->KT), R(per), R(left));
    emit(k, "mul.wide.u32 %s, %s, %s;", D(off), R(z), R(w->M));
    emit(k, "mul.lo.u64 %s, %s, %s;", D(off), D(off), D(w->ldc));
    emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(w->c), D(off), D(w->c));
}

static void wg_setup(wg_kernel *w)
{
    kern *k = w->k;
    const wg_cfg *cfg = w->cfg;
    w->c = param_global(k, "p_c");
    int m64 = param_u64(k, "p_m"), n64 = param_u64(k, "p_n"), k64 = param_u64(k, "p_k");
    w->m64 = m64, w->n64 = n64, w->k64 = k64;
    w->ldc = param_u64(k, "p_ldc");
    w->alpha = param_f32(k, "p_alpha");
    w->beta = param_f32(k, "p_beta");
    w->M = nr(k);
    w->N = nr(k);
    w->KT = nr(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(w->M), D(m64));
    emit(k, "cvt.u32.u64 %s, %s;", R(w->N), D(n64));
    emit(k, "cvt.u32.u64 %s, %s;", R(w->KT), D(k64));
    emit(k, "add.u32 %s, %s, %d;", R(w->KT), R(w->KT), wg_bk(cfg) - 1);
    emit(k, "shr.u32 %s, %s, %d;", R(w->KT), R(w->KT), wg_bk(cfg) == 64 ? 6 : 5);
    if (cfg->split)
        wg_split_setup(w);
    w->tid = sreg(k, "%tid.x");
    w->wg = nr(k);
    emit(k, "shr.u32 %s, %s, 7;", R(w->wg), R(w->tid));
    int tm, tn;
    block_tile(k, 1, &tm, &tn);
    w->row0 = nr(k);
    w->col0 = nr(k);
    emit(k, "mul.lo.u32 %s, %s, %d;", R(w->row0), R(tm), wg_block_m(cfg));
    emit(k, "mul.lo.u32 %s, %s, %d;", R(w->col0), R(tn), cfg->bn);
    w->base = nr(k);
    w->bars = nr(k);
    emit(k, "mov.u32 %s, wg_smem;", R(w->base));
    emit(k, "add.u32 %s, %s, 1023;", R(w->base), R(w->base));
    emit(k, "and.b32 %s, %s, -1024;", R(w->base), R(w->base));
    emit(k, "add.u32 %s, %s, %d;", R(w->bars), R(w->base), cfg->stages * wg_stage_bytes(cfg));
    /* thread 0 sets up the barriers; everyone sees them after bar.sync */
    int p0 = np(k), l_skip = nlabel(k);
    emit(k, "setp.ne.u32 %s, %s, 0;", P(p0), R(w->tid));
    emit(k, "@%s bra %s;", P(p0), L(l_skip));
    for (int s = 0; s < cfg->stages; s++) {
        emit(k, "mbarrier.init.shared::cta.b64 [%s+%d], 1;", R(w->bars), 8 * s);
        emit(k, "mbarrier.init.shared::cta.b64 [%s+%d], %d;", R(w->bars), 8 * (cfg->stages + s),
             4 * cfg->consumers);
    }
    emit(k, "fence.mbarrier_init.release.cluster;");
    label(k, l_skip);
    emit(k, "bar.sync 0;");
}

/* The copies of one operand's tile into shared memory at dst: K-major, one
 * box of k tile x rows at (kc, origin); MN-major, rows / 64 boxes of 64 x k
 * tile at (origin + 64 j, kc), 8192 bytes apart. */
static void wg_copy(wg_kernel *w, int map, int dst, int kc, int origin, int rows, int mn, int full)
{
    kern *k = w->k;
    const char *op = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes";
    if (!mn) {
        emit(k, "%s [%s], [%s, {%s, %s}], [%s];", op, R(dst), D(map), R(kc), R(origin), R(full));
        return;
    }
    for (int j = 0; j < rows / WG_MN; j++) {
        int d = dst, o = origin;
        if (j) {
            d = nr(k);
            o = nr(k);
            emit(k, "add.u32 %s, %s, %d;", R(d), R(dst), j * wg_bk(w->cfg) * WG_ROW);
            emit(k, "add.u32 %s, %s, %d;", R(o), R(origin), j * WG_MN);
        }
        emit(k, "%s [%s], [%s, {%s, %s}], [%s];", op, R(d), D(map), R(o), R(kc), R(full));
    }
}

/* Warpgroup 0: thread 0 streams the k tiles of A and B into the ring. */
static void wg_producer(wg_kernel *w)
{
    kern *k = w->k;
    const wg_cfg *cfg = w->cfg;
    int ta = nd(k), tb = nd(k);
    emit(k, "mov.u64 %s, p_ta;", D(ta));
    emit(k, "cvta.param.u64 %s, %s;", D(ta), D(ta));
    emit(k, "mov.u64 %s, p_tb;", D(tb));
    emit(k, "cvta.param.u64 %s, %s;", D(tb), D(tb));
    wg_ring g = wg_loop_begin(w);
    int s = g.s;
    int full = wg_bar(w, s, 0), empty = wg_bar(w, s, 1), wpar = nr(k);
    emit(k, "xor.b32 %s, %s, 1;", R(wpar), R(g.phase)); /* a fresh barrier passes parity 1 */
    wg_wait(k, empty, wpar);
    emit(k, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%s], %d;", R(full), wg_stage_bytes(cfg));
    int sa = nr(k), sb = nr(k), kc = nr(k);
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(sa), R(s), wg_stage_bytes(cfg), R(w->base));
    emit(k, "add.u32 %s, %s, %d;", R(sb), R(sa), wg_block_m(cfg) * WG_ROW);
    if (cfg->split) {
        emit(k, "add.u32 %s, %s, %s;", R(kc), R(g.kt), R(w->kt0));
        emit(k, "mul.lo.u32 %s, %s, %d;", R(kc), R(kc), wg_bk(cfg));
    } else {
        emit(k, "mul.lo.u32 %s, %s, %d;", R(kc), R(g.kt), wg_bk(cfg));
    }
    wg_copy(w, ta, sa, kc, w->row0, wg_block_m(cfg), cfg->mn_a, full);
    wg_copy(w, tb, sb, kc, w->col0, cfg->bn, cfg->mn_b, full);
    wg_loop_end(w, &g);
}

/* "{%f<first>, ..., %f<first + n - 1>}" (too many names for the ring of
 * emit.c's F()). */
static void wg_acc_list(char *buf, size_t len, int first, int n)
{
    size_t at = 0;
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%%f%d", i ? ", " : "{", first + i);
    if (at < len)
        snprintf(buf + at, len - at, "}");
}

/* One consumer warpgroup's k loop: acc (bn / 2 registers from acc0) += its
 * 64 rows of A x B over every k tile. */
static void wg_consumer_loop(wg_kernel *w, int acc0)
{
    kern *k = w->k;
    const wg_cfg *cfg = w->cfg;
    char accs[2048];
    wg_acc_list(accs, sizeof accs, acc0, cfg->bn / 2);
    /* descriptors of stage 0: A at this warpgroup's 64 rows, B after A */
    int cw = nr(k), a_addr = nr(k), b_addr = nr(k), da0 = nd(k), db0 = nd(k), t64 = nd(k);
    emit(k, "sub.u32 %s, %s, 1;", R(cw), R(w->wg));
    emit(k, "mad.lo.u32 %s, %s, %d, %s;", R(a_addr), R(cw), 64 * WG_ROW, R(w->base));
    emit(k, "add.u32 %s, %s, %d;", R(b_addr), R(w->base), wg_block_m(cfg) * WG_ROW);
    emit(k, "shr.u32 %s, %s, 4;", R(a_addr), R(a_addr));
    emit(k, "shr.u32 %s, %s, 4;", R(b_addr), R(b_addr));
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(a_addr));
    emit(k, "or.b64 %s, %s, %s;", D(da0), D(t64), cfg->mn_a ? WG_DESC_MN : WG_DESC_K);
    emit(k, "cvt.u64.u32 %s, %s;", D(t64), R(b_addr));
    emit(k, "or.b64 %s, %s, %s;", D(db0), D(t64), cfg->mn_b ? WG_DESC_MN : WG_DESC_K);
    int lane = nr(k), plane = np(k);
    emit(k, "and.b32 %s, %s, 31;", R(lane), R(w->tid));
    emit(k, "setp.eq.u32 %s, %s, 0;", P(plane), R(lane));

    int prev = nr(k); /* the stage of the previous tile */
    wg_ring g = wg_loop_begin(w);
    int s = g.s;
    int full = wg_bar(w, s, 0);
    wg_wait(k, full, g.phase);
    int off = nd(k), da = nd(k), db = nd(k);
    emit(k, "mul.wide.u32 %s, %s, %d;", D(off), R(s), wg_stage_bytes(cfg) >> 4);
    emit(k, "add.u64 %s, %s, %s;", D(da), D(da0), D(off));
    emit(k, "add.u64 %s, %s, %s;", D(db), D(db0), D(off));
    emit(k, "wgmma.fence.sync.aligned;");
    for (int ks = 0; ks < wg_bk(cfg) / wg_kstep(cfg); ks++) {
        int dak = da, dbk = db;
        if (ks) { /* the next k step: 32 bytes along K-major rows, 16 rows of MN-major ones */
            dak = nd(k);
            dbk = nd(k);
            emit(k, "add.u64 %s, %s, %d;", D(dak), D(da), ks * wg_kstep_units(cfg->mn_a));
            emit(k, "add.u64 %s, %s, %d;", D(dbk), D(db), ks * wg_kstep_units(cfg->mn_b));
        }
        if (cfg->type == WG_TF32)
            emit(k, "wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 %s, %s, %s, 1, 1, 1;", cfg->bn, accs,
                 D(dak), D(dbk));
        else
            emit(k, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s %s, %s, %s, 1, 1, 1, %d, %d;", cfg->bn,
                 wg_type_names[cfg->type], wg_type_names[cfg->type], accs, D(dak), D(dbk), cfg->mn_a, cfg->mn_b);
    }
    emit(k, "wgmma.commit_group.sync.aligned;");
    /* the previous tile's group is done: free its stage */
    emit(k, "wgmma.wait_group.sync.aligned 1;");
    int pfree = np(k);
    emit(k, "setp.ne.and.u32 %s, %s, 0, %s;", P(pfree), R(g.kt), P(plane));
    int empty = wg_bar(w, prev, 1);
    emit(k, "@%s mbarrier.arrive.shared::cta.b64 _, [%s];", P(pfree), R(empty));
    emit(k, "mov.u32 %s, %s;", R(prev), R(s));
    wg_loop_end(w, &g);
    emit(k, "wgmma.wait_group.sync.aligned 0;");
}

/* TF32 and bf16: a thread with a sum that is not finite (products near 1e38
 * that cancel) computes its outputs again in float64 from A and B
 * (product-redo.c) and goes to l_end.  TF32: A and B K-major, k apart (the
 * plugin's copies); bf16: as stored, lda and ldb apart.  Rows row + {0, 8},
 * columns col + 8 j + {0, 1}, as the accumulators below.  f16 sums cannot
 * overflow (|f16| <= 65504). */
static void wg_redo(wg_kernel *w, int acc0, int row, int col, int l_end)
{
    kern *k = w->k;
    const wg_cfg *cfg = w->cfg;
    int n = cfg->bn / 2, v[128], l_fast = nlabel(k), one = nd(k), r64 = nd(k), c64 = nd(k);
    for (int i = 0; i < n; i++)
        v[i] = acc0 + i;
    int bad = any_not_finite(k, v, n);
    emit(k, "@!%s bra %s;", P(bad), L(l_fast));
    emit(k, "mov.u64 %s, 1;", D(one));
    emit(k, "cvt.u64.u32 %s, %s;", D(r64), R(row));
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(col));
    int a = param_global(k, "p_a"), b = param_global(k, "p_b");
    redo_product rp = {a, b, w->k64, one, w->k64, one, w->m64, w->n64, w->k64, RAYO_DTYPE_F32};
    if (cfg->type == WG_BF16) { /* A^T stored: k rows of m; B stored k x n: rows of n */
        int lda = param_u64(k, "p_lda"), ldb = param_u64(k, "p_ldb");
        redo_product h = {a, b, cfg->mn_a ? one : lda, cfg->mn_a ? lda : one, cfg->mn_b ? one : ldb,
                          cfg->mn_b ? ldb : one, w->m64, w->n64, w->k64, RAYO_DTYPE_BF16};
        rp = h;
    }
    redo_span rows = {r64, 2, 8, 1}, cols = {c64, cfg->bn / 8, 8, 2};
    redo_tile(k, &rp, &rows, &cols, w->c, w->ldc, w->alpha, w->beta);
    emit(k, "bra %s;", L(l_end));
    label(k, l_fast);
}

/* C = alpha acc + beta C inside C.  Accumulator i of a thread (warp q of
 * its warpgroup, lane 4 g + t): row 16 q + g + 8 ((i >> 1) & 1), column
 * 8 (i >> 2) + 2 t + (i & 1). */
static void wg_epilogue(wg_kernel *w, int acc0)
{
    kern *k = w->k;
    const wg_cfg *cfg = w->cfg;
    int pbeta = np(k);
    emit(k, "setp.ne.f32 %s, %s, %s;", P(pbeta), F(w->beta), C(0.0f));
    int q = nr(k), lane = nr(k), g = nr(k), t = nr(k), row = nr(k), col = nr(k);
    emit(k, "shr.u32 %s, %s, 5;", R(q), R(w->tid));
    emit(k, "and.b32 %s, %s, 3;", R(q), R(q));
    emit(k, "and.b32 %s, %s, 31;", R(lane), R(w->tid));
    emit(k, "shr.u32 %s, %s, 2;", R(g), R(lane));
    emit(k, "and.b32 %s, %s, 3;", R(t), R(lane));
    /* row = row0 + 64 (wg - 1) + 16 q + g; col = col0 + 2 t */
    emit(k, "sub.u32 %s, %s, 1;", R(row), R(w->wg));
    emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(row), R(row), R(q));
    emit(k, "mad.lo.u32 %s, %s, 16, %s;", R(row), R(row), R(g));
    emit(k, "add.u32 %s, %s, %s;", R(row), R(row), R(w->row0));
    emit(k, "mad.lo.u32 %s, %s, 2, %s;", R(col), R(t), R(w->col0));
    int l_end = nlabel(k);
    if (cfg->type != WG_F16)
        wg_redo(w, acc0, row, col, l_end);
    for (int h = 0; h < 2; h++) {
        int r = nr(k), prow = np(k), addr = nd(k), idx = nd(k), c64 = nd(k);
        emit(k, "add.u32 %s, %s, %d;", R(r), R(row), 8 * h);
        emit(k, "setp.lt.u32 %s, %s, %s;", P(prow), R(r), R(w->M));
        emit(k, "cvt.u64.u32 %s, %s;", D(idx), R(r));
        emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(col));
        emit(k, "mad.lo.u64 %s, %s, %s, %s;", D(idx), D(idx), D(w->ldc), D(c64));
        emit(k, "mad.lo.u64 %s, %s, 4, %s;", D(addr), D(idx), D(w->c));
        for (int j = 0; j < cfg->bn / 8; j++) {
            int cj = nr(k), pin = np(k), pld = np(k);
            emit(k, "add.u32 %s, %s, %d;", R(cj), R(col), 8 * j);
            emit(k, "setp.lt.and.u32 %s, %s, %s, %s;", P(pin), R(cj), R(w->N), P(prow));
            emit(k, "and.pred %s, %s, %s;", P(pld), P(pin), P(pbeta));
            int a0 = acc0 + 4 * j + 2 * h;
            int r0 = nf(k), r1 = nf(k), o0 = nf(k), o1 = nf(k);
            emit(k, "mul.rn.f32 %s, %s, %s;", F(r0), F(a0), F(w->alpha));
            emit(k, "mul.rn.f32 %s, %s, %s;", F(r1), F(a0 + 1), F(w->alpha));
            emit(k, "@%s ld.global.v2.f32 {%s, %s}, [%s+%d];", P(pld), F(o0), F(o1), D(addr), 32 * j);
            emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pld), F(r0), F(o0), F(w->beta), F(r0));
            emit(k, "@%s fma.rn.f32 %s, %s, %s, %s;", P(pld), F(r1), F(o1), F(w->beta), F(r1));
            emit(k, "@%s st.global.v2.f32 [%s+%d], {%s, %s};", P(pin), D(addr), 32 * j, F(r0), F(r1));
        }
    }
    label(k, l_end);
}

static void gen_wg(strbuf *mod, const wg_cfg *cfg)
{
    kern kk = {0};
    wg_kernel w = {.k = &kk, .cfg = cfg};
    wg_setup(&w);
    int pc = np(&kk), l_cons = nlabel(&kk), l_end = nlabel(&kk);
    emit(&kk, "setp.ne.u32 %s, %s, 0;", P(pc), R(w.wg));
    emit(&kk, "@%s bra %s;", P(pc), L(l_cons));
    int p0 = np(&kk);
    emit(&kk, "setp.ne.u32 %s, %s, 0;", P(p0), R(w.tid));
    emit(&kk, "@%s bra %s;", P(p0), L(l_end));
    wg_producer(&w);
    emit(&kk, "bra.uni %s;", L(l_end));
    label(&kk, l_cons);
    int acc0 = kk.nf;
    for (int i = 0; i < cfg->bn / 2; i++)
        emit(&kk, "mov.f32 %s, %s;", F(nf(&kk)), C(0.0f));
    wg_consumer_loop(&w, acc0);
    wg_epilogue(&w, acc0);
    label(&kk, l_end);
    char dir[96];
    snprintf(dir, sizeof dir, ".maxntid %d, 1, 1\n.minnctapersm 1\n", 128 * (1 + cfg->consumers));
    kern_finish(mod, &kk, cfg->name,
                ".param .align 64 .b8 p_ta[128], .param .align 64 .b8 p_tb[128], .param .u64 p_c, "
                ".param .u64 p_m, .param .u64 p_n, .param .u64 p_k, .param .u64 p_ldc, .param .f32 p_alpha, "
                ".param .f32 p_beta, .param .u64 p_a, .param .u64 p_b, .param .u64 p_lda, .param .u64 p_ldb",
                dir, NULL);
}

/* The float4 of a row-major matrix (rows x cols, u32 registers) at row
 * `lo + hi + add` (hi + add: the row within the tile) and column `col`:
 * its address, and whether it lies inside (pin). */
static int wg_tr_addr(kern *k, int base, int lo, int hi, int add, int col, int rows, int cols, int *pin)
{
    int row = nr(k), idx = nd(k), c64 = nd(k);
    *pin = np(k);
    emit(k, "add.u32 %s, %s, %s;", R(row), R(lo), R(hi));
    emit(k, "add.u32 %s, %s, %d;", R(row), R(row), add);
    emit(k, "setp.lt.u32 %s, %s, %s;", P(*pin), R(row), R(rows));
    emit(k, "setp.lt.and.u32 %s, %s, %s, %s;", P(*pin), R(col), R(cols), P(*pin));
    emit(k, "mul.wide.u32 %s, %s, %s;", D(idx), R(row), R(cols));
    emit(k, "cvt.u64.u32 %s, %s;", D(c64), R(col));
    emit(k, "add.u64 %s, %s, %s;", D(idx), D(idx), D(c64));
    return addr_of(k, base, idx, 4);
}

/* wg_transpose_v4: y (cols x rows) = a (rows x cols)^T for the K-major
 * copies, with 16-byte accesses on both sides: 64 x 64 tiles through a
 * padded shared tile, 256 threads, each loading four float4 of a before it
 * stores any.  Requires rows % 4 == 0, cols % 4 == 0, 16-byte aligned a
 * and y (the plugin falls back to module matrix's transpose otherwise). */
static void gen_transpose_v4(strbuf *mod)
{
    kern kk = {0}, *k = &kk;
    int y = param_global(k, "p_y"), a = param_global(k, "p_a");
    int rows64 = param_u64(k, "p_rows"), cols64 = param_u64(k, "p_cols");
    int rows = nr(k), cols = nr(k);
    emit(k, "cvt.u32.u64 %s, %s;", R(rows), D(rows64));
    emit(k, "cvt.u32.u64 %s, %s;", R(cols), D(cols64));
    int tid = sreg(k, "%tid.x"), bx = sreg(k, "%ctaid.x"), by = sreg(k, "%ctaid.y");
    int c4 = nr(k), r = nr(k), tile = nr(k), row0 = nr(k), col0 = nr(k);
    emit(k, "and.b32 %s, %s, 15;", R(c4), R(tid));
    emit(k, "shr.u32 %s, %s, 4;", R(r), R(tid));
    emit(k, "mov.u32 %s, wg_tr_tile;", R(tile));
    emit(k, "shl.b32 %s, %s, 6;", R(row0), R(by));
    emit(k, "shl.b32 %s, %s, 6;", R(col0), R(bx));
    int v[4][4];
    for (int i = 0; i < 4; i++) { /* a[row0 + r + 16 i][col0 + 4 c4 .. + 3] */
        int col = nr(k), pin;
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(col), R(c4), R(col0));
        int addr = wg_tr_addr(k, a, row0, r, 16 * i, col, rows, cols, &pin);
        for (int e = 0; e < 4; e++) {
            v[i][e] = nf(k);
            emit(k, "mov.f32 %s, %s;", F(v[i][e]), C(0.0f));
        }
        emit(k, "@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s];", P(pin), F(v[i][0]), F(v[i][1]), F(v[i][2]),
             F(v[i][3]), D(addr));
    }
    for (int i = 0; i < 4; i++) { /* tile[r + 16 i][4 c4 + e], rows of 65 floats */
        int sa = nr(k);
        emit(k, "add.u32 %s, %s, %d;", R(sa), R(r), 16 * i);
        emit(k, "mad.lo.u32 %s, %s, 65, %s;", R(sa), R(sa), R(c4));
        emit(k, "mad.lo.u32 %s, %s, 3, %s;", R(sa), R(c4), R(sa)); /* + 4 c4 in all */
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(sa), R(tile));
        for (int e = 0; e < 4; e++)
            emit(k, "st.shared.f32 [%s+%d], %s;", R(sa), 4 * e, F(v[i][e]));
    }
    emit(k, "bar.sync 0;");
    for (int i = 0; i < 4; i++) { /* y[col0 + r + 16 i][row0 + 4 c4 .. + 3] = tile[4 c4 + e][r + 16 i] */
        int ocol = nr(k), sa = nr(k), o[4], pin;
        emit(k, "add.u32 %s, %s, %d;", R(sa), R(r), 16 * i);
        emit(k, "mad.lo.u32 %s, %s, 260, %s;", R(sa), R(c4), R(sa)); /* 4 c4 rows of 65 */
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(sa), R(tile));
        for (int e = 0; e < 4; e++) {
            o[e] = nf(k);
            emit(k, "ld.shared.f32 %s, [%s+%d];", F(o[e]), R(sa), 4 * 65 * e);
        }
        emit(k, "mad.lo.u32 %s, %s, 4, %s;", R(ocol), R(c4), R(row0));
        int addr = wg_tr_addr(k, y, col0, r, 16 * i, ocol, cols, rows, &pin);
        emit(k, "@%s st.global.v4.f32 [%s], {%s, %s, %s, %s};", P(pin), D(addr), F(o[0]), F(o[1]), F(o[2]),
             F(o[3]));
    }
    kern_finish(mod, k, "wg_transpose_v4", ".param .u64 p_y, .param .u64 p_a, .param .u64 p_rows, .param .u64 p_cols",
                ".maxntid 256, 1, 1\n", "\t.shared .align 16 .b8 wg_tr_tile[16640];\n");
}

void module_wgmma(strbuf *mod)
{
    sb_printf(mod, "\n.extern .shared .align 1024 .b8 wg_smem[];\n");
    for (size_t i = 0; i < WG_CFG_COUNT; i++) {
        wg_cfg c = wg_cfg_at(i);
        gen_wg(mod, &c);
    }
    gen_transpose_v4(mod);
}

/* The launch shape of every variant, as the C table the plugin reads. */
void wgmma_write_config_table(strbuf *c)
{
    sb_printf(c, "const rayo_ptx_wgmma_config rayo_cuda_wgmma_configs[] = {\n");
    for (size_t i = 0; i < WG_CFG_COUNT; i++) {
        wg_cfg cf = wg_cfg_at(i);
        sb_printf(c, "    {\"%s\", %d, %d, %d, %d, %d},\n", cf.name, wg_block_m(&cf), cf.bn,
                  128 * (1 + cf.consumers), wg_smem_bytes(&cf), wg_bk(&cf));
    }
    sb_printf(c, "};\nconst unsigned rayo_cuda_wgmma_config_count = %u;\n", (unsigned)WG_CFG_COUNT);
}
