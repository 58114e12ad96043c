/* matmul.c - C (m x n) = alpha op(A) op(B) + beta C, row-major.
 *
 * The classic blocked scheme (GotoBLAS / BLIS), in portable C:
 *   - C is cut into tiles of MC x NC (narrower when that gives too few
 *     tiles to keep every thread busy); a tile is one task of the pool.
 *   - For each KC-deep slice of k, the task packs its MC x KC block of op(A)
 *     into MR-row micro-panels and its KC x NC block of op(B) into NR-column
 *     micro-panels, contiguous and zero-padded: the inner kernel then never
 *     sees strides, transposes or edges.
 *   - The micro-kernel keeps an MR x NR block of C in local accumulators and
 *     runs over KC; it is plain loops over small constant bounds, which
 *     compilers unroll and vectorise.  MR x NR = 3 x 16 is 12 four-wide
 *     registers plus one broadcast and one B vector: it fits the 16 of
 *     baseline x86-64 (SSE2) and WebAssembly SIMD128 without spills (6 x 8
 *     and 4 x 16 spill; measured 2x slower with gcc -O2), and AArch64 has 32.
 *   - Loop order: B micro-panel (KC x NR, 16 KiB) outer so it stays in L1
 *     while the A block (MC x KC, 96 KiB) streams from L2.
 * Packing B again for every row tile costs 1 / MC of the arithmetic.
 *
 * beta == 0 never reads C (C may hold NaN garbage).  m == 1 and n == 1 go to
 * gemv, where packing would only add traffic.
 */
#include "plugin.h"

#include <string.h>

#define MR 3
#define NR 16
#define KC 256
#define MC 96  /* multiple of MR */
#define NC 512 /* multiple of NR */
_Static_assert(MC % MR == 0 && NC % NR == 0, "tiles must hold whole micro-panels");

/* gcc -O2 vectorises the micro-kernel's loops but keeps the accumulators in
 * memory unless the loops over MR and NR are unrolled completely.  clang
 * unrolls them by itself (and spills more when told to: 10 vs 20 GFLOP/s). */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL_FULLY _Pragma("GCC unroll 16")
#else
#define UNROLL_FULLY
#endif
#define MATMUL_PARALLEL_MIN ((size_t)1 << 18) /* m * n * k below which one thread runs */

typedef struct matmul_job {
    const float *A, *B;
    float *C;
    size_t m, n, k;
    /* op(A)(i, p) = A[i * a_rs + p * a_cs]; op(B)(p, j) = B[p * b_rs + j * b_cs] */
    size_t a_rs, a_cs, b_rs, b_cs;
    float alpha, beta;
    size_t nc;            /* tile width: NC, or less for parallelism */
    size_t col_tiles;     /* tiles across n */
    float *scratch;       /* per worker: packed A block, then packed B block */
    size_t a_pack, b_pack;/* floats of each, per worker */
} matmul_job;

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static size_t round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

/* op(A)[i0.., p0..] (mc x kc) -> MR-row panels: panel r holds, for each p,
 * the MR values of rows r*MR.. at column p; rows past mc are zero. */
static void pack_a(const matmul_job *job, size_t i0, size_t mc, size_t p0, size_t kc,
                   float *restrict dst)
{
    for (size_t r = 0; r < mc; r += MR) {
        size_t rows = min_size(MR, mc - r);
        const float *src = job->A + (i0 + r) * job->a_rs + p0 * job->a_cs;
        for (size_t p = 0; p < kc; p++, dst += MR) {
            size_t ii = 0;
            for (; ii < rows; ii++)
                dst[ii] = src[ii * job->a_rs + p * job->a_cs];
            for (; ii < MR; ii++)
                dst[ii] = 0.0f;
        }
    }
}

/* op(B)[p0.., j0..] (kc x nc) -> NR-column panels, zero-padded likewise. */
static void pack_b(const matmul_job *job, size_t p0, size_t kc, size_t j0, size_t nc,
                   float *restrict dst)
{
    for (size_t c = 0; c < nc; c += NR) {
        size_t cols = min_size(NR, nc - c);
        const float *src = job->B + p0 * job->b_rs + (j0 + c) * job->b_cs;
        for (size_t p = 0; p < kc; p++, dst += NR) {
            size_t jj = 0;
            if (job->b_cs == 1 && cols == NR)
                memcpy(dst, src + p * job->b_rs, NR * sizeof(float));
            else
                for (; jj < cols; jj++)
                    dst[jj] = src[p * job->b_rs + jj * job->b_cs];
            for (jj = cols; jj < NR; jj++)
                dst[jj] = 0.0f;
        }
    }
}

/* acc (MR x NR) = sum over p < kc of a[p] (MR) outer b[p] (NR). */
static void micro_kernel(size_t kc, const float *restrict a, const float *restrict b,
                         float *restrict acc)
{
    float c[MR][NR] = { { 0.0f } };
    for (size_t p = 0; p < kc; p++, a += MR, b += NR) {
        UNROLL_FULLY
        for (size_t i = 0; i < MR; i++) {
            UNROLL_FULLY
            for (size_t j = 0; j < NR; j++)
                c[i][j] += a[i] * b[j];
        }
    }
    memcpy(acc, c, sizeof c);
}

/* C block (rows x cols, leading dimension ldc) from acc: on the first k
 * slice C = alpha acc + beta C (C unread when beta == 0), then C += alpha acc. */
static void store_block(float *C, size_t ldc, size_t rows, size_t cols, const float *acc,
                        float alpha, float beta, int first)
{
    if (rows == MR && cols == NR) { /* full block: constant bounds, vectorised */
        for (size_t i = 0; i < MR; i++, C += ldc, acc += NR) {
            if (!first)
                for (size_t j = 0; j < NR; j++)
                    C[j] += alpha * acc[j];
            else if (beta == 0.0f)
                for (size_t j = 0; j < NR; j++)
                    C[j] = alpha * acc[j];
            else
                for (size_t j = 0; j < NR; j++)
                    C[j] = alpha * acc[j] + beta * C[j];
        }
        return;
    }
    for (size_t i = 0; i < rows; i++, C += ldc, acc += NR) {
        if (!first)
            for (size_t j = 0; j < cols; j++)
                C[j] += alpha * acc[j];
        else if (beta == 0.0f)
            for (size_t j = 0; j < cols; j++)
                C[j] = alpha * acc[j];
        else
            for (size_t j = 0; j < cols; j++)
                C[j] = alpha * acc[j] + beta * C[j];
    }
}

/* One MC x NC tile of C, all of k. */
static void matmul_tile(void *arg, size_t task, unsigned worker)
{
    const matmul_job *job = arg;
    size_t i0 = task / job->col_tiles * MC, j0 = task % job->col_tiles * job->nc;
    size_t mc = min_size(MC, job->m - i0), nc = min_size(job->nc, job->n - j0);
    float *apack = job->scratch + (size_t)worker * (job->a_pack + job->b_pack);
    float *bpack = apack + job->a_pack;
    float acc[MR * NR];

    for (size_t p0 = 0; p0 < job->k; p0 += KC) {
        size_t kc = min_size(KC, job->k - p0);
        pack_a(job, i0, mc, p0, kc, apack);
        pack_b(job, p0, kc, j0, nc, bpack);
        for (size_t jr = 0; jr < nc; jr += NR) {
            for (size_t ir = 0; ir < mc; ir += MR) {
                micro_kernel(kc, apack + ir * kc, bpack + jr * kc, acc);
                store_block(job->C + (i0 + ir) * job->n + j0 + jr, job->n,
                            min_size(MR, mc - ir), min_size(NR, nc - jr), acc, job->alpha,
                            job->beta, p0 == 0);
            }
        }
    }
}

/* Tile width and count.  Row tiles are MC high; columns are cut in NC-wide
 * tiles, or narrower (whole micro-panels) when there would be fewer than two
 * tiles per worker, so that e.g. 96 x 512 x 4096 still uses every thread. */
static size_t plan_tiles(matmul_job *job, size_t workers)
{
    size_t row_tiles = (job->m + MC - 1) / MC;
    size_t want = 2 * workers; /* tiles wanted */
    size_t col_tiles = (job->n + NC - 1) / NC;
    if (workers > 1 && row_tiles * col_tiles < want) {
        size_t panels = (job->n + NR - 1) / NR;
        col_tiles = min_size(panels, (want + row_tiles - 1) / row_tiles);
    }
    job->nc = round_up((job->n + col_tiles - 1) / col_tiles, NR);
    job->col_tiles = (job->n + job->nc - 1) / job->nc;
    return row_tiles * job->col_tiles;
}

/* k == 0: op(A) op(B) is the zero matrix. */
static void scale_c(float *C, size_t count, float beta)
{
    for (size_t i = 0; i < count; i++)
        C[i] = beta == 0.0f ? 0.0f : beta * C[i];
}

static void set_strides(matmul_job *job, uint32_t flags)
{
    int ta = (flags & RAYO_TRANS_A) != 0, tb = (flags & RAYO_TRANS_B) != 0;
    job->a_rs = ta ? 1 : job->k; /* A stored m x k, or k x m when transposed */
    job->a_cs = ta ? job->m : 1;
    job->b_rs = tb ? 1 : job->n; /* B stored k x n, or n x k when transposed */
    job->b_cs = tb ? job->k : 1;
}

/* m == 1 or n == 1: a matrix-vector product (both operands' vectors are
 * contiguous whatever the transpose flags). */
static rayo_status matmul_as_gemv(const cpu_state *st, const rayo_call *c)
{
    int ta = (c->flags & RAYO_TRANS_A) != 0, tb = (c->flags & RAYO_TRANS_B) != 0;
    if (c->n == 1) /* C column = op(A) b */
        return ta ? scalar_gemv_run(st, 1, c->k, c->m, 0, c->alpha, c->a, c->b, c->beta, c->y)
                  : scalar_gemv_run(st, 0, c->m, c->k, 0, c->alpha, c->a, c->b, c->beta, c->y);
    /* C row = a op(B) = op(B)^T a */
    return tb ? scalar_gemv_run(st, 0, c->n, c->k, 0, c->alpha, c->b, c->a, c->beta, c->y)
              : scalar_gemv_run(st, 1, c->k, c->n, 0, c->alpha, c->b, c->a, c->beta, c->y);
}

SCALAR_KERNEL(matmul)
{
    const cpu_state *st = state;
    if (call->flags & ~(uint32_t)(RAYO_TRANS_A | RAYO_TRANS_B))
        return RAYO_E_UNSUPPORTED;
    if (call->m == 0 || call->n == 0)
        return RAYO_OK;
    if (call->lda || call->ldb || call->ldy) /* views: the row-dot path takes any strides */
        return scalar_matmul_typed(state, call);
    if (call->k == 0) {
        scale_c(call->y, call->m * call->n, call->beta);
        return RAYO_OK;
    }
    if (call->m == 1 || call->n == 1)
        return matmul_as_gemv(st, call);

    matmul_job job = { .A = call->a, .B = call->b, .C = call->y, .m = call->m, .n = call->n,
                       .k = call->k, .alpha = call->alpha, .beta = call->beta };
    set_strides(&job, call->flags);
    /* in double: m * n * k may not fit in size_t */
    int parallel = (double)job.m * job.n * job.k >= (double)MATMUL_PARALLEL_MIN &&
                   cpu_threads(st) > 1;
    size_t workers = parallel ? cpu_threads(st) : 1;
    size_t tiles = plan_tiles(&job, workers);
    size_t kc = min_size(KC, job.k);
    job.a_pack = round_up(min_size(MC, round_up(job.m, MR)) * kc, 16);
    job.b_pack = round_up(job.nc * kc, 16);
    job.scratch = cpu_alloc_floats(st, workers * (job.a_pack + job.b_pack));
    if (!job.scratch)
        return RAYO_E_NOMEM; /* nothing written yet: the next backend may try */
    if (parallel)
        cpu_parallel(st, tiles, matmul_tile, &job);
    else
        for (size_t t = 0; t < tiles; t++)
            matmul_tile(&job, t, 0);
    cpu_free(st, job.scratch);
    return RAYO_OK;
}
