/* cuda-memory.c - device buffers (cuMemAlloc) and batches (a stream per
 * batch) of the cuda backend. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cuda_buffer {
    CUdeviceptr ptr;
    size_t bytes;
} cuda_buffer;

enum batch_state { BATCH_RECORDING, BATCH_SUBMITTED };

typedef struct cuda_batch {
    cuda_op *ops;
    size_t count, cap;
    enum batch_state state;
    rayo_status status;   /* first error while queueing */
    CUstream stream;
    CUevent done;
    CUdeviceptr scratch;
    size_t scratch_bytes;
} cuda_batch;

/* ---- buffers ------------------------------------------------------------------ */
static rayo_status buffer_alloc(void *state, size_t bytes, void **out)
{
    cuda_state *st = state;
    rayo_status s = cuda_enter(st);
    if (s != RAYO_OK)
        return s;
    cuda_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return RAYO_E_NOMEM;
    CUresult r = st->drv->cuMemAlloc(&b->ptr, bytes ? bytes : 4);
    if (r != CUDA_SUCCESS) {
        free(b);
        return cuda_fail(st, r, "cuMemAlloc");
    }
    b->bytes = bytes;
    *out = b;
    return RAYO_OK;
}

static void buffer_free(void *state, void *buf)
{
    cuda_state *st = state;
    cuda_buffer *b = buf;
    if (!b)
        return;
    if (st->drv->cuCtxSetCurrent(st->ctx) == CUDA_SUCCESS)
        st->drv->cuMemFree(b->ptr);
    free(b);
}

/* Plain (synchronous, legacy default stream) copies: they wait for the work
 * of batches already queued, whose streams are blocking. */
static rayo_status buffer_write(void *state, void *buf, size_t offset, const void *src, size_t bytes)
{
    cuda_state *st = state;
    cuda_buffer *b = buf;
    rayo_status s = cuda_enter(st);
    if (s != RAYO_OK || bytes == 0)
        return s;
    CUresult r = st->drv->cuMemcpyHtoD(b->ptr + offset, src, bytes);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, "buffer write (cuMemcpyHtoD)");
}

static rayo_status buffer_read(void *state, void *buf, size_t offset, void *dst, size_t bytes)
{
    cuda_state *st = state;
    cuda_buffer *b = buf;
    rayo_status s = cuda_enter(st);
    if (s != RAYO_OK || bytes == 0)
        return s;
    CUresult r = st->drv->cuMemcpyDtoH(dst, b->ptr + offset, bytes);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, "buffer read (cuMemcpyDtoH)");
}

/* ---- batches -------------------------------------------------------------------- */
static rayo_status batch_begin(void *state, void **out)
{
    (void)state;
    cuda_batch *b = calloc(1, sizeof *b);
    if (!b)
        return RAYO_E_NOMEM;
    b->state = BATCH_RECORDING;
    *out = b;
    return RAYO_OK;
}

static CUdeviceptr operand(const rayo_dev_operand *o)
{
    return o->buf ? ((cuda_buffer *)o->buf)->ptr + o->offset : 0;
}

static rayo_status batch_record(void *state, void *batch, const rayo_dev_call *call)
{
    cuda_state *st = state;
    cuda_batch *b = batch;
    if (b->state != BATCH_RECORDING)
        return RAYO_E_STATE;
    if ((call->lda | call->ldb | call->ldc | call->ldy) && !cuda_strides_supported(call->op, call->dtypes))
        return RAYO_E_UNSUPPORTED; /* row strides: only some ops on cuda yet */
    rayo_status s = cuda_op_supported(call->op, call->flags);
    if (s != RAYO_OK)
        return s;
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        cuda_op *ops = realloc(b->ops, cap * sizeof *ops);
        if (!ops)
            return RAYO_E_NOMEM;
        b->ops = ops;
        b->cap = cap;
    }
    cuda_op *op = &b->ops[b->count];
    *op = (cuda_op){call->op, call->flags, call->m, call->n, call->k, call->alpha, call->beta,
                    operand(&call->a), operand(&call->b), operand(&call->c), operand(&call->y), 0,
                    call->dtypes, call->lda, call->ldb, call->ldy, call->params,
                    RAYO_DEV_CALL_HAS(call, precision) ? call->precision : 0, 0};
    if ((s = cuda_typed_matmul_check(st, op)) != RAYO_OK)
        return s; /* not recorded: the core passes the call on */
    size_t need = cuda_scratch_bytes(st, op);
    if (need > b->scratch_bytes)
        b->scratch_bytes = need;
    b->count++;
    return RAYO_OK;
}

/* Ops run one after another on the batch's stream, so they share one scratch. */
static rayo_status batch_submit(void *state, void *batch)
{
    cuda_state *st = state;
    cuda_batch *b = batch;
    if (b->state != BATCH_RECORDING)
        return RAYO_E_STATE;
    rayo_status s = cuda_enter(st);
    if (s != RAYO_OK)
        return s;
    const cuda_driver *drv = st->drv;
    CUresult r = drv->cuStreamCreate(&b->stream, CU_STREAM_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventCreate(&b->done, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS && b->scratch_bytes)
        r = drv->cuMemAlloc(&b->scratch, b->scratch_bytes);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "batch submit");
    for (size_t i = 0; i < b->count && s == RAYO_OK; i++) {
        b->ops[i].scratch = b->scratch;
        b->ops[i].scratch_size = b->scratch_bytes;
        s = cuda_launch_op(st, b->stream, &b->ops[i]);
    }
    r = drv->cuEventRecord(b->done, b->stream);
    if (r != CUDA_SUCCESS && s == RAYO_OK)
        s = cuda_fail(st, r, "cuEventRecord");
    b->status = s;
    b->state = BATCH_SUBMITTED;
    return s;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static rayo_status batch_wait(void *state, void *batch, uint64_t timeout_ns)
{
    cuda_state *st = state;
    cuda_batch *b = batch;
    if (b->state != BATCH_SUBMITTED)
        return RAYO_E_STATE;
    if (b->status != RAYO_OK)
        return b->status;
    rayo_status s = cuda_enter(st);
    if (s != RAYO_OK)
        return s;
    CUresult r;
    if (timeout_ns == UINT64_MAX) {
        r = st->drv->cuEventSynchronize(b->done);
    } else {
        uint64_t deadline = now_ns() + timeout_ns;
        while ((r = st->drv->cuEventQuery(b->done)) == CUDA_ERROR_NOT_READY) {
            if (now_ns() >= deadline)
                return RAYO_E_TIMEOUT;
            struct timespec pause = {0, 20000};
            nanosleep(&pause, NULL);
        }
    }
    if (r != CUDA_SUCCESS)
        b->status = cuda_fail(st, r, "batch");
    return b->status;
}

static void batch_free(void *state, void *batch)
{
    cuda_state *st = state;
    cuda_batch *b = batch;
    if (!b)
        return;
    if (b->stream && st->drv->cuCtxSetCurrent(st->ctx) == CUDA_SUCCESS) {
        st->drv->cuStreamSynchronize(b->stream);
        if (b->done)
            st->drv->cuEventDestroy(b->done);
        if (b->scratch)
            st->drv->cuMemFree(b->scratch);
        st->drv->cuStreamDestroy(b->stream);
    }
    free(b->ops);
    free(b);
}

const rayo_memory_api cuda_memory_api = {
    .struct_size = sizeof(rayo_memory_api),
    .buffer_alloc = buffer_alloc,
    .buffer_free = buffer_free,
    .buffer_write = buffer_write,
    .buffer_read = buffer_read,
    .batch_begin = batch_begin,
    .batch_record = batch_record,
    .batch_submit = batch_submit,
    .batch_wait = batch_wait,
    .batch_free = batch_free,
};
