/* SPDX-License-Identifier: MIT */
/* x86-sgemm-blocked_tmpl.c - the blocked sgemm driver of avx2 and avx512
 * (gemm_blocked, which x86-matmul_tmpl.c calls), written once over each
 * plugin's packing and micro-kernel.  Loops (Goto/BLIS): jc over nc-column
 * blocks of C, pc over kc-deep blocks of k (B's kc x nc block packed once
 * into NR-column panels, on the pool), then tasks of the pool over (ic
 * block of A, column slice) pairs: each packs its mc x kc block of A into
 * MR-row panels (its own buffer) and runs the micro-kernel over its tiles.
 * The m blocks are made a multiple of the thread count so every thread gets
 * the same share; with fewer blocks than 2 per thread the columns are sliced
 * too.  k is cut in equal blocks of at most kc: a thin last block would cost
 * a whole pass over C for little work.
 *
 * The plugin's matmul source defines, before including this file:
 *   MR, NR                   the micro-kernel's tile
 *   X86_KERNEL_TILE(kc, a, b, c, ldc, alpha, beta)   its full MR x NR tile:
 *                            C = alpha (a b) + beta C (beta 0: C not read)
 *   pack_a(g, i0, mc, pc, kc, dst)   rows [i0, i0 + mc) x [pc, pc + kc) of
 *                            op(A) into MR-row panels, rows past m zero
 *   pack_b_panel(g, pc, kc, j0, cols, dst)   one NR-column panel of op(B),
 *                            columns past `cols` zero
 *   min_size(a, b)
 * and X86_PACK_B_OWN where it packs B its own way for some layouts: it then
 * defines pack_b(st, s) after this file (pack_b_task, below, packs one panel).
 */

/* An edge tile: the whole MR x NR product into a buffer, then its valid
 * rows x cols merged into C as the scalar backend would. */
static void kernel_edge(size_t kc, const float *a, const float *b, float *c, size_t ldc, size_t rows,
                        size_t cols, float alpha, float beta)
{
    float tile[MR * NR];
    X86_KERNEL_TILE(kc, a, b, tile, NR, 1.0f, 0.0f);
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++) {
            float v = alpha * tile[r * NR + j];
            c[r * ldc + j] = beta == 0.0f ? v : v + beta * c[r * ldc + j];
        }
}

/* ---- one (jc, pc) step: tasks over (ic block, column slice) ---------------------- */
typedef struct gemm_step {
    const x86_gemm_args *g;
    const x86_state *st;
    x86_gemm_scratch *scratch;
    size_t jc, nc, pc, kc;
    size_t mc, m_blocks;         /* A blocks of mc rows (a multiple of MR) */
    size_t slice, slices;        /* column slices of the nc block (multiples of NR) */
    float beta;                  /* the call's beta at pc == 0, else 1 */
} gemm_step;

/* One NR-column panel of B per task. */
static void pack_b_task(void *arg, size_t task, unsigned worker)
{
    const gemm_step *s = arg;
    (void)worker;
    size_t j = task * NR;
    pack_b_panel(s->g, s->pc, s->kc, s->jc + j, min_size(NR, s->nc - j), s->scratch->packed_b + j * s->kc);
}

#ifdef X86_PACK_B_OWN
static void pack_b(const x86_state *st, gemm_step *s);
#else
static void pack_b(const x86_state *st, gemm_step *s)
{
    cpu_parallel(&st->cpu, (s->nc + NR - 1) / NR, pack_b_task, s);
}
#endif

static void compute_task(void *arg, size_t task, unsigned worker)
{
    const gemm_step *s = arg;
    const x86_gemm_args *g = s->g;
    size_t i0 = task / s->slices * s->mc;
    size_t j_begin = task % s->slices * s->slice, j_end = min_size(j_begin + s->slice, s->nc);
    if (i0 >= g->m || j_begin >= j_end)
        return;
    size_t mc = min_size(s->mc, g->m - i0);
    float *pa = s->scratch->packed_a + (size_t)worker * (s->st->blocking.mc + MR) * s->kc;
    pack_a(g, i0, mc, s->pc, s->kc, pa);
    for (size_t jr = j_begin; jr < j_end; jr += NR) {
        const float *pb = s->scratch->packed_b + jr * s->kc;
        size_t cols = min_size(NR, s->nc - jr);
        for (size_t ir = 0; ir < mc; ir += MR) {
            size_t rows = min_size(MR, mc - ir);
            float *c = g->C + (i0 + ir) * g->n + s->jc + jr;
            if (rows == MR && cols == NR)
                X86_KERNEL_TILE(s->kc, pa + ir * s->kc, pb, c, g->n, g->alpha, s->beta);
            else
                kernel_edge(s->kc, pa + ir * s->kc, pb, c, g->n, rows, cols, g->alpha, s->beta);
        }
    }
}

/* m in blocks of at most mc, their count a multiple of the thread count
 * where m allows; with fewer blocks than 2 per thread the columns are
 * sliced too. */
static void plan_tasks(const x86_state *st, const x86_gemm_args *g, size_t nc, unsigned threads,
                       gemm_step *s)
{
    size_t max_blocks = (g->m + MR - 1) / MR;
    size_t blocks = (g->m + st->blocking.mc - 1) / st->blocking.mc;
    if (threads > 1)
        blocks = min_size((blocks + threads - 1) / threads * threads, max_blocks);
    s->mc = ((g->m + blocks - 1) / blocks + MR - 1) / MR * MR;
    s->m_blocks = (g->m + s->mc - 1) / s->mc;
    size_t panels = (nc + NR - 1) / NR;
    s->slices = 1;
    if (threads > 1 && s->m_blocks < 2 * threads)
        s->slices = min_size((2 * threads + s->m_blocks - 1) / s->m_blocks, panels);
    s->slice = (panels + s->slices - 1) / s->slices * NR;
}

static rayo_status gemm_blocked(x86_state *st, const x86_gemm_args *g)
{
    unsigned threads = cpu_threads(&st->cpu);
    x86_gemm_scratch *scratch = x86_gemm_scratch_get(&st->cpu, &st->scratch_pool,
                                                     &st->blocking, MR, NR, threads);
    if (!scratch)
        return RAYO_E_NOMEM;
    const x86_gemm_blocking *b = &st->blocking;
    size_t k_blocks = (g->k + b->kc - 1) / b->kc;
    size_t kc = ((g->k + k_blocks - 1) / k_blocks + 7) / 8 * 8;
    for (size_t jc = 0; jc < g->n; jc += b->nc) {
        gemm_step s = { .g = g, .st = st, .scratch = scratch, .jc = jc, .nc = min_size(b->nc, g->n - jc) };
        plan_tasks(st, g, s.nc, threads, &s);
        for (size_t pc = 0; pc < g->k; pc += kc) {
            s.pc = pc;
            s.kc = min_size(kc, g->k - pc);
            s.beta = pc == 0 ? g->beta : 1.0f;
            pack_b(st, &s);
            cpu_parallel(&st->cpu, s.m_blocks * s.slices, compute_task, &s);
        }
    }
    x86_gemm_scratch_put(&st->scratch_pool, scratch);
    return RAYO_OK;
}
