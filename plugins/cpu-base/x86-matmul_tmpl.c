/* SPDX-License-Identifier: MIT */
/* x86-matmul_tmpl.c - the matmul entry points of avx2 and avx512 around
 * each plugin's blocked sgemm: empty and k = 0 products, m = 1 or n = 1 as a
 * gemv, a product past FLT_MAX in float64, the matmul kernel and the typed
 * one (dequantized panels through the same sgemm, x86-typed-matmul.c), a
 * few rows of A against B transposed as dot products.
 * Included at the end of the plugin's matmul source, which defines
 * X86_SGEMM (its sgemm's name, declared in its plugin.h), X86_GEMV_RUN
 * (x86-gemv_tmpl.c), gemm_blocked(st, g), and for a few rows of A against
 * B transposed dots_tile (below), DOTS_MR and DOTS_LEN first. */

/* m == 1 or n == 1: a matrix-vector product.
 *   m == 1: C (1 x n) = a^T op(B): B stored k x n is the transposed gemv,
 *           B stored n x k gives dot products;
 *   n == 1: C (m x 1) = op(A) b: A stored m x k gives dot products, A stored
 *           k x m is the transposed gemv. */
static void matmul_as_gemv(const x86_state *st, const x86_gemm_args *g)
{
    if (g->m == 1)
        X86_GEMV_RUN(st, !g->trans_b, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, g->alpha, g->B, g->A,
                     g->beta, g->C);
    else
        X86_GEMV_RUN(st, g->trans_a, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, g->alpha, g->A, g->B,
                     g->beta, g->C);
}

/* ---- a few rows of A against B transposed ------------------------------
 * C (m x n) = alpha A B^T + beta C with A m x k and B n x k (a linear
 * layer's weights) for m up to FEW_ROWS_MAX: dot products of A's rows with
 * B's, B read once, four rows at a time in runs of DOTS_LEN values that
 * stay in L1 while every row of A (in L2) takes them.  The blocked sgemm
 * packs all of B for so few rows: 4 x 2048 x 2048 took 2.8 ms there, 0.8
 * here (avx512, 1 thread; doc/benchmarks-cpu.md).  Float sums go to
 * double every DOTS_LEN values, as the gemv's (the strict contract at any
 * k); a sum that overflowed is redone in double (cpu-f64-fallback.h), so
 * no pass over the operands looks for that first.
 *
 * dots_tile(A, lda, mr, B, ldb, nr, len, out), always inlined: out[r][c]
 * += the dot of A's row r with B's row c over len <= DOTS_LEN values,
 * r < mr <= DOTS_MR, c < nr <= 4. */
#define FEW_ROWS_MAX 16

static void dots_block(const float *A, size_t lda, size_t mr, const float *B, size_t ldb, size_t nr, size_t len,
                       double out[][4])
{
    if (mr == DOTS_MR && nr == 4)
        dots_tile(A, lda, DOTS_MR, B, ldb, 4, len, out); /* sizes constant: unrolled, sums in registers */
    else
        dots_tile(A, lda, mr, B, ldb, nr, len, out);
}

typedef struct few_rows_job {
    const x86_gemm_args *g;
    size_t chunk; /* rows of B per task, a multiple of 4 */
} few_rows_job;

static void few_rows_store(const x86_gemm_args *g, size_t j, size_t nr, double sums[][4])
{
    for (size_t i = 0; i < g->m; i++)
        for (size_t c = 0; c < nr; c++) {
            float *y = g->C + i * g->n + j + c;
            double s = cpu_dot_redo(sums[i][c], g->B + (j + c) * g->k, 1, g->A + i * g->k, g->k);
            float v = (float)(g->alpha * s);
            *y = g->beta == 0.0f ? v : v + g->beta * *y; /* beta == 0: C unread */
        }
}

static void few_rows_task(void *arg, size_t task, unsigned worker)
{
    const few_rows_job *job = arg;
    const x86_gemm_args *g = job->g;
    (void)worker;
    size_t end = (task + 1) * job->chunk < g->n ? (task + 1) * job->chunk : g->n;
    for (size_t j = task * job->chunk; j < end; j += 4) {
        size_t nr = end - j < 4 ? end - j : 4;
        double sums[FEW_ROWS_MAX][4] = { { 0.0 } };
        for (size_t p = 0; p < g->k; p += DOTS_LEN) {
            size_t len = g->k - p < DOTS_LEN ? g->k - p : DOTS_LEN;
            for (size_t i = 0; i < g->m; i += DOTS_MR)
                dots_block(g->A + i * g->k + p, g->k, g->m - i < DOTS_MR ? g->m - i : DOTS_MR, g->B + j * g->k + p,
                           g->k, nr, len, sums + i);
        }
        few_rows_store(g, j, nr, sums);
    }
}

static void few_rows_run(const x86_state *st, const x86_gemm_args *g)
{
    unsigned threads = cpu_threads(&st->cpu);
    size_t tasks = g->m * g->n * g->k >= ((size_t)1 << 18) && threads > 1 ? threads : 1;
    few_rows_job job = { g, ((g->n + tasks - 1) / tasks + 3) / 4 * 4 };
    cpu_parallel(&st->cpu, (g->n + job.chunk - 1) / job.chunk, few_rows_task, &job);
}

rayo_status X86_SGEMM(void *state, const x86_gemm_args *g)
{
    if (g->m == 0 || g->n == 0)
        return RAYO_OK;
    if (g->k == 0) { /* op(A) op(B) is the zero matrix */
        for (size_t i = 0; i < g->m * g->n; i++)
            g->C[i] = g->beta == 0.0f ? 0.0f : g->beta * g->C[i];
        return RAYO_OK;
    }
    if (g->m == 1 || g->n == 1) {
        matmul_as_gemv(state, g);
        return RAYO_OK;
    }
    if (g->m <= FEW_ROWS_MAX && g->trans_b && !g->trans_a) {
        few_rows_run(state, g);
        return RAYO_OK;
    }
    if (x86_gemm_f64_if_overflow(g))
        return RAYO_OK;
    return gemm_blocked(state, g);
}

CPU_KERNEL_FN(matmul)
{
    if (rayo_call_strided(call))
        return RAYO_E_UNSUPPORTED; /* row strides: the scalar backend takes them */
    x86_gemm_args g = {
        .m = call->m, .n = call->n, .k = call->k, .alpha = call->alpha, .beta = call->beta,
        .A = call->a, .B = call->b, .C = call->y,
        .trans_a = (call->flags & RAYO_TRANS_A) != 0, .trans_b = (call->flags & RAYO_TRANS_B) != 0,
    };
    return X86_SGEMM(state, &g);
}

/* f16, bf16 and block-quantized operands: dequantized panels through this
 * sgemm (x86-typed-matmul.c). */
CPU_KERNEL_FN(matmul_typed)
{
    rayo_status s = typed_matmul_as_gemvs(state, call, CPU_KERNEL(gemv_quant_many), CPU_KERNEL(gemv_quant_shares_decoding));
    return s != RAYO_E_UNSUPPORTED ? s : typed_matmul_run(state, call, X86_SGEMM);
}
