/* rayo-js.c - the C side of the JavaScript API (rayo.mjs).
 *
 * A few functions over the public API that are easy to call from JS: flat
 * numeric arguments, and JSON text for the structured answers (backends,
 * ops, dispatch), so that the JS side needs no knowledge of struct layouts.
 * Strings returned are malloc'd: the caller frees them with free().
 */
#include "rayo-js.h"

#include <emscripten.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growing JSON text --------------------------------------------------- */
typedef struct text {
    char *buf;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            t->failed = 1;
            return;
        }
        if (t->buf && t->len + (size_t)w < t->cap) {
            t->len += (size_t)w;
            return;
        }
        size_t cap = (t->cap ? t->cap * 2 : 1024) + (size_t)w;
        char *nb = realloc(t->buf, cap);
        if (!nb) {
            t->failed = 1;
            return;
        }
        t->buf = nb;
        t->cap = cap;
    }
}

/* a JSON string literal */
static void put_string(text *t, const char *s)
{
    put(t, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            put(t, "\\%c", c);
        else if (c < 0x20)
            put(t, "\\u%04x", c);
        else
            put(t, "%c", c);
    }
    put(t, "\"");
}

static char *finish(text *t)
{
    if (t->failed) {
        free(t->buf);
        return NULL;
    }
    return t->buf;
}

/* ---- context ------------------------------------------------------------------ */
/* Opens a context configured only by `settings` (rayo.conf syntax): no
 * files, no environment.  NULL on failure (see rayo_js_last_error). */
EMSCRIPTEN_KEEPALIVE rayo_context *rayo_js_open(const char *settings)
{
    rayo_options opts = {
        .struct_size = sizeof opts,
        .settings = settings,
        .no_config_files = 1,
        .no_environment = 1,
        .allow_no_backend = 0,
    };
    rayo_context *ctx = NULL;
    return rayo_open(&ctx, &opts) == RAYO_OK ? ctx : NULL;
}

EMSCRIPTEN_KEEPALIVE void rayo_js_close(rayo_context *ctx)
{
    rayo_close(ctx);
}

EMSCRIPTEN_KEEPALIVE const char *rayo_js_last_error(void)
{
    return rayo_last_error();
}

EMSCRIPTEN_KEEPALIVE const char *rayo_js_strerror(int status)
{
    return rayo_strerror((rayo_status)status);
}

/* Runs one op; backend NULL or "" = through the dispatch chain. */
EMSCRIPTEN_KEEPALIVE int rayo_js_run(rayo_context *ctx, const char *backend, uint32_t op,
                                     uint32_t flags, size_t m, size_t n, size_t k, float alpha,
                                     float beta, const float *a, const float *b, const float *c,
                                     void *y)
{
    rayo_call call = {.struct_size = sizeof(rayo_call), .op = op, .flags = flags, .m = m, .n = n, .k = k, .alpha = alpha,
                      .beta = beta, .a = a, .b = b, .c = c, .y = y};
    if (backend && *backend)
        return rayo_run_on(ctx, backend, &call);
    return rayo_run(ctx, &call);
}

/* ---- introspection as JSON ------------------------------------------------------- */
static const char *status_name(rayo_backend_status s)
{
    switch (s) {
    case RAYO_BACKEND_LOADED: return "loaded";
    case RAYO_BACKEND_REJECTED: return "rejected";
    case RAYO_BACKEND_UNAVAILABLE: return "unavailable";
    case RAYO_BACKEND_DISABLED: return "disabled";
    case RAYO_BACKEND_SHADOWED: return "shadowed";
    }
    return "unknown";
}

/* [{"name", "path", "version", "status", "reason", "device", "rank", "ops"}...] */
EMSCRIPTEN_KEEPALIVE char *rayo_js_backends_json(const rayo_context *ctx)
{
    text t = {0};
    put(&t, "[");
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
        if (rayo_backend_get(ctx, i, &info) != RAYO_OK)
            continue;
        put(&t, "%s{\"name\":", i ? "," : "");
        put_string(&t, info.name);
        put(&t, ",\"path\":");
        put_string(&t, info.path);
        put(&t, ",\"version\":");
        put_string(&t, info.version);
        put(&t, ",\"status\":\"%s\",\"reason\":", status_name(info.status));
        put_string(&t, info.reason);
        put(&t, ",\"device\":");
        put_string(&t, info.device);
        if (info.status == RAYO_BACKEND_LOADED)
            put(&t, ",\"rank\":%u", info.rank);
        else
            put(&t, ",\"rank\":null");
        put(&t, ",\"ops\":%zu}", info.op_count);
    }
    put(&t, "]");
    return finish(&t);
}

static const char *const class_names[] = {
    "binary", "unary", "unary_p", "unary_p2", "axpy", "reduce", "reduce2", "argreduce",
    "rows", "norm", "matmul", "gemv", "transpose", "bias_act",
};

/* [{"id", "name", "class", "tol_rel", "tol_abs", "summary"}...] */
EMSCRIPTEN_KEEPALIVE char *rayo_js_ops_json(void)
{
    size_t count;
    count = rayo_op_count();
    text t = {0};
    put(&t, "[");
    for (size_t i = 0; i < count; i++) {
        const char *cls = (size_t)rayo_op_at(i)->sig < sizeof class_names / sizeof class_names[0]
                              ? class_names[rayo_op_at(i)->sig] : "unknown";
        put(&t, "%s{\"id\":%u,\"name\":", i ? "," : "", (unsigned)rayo_op_at(i)->id);
        put_string(&t, rayo_op_at(i)->name);
        put(&t, ",\"class\":\"%s\",\"tol_rel\":%g,\"tol_abs\":%g,\"summary\":", cls,
            rayo_op_at(i)->tol_rel, rayo_op_at(i)->tol_abs);
        put_string(&t, rayo_op_at(i)->summary);
        put(&t, "}");
    }
    put(&t, "]");
    return finish(&t);
}

/* {"op": "backend the op goes to first at this size", ...} */
EMSCRIPTEN_KEEPALIVE char *rayo_js_dispatch_json(const rayo_context *ctx, size_t size)
{
    size_t count;
    count = rayo_op_count();
    text t = {0};
    put(&t, "{");
    for (size_t i = 0; i < count; i++) {
        const char *be = rayo_backend_for(ctx, rayo_op_at(i)->id, 0, size);
        put(&t, "%s", i ? "," : "");
        put_string(&t, rayo_op_at(i)->name);
        put(&t, ":");
        if (be)
            put_string(&t, be);
        else
            put(&t, "null");
    }
    put(&t, "}");
    return finish(&t);
}

/* The effective value of a setting, or NULL (not malloc'd). */
EMSCRIPTEN_KEEPALIVE const char *rayo_js_config_get(const rayo_context *ctx, const char *section,
                                                    const char *key)
{
    return rayo_config_get(ctx, section, key);
}

EMSCRIPTEN_KEEPALIVE const char *rayo_js_version(void)
{
    return rayo_version();
}
