/* SPDX-License-Identifier: MIT */
/* cuda-matmul-small.c - fp32 matmuls too small or too skinny for the
 * sgemm tiles alone:
 *   - m = 1 or n = 1: a gemv (module "matrix"), one read of the matrix, float64
 *     sums, in every RAYO_TRANS_A / RAYO_TRANS_B combination;
 *   - few tiles of C and a long k: split-K.  The sgemm kernel runs over a grid
 *     several slabs deep, each slab of k into its own m x n partial in the
 *     device scratch, and splitk_sum (module "splitk") adds the partials in
 *     float64 in slab order: no atomics, the same result on every run, and
 *     the float32 error of one slab's sums, not of all of k. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"
#include "cuda-ptx.h"

/* The sgemm tile (ptx/sgemm.c) and its threads. */
#define TILE 128
#define TILE_THREADS 256
/* Blocks of the sgemm kernels a multiprocessor holds (.minnctapersm). */
#define TILES_PER_SM 2
/* At most this many slabs, each of at least SLAB_MIN_K terms of k: shorter
 * slabs spend more on their prologue, epilogue and partials than they gain. */
#define MAX_SLABS 16
#define SLAB_MIN_K 192

/* The gemv that computes the matmul op (m = 1 or n = 1, f32, dense), in g
 * (no pointers set); 0 if there is none. */
static int gemv_shape(const cuda_op *op, cuda_op *g)
{
    if ((op->m != 1 && op->n != 1) || op->k == 0 || op->dtypes || op->lda || op->ldb || op->ldy)
        return 0;
    *g = (cuda_op){.op = RAYO_OP_GEMV, .alpha = op->alpha, .beta = op->beta, .family = &cuda_family_gemv};
    int ta = (op->flags & RAYO_TRANS_A) != 0, tb = (op->flags & RAYO_TRANS_B) != 0;
    if (op->m == 1 && op->n == 1) {          /* a dot product: both are k contiguous floats */
        g->m = 1, g->n = op->k;
    } else if (op->m == 1) {                 /* C row = A's row times op(B) */
        g->m = tb ? op->n : op->k;
        g->n = tb ? op->k : op->n;
        g->flags = tb ? 0 : RAYO_TRANS_A;    /* B (k x n) as stored: y = B^T a */
    } else {                                 /* C column = op(A) times B's column */
        g->m = ta ? op->k : op->m;
        g->n = ta ? op->m : op->k;
        g->flags = ta ? RAYO_TRANS_A : 0;
    }
    return 1;
}

int cuda_matmul_as_gemv(cuda_state *st, CUstream stream, const cuda_op *op, rayo_status *s)
{
    cuda_op g;
    if (!gemv_shape(op, &g))
        return 0;
    size_t need = cuda_scratch_bytes(st, &g);
    if (need && (!op->scratch || op->scratch_size < need))
        return 0; /* the general kernel does without */
    /* m = 1: the matrix is B and the vector A's row; n = 1 (and the dot
     * product): the matrix is A and the vector B's column */
    int row = op->m == 1 && op->n != 1;
    g.a = row ? op->b : op->a;
    g.b = row ? op->a : op->b;
    g.y = op->y;
    g.scratch = op->scratch;
    g.scratch_size = op->scratch_size;
    *s = cuda_launch_op(st, stream, &g);
    return 1;
}

static size_t tiles_of(size_t v)
{
    return v / TILE + (v % TILE != 0);
}

/* Slabs of k for the sgemm kernels of k-step bk: enough blocks to fill the
 * GPU once, no more (1: no split).  Slabs of ceil(k / (s bk)) bk terms, the
 * last one shorter (ptx/sgemm.c), none empty. */
static unsigned matmul_slabs(const cuda_state *st, const cuda_op *op, int bk)
{
    if (!op->m || !op->n || bk <= 0 || op->k % (size_t)bk)
        return 1;
    size_t tiles = tiles_of(op->m) * tiles_of(op->n), room = (size_t)st->sm_count * TILES_PER_SM;
    for (unsigned s = MAX_SLABS; s > 1; s--) {
        size_t step = (size_t)s * (size_t)bk, slab = (op->k + step - 1) / step * (size_t)bk;
        if (tiles * s <= room && op->k / s >= SLAB_MIN_K && (s - 1) * slab < op->k)
            return s;
    }
    return 1;
}

/* The partials of s slabs: s m x n floats. */
static size_t slab_bytes(const cuda_op *op, unsigned s)
{
    return s > 1 ? (size_t)s * op->m * op->n * sizeof(float) : 0;
}

size_t cuda_matmul_small_scratch_bytes(const cuda_state *st, const cuda_op *op)
{
    cuda_op g;
    if (op->dtypes)
        return 0;
    if (gemv_shape(op, &g))
        return cuda_scratch_bytes(st, &g);
    /* either k-step of the sgemm kernels (cuda_launch_matmul_f32 picks one) */
    size_t s8 = slab_bytes(op, matmul_slabs(st, op, 8)), s16 = slab_bytes(op, matmul_slabs(st, op, 16));
    return s8 > s16 ? s8 : s16;
}

int cuda_matmul_split_k(cuda_state *st, CUstream stream, const cuda_op *op, const char *name, int bk,
                        rayo_status *s)
{
    unsigned slabs = matmul_slabs(st, op, bk);
    if (slabs < 2 || !op->scratch || op->scratch_size < slab_bytes(op, slabs))
        return 0;
    CUdeviceptr part = op->scratch, a = op->a, b = op->b, c = op->y;
    unsigned long long m = op->m, n = op->n, k = op->k, count = op->m * op->n, sl = slabs;
    float one = 1.0f, zero = 0.0f, alpha = op->alpha, beta = op->beta;
    void *p1[] = {&part, &a, &b, &m, &n, &k, &one, &zero};
    *s = cuda_launch_grid(st, stream, MOD_SGEMM, name, (unsigned)tiles_of(op->n), (unsigned)tiles_of(op->m), slabs,
                          TILE_THREADS, RAYO_PTX_SGEMM_ACC_BYTES, p1);
    if (*s != RAYO_OK)
        return 1;
    /* A and B for splitk_sum's float64 redo of an element whose partials overflowed */
    int ta = (op->flags & RAYO_TRANS_A) != 0, tb = (op->flags & RAYO_TRANS_B) != 0;
    unsigned long long sai = ta ? 1 : k, sap = ta ? m : 1, sbp = tb ? 1 : n, sbj = tb ? k : 1;
    void *p2[] = {&c, &part, &count, &sl, &alpha, &beta, &a, &b, &n, &k, &sai, &sap, &sbp, &sbj};
    size_t blocks = (count + TILE_THREADS - 1) / TILE_THREADS, most = (size_t)st->sm_count * 8;
    *s = cuda_launch_grid(st, stream, MOD_SPLITK, "splitk_sum", (unsigned)(blocks < most ? blocks : most), 1, 1,
                          TILE_THREADS, 0, p2);
    return 1;
}
