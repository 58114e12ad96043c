/* SPDX-License-Identifier: MIT */
/* x86-gemm.h - what the sgemm drivers of the x86 plugins (avx2, avx512)
 * share: the cache blocking, its [backend.NAME] mc / kc / nc overrides and
 * the pool of packing buffers kept between calls.  Compiled into those two
 * plugins only (plain C: no -m flags needed). */
#ifndef RAYO_X86_GEMM_H
#define RAYO_X86_GEMM_H

#include "cpu-base.h"
#include "cpu-f64-fallback.h"

#include <pthread.h>

/* Cache-blocking parameters of sgemm, derived from the cache sizes. */
typedef struct x86_gemm_blocking {
    size_t mc, kc, nc;
} x86_gemm_blocking;

/* The operands of one sgemm: op(A) is m x k and op(B) is k x n; a
 * transposed operand is stored the other way round, row-major. */
typedef struct x86_gemm_args {
    size_t m, n, k;
    float alpha, beta;
    const float *A, *B;
    float *C;
    int trans_a, trans_b;
} x86_gemm_args;

/* Computes the call with sums in double and returns 1 where its float sums
 * could pass FLT_MAX (cpu-f64-fallback.h), else returns 0. */
static inline int x86_gemm_f64_if_overflow(const x86_gemm_args *g)
{
    size_t a_rs = g->trans_a ? 1 : g->k, a_cs = g->trans_a ? g->m : 1;
    size_t b_rs = g->trans_b ? 1 : g->n, b_cs = g->trans_b ? g->k : 1;
    if (!cpu_gemm_may_overflow(g->m, g->n, g->k, g->A, a_rs, a_cs, g->B, b_rs, b_cs))
        return 0;
    cpu_gemm_f64(g->m, g->n, g->k, g->alpha, g->A, a_rs, a_cs, g->B, b_rs, b_cs, g->beta, g->C, g->n);
    return 1;
}

/* [backend.NAME] mc / kc / nc override the blocking (for tuning and tests);
 * values are rounded down to what the microkernel needs: mc to a multiple
 * of mr, kc of 8, nc of nr.  A bad value is logged and ignored
 * (cpu_setting_size). */
void x86_gemm_blocking_overrides(const cpu_state *st, x86_gemm_blocking *b, size_t mr, size_t nr);

/* Packing buffers of sgemm, kept between calls (a first touch of fresh
 * pages costs more than a small gemm).  A call takes one from the pool or
 * allocates one; fini frees them all. */
typedef struct x86_gemm_scratch {
    struct x86_gemm_scratch *next;
    float *packed_b; /* kc x (nc + NR) */
    float *packed_a; /* threads x (mc + MR) x kc */
    unsigned threads;
} x86_gemm_scratch;

typedef struct x86_gemm_pool {
    pthread_mutex_t lock;
    x86_gemm_scratch *free;
} x86_gemm_pool;

rayo_status x86_gemm_pool_init(x86_gemm_pool *pool);
void x86_gemm_pool_fini(const cpu_state *st, x86_gemm_pool *pool);
/* A scratch with room for `threads` A blocks of the blocking b with an
 * mr x nr microkernel: from the pool or new; NULL when out of memory. */
x86_gemm_scratch *x86_gemm_scratch_get(const cpu_state *st, x86_gemm_pool *pool,
                                       const x86_gemm_blocking *b, size_t mr, size_t nr,
                                       unsigned threads);
void x86_gemm_scratch_put(x86_gemm_pool *pool, x86_gemm_scratch *s);

#endif
