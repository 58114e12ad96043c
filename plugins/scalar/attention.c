/* SPDX-License-Identifier: MIT */
/* attention.c - out = softmax(scale Q K^T + causal mask) V for all heads of
 * a layer, grouped-query (query head h reads KV head h / (n_heads /
 * n_kv_heads)), KV cache in f32 or f16 with token and head strides.
 *
 * One (query, head) pair is one work item, done in a single pass over the
 * visible keys with a running maximum: when a score exceeds the maximum so
 * far, the sum and the output accumulated so far are rescaled by
 * e^(old max - new max), so no exponential overflows and no score is kept
 * (not even one row of them).  Scores are blocked dot products (reduce.c);
 * the probabilities and the weighted sum of V are in double, so long caches
 * (8K positions and more) stay within the contract.  An f16 cache row is
 * widened to f32 exactly before use.  Items are spread over the pool; each
 * worker has its own scratch (a key row, a value row, the double output).
 */
#include "plugin.h"

#include <math.h>

#define COST_PER_MAC 2

typedef struct attn_job {
    const rayo_call *call;
    const rayo_attention_params *p;
    rayo_dtype kv_dtype;
    cpu_attention_layout s;
    size_t group;            /* query heads per KV head */
    double *scratch;         /* per worker: acc[head_dim], then key and value rows */
    size_t per_worker;       /* doubles */
    size_t chunk;            /* items per task */
} attn_job;

/* Row `token` of KV head `head` of a cache, as f32: the cache itself when it
 * is f32, else widened into buf. */
static const float *kv_row(const attn_job *job, const void *base, size_t token_stride,
                           size_t head_stride, size_t token, size_t head, float *buf)
{
    size_t at = token * token_stride + head * head_stride, d = job->p->head_dim;
    if (job->kv_dtype == RAYO_DTYPE_F32)
        return (const float *)base + at;
    rayo_dequantize_row(RAYO_DTYPE_F16, (const unsigned char *)base + 2 * at, buf, d);
    return buf;
}

static void attend(const attn_job *job, size_t i, size_t h, double *acc, float *kbuf, float *vbuf)
{
    const rayo_attention_params *p = job->p;
    const rayo_call *c = job->call;
    size_t d = p->head_dim, kvh = h / job->group;
    size_t visible = (p->flags & RAYO_ATTN_CAUSAL) ? p->n_kv - p->n_q + i + 1 : p->n_kv;
    const float *q = (const float *)c->a + i * job->s.q_token + h * job->s.q_head;
    double mx = -INFINITY, sum = 0.0;
    for (size_t l = 0; l < d; l++)
        acc[l] = 0.0;
    for (size_t j = 0; j < visible; j++) {
        const float *kr = kv_row(job, c->b, job->s.k_token, job->s.k_head, j, kvh, kbuf);
        /* in double: an error e in a score is a relative error e in its
         * weight, and scores reach 1e3 and more (cpu-f64-fallback.h) */
        double score = (double)p->scale * cpu_dot_f64(q, 1, kr, 1, d);
        if (score > mx) {
            double shrink = exp(mx - score); /* 0 for the first key */
            sum *= shrink;
            for (size_t l = 0; l < d; l++)
                acc[l] *= shrink;
            mx = score;
        }
        double w = exp(score - mx);
        const float *vr = kv_row(job, c->c, job->s.v_token, job->s.v_head, j, kvh, vbuf);
        sum += w;
        for (size_t l = 0; l < d; l++)
            acc[l] += w * vr[l];
    }
    float *out = (float *)c->y + i * job->s.o_token + h * job->s.o_head;
    for (size_t l = 0; l < d; l++)
        out[l] = (float)(acc[l] / sum);
}

static void attn_task(void *arg, size_t task, unsigned worker)
{
    const attn_job *job = arg;
    size_t d = job->p->head_dim, items = job->p->n_q * job->p->n_heads;
    double *acc = job->scratch + (size_t)worker * job->per_worker;
    float *kbuf = (float *)(acc + d), *vbuf = kbuf + d;
    size_t lo = task * job->chunk, hi = lo + job->chunk < items ? lo + job->chunk : items;
    for (size_t item = lo; item < hi; item++)
        attend(job, item / job->p->n_heads, item % job->p->n_heads, acc, kbuf, vbuf);
}

SCALAR_KERNEL(attention)
{
    const cpu_state *st = state;
    const rayo_attention_params *p = call->params;
    rayo_dtype kv = RAYO_DTYPE_OF(call->dtypes, 1);
    if (p->n_q == 0 || p->n_heads == 0 || p->head_dim == 0)
        return RAYO_OK;
    rayo_status status = cpu_attention_check(call, p);
    if (status != RAYO_OK)
        return status;
    attn_job job = { .call = call, .p = p, .kv_dtype = kv, .group = p->n_heads / p->n_kv_heads };
    job.s = cpu_attention_layout_of(p);
    size_t items = p->n_q * p->n_heads, threads = cpu_threads(st), tasks = 1;
    double work = (double)items * (double)p->n_kv * (double)p->head_dim * COST_PER_MAC;
    if (threads > 1 && work >= (double)CPU_PARALLEL_MIN_WORK)
        tasks = 4 * threads < items ? 4 * threads : items;
    size_t workers = tasks > 1 ? threads : 1;
    job.per_worker = 2 * p->head_dim + 8; /* acc (doubles) + two f32 rows in the same space */
    job.scratch = (double *)cpu_alloc_floats(st, 2 * workers * job.per_worker);
    if (!job.scratch)
        return RAYO_E_NOMEM;
    job.chunk = (items + tasks - 1) / tasks;
    cpu_parallel(st, (items + job.chunk - 1) / job.chunk, attn_task, &job);
    cpu_free(st, job.scratch);
    return RAYO_OK;
}
