/* SPDX-License-Identifier: MIT */
/* vk-batches.c - the plugin's memory API: device buffers (allocated from the
 * device pool, read and written directly when the memory is host-visible,
 * else through a staging buffer) and batches (one command context each,
 * vk-submit.c, into which vk_record puts the ops).  The top layer: it calls
 * the op recorders and the context functions, and neither calls back. */
#include "vk-internal.h"

#include <string.h>

static rayo_status mem_buffer_alloc(void *state, size_t bytes, void **buf)
{
    vk_state *s = state;
    vk_buf *b = NULL;
    rayo_status st = vk_buf_alloc(s, &s->device_pool, bytes, &b);
    *buf = b;
    return st;
}

static void mem_buffer_free(void *state, void *buf)
{
    vk_state *s = state;
    /* a batch still running may use it: let the queue finish first */
    vk_queue_drain(s);
    vk_buf_free(s, buf);
}

/* Copies between a device buffer and host memory through a staging buffer
 * (to_device: host -> device). */
static rayo_status staged_copy(vk_state *s, vk_buf *dev, size_t offset, void *host,
                               size_t bytes, int to_device)
{
    vk_ctx *cx;
    rayo_status st = vk_ctx_acquire(s, &cx);
    if (st != RAYO_OK)
        return st;
    vk_buf *stage = NULL;
    st = vk_ctx_temp(s, cx, &s->staging_pool, bytes, &stage);
    if (st == RAYO_OK) {
        if (to_device) {
            memcpy(vk_buf_map(stage), host, bytes);
            vk_ctx_copy(s, cx, stage, 0, dev, offset, bytes);
        } else {
            vk_ctx_copy(s, cx, dev, offset, stage, 0, bytes);
        }
        st = vk_ctx_submit(s, cx);
    }
    if (st == RAYO_OK)
        st = vk_ctx_wait(s, cx, UINT64_MAX);
    if (st == RAYO_OK && !to_device)
        memcpy(host, vk_buf_map(stage), bytes);
    vk_ctx_release(s, cx);
    return st;
}

/* Host <-> buffer copy: in place on unified memory once earlier work is done
 * with it, through a staging buffer otherwise. */
static rayo_status buffer_copy(vk_state *s, vk_buf *b, size_t offset, void *host, size_t bytes, int to_device)
{
    if (bytes == 0)
        return RAYO_OK;
    unsigned char *p = vk_buf_map(b);
    if (!p)
        return staged_copy(s, b, offset, host, bytes, to_device);
    rayo_status st = vk_queue_drain(s);
    if (st == RAYO_OK)
        memcpy(to_device ? p + offset : host, to_device ? host : p + offset, bytes);
    return st;
}

static rayo_status mem_buffer_write(void *state, void *buf, size_t offset, const void *src, size_t bytes)
{
    return buffer_copy(state, buf, offset, (void *)(uintptr_t)src, bytes, 1);
}

static rayo_status mem_buffer_read(void *state, void *buf, size_t offset, void *dst, size_t bytes)
{
    return buffer_copy(state, buf, offset, dst, bytes, 0);
}

static rayo_status mem_batch_begin(void *state, void **batch)
{
    vk_ctx *cx = NULL;
    rayo_status st = vk_ctx_acquire(state, &cx);
    if (st == RAYO_OK)
        vk_profile_begin(state, cx);
    *batch = cx;
    return st;
}

static rayo_status mem_batch_record(void *state, void *batch, const rayo_dev_call *call)
{
    vk_ctx *cx = batch;
    if (cx->submitted)
        return RAYO_E_STATE;
    if (cx->error != RAYO_OK)
        return cx->error;
    rayo_status st = vk_record(state, cx, call);
    if (st != RAYO_OK && cx->error == RAYO_OK)
        cx->error = st;
    if (st == RAYO_OK)
        vk_profile_op(state, cx, call);
    return st;
}

static rayo_status mem_batch_submit(void *state, void *batch)
{
    vk_ctx *cx = batch;
    if (cx->submitted)
        return RAYO_E_STATE;
    vk_profile_submitted(state, cx);
    return vk_ctx_submit(state, cx);
}

static rayo_status mem_batch_wait(void *state, void *batch, uint64_t timeout_ns)
{
    rayo_status st = vk_ctx_wait(state, batch, timeout_ns);
    if (st == RAYO_OK)
        vk_profile_collect(state, batch);
    return st;
}

static void mem_batch_free(void *state, void *batch)
{
    vk_ctx_release(state, batch);
}

const rayo_memory_api vk_memory_api = {
    .struct_size = sizeof(rayo_memory_api),
    .buffer_alloc = mem_buffer_alloc,
    .buffer_free = mem_buffer_free,
    .buffer_write = mem_buffer_write,
    .buffer_read = mem_buffer_read,
    .batch_begin = mem_batch_begin,
    .batch_record = mem_batch_record,
    .batch_submit = mem_batch_submit,
    .batch_wait = mem_batch_wait,
    .batch_free = mem_batch_free,
};
