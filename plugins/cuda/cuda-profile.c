/* SPDX-License-Identifier: MIT */
/* cuda-profile.c - [backend.cuda] profile = yes: the GPU time of every op of
 * every batch, summed per op, dtypes and shape, logged at close (RAYO_LOG=info)
 * with the share of the total.  Each op then runs between two events on the
 * batch's stream, launched one by one (no graph): what a step spends where.
 * Ops that run as one launch (cuda_launch_group) count as their first op. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"

#include <stdlib.h>

/* The entry of an op's kind, added when new (NULL when the table is full). */
static cuda_prof_entry *entry_of(cuda_state *st, const cuda_op *op)
{
    for (size_t i = 0; i < st->prof_count; i++) {
        cuda_prof_entry *e = &st->prof[i];
        if (e->op == op->op && e->dtypes == op->dtypes && e->m == op->m && e->n == op->n)
            return e;
    }
    if (st->prof_count == CUDA_PROF_ENTRIES)
        return NULL;
    cuda_prof_entry *e = &st->prof[st->prof_count++];
    *e = (cuda_prof_entry){op->op, op->dtypes, op->m, op->n, 0, 0};
    return e;
}

rayo_status cuda_profile_launch(cuda_state *st, CUstream stream, const cuda_op *ops, size_t count)
{
    const cuda_driver *drv = st->drv;
    CUevent *ev = calloc(count + 1, sizeof *ev);
    if (!ev)
        return RAYO_E_NOMEM;
    rayo_status s = RAYO_OK;
    size_t made = 0;
    for (; made <= count && drv->cuEventCreate(&ev[made], 0) == CUDA_SUCCESS; made++)
        ;
    for (size_t i = 0, n; made > count && i < count && s == RAYO_OK; i += n) {
        n = cuda_launch_group(st, &ops[i], count - i);
        drv->cuEventRecord(ev[i], stream);
        s = cuda_launch_ops(st, stream, &ops[i], n);
    }
    if (made > count && s == RAYO_OK && drv->cuEventRecord(ev[count], stream) == CUDA_SUCCESS &&
        drv->cuEventSynchronize(ev[count]) == CUDA_SUCCESS) {
        pthread_mutex_lock(&st->lock);
        for (size_t i = 0, n; i < count; i += n) { /* a launch group's time is its first op's */
            float ms = 0;
            n = cuda_launch_group(st, &ops[i], count - i);
            cuda_prof_entry *e = entry_of(st, &ops[i]);
            if (e && drv->event_elapsed(&ms, ev[i], ev[i + n]) == CUDA_SUCCESS) {
                e->ms += ms;
                e->calls++;
            }
        }
        pthread_mutex_unlock(&st->lock);
    }
    for (size_t i = 0; i < made; i++)
        drv->cuEventDestroy(ev[i]);
    free(ev);
    return made > count ? s : launch_all_plain(st, stream, ops, count);
}

static int by_time(const void *a, const void *b)
{
    double x = ((const cuda_prof_entry *)a)->ms, y = ((const cuda_prof_entry *)b)->ms;
    return (x < y) - (x > y);
}

void cuda_profile_report(cuda_state *st)
{
    double total = 0;
    for (size_t i = 0; i < st->prof_count; i++)
        total += st->prof[i].ms;
    qsort(st->prof, st->prof_count, sizeof *st->prof, by_time);
    for (size_t i = 0; i < st->prof_count; i++) {
        const cuda_prof_entry *e = &st->prof[i];
        st->host->log(st->host, RAYO_LOG_INFO, "profile: %-10s dtypes 0x%08x m %6zu n %6zu: %8.3f ms in %6zu calls "
                      "(%7.2f us each, %5.1f%%)", cuda_op_name(e->op), (unsigned)e->dtypes, e->m, e->n, e->ms,
                      e->calls, e->calls ? 1000.0 * e->ms / (double)e->calls : 0.0, total > 0 ? 100 * e->ms / total : 0);
    }
    if (st->prof_count)
        st->host->log(st->host, RAYO_LOG_INFO, "profile: %.3f ms of GPU time in batches", total);
}
