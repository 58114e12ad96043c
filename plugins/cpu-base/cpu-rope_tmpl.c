/* SPDX-License-Identifier: MIT */
/* cpu-rope_tmpl.c - rope (rotary position embedding) of every CPU plugin but
 * the x86 ones (x86-infer_tmpl.c), written once over the plugin's rotation
 * of one head's pairs: the checks, the angles, the tokens over the pool.
 *
 * The angle of pair i at position p is p * inv_freq[i] with inv_freq in
 * double (in float, at position 8191 the product alone would be off by
 * ~5e-4 rad); cos and sin in double (libm), handed to the rotation as
 * ROPE_TRIG.  The cos/sin of a token serve all its heads; dimensions past
 * the rotated ones are copied.
 *
 * The plugin defines, before including this file:
 *   ROPE_TRIG   the type its rotation takes cos and sin in: float (rounded
 *               once; the SIMD plugins rotate in float) or double (scalar)
 *   ROPE_COST   cheap operations per element, for threading
 * and after it (declared below) rope_head(job, x, y, i0, count, cs, sn):
 * pairs i0 .. i0 + count - 1 of one head, x and y its first elements, by
 * the job's mode (NORM: pair i is x[2i], x[2i + 1]; NEOX: x[i], x[i + half]);
 * y == x allowed.  It gets cpu_rope(state, call), the op.
 */
#include <math.h>

#define CPU_ROPE_PAIR_BLOCK 64 /* pairs whose cos/sin a token keeps on the stack */

typedef struct cpu_rope_job {
    const rayo_call *call;
    const rayo_rope_params *p;
    const double *inv_freq;  /* rot_dims / 2 */
    size_t rot_dims, half;
    size_t x_token, x_head, y_token, y_head;
    size_t chunk;            /* tokens per task */
} cpu_rope_job;

static void rope_head(const cpu_rope_job *job, const float *x, float *y, size_t i0, size_t count,
                      const ROPE_TRIG *cs, const ROPE_TRIG *sn);

static inline size_t cpu_or_dense(size_t stride, size_t dense)
{
    return stride ? stride : dense;
}

static inline void cpu_rope_token(const cpu_rope_job *job, size_t t)
{
    const rayo_rope_params *p = job->p;
    const float *x = (const float *)job->call->a + t * job->x_token;
    float *y = (float *)job->call->y + t * job->y_token;
    double pos = ((const int32_t *)job->call->b)[t];
    ROPE_TRIG cs[CPU_ROPE_PAIR_BLOCK], sn[CPU_ROPE_PAIR_BLOCK];
    for (size_t i0 = 0; i0 < job->half; i0 += CPU_ROPE_PAIR_BLOCK) {
        size_t count = job->half - i0 < CPU_ROPE_PAIR_BLOCK ? job->half - i0 : CPU_ROPE_PAIR_BLOCK;
        for (size_t l = 0; l < count; l++) {
            double theta = pos * job->inv_freq[i0 + l];
            cs[l] = (ROPE_TRIG)cos(theta);
            sn[l] = (ROPE_TRIG)sin(theta);
        }
        for (size_t h = 0; h < p->n_heads; h++)
            rope_head(job, x + h * job->x_head, y + h * job->y_head, i0, count, cs, sn);
    }
    for (size_t h = 0; h < p->n_heads; h++) /* dimensions past rot_dims are copied */
        for (size_t d = job->rot_dims; d < p->head_dim; d++)
            y[h * job->y_head + d] = x[h * job->x_head + d];
}

static inline void cpu_rope_task(void *arg, size_t task, unsigned worker)
{
    const cpu_rope_job *job = arg;
    size_t lo = task * job->chunk, m = job->call->m;
    size_t hi = lo + job->chunk < m ? lo + job->chunk : m;
    (void)worker;
    for (size_t t = lo; t < hi; t++)
        cpu_rope_token(job, t);
}

/* Tasks for `items` of `work` cheap operations each: 1 below the pool's
 * threshold, else up to 4 per thread. */
static inline size_t cpu_infer_tasks(const cpu_state *st, size_t items, double work)
{
    size_t threads = cpu_threads(st);
    if (threads < 2 || items < 2 || (double)items * work < (double)CPU_PARALLEL_MIN_WORK)
        return 1;
    return 4 * threads < items ? 4 * threads : items;
}

static inline rayo_status cpu_rope(void *state, const rayo_call *call)
{
    const cpu_state *st = state;
    const rayo_rope_params *p = call->params;
    size_t rot;
    rayo_status status = cpu_rope_check(call, &rot);
    if (status != RAYO_OK || rot == 0)
        return status;
    cpu_rope_job job = { .call = call, .p = p, .rot_dims = rot, .half = rot / 2 };
    double *inv_freq = (double *)(void *)cpu_alloc_floats(st, 2 * job.half + 2);
    if (!inv_freq)
        return RAYO_E_NOMEM;
    for (size_t i = 0; i < job.half; i++)
        inv_freq[i] = (double)p->freq_scale * pow((double)p->freq_base, -2.0 * (double)i / (double)rot);
    job.inv_freq = inv_freq;
    job.x_head = cpu_or_dense(p->head_stride_x, p->head_dim);
    job.y_head = cpu_or_dense(p->head_stride_y, p->head_dim);
    job.x_token = cpu_or_dense(call->lda, p->n_heads * p->head_dim);
    job.y_token = cpu_or_dense(call->ldy, p->n_heads * p->head_dim);
    size_t tasks = cpu_infer_tasks(st, call->m, (double)(p->n_heads * p->head_dim) * ROPE_COST);
    job.chunk = (call->m + tasks - 1) / tasks;
    cpu_parallel(st, (call->m + job.chunk - 1) / job.chunk, cpu_rope_task, &job);
    cpu_free(st, inv_freq);
    return RAYO_OK;
}

