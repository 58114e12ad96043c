/* SPDX-License-Identifier: MIT */
/* rayo-js.h - the C functions the JavaScript API (rayo.mjs) calls; see
 * rayo-js.c.  Strings returned by the *_json functions are malloc'd. */
#ifndef RAYO_JS_H
#define RAYO_JS_H

#include "rayo.h"

rayo_context *rayo_js_open(const char *settings);
void rayo_js_close(rayo_context *ctx);
const char *rayo_js_last_error(void);
const char *rayo_js_strerror(int status);
int rayo_js_run(rayo_context *ctx, const char *backend, uint32_t op, uint32_t flags, uint32_t dtypes,
                size_t m, size_t n, size_t k, float alpha, float beta, const void *a, const void *b,
                const void *c, void *y, const double *params);
char *rayo_js_backends_json(const rayo_context *ctx);
unsigned rayo_js_threads(const rayo_context *ctx);
char *rayo_js_ops_json(void);
char *rayo_js_dispatch_json(const rayo_context *ctx, size_t size);
const char *rayo_js_config_get(const rayo_context *ctx, const char *section, const char *key);
const char *rayo_js_version(void);
rayo_buffer *rayo_js_buffer_create(rayo_context *ctx, const char *backend, size_t bytes);
void rayo_js_buffer_destroy(rayo_buffer *buf);
int rayo_js_buffer_write(rayo_buffer *buf, size_t offset, const void *src, size_t bytes);
int rayo_js_buffer_read(rayo_buffer *buf, size_t offset, void *dst, size_t bytes);
const char *rayo_js_buffer_backend(const rayo_buffer *buf);
rayo_batch *rayo_js_batch_create(rayo_context *ctx, const char *backend);
int rayo_js_batch_record(rayo_batch *batch, uint32_t op, uint32_t flags, uint32_t dtypes, size_t m, size_t n,
                         size_t k, float alpha, float beta, rayo_buffer *const bufs[4],
                         const size_t offsets[4], const size_t steps[4], const double *params,
                         uint32_t step_flags);
int rayo_js_batch_set_step(rayo_batch *batch, size_t step);
int rayo_js_batch_run(rayo_batch *batch);
void rayo_js_batch_destroy(rayo_batch *batch);

#endif
