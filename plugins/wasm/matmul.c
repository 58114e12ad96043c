/* matmul.c - C (m x n) = alpha op(A) op(B) + beta C, row-major, SIMD128.
 *
 * The blocked scheme of the scalar backend (GotoBLAS / BLIS): C in MC x NC
 * tiles; per KC-deep slice of k, op(A) packed into MR-row micro-panels and
 * op(B) into NR-column micro-panels, zero-padded, so the micro-kernel never
 * sees strides, transposes or edges.  The micro-kernel keeps an MR x NR
 * block of C in MR * NR / 4 vectors: 6 x 8 is 12 accumulators + 2 vectors
 * of B + 1 broadcast of A = 15 of the 16 SIMD registers engines have on
 * x86-64 (and half of AArch64's 32).  WebAssembly has no FMA: mul + add.
 *
 * beta == 0 never reads C.  m == 1 or n == 1 go to gemv.
 */
#include "plugin.h"

#include <string.h>

#ifndef MR /* -DMR=.. -DNR=.. to try other shapes */
#define MR 6
#define NR 8
#endif
#define NV (NR / 4) /* vectors per row of the micro-tile */
#define KC 256
#define MC (16 * MR) /* multiple of MR */
#define NC 512       /* multiple of NR */
#define MATMUL_PARALLEL_MIN ((size_t)1 << 18)

typedef struct matmul_job {
    const float *A, *B;
    float *C;
    size_t m, n, k;
    /* op(A)(i, p) = A[i * a_rs + p * a_cs]; op(B)(p, j) = B[p * b_rs + j * b_cs] */
    size_t a_rs, a_cs, b_rs, b_cs;
    float alpha, beta;
    size_t col_tiles;
    float *scratch;        /* per worker: packed A block, then packed B block */
    size_t a_pack, b_pack; /* floats of each, per worker */
} matmul_job;

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static size_t round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

/* op(A)[i0.., p0..] (mc x kc) -> MR-row panels: for each p, MR values. */
static void pack_a(const matmul_job *job, size_t i0, size_t mc, size_t p0, size_t kc, float *dst)
{
    for (size_t r = 0; r < mc; r += MR) {
        size_t rows = min_size(MR, mc - r);
        const float *src = job->A + (i0 + r) * job->a_rs + p0 * job->a_cs;
        if (job->a_cs != 1 && rows == MR) {
            /* A transposed: the MR values of one p are contiguous */
            for (size_t p = 0; p < kc; p++, dst += MR)
                memcpy(dst, src + p * job->a_cs, MR * sizeof(float));
            continue;
        }
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
static void pack_b(const matmul_job *job, size_t p0, size_t kc, size_t j0, size_t nc, float *dst)
{
    for (size_t c = 0; c < nc; c += NR) {
        size_t cols = min_size(NR, nc - c);
        const float *src = job->B + p0 * job->b_rs + (j0 + c) * job->b_cs;
        if (job->b_cs == 1 && cols == NR) {
            for (size_t p = 0; p < kc; p++, dst += NR)
                memcpy(dst, src + p * job->b_rs, NR * sizeof(float));
            continue;
        }
        for (size_t p = 0; p < kc; p++, dst += NR) {
            size_t jj = 0;
            for (; jj < cols; jj++)
                dst[jj] = src[p * job->b_rs + jj * job->b_cs];
            for (; jj < NR; jj++)
                dst[jj] = 0.0f;
        }
    }
}

/* acc (MR x NR) = sum over p < kc of a[p] (MR) outer b[p] (NR). */
static void micro_kernel(size_t kc, const float *a, const float *b, float *acc)
{
    vf32 c[MR][NV];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < NV; v++)
            c[i][v] = vsplat(0.0f);
    for (size_t p = 0; p < kc; p++, a += MR, b += NR) {
        vf32 bv[NV];
        for (int v = 0; v < NV; v++)
            bv[v] = wasm_v128_load(b + 4 * v);
        for (int i = 0; i < MR; i++) {
            vf32 ai = wasm_v128_load32_splat(a + i);
            for (int v = 0; v < NV; v++)
                c[i][v] = vadd(c[i][v], vmul(ai, bv[v]));
        }
    }
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < NV; v++)
            wasm_v128_store(acc + i * NR + 4 * v, c[i][v]);
}

/* C block (rows x cols, leading dimension ldc) from acc: on the first k
 * slice C = alpha acc + beta C (C unread when beta == 0), then C += alpha acc. */
static void store_block(float *C, size_t ldc, size_t rows, size_t cols, const float *acc,
                        float alpha, float beta, int first)
{
    const vf32 va = vsplat(alpha), vb = vsplat(beta);
    for (size_t i = 0; i < rows; i++, C += ldc, acc += NR) {
        for (size_t j = 0; j < cols; j += 4) {
            size_t w = min_size(4, cols - j);
            vf32 v = vmul(va, wasm_v128_load(acc + j));
            if (!first)
                v = vadd(w == 4 ? wasm_v128_load(C + j) : load_partial(C + j, w), v);
            else if (beta != 0.0f)
                v = vadd(v, vmul(vb, w == 4 ? wasm_v128_load(C + j) : load_partial(C + j, w)));
            if (w == 4)
                wasm_v128_store(C + j, v);
            else
                store_partial(C + j, v, w);
        }
    }
}

/* One MC x NC tile of C, all of k. */
static void matmul_tile(void *arg, size_t task, unsigned worker)
{
    const matmul_job *job = arg;
    size_t i0 = task / job->col_tiles * MC, j0 = task % job->col_tiles * NC;
    size_t mc = min_size(MC, job->m - i0), nc = min_size(NC, job->n - j0);
    float *apack = job->scratch + (size_t)worker * (job->a_pack + job->b_pack);
    float *bpack = apack + job->a_pack;
    float acc[MR * NR] __attribute__((aligned(16)));

    for (size_t p0 = 0; p0 < job->k; p0 += KC) {
        size_t kc = min_size(KC, job->k - p0);
        pack_a(job, i0, mc, p0, kc, apack);
        pack_b(job, p0, kc, j0, nc, bpack);
        for (size_t jr = 0; jr < nc; jr += NR)
            for (size_t ir = 0; ir < mc; ir += MR) {
                micro_kernel(kc, apack + ir * kc, bpack + jr * kc, acc);
                store_block(job->C + (i0 + ir) * job->n + j0 + jr, job->n, min_size(MR, mc - ir),
                            min_size(NR, nc - jr), acc, job->alpha, job->beta, p0 == 0);
            }
    }
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

/* m == 1 or n == 1: a matrix-vector product. */
static rayo_status matmul_as_gemv(const cpu_state *st, const rayo_call *c)
{
    int ta = (c->flags & RAYO_TRANS_A) != 0, tb = (c->flags & RAYO_TRANS_B) != 0;
    if (c->n == 1) /* C column = op(A) b */
        return ta ? wasm_gemv_run(st, 1, c->k, c->m, c->alpha, c->a, c->b, c->beta, c->y)
                  : wasm_gemv_run(st, 0, c->m, c->k, c->alpha, c->a, c->b, c->beta, c->y);
    /* C row = a op(B) = op(B)^T a */
    return tb ? wasm_gemv_run(st, 0, c->n, c->k, c->alpha, c->b, c->a, c->beta, c->y)
              : wasm_gemv_run(st, 1, c->k, c->n, c->alpha, c->b, c->a, c->beta, c->y);
}

WASM_KERNEL(matmul)
{
    if (rayo_call_strided(call))
        return RAYO_E_UNSUPPORTED; /* row strides: not in this kernel yet */
    const cpu_state *st = state;
    if (call->flags & ~(uint32_t)(RAYO_TRANS_A | RAYO_TRANS_B))
        return RAYO_E_UNSUPPORTED;
    if (call->m == 0 || call->n == 0)
        return RAYO_OK;
    if (call->k == 0) {
        scale_c(call->y, call->m * call->n, call->beta);
        return RAYO_OK;
    }
    if (call->m == 1 || call->n == 1)
        return matmul_as_gemv(st, call);

    matmul_job job = {.A = call->a, .B = call->b, .C = call->y, .m = call->m, .n = call->n,
                      .k = call->k, .alpha = call->alpha, .beta = call->beta};
    set_strides(&job, call->flags);
    job.col_tiles = (job.n + NC - 1) / NC;
    size_t tiles = (job.m + MC - 1) / MC * job.col_tiles;
    size_t kc = min_size(KC, job.k);
    job.a_pack = round_up(min_size(MC, round_up(job.m, MR)) * kc, 16);
    job.b_pack = round_up(min_size(NC, round_up(job.n, NR)) * kc, 16);

    int parallel = tiles > 1 && (double)job.m * job.n * job.k >= (double)MATMUL_PARALLEL_MIN;
    size_t workers = parallel ? cpu_threads(st) : 1;
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
