/* SPDX-License-Identifier: MIT */
/* abi-plugin.c - one plugin source, built twice: against the frozen ABI 1.0
 * header (rayo-abi10.so) and, with -DABI_199, against the imagined 1.99
 * header (rayo-abi199.so).  The 1.99 build is what a plugin written for a
 * future minor looks like: it uses every appended field, and only after
 * checking that the other side's struct has it (struct_size, RAYO_CALL_HAS,
 * RAYO_DEV_CALL_HAS).  Both builds implement add and mul on host memory and
 * a memory API (host buffers, batches of add), so that rayo_call,
 * rayo_dev_call, rayo_host, rayo_probe_result, the op entries, the memory
 * API and the descriptor all cross the boundary. */
#ifdef ABI_199
#include "rayo-plugin-1.99.h"
#define PLUGIN_NAME "abi199"
#else
#include "rayo-plugin-1.0.h"
#define PLUGIN_NAME "abi10"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HAS_FIELD(type, ptr, field) \
    (offsetof(type, field) + sizeof(((const type *)0)->field) <= (ptr)->struct_size)

static rayo_status abi_probe(const rayo_host *host, rayo_probe_result *r)
{
    (void)host;
    r->device_count = 1;
    snprintf(r->devices[0].name, sizeof r->devices[0].name, "%s test device", PLUGIN_NAME);
    r->devices[0].type = RAYO_DEVICE_CPU;
    r->devices[0].flags = RAYO_DEVICE_HOST_MEMORY;
#ifdef ABI_199
    if (HAS_FIELD(rayo_probe_result, r, future_note))
        snprintf(r->future_note, sizeof r->future_note, "written by a 1.99 plugin");
#endif
    return RAYO_OK;
}

typedef struct abi_state { const rayo_host *host; } abi_state;

static rayo_status abi_init(const rayo_host *host, uint32_t device, void **state)
{
    (void)device;
    abi_state *st = malloc(sizeof *st);
    if (!st)
        return RAYO_E_NOMEM;
    st->host = host;
#ifdef ABI_199
    if (HAS_FIELD(rayo_host, host, future_note) && host->future_note)
        host->future_note(host, "init of a 1.99 plugin");
#endif
    *state = st;
    return RAYO_OK;
}

static void abi_fini(void *state)
{
    free(state);
}

/* The bias a call asks for: 1.99's field, 0 where the caller's struct
 * predates it (a 1.0 core). */
static float call_bias(const rayo_call *c)
{
#ifdef ABI_199
    if (RAYO_CALL_HAS(c, future_bias))
        return c->future_bias;
#else
    (void)c;
#endif
    return 0.0f;
}

static void add_floats(const float *a, const float *b, float *y, size_t n, float bias)
{
    for (size_t i = 0; i < n; i++)
        y[i] = bias != 0.0f ? a[i] + b[i] + bias : a[i] + b[i];
}

static rayo_status abi_add(void *state, const rayo_call *c)
{
    (void)state;
    add_floats((const float *)c->a, (const float *)c->b, (float *)c->y, c->n, call_bias(c));
    return RAYO_OK;
}

static rayo_status abi_mul(void *state, const rayo_call *c)
{
    (void)state;
    const float *a = (const float *)c->a, *b = (const float *)c->b;
    float *y = (float *)c->y;
    for (size_t i = 0; i < c->n; i++)
        y[i] = a[i] * b[i];
    return RAYO_OK;
}

/* ---- memory API over host memory: a buffer is a malloc'd block; a batch
 * keeps copies of its calls (each a full struct of this header, the part
 * the core's struct_size does not cover zeroed) and runs them at submit. */
typedef struct abi_batch {
    rayo_dev_call *calls;
    size_t count;
    rayo_status status;
} abi_batch;

static rayo_status abi_buffer_alloc(void *state, size_t bytes, void **buf)
{
    (void)state;
    *buf = calloc(1, bytes ? bytes : 1);
    return *buf ? RAYO_OK : RAYO_E_NOMEM;
}

static void abi_buffer_free(void *state, void *buf)
{
    (void)state;
    free(buf);
}

static rayo_status abi_buffer_write(void *state, void *buf, size_t offset, const void *src, size_t bytes)
{
    (void)state;
    memcpy((char *)buf + offset, src, bytes);
    return RAYO_OK;
}

static rayo_status abi_buffer_read(void *state, void *buf, size_t offset, void *dst, size_t bytes)
{
    (void)state;
    memcpy(dst, (const char *)buf + offset, bytes);
    return RAYO_OK;
}

static rayo_status abi_batch_begin(void *state, void **batch)
{
    (void)state;
    *batch = calloc(1, sizeof(abi_batch));
    return *batch ? RAYO_OK : RAYO_E_NOMEM;
}

static rayo_status abi_batch_record(void *state, void *batch, const rayo_dev_call *call)
{
    (void)state;
    abi_batch *b = (abi_batch *)batch;
    if (call->op != RAYO_OP_ADD || call->dtypes != 0)
        return RAYO_E_UNSUPPORTED;
    rayo_dev_call *grown = (rayo_dev_call *)realloc(b->calls, (b->count + 1) * sizeof *grown);
    if (!grown)
        return RAYO_E_NOMEM;
    b->calls = grown;
    rayo_dev_call *copy = &b->calls[b->count++];
    size_t have = call->struct_size < sizeof *copy ? call->struct_size : sizeof *copy;
    memset(copy, 0, sizeof *copy);
    memcpy(copy, call, have);
    return RAYO_OK;
}

static float dev_call_bias(const rayo_dev_call *c)
{
#ifdef ABI_199
    if (RAYO_DEV_CALL_HAS(c, future_bias))
        return c->future_bias;
#else
    (void)c;
#endif
    return 0.0f;
}

static float *operand(const rayo_dev_operand *o)
{
    return (float *)(void *)((char *)o->buf + o->offset);
}

static rayo_status abi_batch_submit(void *state, void *batch)
{
    (void)state;
    abi_batch *b = (abi_batch *)batch;
    for (size_t i = 0; i < b->count; i++) {
        const rayo_dev_call *c = &b->calls[i];
        add_floats(operand(&c->a), operand(&c->b), operand(&c->y), c->n, dev_call_bias(c));
    }
    b->status = RAYO_OK;
    return RAYO_OK;
}

static rayo_status abi_batch_wait(void *state, void *batch, uint64_t timeout_ns)
{
    (void)state;
    (void)timeout_ns;
    return ((abi_batch *)batch)->status;
}

static void abi_batch_free(void *state, void *batch)
{
    (void)state;
    abi_batch *b = (abi_batch *)batch;
    free(b->calls);
    free(b);
}

#ifdef ABI_199
static rayo_status abi_buffer_fill(void *state, void *buf, size_t offset, size_t bytes, int value)
{
    (void)state;
    memset((char *)buf + offset, value, bytes);
    return RAYO_OK;
}
#endif

static const rayo_memory_api abi_memory = {
    sizeof(rayo_memory_api), abi_buffer_alloc, abi_buffer_free, abi_buffer_write, abi_buffer_read,
    abi_batch_begin, abi_batch_record, abi_batch_submit, abi_batch_wait, abi_batch_free,
#ifdef ABI_199
    NULL, /* batch_set_step (1.1): the core records the batch again for each submit */
    abi_buffer_fill,
#endif
};

/* 1.99's entries are 24 bytes: a core that stepped by 16 would read
 * future_cost as the op and dtypes of the next entry and lose mul.  The
 * 1.99 build also lists an op id and a dtype id no core knows today. */
#ifdef ABI_199
#define ENTRY(op, dtypes, fn) {op, dtypes, fn, 0xfeedfacecafef00dull}
#else
#define ENTRY(op, dtypes, fn) {op, dtypes, fn}
#endif
static const rayo_op_entry abi_ops[] = {
    ENTRY(RAYO_OP_ADD, 0, abi_add),
    ENTRY(RAYO_OP_MUL, 0, abi_mul),
#ifdef ABI_199
    ENTRY(250, 0, abi_add),
    ENTRY(RAYO_OP_ADD, RAYO_DTYPES(31, 31, 0, 31), abi_add),
#endif
};

RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
    RAYO_PLUGIN_MAGIC, RAYO_PLUGIN_ABI_MAJOR, RAYO_PLUGIN_ABI_MINOR, sizeof(rayo_plugin_descriptor),
    RAYO_ARCH_ANY, PLUGIN_NAME, "1.0", 0, 1, 0,
    abi_probe, abi_init, abi_fini,
    abi_ops, sizeof abi_ops / sizeof abi_ops[0], &abi_memory,
    sizeof(rayo_op_entry), 0,
#ifdef ABI_199
    NULL, 0x199, "https://example.invalid/abi199", /* release_constant (1.2): none */
#endif
};
