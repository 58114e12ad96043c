/* SPDX-License-Identifier: MIT */
/* context.c - rayo_open/rayo_close, introspection and small helpers. */
#define _GNU_SOURCE
#include "internal.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *rayo__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s) + 1;
    char *d = malloc(len);
    if (d)
        memcpy(d, s, len);
    return d;
}

char *rayo__asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0)
        return NULL;
    char *s = malloc((size_t)len + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return s;
}

void *rayo__alloc_aligned(size_t align, size_t bytes)
{
    void *p = NULL;
    if (align < sizeof(void *) || (align & (align - 1)))
        return NULL;
    if (posix_memalign(&p, align, bytes ? bytes : 1) != 0)
        return NULL;
    return p;
}

void rayo__free_aligned(void *p)
{
    free(p);
}

const char *rayo__env(const rayo_context *ctx, const char *name)
{
    if (ctx && ctx->no_env)
        return NULL;
#ifdef HAVE_SECURE_GETENV
    return secure_getenv(name); /* ignored in setuid programs */
#else
    return getenv(name);
#endif
}

static unsigned threads_setting(rayo_context *ctx)
{
    const char *v = config_get(&ctx->cfg, "rayo", "threads");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned dflt = online > 0 ? (unsigned)(online > 256 ? 256 : online) : 1;
    if (!v || !strcmp(v, "auto"))
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < 1 || n > 1024) {
        core_log(ctx, RAYO_LOG_WARN, "%s: [rayo] threads = \"%s\" is not auto or 1..1024: using %u",
                 config_origin(&ctx->cfg, "rayo", "threads"), v, dflt);
        return dflt;
    }
    return (unsigned)n;
}

static void apply_rayo_section(rayo_context *ctx)
{
    const char *level = config_get(&ctx->cfg, "rayo", "log");
    if (level && rayo__parse_log_level(level, &ctx->log_level) != 0)
        core_log(ctx, RAYO_LOG_WARN, "%s: [rayo] log = \"%s\": use error, warn, info or debug",
                 config_origin(&ctx->cfg, "rayo", "log"), level);
    ctx->cpu_features = cpu_detect();
    const char *masked = config_get(&ctx->cfg, "rayo", "cpu_disable");
    if (masked) {
        uint64_t off = cpu_features_from_names(masked);
        ctx->cpu_features &= ~off;
        core_log(ctx, RAYO_LOG_INFO, "RAYO_CPU_DISABLE masks CPU features: %s", masked);
    }
    ctx->force_cpu = config_get_bool(ctx, "dispatch", "force_cpu", false);
}

RAYO_API rayo_status rayo_open(rayo_context **out, const rayo_options *opts)
{
    rayo__clear_error();
    if (!out)
        return rayo__fail(RAYO_E_INVALID, "rayo_open: result pointer is NULL");
    *out = NULL;
    if (opts && opts->struct_size < offsetof(rayo_options, log))
        return rayo__fail(RAYO_E_INVALID, "rayo_open: options.struct_size %zu is too small", opts->struct_size);
    rayo_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return rayo__fail(RAYO_E_NOMEM, "rayo_open: out of memory");
    ctx->log_level = RAYO_LOG_WARN;
    pthread_mutex_init(&ctx->objects_lock, NULL);
    pthread_mutex_init(&ctx->log_lock, NULL);
    ctx->owner_pid = (long)getpid();
    if (opts && opts->struct_size >= offsetof(rayo_options, log_user) + sizeof(void *)) {
        ctx->log_fn = opts->log;
        ctx->log_user = opts->log_user;
    }
    ctx->no_env = opts && opts->no_environment;
    const char *env_level = rayo__env(ctx, "RAYO_LOG");
    if (env_level)
        rayo__parse_log_level(env_level, &ctx->log_level);

    config_load(ctx, &ctx->cfg, opts);
    apply_rayo_section(ctx);
    ctx->pool = pool_create(threads_setting(ctx));
    loader_load_all(ctx);
    config_check_names(ctx);
    dispatch_resolve(ctx);

    size_t active = 0;
    for (size_t i = 0; i < ctx->backend_count; i++)
        active += backend_active(ctx->backends[i]);
    bool allow_empty = opts && opts->struct_size >= offsetof(rayo_options, allow_no_backend) + sizeof(int) &&
                       opts->allow_no_backend;
    if (active == 0 && !allow_empty) {
        rayo_status st = rayo__fail(RAYO_E_NO_BACKEND,
            "no backend could be loaded (searched %s; run rayo-info for the reasons)",
            ctx->search_path ? ctx->search_path : "nothing");
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", rayo_last_error());
        rayo_close(ctx);
        return rayo__fail(st, "%s", msg);
    }
    *out = ctx;
    return RAYO_OK;
}

RAYO_API void rayo_close(rayo_context *ctx)
{
    if (!ctx)
        return;
    /* In a forked child the plugins' state (GPU drivers, their threads)
     * belongs to the parent: the child frees only the core's memory. */
    bool own = getpid() == (pid_t)ctx->owner_pid;
    buffers_close_all(ctx, own);
    loader_unload_all(ctx, own);
    pool_destroy(ctx->pool);
    config_free(&ctx->cfg);
    free(ctx->search_path);
    pthread_mutex_destroy(&ctx->objects_lock);
    pthread_mutex_destroy(&ctx->log_lock);
    free(ctx);
}

/* ---- introspection ---- */
RAYO_API size_t rayo_backend_count(const rayo_context *ctx)
{
    return ctx ? ctx->backend_count : 0;
}

RAYO_API rayo_status rayo_backend_get(const rayo_context *ctx, size_t index, rayo_backend_info *info)
{
    if (!ctx || !info)
        return rayo__fail(RAYO_E_INVALID, "context or info is NULL");
    if (index >= ctx->backend_count)
        return rayo__fail(RAYO_E_NOT_FOUND, "no backend %zu (there are %zu)", index, ctx->backend_count);
    if (info->struct_size < offsetof(rayo_backend_info, op_count) + sizeof info->op_count)
        return rayo__fail(RAYO_E_INVALID, "rayo_backend_get: set info->struct_size = sizeof(rayo_backend_info)");
    /* Asking about a backend's device starts it (a deferred GPU plugin). */
    rayo_backend *be = ctx->backends[index];
    if (be->status == RAYO_BACKEND_LOADED)
        backend_start(be);
    rayo_backend_info full;
    rayo_backend_info *caller = info;
    info = &full;
    memset(info, 0, sizeof *info);
    info->struct_size = caller->struct_size < sizeof full ? caller->struct_size : sizeof full;
    info->name = be->name;
    info->path = be->path;
    info->version = be->version;
    info->abi_major = be->abi_major;
    info->abi_minor = be->abi_minor;
    info->status = be->status;
    info->reason = be->reason;
    if (be->status == RAYO_BACKEND_LOADED && atomic_load(&be->lost))
        info->reason = "device lost during this context";
    info->device_count = be->probe.device_count;
    info->device = be->probe.device_count ? be->probe.devices[be->device].name : "";
    info->device_type = be->probe.device_count ? (rayo_device_type)be->probe.devices[be->device].type
                                               : RAYO_DEVICE_OTHER;
    info->rank = be->status == RAYO_BACKEND_LOADED ? be->rank : UINT32_MAX;
    info->op_count = be->op_count;
    info->device_flags = be->probe.device_count ? be->probe.devices[be->device].flags & RAYO_DEVICE_FLUSHES_DENORMALS
                                                : 0;
    memcpy(caller, info, info->struct_size); /* the fields the caller's header has */
    return RAYO_OK;
}

RAYO_API const char *rayo_backend_device_name(const rayo_context *ctx, size_t index, size_t device)
{
    if (!ctx || index >= ctx->backend_count)
        return NULL;
    if (ctx->backends[index]->status == RAYO_BACKEND_LOADED)
        backend_start(ctx->backends[index]);
    if (device >= ctx->backends[index]->probe.device_count)
        return NULL;
    return ctx->backends[index]->probe.devices[device].name;
}

RAYO_API size_t rayo_config_file_count(const rayo_context *ctx)
{
    return ctx ? ctx->cfg.file_count : 0;
}

RAYO_API const char *rayo_config_file(const rayo_context *ctx, size_t index, const char **status)
{
    if (!ctx || index >= ctx->cfg.file_count)
        return NULL;
    if (status)
        *status = config_file_status(&ctx->cfg.files[index]);
    return ctx->cfg.files[index].path;
}

RAYO_API const char *rayo_config_get(const rayo_context *ctx, const char *section, const char *key)
{
    if (!ctx || !section || !key)
        return NULL;
    return config_get(&ctx->cfg, section, key);
}

RAYO_API const char *rayo_config_origin(const rayo_context *ctx, const char *section, const char *key)
{
    if (!ctx || !section || !key)
        return NULL;
    const config_entry *e = config_lookup(&ctx->cfg, section, key);
    return e ? e->origin : NULL;
}

RAYO_API size_t rayo_config_setting_count(const rayo_context *ctx)
{
    return ctx ? ctx->cfg.count : 0;
}

RAYO_API const char *rayo_config_setting(const rayo_context *ctx, size_t index, const char **section,
                                         const char **key, const char **value)
{
    if (!ctx || index >= ctx->cfg.count)
        return NULL;
    const config_entry *e = &ctx->cfg.entries[index];
    if (section)
        *section = e->section;
    if (key)
        *key = e->key;
    if (value)
        *value = e->value;
    return e->origin;
}

RAYO_API unsigned rayo_thread_count(const rayo_context *ctx)
{
    return ctx ? pool_threads(ctx->pool) : 0;
}

RAYO_API const char *rayo_version(void)
{
    return PACKAGE_VERSION;
}

RAYO_API const char *rayo_plugin_search_path(const rayo_context *ctx)
{
    return ctx && ctx->search_path ? ctx->search_path : "";
}
