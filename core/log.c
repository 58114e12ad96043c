/* SPDX-License-Identifier: MIT */
/* log.c - log messages and the per-thread last-error message. */
#include "internal.h"
#include <stdarg.h>
#include <string.h>
#include <strings.h>

static _Thread_local char last_error[1024];
/* Whether a plugin set the message (host->set_error) since the core last
 * looked (rayo__take_plugin_message): a kernel that fails without one must
 * not leave an earlier call's text behind. */
static _Thread_local int plugin_message;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int rayo__parse_log_level(const char *s, rayo_log_level *out)
{
    for (int i = 0; i <= RAYO_LOG_DEBUG; i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (rayo_log_level)i;
            return 0;
        }
    }
    return -1;
}

/* Whether this message was said before in this context: a warning about a
 * setting must come once, not once per op that reads it.  Only the first
 * LOG_ONCE_MAX distinct messages are remembered; later ones always print. */
static bool said_before(rayo_context *ctx, rayo_log_level level, const char *msg)
{
    uint64_t h = 14695981039346656037ull ^ (uint64_t)level; /* FNV-1a */
    for (const char *p = msg; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    pthread_mutex_lock(&ctx->log_lock);
    bool seen = false;
    for (size_t i = 0; i < ctx->said_count && !seen; i++)
        seen = ctx->said[i] == h;
    if (!seen && ctx->said_count < LOG_ONCE_MAX)
        ctx->said[ctx->said_count++] = h;
    pthread_mutex_unlock(&ctx->log_lock);
    return seen;
}

void core_log(const rayo_context *ctx, rayo_log_level level, const char *fmt, ...)
{
    rayo_log_level limit = ctx ? ctx->log_level : RAYO_LOG_WARN;
    /* Warnings are counted against their file even when not shown. */
    if (level > limit && level > RAYO_LOG_WARN)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* The context is never const where it was made: only this function's
     * callers hold it const. */
    rayo_context *mut = (rayo_context *)ctx;
    if (mut && level < RAYO_LOG_DEBUG && said_before(mut, level, msg))
        return;
    if (mut && level <= RAYO_LOG_WARN)
        config_count_problem(&mut->cfg, msg);
    if (level > limit)
        return;
    if (ctx && ctx->log_fn)
        ctx->log_fn(ctx->log_user, level, msg);
    else
        fprintf(stderr, "rayo: %s: %s\n", level_names[level], msg);
}

void rayo__set_errorv(const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    plugin_message = 0; /* host_set_error notes it again after this */
}

rayo_status rayo__fail(rayo_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rayo__set_errorv(fmt, ap);
    va_end(ap);
    return status;
}

void rayo__note_plugin_message(void)
{
    plugin_message = 1;
}

int rayo__take_plugin_message(void)
{
    int said = plugin_message;
    plugin_message = 0;
    return said;
}

void rayo__clear_error(void)
{
    last_error[0] = '\0';
}

RAYO_API const char *rayo_last_error(void)
{
    return last_error;
}

RAYO_API const char *rayo_strerror(rayo_status status)
{
    switch (status) {
    case RAYO_OK: return "success";
    case RAYO_E_INVALID: return "invalid argument";
    case RAYO_E_OVERFLOW: return "size overflow or absurd size";
    case RAYO_E_NOMEM: return "out of memory";
    case RAYO_E_UNSUPPORTED: return "not supported by this backend";
    case RAYO_E_BACKEND: return "backend failure";
    case RAYO_E_DEVICE_LOST: return "device lost";
    case RAYO_E_NOT_FOUND: return "not found";
    case RAYO_E_CONFIG: return "invalid configuration";
    case RAYO_E_ABI: return "plugin ABI mismatch";
    case RAYO_E_TIMEOUT: return "timed out";
    case RAYO_E_NO_BACKEND: return "no backend can run this call";
    case RAYO_E_STATE: return "call out of order";
    }
    return "unknown status";
}
