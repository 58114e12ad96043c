/* SPDX-License-Identifier: MIT */
/* x86-plugin.c - the state and init/fini of the x86 plugins (x86-plugin.h). */
#include "x86-prepared.h"

#include <stdio.h>
#include <string.h>

static size_t clamp_size(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void x86_choose_blocking(const x86_gemm_shape *shape, const x86_caches *caches, x86_gemm_blocking *b)
{
    size_t mr = shape->mr, nr = shape->nr;
    size_t kc = caches->l1d * shape->kc_l1d_num / shape->kc_l1d_den / (nr * sizeof(float));
    b->kc = clamp_size(kc, 64, shape->kc_max) / 8 * 8;
    size_t mc = caches->l2 / shape->mc_l2_div / (b->kc * sizeof(float));
    b->mc = clamp_size(mc, 4 * mr, shape->mc_max) / mr * mr;
    size_t nc = caches->l3 / 4 / (b->kc * sizeof(float));
    b->nc = clamp_size(nc, shape->nc_min_tiles * nr, shape->nc_max) / nr * nr;
}

/* [backend.NAME] prepared_weights: no, gemv (the default) or all. */
static int prepared_setting(const cpu_state *base)
{
    const rayo_host *host = base->host;
    const char *v = host->config ? host->config(host, "prepared_weights") : NULL;
    if (!v || !strcmp(v, "gemv"))
        return X86_PREPARED_GEMV;
    if (!strcmp(v, "no") || !strcmp(v, "all"))
        return v[0] == 'n' ? X86_PREPARED_NONE : X86_PREPARED_ALL;
    if (host->log)
        host->log(host, RAYO_LOG_WARN, "[backend.%s] prepared_weights = %s ignored: want no, gemv or all",
                  cpu_plugin_id.name, v);
    return X86_PREPARED_GEMV;
}

rayo_status x86_state_init(cpu_state *base, const x86_gemm_shape *shape)
{
    x86_state *st = (x86_state *)base; /* cpu_state is its first member */
    const rayo_host *host = base->host;
    x86_detect_caches(&st->caches);
    x86_choose_blocking(shape, &st->caches, &st->blocking);
    x86_gemm_blocking_overrides(base, &st->blocking, shape->mr, shape->nr);
    /* Streaming stores pay off only when the output could not stay in the
     * last-level cache anyway. */
    st->stream_bytes = cpu_setting_size(base, "stream_min_bytes", st->caches.l3, 0, SIZE_MAX);
    if (x86_gemm_pool_init(&st->scratch_pool) != RAYO_OK)
        return RAYO_E_BACKEND;
    st->prepared_weights = prepared_setting(base);
    if (pthread_mutex_init(&st->prepared_lock, NULL) != 0) {
        x86_gemm_pool_fini(base, &st->scratch_pool);
        return RAYO_E_BACKEND;
    }
    if (host->log)
        host->log(host, RAYO_LOG_DEBUG,
                  "caches (%s): L1d %zu KiB, L2 %zu KiB, L3 %zu KiB; sgemm blocks mc %zu kc %zu nc %zu; "
                  "stream_min_bytes %zu",
                  st->caches.source, st->caches.l1d >> 10, st->caches.l2 >> 10, st->caches.l3 >> 10,
                  st->blocking.mc, st->blocking.kc, st->blocking.nc, st->stream_bytes);
    return RAYO_OK;
}

void x86_state_fini(cpu_state *base)
{
    x86_state *st = (x86_state *)base;
    x86_gemm_pool_fini(base, &st->scratch_pool);
    x86_prepared_release_all(st);
    pthread_mutex_destroy(&st->prepared_lock);
}

void x86_describe(const char *isa, char *name, size_t size)
{
    char brand[64];
    x86_cpu_brand(brand, sizeof brand);
    snprintf(name, size, "CPU %s%s%s%s", isa, brand[0] ? " (" : "", brand, brand[0] ? ")" : "");
}

void x86_log_stream(const x86_state *st, const rayo_call *call)
{
    const rayo_host *host = st->cpu.host;
    if (host->log)
        host->log(host, RAYO_LOG_DEBUG, "op %u: %zu floats out with streaming stores (stream_min_bytes %zu)",
                  (unsigned)call->op, call->n, st->stream_bytes);
}
