/* SPDX-License-Identifier: MIT */
/* webgpu-plugin.c - the WebGPU backend of rayo's WebAssembly build: its
 * descriptor, probe, op table, kernels and device memory.
 *
 * The GPU work is done by the JavaScript layer (webgpu-host.js), which talks
 * to navigator.gpu and runs the WGSL of kernels.wgsl; this side checks calls
 * and passes them on.  Reading results back is asynchronous in WebGPU: a
 * kernel on host memory waits through a JSPI Suspending import, which works
 * only inside a call the JS API made with WebAssembly.promising (its async
 * forms).  Elsewhere (the synchronous API) the kernel answers
 * RAYO_E_UNSUPPORTED and the call falls through to the CPU backends.
 *
 * The op table is made from the op list: every op whose signature class has
 * a WGSL entry point (WEBGPU_SIG_*) gets the one kernel. */
#ifdef HAVE_CONFIG_H
#include "config.h" /* PACKAGE_VERSION */
#endif
#include "rayo-dtype.h"
#include "rayo-plugin.h"
#include "webgpu-js.h"
#include "../gpu-common/gpu-descriptor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct webgpu_state {
    const rayo_host *host;
    uint32_t limit; /* maxStorageBufferBindingSize of the device */
} webgpu_state;

static rayo_status webgpu_probe(const rayo_host *host, rayo_probe_result *res)
{
    uint32_t info[3] = {0, 0, 0}; /* limit, device type, device flags */
    (void)host;
    res->device_count = 0;
    if (!rayo_webgpu_js_probe(res->devices[0].name, sizeof res->devices[0].name, res->reason,
                              sizeof res->reason, info))
        return RAYO_OK;
    res->device_count = 1;
    res->devices[0].type = info[1];
    res->devices[0].flags = info[2];
    res->devices[0].memory_bytes = info[0];
    return RAYO_OK;
}

static rayo_status webgpu_init(const rayo_host *host, uint32_t device, void **state)
{
    uint32_t info[3] = {0, 0, 0};
    char name[8], reason[8];
    if (device != 0 || !rayo_webgpu_js_probe(name, sizeof name, reason, sizeof reason, info))
        return RAYO_E_NOT_FOUND;
    webgpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return RAYO_E_NOMEM;
    s->host = host;
    s->limit = info[0];
    *state = s;
    return RAYO_OK;
}

static void webgpu_fini(void *state)
{
    free(state);
}

/* Bytes of an operand of count elements of dtype dt, if it fits one binding. */
static int operand_bytes(const webgpu_state *s, rayo_dtype dt, size_t count, size_t *bytes)
{
    return rayo_dtype_row_bytes(dt, count, bytes) && *bytes <= s->limit ? 0 : -1;
}

/* The dtypes the WGSL kernels take: all-f32; gemv with typed weights (its
 * combinations of the op list; no transpose: rows along the sum); get_rows
 * from any table with i32 indices; convert from any dtype to f32. */
static int dtypes_ok(int sig, const rayo_call *c)
{
    rayo_dtype a = RAYO_DTYPE_OF(c->dtypes, 0);
    if (sig == RAYO_SIG_GET_ROWS)
        return c->dtypes == RAYO_DTYPES(a, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32) && a != RAYO_DTYPE_I32;
    if (sig == RAYO_SIG_CONVERT)
        return c->dtypes == RAYO_DTYPES(a, 0, 0, RAYO_DTYPE_F32) && a != RAYO_DTYPE_F32 && a != RAYO_DTYPE_I32;
    if (sig == RAYO_SIG_ROPE)
        return c->dtypes == RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32);
    if (sig == RAYO_SIG_ATTENTION) { /* the KV cache f32 or f16 */
        rayo_dtype kv = rayo_call_attention_params(c)->kv_dtype;
        return (kv == RAYO_DTYPE_F32 || kv == RAYO_DTYPE_F16) && c->dtypes == RAYO_DTYPES(RAYO_DTYPE_F32, kv, kv, RAYO_DTYPE_F32);
    }
    if (c->dtypes == 0)
        return 1;
    return sig == RAYO_SIG_GEMV && !(c->flags & RAYO_TRANS_A) &&
           c->dtypes == RAYO_DTYPES(a, 0, 0, 0);
}

/* The signatures whose WGSL takes row strides. */
static int takes_strides(int sig)
{
    return sig == RAYO_SIG_MATMUL || sig == RAYO_SIG_GEMV || sig == RAYO_SIG_GLU || sig == RAYO_SIG_GET_ROWS;
}

/* ---- rope and attention: their parameters as words (sizes[7...]) ---------- */
#define EXT_KV_GROWS 15 /* attention: n_kv (word 1) grows with the batch's step */

static int to_words(uint32_t *w, const size_t *v, int count)
{
    for (int i = 0; i < count; i++) {
        if (v[i] > UINT32_MAX)
            return -1;
        w[i] = (uint32_t)v[i];
    }
    return 0;
}

/* mode, rot_dims, heads, head_dim, the head and token strides of x and y */
static int rope_ext(const rayo_call *c, uint32_t *w)
{
    const rayo_rope_params *p = rayo_call_rope_params(c);
    size_t hd = p->head_dim, row = p->n_heads * hd;
    const size_t v[8] = {(size_t)p->mode, p->rot_dims ? p->rot_dims : hd, p->n_heads, hd,
                         p->head_stride_x ? p->head_stride_x : hd, p->head_stride_y ? p->head_stride_y : hd,
                         c->lda ? c->lda : row, c->ldy ? c->ldy : row};
    return p->mode > RAYO_ROPE_NEOX || v[1] > hd || v[1] % 2 ? -1 : to_words(w, v, 8);
}

/* n_q, n_kv, heads, kv heads, head_dim, scale (bits), flags, then the token
 * and head strides of q, k, v, out (0 made dense) */
static int attention_ext(const rayo_call *c, uint32_t *w)
{
    const rayo_attention_params *p = rayo_call_attention_params(c);
    size_t hd = p->head_dim, q_row = p->n_heads * hd, kv_row = p->n_kv_heads * hd;
    const size_t v[15] = {p->n_q, p->n_kv, p->n_heads, p->n_kv_heads, hd, 0, p->flags,
                          p->q_token ? p->q_token : q_row, p->q_head ? p->q_head : hd,
                          p->k_token ? p->k_token : kv_row, p->k_head ? p->k_head : hd,
                          p->v_token ? p->v_token : kv_row, p->v_head ? p->v_head : hd,
                          p->o_token ? p->o_token : q_row, p->o_head ? p->o_head : hd};
    if (!p->n_kv_heads || p->n_heads % p->n_kv_heads || to_words(w, v, 15))
        return -1;
    memcpy(&w[5], &p->scale, sizeof w[5]);
    return 0;
}

/* rope's table of frequencies: freq_scale * freq_base^(-2i / rot_dims) as
 * hi + lo float pairs, computed in double (the angle pos * freq must be
 * right to 1e-7 at positions of 1e5; WGSL has no float64).  malloc'd. */
static float *rope_freqs(const rayo_call *c, size_t *bytes)
{
    const rayo_rope_params *p = rayo_call_rope_params(c);
    size_t rot = p->rot_dims ? p->rot_dims : p->head_dim, half = rot / 2;
    float *t = malloc((2 * half + 2) * sizeof *t);
    if (!t)
        return NULL;
    for (size_t i = 0; i < half; i++) {
        double f = (double)p->freq_scale * pow((double)p->freq_base, -2.0 * (double)i / (double)rot);
        t[2 * i] = (float)f;
        t[2 * i + 1] = (float)(f - (double)t[2 * i]);
    }
    *bytes = (2 * half + 2) * sizeof *t;
    return t;
}

/* What every call must be for the WGSL kernels: dtypes they take, strided
 * only where they take strides, operands that fit one storage binding, sizes and
 * strides that fit 32 bits. */
static rayo_status check_call(const webgpu_state *s, int sig, const rayo_call *c,
                              const size_t count[4], size_t bytes[4], uint32_t sizes[WEBGPU_SIZES])
{
    /* the dtype the WGSL reads by (p.dta): a's, but attention's KV cache */
    const size_t all[7] = {c->m, c->n, c->k, c->lda, c->ldb, c->ldy,
                           RAYO_DTYPE_OF(c->dtypes, sig == RAYO_SIG_ATTENTION ? 1 : 0)};
    if (!dtypes_ok(sig, c) || (rayo_call_strided(c) && !takes_strides(sig)) || c->ldc)
        return RAYO_E_UNSUPPORTED;
    memset(sizes, 0, WEBGPU_SIZES * sizeof *sizes);
    if (to_words(sizes, all, 7) || (sig == RAYO_SIG_ROPE && rope_ext(c, sizes + 7)) ||
        (sig == RAYO_SIG_ATTENTION && attention_ext(c, sizes + 7)))
        return RAYO_E_UNSUPPORTED;
    for (int i = 0; i < 4; i++)
        if (operand_bytes(s, RAYO_DTYPE_OF(c->dtypes, i), count[i], &bytes[i]))
            return RAYO_E_UNSUPPORTED;
    return RAYO_OK;
}

static rayo_status webgpu_kernel(void *state, const rayo_call *call)
{
    webgpu_state *s = state;
    int sig = rayo_op_signature(call->op);
    size_t count[4], bytes[4];
    uint32_t sizes[WEBGPU_SIZES];
    if (sig < 0 || rayo_operand_counts(call, sig, count))
        return RAYO_E_UNSUPPORTED;
    rayo_status st = check_call(s, sig, call, count, bytes, sizes);
    if (st != RAYO_OK)
        return st;
    if (!rayo_webgpu_js_can_wait()) {
        s->host->set_error(s->host, "webgpu: a host-memory call must use the async API (readback waits)");
        return RAYO_E_UNSUPPORTED;
    }
    /* y goes up too where the op reads it, or where its rows (or heads)
     * have gaps that the readback of the whole span must leave as they were */
    int y_in = rayo_output_is_input(call, sig) || (call->ldy && call->ldy != call->n) ||
               sig == RAYO_SIG_ROPE || sig == RAYO_SIG_ATTENTION;
    const void *c = call->c;
    float *freqs = NULL; /* rope's frequencies go up as its c */
    if (sig == RAYO_SIG_ROPE && !(c = freqs = rope_freqs(call, &bytes[2])))
        return RAYO_E_NOMEM;
    st = rayo_webgpu_js_run(call->op, call->flags, sizes, call->alpha, call->beta, call->a, bytes[0],
                            call->b, bytes[1], c, bytes[2], call->y, bytes[3], y_in);
    free(freqs);
    return st;
}

/* ---- device memory ---------------------------------------------------------- */
static rayo_status webgpu_buffer_alloc(void *state, size_t bytes, void **buf)
{
    webgpu_state *s = state;
    if (bytes > s->limit)
        return RAYO_E_NOMEM;
    uint32_t h = rayo_webgpu_js_buffer_alloc(bytes);
    if (!h)
        return RAYO_E_NOMEM;
    *buf = (void *)(uintptr_t)h;
    return RAYO_OK;
}

static void webgpu_buffer_free(void *state, void *buf)
{
    (void)state;
    rayo_webgpu_js_buffer_free((uint32_t)(uintptr_t)buf);
}

static rayo_status webgpu_buffer_write(void *state, void *buf, size_t offset, const void *src, size_t bytes)
{
    (void)state;
    return (rayo_status)rayo_webgpu_js_buffer_write((uint32_t)(uintptr_t)buf, offset, src, bytes);
}

static rayo_status webgpu_buffer_read(void *state, void *buf, size_t offset, void *dst, size_t bytes)
{
    webgpu_state *s = state;
    if (!rayo_webgpu_js_can_wait()) {
        s->host->set_error(s->host, "webgpu: reading a device buffer waits: use the async API");
        return RAYO_E_UNSUPPORTED;
    }
    return (rayo_status)rayo_webgpu_js_buffer_read((uint32_t)(uintptr_t)buf, offset, dst, bytes);
}

static rayo_status webgpu_batch_begin(void *state, void **batch)
{
    (void)state;
    uint32_t h = rayo_webgpu_js_batch_begin();
    if (!h)
        return RAYO_E_NOMEM;
    *batch = (void *)(uintptr_t)h;
    return RAYO_OK;
}

/* A rayo_call with the device call's sizes, to measure it like a host call. */
static rayo_call host_shape(const rayo_dev_call *d)
{
    static const float present; /* an operand given as a buffer: non-NULL */
    rayo_call c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.op = d->op;
    c.flags = d->flags;
    c.dtypes = d->dtypes;
    c.m = d->m;
    c.n = d->n;
    c.k = d->k;
    c.lda = d->lda;
    c.ldb = d->ldb;
    c.ldc = d->ldc;
    c.ldy = d->ldy;
    c.params = d->params;
    c.a = d->a.buf ? &present : NULL;
    c.b = d->b.buf ? &present : NULL;
    c.c = d->c.buf ? &present : NULL;
    return c;
}

/* rope's frequencies in a buffer of the batch, as the handle of its c */
static void *rope_aux(void *batch, const rayo_call *c)
{
    size_t bytes;
    float *freqs = rope_freqs(c, &bytes);
    uint32_t h = freqs ? rayo_webgpu_js_batch_aux((uint32_t)(uintptr_t)batch, freqs, bytes) : 0;
    free(freqs);
    return (void *)(uintptr_t)h;
}

static rayo_status webgpu_batch_record(void *state, void *batch, const rayo_dev_call *d)
{
    webgpu_state *s = state;
    rayo_call c = host_shape(d);
    int sig = rayo_op_signature(d->op);
    size_t count[4], bytes[4];
    uint32_t sizes[WEBGPU_SIZES];
    if (sig < 0 || rayo_operand_counts(&c, sig, count))
        return RAYO_E_UNSUPPORTED;
    rayo_status st = check_call(s, sig, &c, count, bytes, sizes);
    if (st != RAYO_OK)
        return st;
    rayo_dev_call full; /* the step fields of a 1.0 core's call read as 0 */
    rayo_dev_call_copy(d, &full);
    if (full.step_flags & ~RAYO_STEP_KV_LENGTH ||
        ((full.step_flags & RAYO_STEP_KV_LENGTH) && sig != RAYO_SIG_ATTENTION))
        return RAYO_E_UNSUPPORTED;
    sizes[7 + EXT_KV_GROWS] = sig == RAYO_SIG_ATTENTION && (full.step_flags & RAYO_STEP_KV_LENGTH);
    if (sig == RAYO_SIG_ROPE && !(full.c.buf = rope_aux(batch, &c)))
        return RAYO_E_NOMEM;
    const rayo_dev_operand *ops[4] = {&full.a, &full.b, &full.c, &full.y};
    uint32_t bufs[4], offsets[4], steps[4];
    for (int i = 0; i < 4; i++) {
        if (ops[i]->offset % sizeof(float) || full.step_bytes[i] % sizeof(float) ||
            ops[i]->offset > UINT32_MAX || full.step_bytes[i] > UINT32_MAX)
            return RAYO_E_UNSUPPORTED;
        bufs[i] = (uint32_t)(uintptr_t)ops[i]->buf;
        offsets[i] = (uint32_t)ops[i]->offset;
        steps[i] = (uint32_t)full.step_bytes[i];
    }
    return (rayo_status)rayo_webgpu_js_batch_record((uint32_t)(uintptr_t)batch, d->op, d->flags, sizes,
                                                    d->alpha, d->beta, bufs, offsets, steps);
}

/* Replay: the JS side keeps the recorded calls and encodes them at each
 * submit with the offsets of the step. */
static rayo_status webgpu_batch_set_step(void *state, void *batch, size_t step)
{
    (void)state;
    if (step > UINT32_MAX)
        return RAYO_E_UNSUPPORTED;
    return (rayo_status)rayo_webgpu_js_batch_set_step((uint32_t)(uintptr_t)batch, (uint32_t)step);
}

static rayo_status webgpu_batch_submit(void *state, void *batch)
{
    (void)state;
    return (rayo_status)rayo_webgpu_js_batch_submit((uint32_t)(uintptr_t)batch);
}

static rayo_status webgpu_batch_wait(void *state, void *batch, uint64_t timeout_ns)
{
    webgpu_state *s = state;
    (void)timeout_ns; /* the GPU's answer is awaited whole */
    if (!rayo_webgpu_js_can_wait()) {
        s->host->set_error(s->host, "webgpu: waiting for a batch needs the async API (batch.submit())");
        return RAYO_E_UNSUPPORTED;
    }
    return (rayo_status)rayo_webgpu_js_batch_wait((uint32_t)(uintptr_t)batch);
}

static void webgpu_batch_free(void *state, void *batch)
{
    (void)state;
    rayo_webgpu_js_batch_free((uint32_t)(uintptr_t)batch);
}

static const rayo_memory_api webgpu_memory = {
    .struct_size = sizeof(rayo_memory_api),
    .buffer_alloc = webgpu_buffer_alloc,
    .buffer_free = webgpu_buffer_free,
    .buffer_write = webgpu_buffer_write,
    .buffer_read = webgpu_buffer_read,
    .batch_begin = webgpu_batch_begin,
    .batch_record = webgpu_batch_record,
    .batch_submit = webgpu_batch_submit,
    .batch_wait = webgpu_batch_wait,
    .batch_free = webgpu_batch_free,
    .batch_set_step = webgpu_batch_set_step,
};

/* ---- the op table: the op list, filtered by signature class ------------------
 * gemv, get_rows, convert, rope and attention are registered by their
 * dtype combinations (convert: to f32 only), the other
 * ops with a WGSL entry point by signature (all-f32). */
#define WEBGPU_ENTRY(ENUM) {RAYO_OP_##ENUM, 0, webgpu_kernel},
#define WEBGPU_SIG_BINARY(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_UNARY(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_UNARY_P(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_UNARY_P2(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_AXPY(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_MATMUL(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_GEMV(ENUM)
#define WEBGPU_SIG_TRANSPOSE(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_REDUCE(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_REDUCE2(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_ARGREDUCE(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_ROWS(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_NORM(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_GLU(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_CONVERT(ENUM)
#define WEBGPU_SIG_GET_ROWS(ENUM)
#define WEBGPU_SIG_BIAS_ACT(ENUM) WEBGPU_ENTRY(ENUM)
#define WEBGPU_SIG_ROPE(ENUM)
#define WEBGPU_SIG_ATTENTION(ENUM)

#define WEBGPU_DT(X) RAYO_DTYPE_##X
#define WEBGPU_COMBO_ENTRY(OP, A, B, C, Y) \
    {RAYO_OP_##OP, RAYO_DTYPES(WEBGPU_DT(A), WEBGPU_DT(B), WEBGPU_DT(C), WEBGPU_DT(Y)), webgpu_kernel},
#define WEBGPU_COMBO_GEMV(A, B, C, Y) WEBGPU_COMBO_ENTRY(GEMV, A, B, C, Y)
#define WEBGPU_COMBO_GET_ROWS(A, B, C, Y) WEBGPU_COMBO_ENTRY(GET_ROWS, A, B, C, Y)
#define WEBGPU_COMBO_CONVERT_TO_F32(A, B, C, Y) WEBGPU_COMBO_ENTRY(CONVERT, A, B, C, Y)
#define WEBGPU_COMBO_CONVERT_TO_F16(A, B, C, Y)
#define WEBGPU_COMBO_CONVERT_TO_BF16(A, B, C, Y)
#define WEBGPU_COMBO_CONVERT_TO_Q8_0(A, B, C, Y)
#define WEBGPU_COMBO_CONVERT_TO_Q4_0(A, B, C, Y)
#define WEBGPU_COMBO_CONVERT(A, B, C, Y) WEBGPU_COMBO_CONVERT_TO_##Y(A, B, C, Y)
#define WEBGPU_COMBO_MATMUL(A, B, C, Y)
#define WEBGPU_COMBO_ROPE(A, B, C, Y) WEBGPU_COMBO_ENTRY(ROPE, A, B, C, Y)
/* attention with an f32 or f16 KV cache */
#define WEBGPU_COMBO_ATTENTION(A, B, C, Y) WEBGPU_COMBO_ENTRY(ATTENTION, A, B, C, Y)

static const rayo_op_entry webgpu_ops[] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TOL_REL, TOL_ABS, SCALE, SUMMARY) WEBGPU_SIG_##SIG(ENUM)
#define RAYO_COMBO(OP, A, B, C, Y, TR, TA, RR, RA) WEBGPU_COMBO_##OP(A, B, C, Y)
#include "rayo-ops.h"
#undef RAYO_COMBO
#undef RAYO_OP
};

GPU_PLUGIN_DESCRIPTOR("webgpu", RAYO_ARCH_WASM32, 30, webgpu, webgpu_ops, &webgpu_memory);
