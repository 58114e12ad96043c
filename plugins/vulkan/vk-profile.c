/* SPDX-License-Identifier: MIT */
/* vk-profile.c - [backend.vulkan] profile = yes: the GPU time of every op of
 * every batch, summed per op, dtypes and shape, logged at close (RAYO_LOG=info)
 * with the share of the total, and the host time spent recording batches
 * (from batch begin to its first submit, and in the later submits of a
 * replayed batch).
 * A typed matmul's steps count apart: its widenings (get_rows) and its f32
 * matmul, or on the f16 way (vk-half-prompt.c) its two f16 copies (as
 * converts) and its f16 product, each get their own entry, the call itself
 * what follows them.  Entries are per op, dtypes, m and n (and k: matmul).
 *
 * A batch's command buffer gets a timestamp at its start and one after each
 * op (each op ends in a full barrier, so an op's time is the difference
 * between its timestamp and the one before: its dispatches and the bubbles
 * between them).  The results are read when the batch is waited for. */
#include "vk-internal.h"

#include <stdlib.h>
#include <time.h>

#define PROF_QUERIES 4096u      /* timestamps per batch; later ops are not timed */

static const char *const op_names[RAYO_OP_ID_LIMIT] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) [ID] = #NAME,
#include "rayo-ops.h"
#undef RAYO_OP
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void vk_profile_begin(vk_state *s, vk_ctx *cx)
{
    if (!s->profile)
        return;
    cx->prof_count = 0;
    if (!cx->prof_pool) {
        VkQueryPoolCreateInfo qi = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = PROF_QUERIES,
        };
        cx->prof_keys = calloc(PROF_QUERIES, sizeof *cx->prof_keys);
        if (!cx->prof_keys || s->fd.vkCreateQueryPool(s->device, &qi, NULL, &cx->prof_pool) != VK_SUCCESS) {
            free(cx->prof_keys);
            cx->prof_keys = NULL;
            cx->prof_pool = VK_NULL_HANDLE;
            return;
        }
    }
    s->fd.vkCmdResetQueryPool(cx->cmd, cx->prof_pool, 0, PROF_QUERIES);
    s->fd.vkCmdWriteTimestamp(cx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, cx->prof_pool, 0);
    cx->prof_count = 1;
}

void vk_profile_op(vk_state *s, vk_ctx *cx, const rayo_dev_call *call)
{
    if (!s->profile || !cx->prof_pool || cx->prof_count == 0 || cx->prof_count >= PROF_QUERIES)
        return;             /* 0: not a batch begun with the profile on */
    /* k tells a matmul's shapes apart (a 7B's n = 4096 products: k = 4096
     * and 11008); other ops' k (attention's key count) would split an
     * entry per decode step */
    size_t k = call->op == RAYO_OP_MATMUL ? call->k : 0;
    cx->prof_keys[cx->prof_count] = (vk_prof_key){call->op, call->dtypes, call->m, call->n, k};
    s->fd.vkCmdWriteTimestamp(cx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, cx->prof_pool,
                              cx->prof_count++);
}

/* The entry of an op's kind, added when new (NULL when the table is full). */
static vk_prof_entry *entry_of(vk_state *s, const vk_prof_key *k)
{
    for (size_t i = 0; i < s->prof_count; i++) {
        vk_prof_entry *e = &s->prof[i];
        if (e->key.op == k->op && e->key.dtypes == k->dtypes && e->key.m == k->m && e->key.n == k->n &&
            e->key.k == k->k)
            return e;
    }
    if (s->prof_count == VK_PROF_ENTRIES)
        return NULL;
    s->prof[s->prof_count] = (vk_prof_entry){*k, 0, 0};
    return &s->prof[s->prof_count++];
}

void vk_profile_submitted(vk_state *s, vk_ctx *cx)
{
    (void)s;
    cx->prof_collected = 0;
}

double vk_profile_clock(const vk_state *s)
{
    return s->profile ? now_ms() : 0;
}

void vk_profile_host(vk_state *s, double since)
{
    if (s->profile)
        s->prof_record_ms += now_ms() - since;
}

void vk_profile_collect(vk_state *s, vk_ctx *cx)
{
    if (!s->profile || !cx->prof_pool || cx->prof_count < 2 || cx->prof_collected)
        return;
    uint64_t *ts = calloc(cx->prof_count, sizeof *ts);
    if (!ts || s->fd.vkGetQueryPoolResults(s->device, cx->prof_pool, 0, cx->prof_count,
                                           cx->prof_count * sizeof *ts, ts, sizeof *ts,
                                           VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) {
        free(ts);
        return;
    }
    double period_ms = s->props.limits.timestampPeriod * 1e-6;
    pthread_mutex_lock(&s->ctx_lock);
    s->prof_batches++;
    for (uint32_t i = 1; i < cx->prof_count; i++) {
        vk_prof_entry *e = entry_of(s, &cx->prof_keys[i]);
        if (e) {
            e->ms += (double)(ts[i] - ts[i - 1]) * period_ms;
            e->calls++;
        }
    }
    pthread_mutex_unlock(&s->ctx_lock);
    cx->prof_collected = 1; /* a second wait adds nothing; a replay's submit clears it */
    free(ts);
}

static int by_time(const void *a, const void *b)
{
    double x = ((const vk_prof_entry *)a)->ms, y = ((const vk_prof_entry *)b)->ms;
    return (x < y) - (x > y);
}

void vk_profile_report(vk_state *s)
{
    if (!s->profile)
        return;
    double total = 0;
    for (size_t i = 0; i < s->prof_count; i++)
        total += s->prof[i].ms;
    qsort(s->prof, s->prof_count, sizeof *s->prof, by_time);
    for (size_t i = 0; i < s->prof_count; i++) {
        const vk_prof_entry *e = &s->prof[i];
        const char *name = e->key.op < RAYO_OP_ID_LIMIT && op_names[e->key.op] ? op_names[e->key.op] : "?";
        s->host->log(s->host, RAYO_LOG_INFO, "profile: %-10s dtypes 0x%08x m %6zu n %6zu k %6zu: %8.3f ms in "
                     "%6zu calls (%7.2f us each, %5.1f%%)", name, (unsigned)e->key.dtypes, e->key.m, e->key.n,
                     e->key.k, e->ms,
                     e->calls, e->calls ? 1000.0 * e->ms / (double)e->calls : 0.0, total > 0 ? 100 * e->ms / total : 0);
    }
    s->host->log(s->host, RAYO_LOG_INFO, "profile: %.3f ms of GPU time in %zu batches; %.3f ms of host time "
                 "from batch begin to submit", total, s->prof_batches, s->prof_record_ms);
}

void vk_profile_free(vk_state *s, vk_ctx *cx)
{
    if (cx->prof_pool)
        s->fd.vkDestroyQueryPool(s->device, cx->prof_pool, NULL);
    free(cx->prof_keys);
}
