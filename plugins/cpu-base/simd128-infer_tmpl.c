/* SPDX-License-Identifier: MIT */
/* simd128-infer_tmpl.c - what the SIMD plugins' (neon, wasm) rope, attention and
 * gated units share: the checks, the layouts and strides, the loops over
 * tokens, heads and rows, the threads and the scratch.  The plugin's infer.c
 * defines the SIMD parts, declared below as static functions, and its
 * kernels call cpu_rope, cpu_attention and cpu_glu.
 *
 * rope: cpu-rope_tmpl.c's, cos and sin rounded once to float: the pair's
 * rotation in float then stays within a few ulp of |pair| up to position
 * 8191 and beyond.
 *
 * attention: one (query, head) item at a time, in one pass over the visible
 * keys in blocks of CPU_ATTN_KEY_BLOCK: the block's scores (the plugin's
 * float dot products, scaled), its maximum, then the plugin's weights
 * e^(s - max) and sum w v in float lanes; the block's sums go into double
 * (the running output and the sum of weights), which are rescaled by
 * e^(old max - new max) when a block raises the maximum.  Float sums over
 * at most CPU_ATTN_KEY_BLOCK keys keep the error near 32 * 2^-24 of
 * sum p |v|, inside the 1e-5 contract at any cache length.  A block whose
 * float scores pass CPU_ATTN_EXACT_ABOVE has them computed again in double
 * (scores near 1e3 must be right to ~1e-6).  Items are
 * spread over the pool.  Calls with more
 * than CPU_ATTN_MAX_QUERIES queries (prefill) are declined
 * (RAYO_E_UNSUPPORTED): they go to the next backend, where a kernel that
 * reuses each K and V row across queries belongs.  A few queries (decode,
 * speculative decode) are taken, with the causal limit of each.
 *
 * gated units: the plugin's vector rows, with the gate's left tail redone
 * in double (cpu_glu_rows).
 */
#ifndef RAYO_CPU_INFER_KERNELS_H
#define RAYO_CPU_INFER_KERNELS_H

#include "cpu-base.h"
#include "cpu-f64-fallback.h"

#include <math.h>
#include <string.h>

#define CPU_ATTN_MAX_QUERIES 8
#define CPU_ATTN_KEY_BLOCK 32

/* ---- the plugin's SIMD parts ------------------------------------------------ */
/* y[2i], y[2i+1] = rotation of x[2i], x[2i+1] by (cs[i], sn[i]), i < count
 * (NORM pairs).  y == x allowed. */
static void rope_norm_pairs(const float *x, float *y, const float *cs, const float *sn, size_t count);
/* The same for pairs (xu[i], xv[i]) into (yu[i], yv[i]) (NEOX: the two
 * halves of the rotated dimensions). */
static void rope_neox_pairs(const float *xu, const float *xv, float *yu, float *yv, const float *cs,
                            const float *sn, size_t count);

/* One query row of one head against its KV head's visible keys. */
typedef struct cpu_attn_item {
    const float *q;
    const uint8_t *k, *v;    /* key and value row 0 of the KV head */
    size_t k_step, v_step;   /* bytes from one token's row to the next */
    size_t keys, head_dim;   /* visible keys (>= 1) */
    float scale;
    int f16;                 /* the cache is f16 (else f32) */
    float *out;
    double *acc;             /* scratch: head_dim doubles */
} cpu_attn_item;
/* q . k over head_dim, k a cache row (f16 or f32), in float lanes. */
static inline float attn_dot(const float *q, const uint8_t *k, size_t d, int f16);
/* w[j] = e^(s[j] - max), j < nb (<= CPU_ATTN_KEY_BLOCK); returns their sum. */
static inline double attn_weights(const float *s, float *w, size_t nb, float max);
/* acc[l] += sum over keys j0 .. j0 + nb - 1 of w[j - j0] v_j[l], in float
 * lanes (nb <= CPU_ATTN_KEY_BLOCK terms), added into the double acc. */
static inline void attn_add_values(const cpu_attn_item *it, size_t j0, size_t nb, const float *w, int f16);

/* ---- rope (cpu-rope_tmpl.c), on the plugin's pair rotations ----------------- */
#define ROPE_TRIG float
#define ROPE_COST 2
#include "cpu-rope_tmpl.c"

static void rope_head(const cpu_rope_job *job, const float *x, float *y, size_t i0, size_t count,
                      const float *cs, const float *sn)
{
    if (job->p->mode == RAYO_ROPE_NEOX)
        rope_neox_pairs(x + i0, x + i0 + job->half, y + i0, y + i0 + job->half, cs, sn, count);
    else
        rope_norm_pairs(x + 2 * i0, y + 2 * i0, cs, sn, count);
}

/* ---- attention ---------------------------------------------------------------- */
/* The running state of one item: the maximum score so far and the sum of
 * the weights, in double. */
typedef struct cpu_attn_run {
    double max, sum;
} cpu_attn_run;

/* q . k in double (products of floats are exact there). */
static inline double attn_dot_f64(const float *q, const uint8_t *k, size_t d, int f16)
{
    double s = 0.0;
    for (size_t l = 0; l < d; l++) {
        float kl;
        if (f16) {
            uint16_t h;
            memcpy(&h, k + 2 * l, sizeof h);
            kl = rayo_f16_to_f32(h);
        } else {
            memcpy(&kl, k + 4 * l, sizeof kl);
        }
        s += (double)q[l] * (double)kl;
    }
    return s;
}

/* The block's scores s again in double where they are large
 * (cpu-f64-fallback.h): returns off, s then relative to it (0: s stays). */
static inline double cpu_attend_exact(const cpu_attn_item *it, size_t j0, size_t nb, float *s, int f16)
{
    if (!cpu_scores_large(s, nb))
        return 0.0;
    double exact[CPU_ATTN_KEY_BLOCK];
    for (size_t j = 0; j < nb; j++)
        exact[j] = (double)it->scale * attn_dot_f64(it->q, it->k + (j0 + j) * it->k_step, it->head_dim, f16);
    return cpu_scores_relative(exact, nb, s);
}

/* Keys [j0, j0 + nb) of the item, nb <= CPU_ATTN_KEY_BLOCK; a score is
 * off + s[j]. */
static inline __attribute__((always_inline)) void
cpu_attend_block(const cpu_attn_item *it, size_t j0, size_t nb, cpu_attn_run *run, int f16)
{
    float s[CPU_ATTN_KEY_BLOCK], w[CPU_ATTN_KEY_BLOCK];
    for (size_t j = 0; j < nb; j++)
        s[j] = it->scale * attn_dot(it->q, it->k + (j0 + j) * it->k_step, it->head_dim, f16);
    double off = cpu_attend_exact(it, j0, nb, s, f16);
    float block_max = -INFINITY;
    for (size_t j = 0; j < nb; j++)
        if (s[j] > block_max) /* a compare, not fmax: gcc 12's aarch64 vectoriser fails on those */
            block_max = s[j];
    if (off + block_max > run->max) {
        double shrink = exp(run->max - (off + block_max)); /* 0 for the first block */
        run->sum *= shrink;
        for (size_t l = 0; l < it->head_dim; l++)
            it->acc[l] *= shrink;
        run->max = off + block_max;
    }
    run->sum += attn_weights(s, w, nb, (float)(run->max - off));
    attn_add_values(it, j0, nb, w, f16);
}

static inline __attribute__((always_inline)) void cpu_attend_keys(const cpu_attn_item *it, int f16)
{
    cpu_attn_run run = { -INFINITY, 0.0 };
    for (size_t l = 0; l < it->head_dim; l++)
        it->acc[l] = 0.0;
    for (size_t j0 = 0; j0 < it->keys; j0 += CPU_ATTN_KEY_BLOCK)
        cpu_attend_block(it, j0, it->keys - j0 < CPU_ATTN_KEY_BLOCK ? it->keys - j0 : CPU_ATTN_KEY_BLOCK,
                         &run, f16);
    for (size_t l = 0; l < it->head_dim; l++)
        it->out[l] = (float)(it->acc[l] / run.sum);
}

/* out = softmax(scale q K^T) V over the item's keys; the cache's dtype a
 * constant in each copy of the loop. */
static inline void cpu_attend(const cpu_attn_item *it)
{
    if (it->f16)
        cpu_attend_keys(it, 1);
    else
        cpu_attend_keys(it, 0);
}

typedef struct cpu_attn_job {
    const rayo_call *call;
    const rayo_attention_params *p;
    size_t elem;             /* bytes of a cache element */
    cpu_attention_layout s;  /* strides in elements */
    size_t group;            /* query heads per KV head */
    double *scratch;         /* per worker: the item's acc */
    size_t per_worker;       /* doubles */
    size_t chunk;            /* items per task */
} cpu_attn_job;

static inline void cpu_attn_task(void *arg, size_t task, unsigned worker)
{
    const cpu_attn_job *job = arg;
    const rayo_attention_params *p = job->p;
    const rayo_call *c = job->call;
    size_t items = p->n_q * p->n_heads, d = p->head_dim;
    size_t lo = task * job->chunk, hi = lo + job->chunk < items ? lo + job->chunk : items;
    cpu_attn_item it = { .head_dim = d, .scale = p->scale, .f16 = job->elem == 2,
                         .k_step = job->s.k_token * job->elem, .v_step = job->s.v_token * job->elem };
    it.acc = job->scratch + (size_t)worker * job->per_worker;
    for (size_t item = lo; item < hi; item++) {
        size_t i = item / p->n_heads, h = item % p->n_heads, g = h / job->group;
        it.keys = (p->flags & RAYO_ATTN_CAUSAL) ? p->n_kv - p->n_q + i + 1 : p->n_kv;
        it.q = (const float *)c->a + i * job->s.q_token + h * job->s.q_head;
        it.k = (const uint8_t *)c->b + g * job->s.k_head * job->elem;
        it.v = (const uint8_t *)c->c + g * job->s.v_head * job->elem;
        it.out = (float *)c->y + i * job->s.o_token + h * job->s.o_head;
        cpu_attend(&it);
    }
}

static inline rayo_status cpu_attention(void *state, const rayo_call *call)
{
    const cpu_state *st = state;
    const rayo_attention_params *p = call->params;
    if (p->n_q == 0 || p->n_heads == 0 || p->head_dim == 0)
        return RAYO_OK;
    if (p->n_q > CPU_ATTN_MAX_QUERIES)
        return RAYO_E_UNSUPPORTED; /* prefill: the next backend's */
    rayo_status status = cpu_attention_check(call, p);
    if (status != RAYO_OK)
        return status;
    cpu_attn_job job = { .call = call, .p = p, .group = p->n_heads / p->n_kv_heads,
                         .elem = RAYO_DTYPE_OF(call->dtypes, 1) == RAYO_DTYPE_F16 ? 2 : 4,
                         .s = cpu_attention_layout_of(p) };
    size_t items = p->n_q * p->n_heads;
    size_t tasks = cpu_infer_tasks(st, items, (double)p->n_kv * (double)p->head_dim * 4);
    size_t workers = tasks > 1 ? cpu_threads(st) : 1;
    job.per_worker = (p->head_dim + 7) / 8 * 8 + 8; /* whole cache lines apart */
    job.scratch = (double *)(void *)cpu_alloc_floats(st, 2 * workers * job.per_worker);
    if (!job.scratch)
        return RAYO_E_NOMEM;
    job.chunk = (items + tasks - 1) / tasks;
    cpu_parallel(st, (items + job.chunk - 1) / job.chunk, cpu_attn_task, &job);
    cpu_free(st, job.scratch);
    return RAYO_OK;
}

/* ---- gated units: y = f(gate) * up, m rows of n ------------------------------- */
/* a = gate (lda), b = up (ldb), y (ldy); row(g, u, y, n) is the plugin's.
 * Gates below `tail` are redone in double (cpu-f64-fallback.h; the same
 * thresholds as x86-infer_tmpl.c): rare, so a row pays one scan, and a row
 * that has them goes through local copies (a call in place, y == gate or
 * up, still reads its inputs). */
typedef void cpu_glu_row_fn(const float *g, const float *u, float *y, size_t n);

static inline void cpu_glu_row_tail(const float *g, const float *u, float *y, size_t n, cpu_glu_row_fn *row,
                                    cpu_glu_kind kind, float tail)
{
    enum { CHUNK = 64 };
    float gc[CHUNK], uc[CHUNK], yc[CHUNK];
    for (size_t at = 0; at < n; at += CHUNK) {
        size_t len = n - at < CHUNK ? n - at : CHUNK;
        memcpy(gc, g + at, len * sizeof(float));
        memcpy(uc, u + at, len * sizeof(float));
        row(gc, uc, yc, len);
        for (size_t j = 0; j < len; j++)
            if (gc[j] < tail)
                yc[j] = cpu_glu_f64(kind, gc[j], uc[j]);
        memcpy(y + at, yc, len * sizeof(float));
    }
}

static inline void cpu_glu_rows(const rayo_call *c, size_t lo, size_t hi, cpu_glu_row_fn *row, cpu_glu_kind kind,
                                float tail)
{
    size_t lda = cpu_or_dense(c->lda, c->n), ldb = cpu_or_dense(c->ldb, c->n), ldy = cpu_or_dense(c->ldy, c->n);
    for (size_t r = lo; r < hi; r++) {
        const float *g = (const float *)c->a + r * lda, *u = (const float *)c->b + r * ldb;
        float *y = (float *)c->y + r * ldy;
        size_t below = 0;
        for (size_t j = 0; j < c->n; j++)
            below += g[j] < tail;
        if (below)
            cpu_glu_row_tail(g, u, y, c->n, row, kind, tail);
        else
            row(g, u, y, c->n);
    }
}

/* The kernel CPU_KERNEL(NAME) of a gated unit whose row function is ROW,
 * its tail (cpu_glu_rows) of KIND below TAIL. */
#define CPU_GLU_KERNEL(NAME, ROW, COST, KIND, TAIL)                                        \
    static void NAME##_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)                      \
    {                                                                                      \
        (void)st;                                                                          \
        cpu_glu_rows(c, lo, hi, ROW, KIND, TAIL);                                          \
    }                                                                                      \
    CPU_KERNEL_FN(NAME)                                                                    \
    {                                                                                      \
        cpu_run_ranges(state, call, call->m, call->n * (COST), NAME##_rows);               \
        return RAYO_OK;                                                                    \
    }

#endif
