/* SPDX-License-Identifier: MIT */
/* cpu-gemm.h - the matmul and gemv drivers the CPU plugins (scalar, neon,
 * wasm) share; each plugin brings only its micro-kernels.
 *
 * gemv: cpu_gemv_run splits y into tasks (rows, or blocks of jb columns for
 * the transposed product) and calls the plugin's cpu_gemv_kernel for each.
 *
 * matmul: the blocked scheme of GotoBLAS / BLIS.  cpu_gemm_call checks the
 * call, handles k == 0 and m == 1 or n == 1 (a gemv), packs nothing itself:
 * it plans the MC x NC tiles of C, allocates the packing scratch and runs
 * the plugin's tile function (CPU_GEMM_TILE_FN) once per tile, on the pool
 * when the product is large.  The tile function is a macro expanded in the
 * plugin's matmul.c so that the micro-kernel and the block store stay
 * direct calls with constant MR, NR (the hot loops are compiled exactly as
 * when each plugin had its own copy); CPU_GEMM_MATMUL_FN expands it with the
 * plugin's matmul kernel.
 */
#ifndef RAYO_CPU_GEMM_H
#define RAYO_CPU_GEMM_H

#include "cpu-base.h"
#include "cpu-f64-fallback.h"

#include <string.h>

static inline size_t cpu_min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- gemv: y = alpha op(A) x + beta y, A row-major rows x cols ----------- */
typedef struct cpu_gemv_kernel cpu_gemv_kernel;

typedef struct cpu_gemv_job {
    size_t rows, cols, lda; /* lda: elements between row starts of A */
    float alpha, beta;
    const float *A, *x;
    float *y;
    size_t chunk; /* rows (no transpose) or column blocks (transpose) per task */
    const cpu_gemv_kernel *kernel;
} cpu_gemv_job;

struct cpu_gemv_kernel {
    size_t jb; /* columns per block of the transposed product */
    /* y[i] for rows [lo, hi) of the product without transpose */
    void (*rows)(const cpu_gemv_job *job, size_t lo, size_t hi);
    /* y[j0 .. j0 + jb) of the transposed product (jb <= the kernel's jb) */
    void (*columns)(const cpu_gemv_job *job, size_t j0, size_t jb);
};

/* alpha sum + beta y in double; y is not read when beta == 0. */
static inline float cpu_gemv_finish(double sum, float alpha, float beta, const float *y)
{
    double v = (double)alpha * sum;
    return (float)(beta == 0.0f ? v : v + (double)beta * *y);
}

/* y[j0 .. j0 + jb) of the transposed product from the columns' sums
 * (float lanes added in double), each redone in double where float lanes
 * lost it (cpu_dot_redo). */
static inline void cpu_gemv_store_columns(const cpu_gemv_job *job, size_t j0, size_t jb, const double *total)
{
    for (size_t j = 0; j < jb; j++)
        job->y[j0 + j] = cpu_gemv_finish(cpu_dot_redo(total[j], job->A + j0 + j, job->lda, job->x, job->rows),
                                         job->alpha, job->beta, &job->y[j0 + j]);
}

/* y has (trans ? cols : rows) elements; lda 0 means cols. */
rayo_status cpu_gemv_run(const cpu_state *st, const cpu_gemv_kernel *kernel, int trans,
                         size_t rows, size_t cols, size_t lda, float alpha, const float *A,
                         const float *x, float beta, float *y);
/* The gemv op: only RAYO_TRANS_A is allowed; the call's lda is passed on. */
rayo_status cpu_gemv_call(const cpu_state *st, const cpu_gemv_kernel *kernel,
                          const rayo_call *call);
/* The same for kernels without row strides: a strided call is
 * RAYO_E_UNSUPPORTED (the next backend takes it). */
rayo_status cpu_gemv_call_dense(const cpu_state *st, const cpu_gemv_kernel *kernel, const rayo_call *call);

/* ---- matmul: C (m x n) = alpha op(A) op(B) + beta C, row-major ----------- */
typedef struct cpu_gemm_kernel cpu_gemm_kernel;

typedef struct cpu_gemm_job {
    const float *A, *B;
    float *C;
    size_t m, n, k;
    /* op(A)(i, p) = A[i * a_rs + p * a_cs]; op(B)(p, j) = B[p * b_rs + j * b_cs] */
    size_t a_rs, a_cs, b_rs, b_cs;
    float alpha, beta;
    size_t nc;             /* tile width: the kernel's nc, or less (narrow_tiles) */
    size_t col_tiles;      /* tiles across n */
    float *scratch;        /* per worker: packed A block, then packed B block */
    size_t a_pack, b_pack; /* floats of each, per worker */
} cpu_gemm_job;

struct cpu_gemm_kernel {
    size_t mr, nr;         /* micro-tile */
    size_t kc, mc, nc;     /* k slice, tile height (multiple of mr), width (of nr) */
    /* Cut columns narrower than nc when there would be fewer than two tiles
     * per worker (so that e.g. 96 x 512 x 4096 still uses every thread). */
    int narrow_tiles;
    cpu_task_fn *tile;     /* CPU_GEMM_TILE_FN: one tile of C, all of k */
    const cpu_gemv_kernel *gemv;     /* m == 1 or n == 1 */
    /* Calls with row strides, or NULL: RAYO_E_UNSUPPORTED. */
    rayo_status (*strided)(void *state, const rayo_call *call);
};

/* The matmul op.  beta == 0 never reads C. */
rayo_status cpu_gemm_call(void *state, const rayo_call *call, const cpu_gemm_kernel *kernel);

/* Defines the plugin's matmul kernel, CPU_KERNEL(matmul): its tile function
 * (CPU_GEMM_TILE_FN, from the plugin's MR, NR, KC, MC, NC, micro_kernel and
 * store_block) and its cpu_gemm_kernel with these gemv kernels, narrow_tiles
 * and strided function (NULL: row strides are RAYO_E_UNSUPPORTED). */
#define CPU_GEMM_MATMUL_FN(GEMV, NARROW_TILES, STRIDED)                                  \
    CPU_GEMM_TILE_FN(matmul_tile)                                                      \
    static const cpu_gemm_kernel cpu_gemm_plugin_kernel = {                            \
        .mr = MR, .nr = NR, .kc = KC, .mc = MC, .nc = NC, .narrow_tiles = (NARROW_TILES), \
        .tile = matmul_tile, .gemv = (GEMV), .strided = (STRIDED),                     \
    };                                                                                 \
    CPU_KERNEL_FN(matmul)                                                              \
    {                                                                                  \
        return cpu_gemm_call(state, call, &cpu_gemm_plugin_kernel);                    \
    }

/* count lanes (rows of op(A) or columns of op(B)) x kc values from base
 * (lane l, value p at base[l * lane_stride + p * k_stride]) -> width-lane
 * panels: panel c holds, for each p, the width values of lanes c*width..;
 * lanes past count are zero.  Called with a constant width, the copy of a
 * whole contiguous panel row is a vector load and store. */
static inline void cpu_gemm_pack_panels(const float *base, size_t lane_stride, size_t k_stride, size_t count,
                                        size_t kc, float *restrict dst, size_t width)
{
    for (size_t c = 0; c < count; c += width) {
        size_t lanes = cpu_min_size(width, count - c);
        const float *src = base + c * lane_stride;
        if (lanes == width && lane_stride == 1) { /* the panel's lanes are contiguous */
            for (size_t p = 0; p < kc; p++, dst += width)
                memcpy(dst, src + p * k_stride, width * sizeof(float));
            continue;
        }
        for (size_t p = 0; p < kc; p++, dst += width) {
            size_t l = 0;
            for (; l < lanes; l++)
                dst[l] = src[l * lane_stride + p * k_stride];
            for (; l < width; l++)
                dst[l] = 0.0f;
        }
    }
}

/* op(A)[i0.., p0..] (mc x kc) -> mr-row panels (contiguous when op(A) =
 * A^T: its columns are). */
static inline void cpu_gemm_pack_a(const cpu_gemm_job *job, size_t i0, size_t mc, size_t p0,
                                   size_t kc, float *restrict dst, size_t mr)
{
    cpu_gemm_pack_panels(job->A + i0 * job->a_rs + p0 * job->a_cs, job->a_rs, job->a_cs, mc, kc, dst, mr);
}

/* op(B)[p0.., j0..] (kc x nc) -> nr-column panels (contiguous when the rows
 * of op(B) are). */
static inline void cpu_gemm_pack_b(const cpu_gemm_job *job, size_t p0, size_t kc, size_t j0,
                                   size_t nc, float *restrict dst, size_t nr)
{
    cpu_gemm_pack_panels(job->B + p0 * job->b_rs + j0 * job->b_cs, job->b_cs, job->b_rs, nc, kc, dst, nr);
}

/* Defines static void NAME(void *job, size_t task, unsigned worker), one
 * MC x nc tile of C over all of k, from the plugin's MR, NR, KC, MC and its
 * static functions
 *   micro_kernel(kc, a, b, acc)   acc (MR x NR) = packed a panel x b panel
 *   store_block(C, ldc, rows, cols, acc, alpha, beta, first)
 *                                 C = alpha acc + beta C on the first k slice
 *                                 (C unread when beta == 0), else C += alpha acc
 * Loop order: the B micro-panel stays in L1 while the A block streams. */
#define CPU_GEMM_TILE_FN(NAME)                                                               \
    static void NAME(void *arg, size_t task, unsigned worker)                                \
    {                                                                                        \
        const cpu_gemm_job *job = arg;                                                       \
        size_t i0 = task / job->col_tiles * MC, j0 = task % job->col_tiles * job->nc;        \
        size_t mc = cpu_min_size(MC, job->m - i0), nc = cpu_min_size(job->nc, job->n - j0);  \
        float *apack = job->scratch + (size_t)worker * (job->a_pack + job->b_pack);          \
        float *bpack = apack + job->a_pack;                                                  \
        float acc[MR * NR] __attribute__((aligned(16)));                                     \
        for (size_t p0 = 0; p0 < job->k; p0 += KC) {                                         \
            size_t kc = cpu_min_size(KC, job->k - p0);                                       \
            cpu_gemm_pack_a(job, i0, mc, p0, kc, apack, MR);                                 \
            cpu_gemm_pack_b(job, p0, kc, j0, nc, bpack, NR);                                 \
            for (size_t jr = 0; jr < nc; jr += NR)                                           \
                for (size_t ir = 0; ir < mc; ir += MR) {                                     \
                    micro_kernel(kc, apack + ir * kc, bpack + jr * kc, acc);                 \
                    store_block(job->C + (i0 + ir) * job->n + j0 + jr, job->n,               \
                                cpu_min_size(MR, mc - ir), cpu_min_size(NR, nc - jr), acc,   \
                                job->alpha, job->beta, p0 == 0);                             \
                }                                                                            \
        }                                                                                    \
    }

#endif
