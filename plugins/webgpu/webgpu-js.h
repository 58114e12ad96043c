/* SPDX-License-Identifier: MIT */
/* webgpu-js.h - the functions of the JavaScript layer (webgpu-host.js) that
 * the webgpu plugin imports.
 *
 * The plugin is a side module: these are imports from "env", which
 * webgpu-host.js puts into the main module's import table before any side
 * module loads.  Under an engine without WebGPU (node, an old browser) they
 * exist too and say so.  Functions marked "waits" are JSPI Suspending
 * imports: they suspend the WebAssembly stack until the GPU answers, which
 * is possible only inside a call the JS API made through
 * WebAssembly.promising; rayo_webgpu_js_can_wait says whether that is so.
 * Sizes are in bytes unless said otherwise; handles are small integers
 * (0: none). */
#ifndef RAYO_WEBGPU_JS_H
#define RAYO_WEBGPU_JS_H

#include <stddef.h>
#include <stdint.h>

/* Whether a device was acquired (before rayo_open, by the JS API).  Fills
 * name (the adapter), reason (why not, or the features and limits) and
 * info: maxStorageBufferBindingSize, the rayo_device_type, the
 * RAYO_DEVICE_* flags.  Returns 1 with a device, else 0. */
int rayo_webgpu_js_probe(char *name, size_t name_size, char *reason, size_t reason_size,
                         uint32_t info[3]);

/* 1 when the current call may wait for the GPU (a JSPI promising call). */
int rayo_webgpu_js_can_wait(void);

/* sizes[]: m, n, k, then the row strides lda, ldb, ldy in elements (0:
 * dense), then the rayo_dtype of a (typed weights and tables; the other
 * operands are f32), then WEBGPU_EXT words of rope's or attention's
 * parameters (webgpu-plugin.c: rope_ext, attention_ext). */
#define WEBGPU_EXT 16
#define WEBGPU_SIZES (7 + WEBGPU_EXT)

/* Runs one op on host memory (waits): uploads a, b, c (na..nc bytes, 0 =
 * unused) and y when y_in, runs the op, reads y back (ny bytes).  Returns a
 * rayo_status. */
int rayo_webgpu_js_run(uint32_t op, uint32_t flags, const uint32_t sizes[WEBGPU_SIZES], float alpha,
                       float beta, const void *a, size_t na, const void *b, size_t nb,
                       const void *c, size_t nc, void *y, size_t ny, int y_in);

/* Device buffers (bytes a multiple of 4, at most the limit of the probe). */
uint32_t rayo_webgpu_js_buffer_alloc(size_t bytes);
void rayo_webgpu_js_buffer_free(uint32_t buf);
int rayo_webgpu_js_buffer_write(uint32_t buf, size_t offset, const void *src, size_t bytes);
int rayo_webgpu_js_buffer_read(uint32_t buf, size_t offset, void *dst, size_t bytes); /* waits */

/* Batches: recorded calls, encoded into one command buffer at each submit
 * (a batch may be submitted again: replay). */
uint32_t rayo_webgpu_js_batch_begin(void);
/* bufs: a, b, c, y handles; offsets: their byte offsets at step 0; steps:
 * the bytes each offset moves per unit of the batch's step. */
int rayo_webgpu_js_batch_record(uint32_t batch, uint32_t op, uint32_t flags, const uint32_t sizes[WEBGPU_SIZES],
                                float alpha, float beta, const uint32_t bufs[4],
                                const uint32_t offsets[4], const uint32_t steps[4]);
/* A buffer of bytes that lives as long as the batch (rope's frequencies);
 * returns its handle for a call's operand, 0 when out of memory. */
uint32_t rayo_webgpu_js_batch_aux(uint32_t batch, const void *src, size_t bytes);
/* The step the next submits run at. */
int rayo_webgpu_js_batch_set_step(uint32_t batch, uint32_t step);
int rayo_webgpu_js_batch_submit(uint32_t batch);
int rayo_webgpu_js_batch_wait(uint32_t batch); /* waits */
void rayo_webgpu_js_batch_free(uint32_t batch);

#endif
