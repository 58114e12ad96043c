/* matmul.c - matmul: C (m x n) = alpha op(A) op(B) + beta C, row-major.
 *
 * The blocked scheme of GotoBLAS / BLIS with an Advanced SIMD micro-kernel:
 *   - C is cut into MC x NC tiles; a tile is one task of the core's pool and
 *     runs over all of k, so no two tasks ever write the same C element.
 *   - For each KC-deep slice of k the task packs its MC x KC block of op(A)
 *     into 8-row micro-panels and its KC x NC block of op(B) into 12-column
 *     micro-panels, contiguous and zero-padded: the micro-kernel never sees
 *     strides, transposes or ragged edges.
 *   - The micro-kernel holds an 8 x 12 block of C in 24 of the 32 vector
 *     registers and per step of k loads 2 vectors of A and 3 of B for 24
 *     FMAs (vfmaq_laneq_f32: B vector times one lane of A).
 *   - Loop order: the B micro-panel (KC x 12, 12 KiB) stays in L1 while the
 *     A block (MC x KC, 128 KiB) streams from L2.
 * beta == 0 never reads C.  m == 1 and n == 1 go to gemv (packing would
 * only add traffic).  Rounding: float FMAs over one KC slice (256 terms),
 * slices added into C; the same order of error as any BLAS sgemm.
 */
#include "plugin.h"
#include "math.h"

#include <stdlib.h>
#include <string.h>

#define MR 8
#define NR 12
#define KC 256
#define MC 128 /* multiple of MR */
#define NC 384 /* multiple of NR */
#define MATMUL_PARALLEL_MIN ((size_t)1 << 18) /* m * n * k below which one thread runs */

typedef struct matmul_job {
    const float *A, *B;
    float *C;
    size_t m, n, k;
    /* op(A)(i, p) = A[i * a_rs + p * a_cs]; op(B)(p, j) = B[p * b_rs + j * b_cs] */
    size_t a_rs, a_cs, b_rs, b_cs;
    float alpha, beta;
    size_t col_tiles;      /* tiles across n */
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

/* op(A)[i0.., p0..] (mc x kc) -> MR-row panels: for each p, the MR values of
 * rows r..r+MR-1 at column p; rows past mc are zero. */
static void pack_a(const matmul_job *job, size_t i0, size_t mc, size_t p0, size_t kc,
                   float *restrict dst)
{
    for (size_t r = 0; r < mc; r += MR) {
        size_t rows = min_size(MR, mc - r);
        const float *src = job->A + (i0 + r) * job->a_rs + p0 * job->a_cs;
        if (rows == MR && job->a_rs == 1) { /* op(A) = A^T: columns of op(A) are contiguous */
            for (size_t p = 0; p < kc; p++, dst += MR) {
                const float *col = src + p * job->a_cs;
                vst1q_f32(dst, vld1q_f32(col));
                vst1q_f32(dst + 4, vld1q_f32(col + 4));
            }
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
static void pack_b(const matmul_job *job, size_t p0, size_t kc, size_t j0, size_t nc,
                   float *restrict dst)
{
    for (size_t c = 0; c < nc; c += NR) {
        size_t cols = min_size(NR, nc - c);
        const float *src = job->B + p0 * job->b_rs + (j0 + c) * job->b_cs;
        if (cols == NR && job->b_cs == 1) { /* rows of op(B) are contiguous */
            for (size_t p = 0; p < kc; p++, dst += NR) {
                const float *row = src + p * job->b_rs;
                vst1q_f32(dst, vld1q_f32(row));
                vst1q_f32(dst + 4, vld1q_f32(row + 4));
                vst1q_f32(dst + 8, vld1q_f32(row + 8));
            }
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

/* acc (MR x NR, row-major) = sum over p < kc of a[p] (MR) outer b[p] (NR).
 * 24 accumulators: c[row][v] holds columns 4v..4v+3 of that row. */
static void micro_kernel(size_t kc, const float *restrict a, const float *restrict b,
                         float *restrict acc)
{
    float32x4_t c00 = vdupq_n_f32(0.0f), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    float32x4_t c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    float32x4_t c40 = c00, c41 = c00, c42 = c00, c50 = c00, c51 = c00, c52 = c00;
    float32x4_t c60 = c00, c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;

    for (size_t p = 0; p < kc; p++, a += MR, b += NR) {
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
#define ROW(c0, c1, c2, av, lane)                        \
        c0 = vfmaq_laneq_f32(c0, b0, av, lane);          \
        c1 = vfmaq_laneq_f32(c1, b1, av, lane);          \
        c2 = vfmaq_laneq_f32(c2, b2, av, lane)
        ROW(c00, c01, c02, a0, 0);
        ROW(c10, c11, c12, a0, 1);
        ROW(c20, c21, c22, a0, 2);
        ROW(c30, c31, c32, a0, 3);
        ROW(c40, c41, c42, a1, 0);
        ROW(c50, c51, c52, a1, 1);
        ROW(c60, c61, c62, a1, 2);
        ROW(c70, c71, c72, a1, 3);
#undef ROW
    }
#define PUT(row, c0, c1, c2)                               \
    vst1q_f32(acc + (row) * NR, c0);                       \
    vst1q_f32(acc + (row) * NR + 4, c1);                   \
    vst1q_f32(acc + (row) * NR + 8, c2)
    PUT(0, c00, c01, c02);
    PUT(1, c10, c11, c12);
    PUT(2, c20, c21, c22);
    PUT(3, c30, c31, c32);
    PUT(4, c40, c41, c42);
    PUT(5, c50, c51, c52);
    PUT(6, c60, c61, c62);
    PUT(7, c70, c71, c72);
#undef PUT
}

/* C block (rows x cols, leading dimension ldc) from acc: on the first k
 * slice C = alpha acc + beta C (C unread when beta == 0), then C += alpha acc.
 * Full rows of 12 go through vectors, ragged edges element by element with
 * the same operations. */
static void store_block(float *C, size_t ldc, size_t rows, size_t cols, const float *acc,
                        float alpha, float beta, int first)
{
    const float32x4_t va = vdupq_n_f32(alpha), vb = vdupq_n_f32(beta);
    for (size_t i = 0; i < rows; i++, C += ldc, acc += NR) {
        size_t j = 0;
        for (; cols - j >= 4; j += 4) {
            float32x4_t prod = vmulq_f32(va, vld1q_f32(acc + j));
            if (!first)
                prod = vaddq_f32(vld1q_f32(C + j), prod);
            else if (beta != 0.0f)
                prod = vaddq_f32(prod, vmulq_f32(vb, vld1q_f32(C + j)));
            vst1q_f32(C + j, prod);
        }
        for (; j < cols; j++) {
            if (!first)
                C[j] += alpha * acc[j];
            else if (beta == 0.0f)
                C[j] = alpha * acc[j];
            else
                C[j] = alpha * acc[j] + beta * C[j];
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

/* m == 1 or n == 1: a matrix-vector product (the vector operand is
 * contiguous whatever the transpose flags). */
static rayo_status matmul_as_gemv(const cpu_state *st, const rayo_call *c)
{
    int ta = (c->flags & RAYO_TRANS_A) != 0, tb = (c->flags & RAYO_TRANS_B) != 0;
    if (c->n == 1) /* C column = op(A) b */
        return ta ? neon_gemv_run(st, 1, c->k, c->m, c->alpha, c->a, c->b, c->beta, c->y)
                  : neon_gemv_run(st, 0, c->m, c->k, c->alpha, c->a, c->b, c->beta, c->y);
    /* C row = a op(B) = op(B)^T a */
    return tb ? neon_gemv_run(st, 0, c->n, c->k, c->alpha, c->b, c->a, c->beta, c->y)
              : neon_gemv_run(st, 1, c->k, c->n, c->alpha, c->b, c->a, c->beta, c->y);
}

NEON_KERNEL(matmul)
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

    matmul_job job = { .A = call->a, .B = call->b, .C = call->y, .m = call->m, .n = call->n,
                       .k = call->k, .alpha = call->alpha, .beta = call->beta };
    set_strides(&job, call->flags);
    job.col_tiles = (job.n + NC - 1) / NC;
    size_t tiles = (job.m + MC - 1) / MC * job.col_tiles;
    size_t kc = min_size(KC, job.k);
    job.a_pack = round_up(min_size(MC, round_up(job.m, MR)) * kc, 16);
    job.b_pack = round_up(min_size(NC, round_up(job.n, NR)) * kc, 16);

    /* in double: m * n * k may not fit in size_t */
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
