/* SPDX-License-Identifier: MIT */
/* x86-gemm.c - the blocking overrides and the scratch pool of the x86
 * plugins' sgemm (see x86-gemm.h). */
#include "x86-gemm.h"

#include <stdlib.h>

void x86_gemm_blocking_overrides(const cpu_state *st, x86_gemm_blocking *b, size_t mr, size_t nr)
{
    b->mc = cpu_setting_size(st, "mc", b->mc, mr, 65536) / mr * mr;
    b->kc = cpu_setting_size(st, "kc", b->kc, 8, 65536) / 8 * 8;
    b->nc = cpu_setting_size(st, "nc", b->nc, nr, 65536) / nr * nr;
}

static void scratch_destroy(const cpu_state *st, x86_gemm_scratch *s)
{
    cpu_free(st, s->packed_a);
    cpu_free(st, s->packed_b);
    free(s);
}

rayo_status x86_gemm_pool_init(x86_gemm_pool *pool)
{
    pool->free = NULL;
    return pthread_mutex_init(&pool->lock, NULL) == 0 ? RAYO_OK : RAYO_E_BACKEND;
}

void x86_gemm_pool_fini(const cpu_state *st, x86_gemm_pool *pool)
{
    while (pool->free) {
        x86_gemm_scratch *s = pool->free;
        pool->free = s->next;
        scratch_destroy(st, s);
    }
    pthread_mutex_destroy(&pool->lock);
}

x86_gemm_scratch *x86_gemm_scratch_get(const cpu_state *st, x86_gemm_pool *pool,
                                       const x86_gemm_blocking *b, size_t mr, size_t nr,
                                       unsigned threads)
{
    pthread_mutex_lock(&pool->lock);
    x86_gemm_scratch *s = pool->free;
    if (s)
        pool->free = s->next;
    pthread_mutex_unlock(&pool->lock);
    if (s && s->threads >= threads)
        return s;
    if (s)
        scratch_destroy(st, s);
    s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->threads = threads;
    s->packed_b = cpu_alloc_floats(st, b->kc * (b->nc + nr));
    s->packed_a = cpu_alloc_floats(st, (size_t)threads * (b->mc + mr) * b->kc);
    if (!s->packed_a || !s->packed_b) {
        scratch_destroy(st, s);
        return NULL;
    }
    return s;
}

void x86_gemm_scratch_put(x86_gemm_pool *pool, x86_gemm_scratch *s)
{
    pthread_mutex_lock(&pool->lock);
    s->next = pool->free;
    pool->free = s;
    pthread_mutex_unlock(&pool->lock);
}
