/* rayo-js.h - the C functions the JavaScript API (rayo.mjs) calls; see
 * rayo-js.c.  Strings returned by the *_json functions are malloc'd. */
#ifndef RAYO_JS_H
#define RAYO_JS_H

#include "rayo.h"

rayo_context *rayo_js_open(const char *settings);
void rayo_js_close(rayo_context *ctx);
const char *rayo_js_last_error(void);
const char *rayo_js_strerror(int status);
int rayo_js_run(rayo_context *ctx, const char *backend, uint32_t op, uint32_t flags, size_t m,
                size_t n, size_t k, float alpha, float beta, const float *a, const float *b,
                const float *c, void *y);
char *rayo_js_backends_json(const rayo_context *ctx);
char *rayo_js_ops_json(void);
char *rayo_js_dispatch_json(const rayo_context *ctx, size_t size);
const char *rayo_js_config_get(const rayo_context *ctx, const char *section, const char *key);
const char *rayo_js_version(void);

#endif
