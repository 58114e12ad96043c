/* SPDX-License-Identifier: MIT */
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

/* rope's parameters from v[]: mode, rot_dims, freq_base, freq_scale,
 * n_heads, head_dim, head_stride_x, head_stride_y (rayo.mjs: ROPE_KEYS). */
static rayo_rope_params rope_from(const double *v)
{
    rayo_rope_params p = {.struct_size = sizeof p, .mode = (rayo_rope_mode)v[0], .rot_dims = (uint32_t)v[1],
                          .freq_base = (float)v[2], .freq_scale = (float)v[3], .n_heads = (size_t)v[4],
                          .head_dim = (size_t)v[5], .head_stride_x = (size_t)v[6], .head_stride_y = (size_t)v[7]};
    return p;
}

/* attention's parameters from v[]: flags, kv_dtype, n_q, n_kv, n_heads,
 * n_kv_heads, head_dim, scale, then the strides q_token ... o_head
 * (rayo.mjs: ATTENTION_KEYS). */
static rayo_attention_params attention_from(const double *v)
{
    rayo_attention_params p = {.struct_size = sizeof p, .flags = (uint32_t)v[0], .kv_dtype = (rayo_dtype)v[1],
                               .n_q = (size_t)v[2], .n_kv = (size_t)v[3], .n_heads = (size_t)v[4],
                               .n_kv_heads = (size_t)v[5], .head_dim = (size_t)v[6], .scale = (float)v[7]};
    size_t *strides[8] = {&p.q_token, &p.q_head, &p.k_token, &p.k_head, &p.v_token, &p.v_head, &p.o_token, &p.o_head};
    for (int i = 0; i < 8; i++)
        *strides[i] = (size_t)v[8 + i];
    return p;
}

/* The parameter struct of rope or attention from v[] (rayo.mjs:
 * paramValues), filled into *rope or *attention; NULL for other ops. */
static const void *params_from(uint32_t op, const double *v, rayo_rope_params *rope,
                               rayo_attention_params *attention)
{
    if (v && op == RAYO_OP_ROPE) {
        *rope = rope_from(v);
        return rope;
    }
    if (v && op == RAYO_OP_ATTENTION) {
        *attention = attention_from(v);
        return attention;
    }
    return NULL;
}

/* Runs one op; backend NULL or "" = through the dispatch chain; dtypes:
 * RAYO_DTYPES(...), 0 = all f32. params: rope's or attention's
 * values (above), else NULL. */
EMSCRIPTEN_KEEPALIVE int rayo_js_run(rayo_context *ctx, const char *backend, uint32_t op,
                                     uint32_t flags, uint32_t dtypes, size_t m, size_t n, size_t k,
                                     float alpha, float beta, const void *a, const void *b,
                                     const void *c, void *y, const double *params)
{
    rayo_rope_params rope;
    rayo_attention_params attention;
    rayo_call call = {.struct_size = sizeof(rayo_call), .op = op, .flags = flags, .dtypes = dtypes, .m = m,
                      .n = n, .k = k, .alpha = alpha, .beta = beta, .a = a, .b = b, .c = c, .y = y,
                      .params = params_from(op, params, &rope, &attention)};
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

/* [{"name", "path", "version", "status", "reason", "device", "cpu", "rank", "ops"}...] */
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
        put(&t, ",\"cpu\":%s", info.device_type == RAYO_DEVICE_CPU ? "true" : "false");
        if (info.status == RAYO_BACKEND_LOADED)
            put(&t, ",\"rank\":%u", info.rank);
        else
            put(&t, ",\"rank\":null");
        put(&t, ",\"ops\":%zu}", info.op_count);
    }
    put(&t, "]");
    return finish(&t);
}

/* The threads of the context's pool (the CPU backends' parallel loops). */
EMSCRIPTEN_KEEPALIVE unsigned rayo_js_threads(const rayo_context *ctx)
{
    return rayo_thread_count(ctx);
}

static const char *const class_names[] = {
    "binary", "unary", "unary_p", "unary_p2", "axpy", "reduce", "reduce2", "argreduce",
    "rows", "norm", "matmul", "gemv", "transpose", "bias_act",
    "convert", "get_rows", "rope", "attention", "glu",
};
_Static_assert(sizeof class_names / sizeof class_names[0] == RAYO_SIG_GLU + 1,
               "one class name per rayo_op_sig (rayo.h)");

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
        /* the op's first dtype combination: all-f32, or (convert, get_rows,
           rope) the first the op lists */
        const rayo_combo_info *combo = rayo_op_combo(rayo_op_at(i)->id, 0);
        const char *be = combo ? rayo_backend_for(ctx, rayo_op_at(i)->id, combo->dtypes, size) : NULL;
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

/* ---- device buffers and batches ----------------------------------------------- */
/* backend NULL or "": the core's choice (rayo_buffer_create).  NULL on failure. */
EMSCRIPTEN_KEEPALIVE rayo_buffer *rayo_js_buffer_create(rayo_context *ctx, const char *backend, size_t bytes)
{
    rayo_buffer *buf = NULL;
    return rayo_buffer_create(ctx, backend && *backend ? backend : NULL, bytes, &buf) == RAYO_OK ? buf : NULL;
}

EMSCRIPTEN_KEEPALIVE void rayo_js_buffer_destroy(rayo_buffer *buf)
{
    rayo_buffer_destroy(buf);
}

EMSCRIPTEN_KEEPALIVE int rayo_js_buffer_write(rayo_buffer *buf, size_t offset, const void *src, size_t bytes)
{
    return rayo_buffer_write(buf, offset, src, bytes);
}

/* Waits on a GPU backend: the JS API calls it through JSPI. */
EMSCRIPTEN_KEEPALIVE int rayo_js_buffer_read(rayo_buffer *buf, size_t offset, void *dst, size_t bytes)
{
    return rayo_buffer_read(buf, offset, dst, bytes);
}

EMSCRIPTEN_KEEPALIVE const char *rayo_js_buffer_backend(const rayo_buffer *buf)
{
    return rayo_buffer_backend(buf);
}

EMSCRIPTEN_KEEPALIVE rayo_batch *rayo_js_batch_create(rayo_context *ctx, const char *backend)
{
    rayo_batch *batch = NULL;
    return rayo_batch_create(ctx, backend && *backend ? backend : NULL, &batch) == RAYO_OK ? batch : NULL;
}

/* One op on buffers; bufs[4], offsets[4] and steps[4] (bytes per unit of
 * the batch's step, for replay): a, b, c, y; dtypes as in rayo_js_run;
 * params: rope's or attention's values (above), else NULL; step_flags:
 * RAYO_STEP_KV_LENGTH or 0. */
EMSCRIPTEN_KEEPALIVE int rayo_js_batch_record(rayo_batch *batch, uint32_t op, uint32_t flags,
                                              uint32_t dtypes, size_t m, size_t n, size_t k,
                                              float alpha, float beta, rayo_buffer *const bufs[4],
                                              const size_t offsets[4], const size_t steps[4],
                                              const double *params, uint32_t step_flags)
{
    rayo_batch_call call = {.struct_size = sizeof call, .op = op, .flags = flags, .dtypes = dtypes,
                            .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta, .step_flags = step_flags};
    rayo_rope_params rope;
    rayo_attention_params attention;
    call.params = params_from(op, params, &rope, &attention);
    rayo_operand *operands[4] = {&call.a, &call.b, &call.c, &call.y};
    for (int i = 0; i < 4; i++) {
        operands[i]->buf = bufs[i];
        operands[i]->offset = offsets[i];
        call.step_bytes[i] = steps[i];
    }
    return rayo_batch_record(batch, &call);
}

EMSCRIPTEN_KEEPALIVE int rayo_js_batch_set_step(rayo_batch *batch, size_t step)
{
    return rayo_batch_set_step(batch, step);
}

/* Submits and waits (through JSPI on a GPU backend). */
EMSCRIPTEN_KEEPALIVE int rayo_js_batch_run(rayo_batch *batch)
{
    rayo_status st = rayo_batch_submit(batch);
    return st != RAYO_OK ? st : rayo_batch_wait(batch, UINT64_MAX);
}

EMSCRIPTEN_KEEPALIVE void rayo_js_batch_destroy(rayo_batch *batch)
{
    rayo_batch_destroy(batch);
}
