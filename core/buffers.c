/* SPDX-License-Identifier: MIT */
/* buffers.c - the public buffer and batch API (rayo_buffer_*, rayo_batch_*) for every backend.
 *
 * The public buffer/batch API forwards to the backend's memory API.  CPU
 * plugins have none: for them the core provides one over host memory, so a
 * CPU plugin author writes kernels only.  A host batch runs its ops in order
 * at submit, each on the batch's backend first and through the op's
 * dispatch chain if that backend cannot.
 *
 * Lifetimes (rayo.h states them for users): a buffer is counted; its
 * creator holds one reference, and every batch that records an op on it
 * holds one until the batch is destroyed.  The context lists what is alive:
 * rayo_close waits for submitted batches and frees every device resource,
 * and leaves each handle detached (ctx NULL) so that a later destroy frees
 * only the handle and any other call says RAYO_E_STATE. */
#include "internal.h"
#include <stdlib.h>
#include <string.h>

struct rayo_buffer {
    rayo_context *ctx;           /* NULL once rayo_close detached it */
    rayo_backend *be;
    void *handle;
    size_t size;
    atomic_uint refs;
    atomic_bool constant;        /* rayo_buffer_set_constant: no more writes */
    rayo_buffer *prev, *next;    /* the context's list */
};

enum batch_state { BATCH_RECORDING, BATCH_SUBMITTED, BATCH_DONE };

/* A recorded call, kept for the checks at a new step and for recording
 * the batch again into a plugin that cannot replay it. */
typedef struct batch_entry {
    rayo_batch_call call;        /* full size; params: the batch's copy */
    rayo_attention_params *at_step; /* such plugins: attention's parameters at the step */
} batch_entry;

struct rayo_batch {
    rayo_context *ctx;           /* NULL once rayo_close detached it */
    rayo_backend *be;
    void *handle;                /* the plugin's batch; NULL when recording it again failed */
    enum batch_state state;
    rayo_status result;
    rayo_buffer **uses;          /* the distinct buffers its ops use: referenced */
    size_t use_count, use_cap;
    void **params;               /* copies of the recorded ops' parameter structs */
    size_t params_count, params_cap;
    batch_entry *entries;        /* every recorded call, in order */
    size_t entry_count, entry_cap;
    size_t step;                 /* rayo_batch_set_step's */
    bool replays;                /* the memory API replays it (batch_set_step) */
    bool stale;                  /* else: the plugin's batch must be recorded again */
    rayo_batch *prev, *next;     /* the context's list */
};

/* ---- the core's host-memory implementation ---- */
typedef struct host_batch {
    rayo_backend *be;
    rayo_dev_call *calls;        /* at step 0, with their step fields */
    size_t count, cap;
    size_t step;
    rayo_status status;
} host_batch;

static rayo_status host_buffer_alloc(void *state, size_t bytes, void **buf)
{
    (void)state;
    *buf = rayo__alloc_aligned(64, bytes ? bytes : 1);
    return *buf ? RAYO_OK : rayo__fail(RAYO_E_NOMEM, "cannot allocate a host buffer of %zu bytes", bytes);
}

static void host_buffer_free(void *state, void *buf)
{
    (void)state;
    rayo__free_aligned(buf);
}

static rayo_status host_buffer_write(void *state, void *buf, size_t offset, const void *src, size_t bytes)
{
    (void)state;
    memcpy((char *)buf + offset, src, bytes);
    return RAYO_OK;
}

static rayo_status host_buffer_read(void *state, void *buf, size_t offset, void *dst, size_t bytes)
{
    (void)state;
    memcpy(dst, (char *)buf + offset, bytes);
    return RAYO_OK;
}

static rayo_status host_batch_begin(void *state, void **batch)
{
    host_batch *b = calloc(1, sizeof *b);
    if (!b)
        return rayo__fail(RAYO_E_NOMEM, "cannot allocate a batch");
    b->be = state;
    *batch = b;
    return RAYO_OK;
}

static rayo_status host_batch_record(void *state, void *batch, const rayo_dev_call *call)
{
    (void)state;
    host_batch *b = batch;
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        rayo_dev_call *c = realloc(b->calls, cap * sizeof *c);
        if (!c)
            return rayo__fail(RAYO_E_NOMEM, "cannot grow the batch");
        b->calls = c;
        b->cap = cap;
    }
    b->calls[b->count++] = *call;
    return RAYO_OK;
}

static void *operand_ptr(const rayo_dev_operand *o)
{
    return o->buf ? (char *)o->buf + o->offset : NULL;
}

/* One recorded op on host pointers at `step`: the batch's backend, else its chain. */
static rayo_status host_run_one(rayo_backend *be, const rayo_dev_call *recorded, size_t step)
{
    rayo_dev_call at;
    rayo_attention_params attn;
    rayo_dev_call_at_step(recorded, step, &at, &attn);
    const rayo_dev_call *d = &at;
    size_t index = 0;
    bool arg = rayo_op_by_id(d->op)->sig == RAYO_SIG_ARGREDUCE;
    rayo_call c = {sizeof c, d->op, d->flags, d->dtypes, d->m, d->n, d->k, d->alpha, d->beta,
                   operand_ptr(&d->a), operand_ptr(&d->b), operand_ptr(&d->c),
                   arg ? (void *)&index : operand_ptr(&d->y), d->lda, d->ldb, d->ldc, d->ldy,
                   d->precision, 0, d->params, d->constant_operands, 0};
    rayo_status st;
    const rayo_op_info *op = rayo_op_by_id(d->op);
    if (call_is_empty(&c, op->sig)) {
        call_write_empty(&c);
        st = RAYO_OK;
    } else {
        st = RAYO_E_UNSUPPORTED;
        rayo_kernel_fn fn = backend_kernel(be, d->op, d->dtypes);
        if (fn && !atomic_load(&be->lost))
            st = fn(be->state, &c);
        if (st != RAYO_OK)
            st = dispatch_call(be->ctx, &c, op, op->sig);
    }
    if (st == RAYO_OK && arg) {
        uint64_t v = index; /* batches store argmax as uint64 on every platform */
        memcpy(operand_ptr(&d->y), &v, sizeof v);
    }
    return st;
}

static rayo_status host_batch_submit(void *state, void *batch)
{
    (void)state;
    host_batch *b = batch;
    b->status = RAYO_OK;
    for (size_t i = 0; i < b->count && b->status == RAYO_OK; i++)
        b->status = host_run_one(b->be, &b->calls[i], b->step);
    return RAYO_OK; /* the batch's status comes from wait */
}

static rayo_status host_batch_set_step(void *state, void *batch, size_t step)
{
    (void)state;
    ((host_batch *)batch)->step = step;
    return RAYO_OK;
}

static rayo_status host_batch_wait(void *state, void *batch, uint64_t timeout_ns)
{
    (void)state;
    (void)timeout_ns;
    return ((host_batch *)batch)->status;
}

static void host_batch_free(void *state, void *batch)
{
    (void)state;
    host_batch *b = batch;
    if (b)
        free(b->calls);
    free(b);
}

const rayo_memory_api rayo_host_memory = {
    sizeof(rayo_memory_api), host_buffer_alloc, host_buffer_free, host_buffer_write, host_buffer_read,
    host_batch_begin, host_batch_record, host_batch_submit, host_batch_wait, host_batch_free,
    host_batch_set_step,
};

/* ---- the public API ---- */
static const rayo_memory_api *memory_of(rayo_backend *be, void **state)
{
    if (be->desc->memory) {
        *state = be->state;
        return be->desc->memory;
    }
    *state = be;
    return &rayo_host_memory;
}

/* Whether the backend's memory API replays a batch itself (1.1). */
static bool memory_replays(const rayo_backend *be, const rayo_memory_api *m)
{
    return m == &rayo_host_memory ||
           (be->abi_minor >= 1 && m->struct_size >= sizeof *m && m->batch_set_step);
}

/* Which backend a NULL name picks: a real GPU, else a CPU backend, else a
 * software device (lavapipe is a GPU API over the CPU, slower than the CPU
 * backends); the default order decides among equals. */
static int pick_class(const rayo_backend *be)
{
    return be->kind == KIND_GPU ? 0 : be->kind == KIND_CPU ? 1 : 2;
}

static rayo_status pick_backend(rayo_context *ctx, const char *name, rayo_backend **out)
{
    if (name) {
        rayo_backend *be = backend_by_name(ctx, name);
        if (!be || !backend_usable(be))
            return rayo__fail(RAYO_E_NOT_FOUND, "backend \"%s\" is not loaded", name);
        *out = be;
        return RAYO_OK;
    }
    rayo_backend *best = NULL;
    for (size_t i = 0; i < ctx->backend_count; i++) {
        rayo_backend *be = ctx->backends[i];
        if (!backend_usable(be)) /* a deferred GPU starts: its kind decides */
            continue;
        bool better = !best || pick_class(be) < pick_class(best) ||
                      (pick_class(be) == pick_class(best) && be->rank < best->rank);
        if (better)
            best = be;
    }
    if (!best)
        return rayo__fail(RAYO_E_NO_BACKEND, "no backend is loaded");
    *out = best;
    return RAYO_OK;
}

/* ---- the context's lists of live handles ---- */
static void link_buffer(rayo_context *ctx, rayo_buffer *b)
{
    pthread_mutex_lock(&ctx->objects_lock);
    b->next = ctx->buffers;
    if (b->next)
        b->next->prev = b;
    ctx->buffers = b;
    pthread_mutex_unlock(&ctx->objects_lock);
}

static void unlink_buffer(rayo_context *ctx, rayo_buffer *b)
{
    pthread_mutex_lock(&ctx->objects_lock);
    if (b->prev)
        b->prev->next = b->next;
    else
        ctx->buffers = b->next;
    if (b->next)
        b->next->prev = b->prev;
    pthread_mutex_unlock(&ctx->objects_lock);
}

static void link_batch(rayo_context *ctx, rayo_batch *b)
{
    pthread_mutex_lock(&ctx->objects_lock);
    b->next = ctx->batches;
    if (b->next)
        b->next->prev = b;
    ctx->batches = b;
    pthread_mutex_unlock(&ctx->objects_lock);
}

static void unlink_batch(rayo_context *ctx, rayo_batch *b)
{
    pthread_mutex_lock(&ctx->objects_lock);
    if (b->prev)
        b->prev->next = b->next;
    else
        ctx->batches = b->next;
    if (b->next)
        b->next->prev = b->prev;
    pthread_mutex_unlock(&ctx->objects_lock);
}

static void buffer_release(rayo_buffer *buf)
{
    if (atomic_fetch_sub(&buf->refs, 1) != 1)
        return;
    if (buf->ctx) {
        unlink_buffer(buf->ctx, buf);
        void *state;
        const rayo_memory_api *mem = memory_of(buf->be, &state);
        if (atomic_load(&buf->constant) && mem == &rayo_host_memory)
            backends_release_constant(buf->ctx, buf->handle, buf->size);
        mem->buffer_free(state, buf->handle);
    }
    free(buf);
}

RAYO_API rayo_status rayo_buffer_create(rayo_context *ctx, const char *backend, size_t bytes, rayo_buffer **buf)
{
    rayo__clear_error();
    if (!ctx || !buf)
        return rayo__fail(RAYO_E_INVALID, "context or result pointer is NULL");
    *buf = NULL;
    if (bytes > (size_t)PTRDIFF_MAX)
        return rayo__fail(RAYO_E_OVERFLOW, "buffer of %zu bytes is larger than any address space allows", bytes);
    rayo_backend *be;
    rayo_status st = pick_backend(ctx, backend, &be);
    if (st != RAYO_OK)
        return st;
    rayo_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return rayo__fail(RAYO_E_NOMEM, "out of memory");
    void *state;
    const rayo_memory_api *mem = memory_of(be, &state);
    st = mem->buffer_alloc(state, bytes, &b->handle);
    if (st != RAYO_OK) {
        free(b);
        return st;
    }
    b->ctx = ctx;
    b->be = be;
    b->size = bytes;
    atomic_init(&b->refs, 1);
    atomic_init(&b->constant, false);
    link_buffer(ctx, b);
    *buf = b;
    return RAYO_OK;
}

/* The memory lives on while a batch that uses the buffer exists. */
RAYO_API void rayo_buffer_destroy(rayo_buffer *buf)
{
    if (buf)
        buffer_release(buf);
}

static rayo_status check_range(const rayo_buffer *buf, size_t offset, const void *p, size_t bytes)
{
    if (!buf || (!p && bytes))
        return rayo__fail(RAYO_E_INVALID, "buffer or data pointer is NULL");
    if (!buf->ctx)
        return rayo__fail(RAYO_E_STATE, "the buffer's context was closed");
    if (offset > buf->size || bytes > buf->size - offset)
        return rayo__fail(RAYO_E_INVALID, "range [%zu, +%zu) is outside the buffer of %zu bytes",
                         offset, bytes, buf->size);
    return RAYO_OK;
}

RAYO_API rayo_status rayo_buffer_write(rayo_buffer *buf, size_t offset, const void *src, size_t bytes)
{
    rayo__clear_error();
    rayo_status st = check_range(buf, offset, src, bytes);
    if (st != RAYO_OK)
        return st;
    if (atomic_load(&buf->constant))
        return rayo__fail(RAYO_E_STATE, "the buffer is constant (rayo_buffer_set_constant): it takes no writes");
    if (!bytes)
        return st;
    void *state;
    return memory_of(buf->be, &state)->buffer_write(state, buf->handle, offset, src, bytes);
}

RAYO_API rayo_status rayo_buffer_read(rayo_buffer *buf, size_t offset, void *dst, size_t bytes)
{
    rayo__clear_error();
    rayo_status st = check_range(buf, offset, dst, bytes);
    if (st != RAYO_OK || !bytes)
        return st;
    void *state;
    return memory_of(buf->be, &state)->buffer_read(state, buf->handle, offset, dst, bytes);
}

RAYO_API size_t rayo_buffer_size(const rayo_buffer *buf)
{
    return buf ? buf->size : 0;
}

RAYO_API const char *rayo_buffer_backend(const rayo_buffer *buf)
{
    return buf && buf->ctx ? buf->be->name : NULL;
}

/* Whether a batch of the context holds a recorded op that writes buf. */
static bool batch_writes(rayo_context *ctx, const rayo_buffer *buf)
{
    bool writes = false;
    pthread_mutex_lock(&ctx->objects_lock);
    for (const rayo_batch *b = ctx->batches; b && !writes; b = b->next)
        for (size_t i = 0; i < b->entry_count && !writes; i++)
            writes = b->entries[i].call.y.buf == buf;
    pthread_mutex_unlock(&ctx->objects_lock);
    return writes;
}

RAYO_API rayo_status rayo_buffer_set_constant(rayo_buffer *buf)
{
    rayo__clear_error();
    if (!buf)
        return rayo__fail(RAYO_E_INVALID, "buffer is NULL");
    if (!buf->ctx)
        return rayo__fail(RAYO_E_STATE, "the buffer's context was closed");
    if (atomic_load(&buf->constant))
        return RAYO_OK;
    if (batch_writes(buf->ctx, buf))
        return rayo__fail(RAYO_E_STATE, "a batch has a recorded op that writes the buffer: destroy it first");
    atomic_store(&buf->constant, true);
    return RAYO_OK;
}

RAYO_API rayo_status rayo_batch_create(rayo_context *ctx, const char *backend, rayo_batch **batch)
{
    rayo__clear_error();
    if (!ctx || !batch)
        return rayo__fail(RAYO_E_INVALID, "context or result pointer is NULL");
    *batch = NULL;
    rayo_backend *be;
    rayo_status st = pick_backend(ctx, backend, &be);
    if (st != RAYO_OK)
        return st;
    rayo_batch *b = calloc(1, sizeof *b);
    if (!b)
        return rayo__fail(RAYO_E_NOMEM, "out of memory");
    void *state;
    st = memory_of(be, &state)->batch_begin(state, &b->handle);
    if (st != RAYO_OK) {
        free(b);
        return st;
    }
    b->ctx = ctx;
    b->be = be;
    b->replays = memory_replays(be, memory_of(be, &state));
    link_batch(ctx, b);
    *batch = b;
    return RAYO_OK;
}

/* The batch holds a reference to each distinct buffer it uses. */
static rayo_status batch_use(rayo_batch *batch, rayo_buffer *buf)
{
    if (!buf)
        return RAYO_OK;
    for (size_t i = 0; i < batch->use_count; i++)
        if (batch->uses[i] == buf)
            return RAYO_OK;
    if (batch->use_count == batch->use_cap) {
        size_t cap = batch->use_cap ? 2 * batch->use_cap : 8;
        rayo_buffer **uses = realloc(batch->uses, cap * sizeof *uses);
        if (!uses)
            return rayo__fail(RAYO_E_NOMEM, "out of memory");
        batch->uses = uses;
        batch->use_cap = cap;
    }
    atomic_fetch_add(&buf->refs, 1);
    batch->uses[batch->use_count++] = buf;
    return RAYO_OK;
}

static rayo_status batch_live(const rayo_batch *batch)
{
    if (!batch)
        return rayo__fail(RAYO_E_INVALID, "batch is NULL");
    if (!batch->ctx)
        return rayo__fail(RAYO_E_STATE, "the batch's context was closed");
    return RAYO_OK;
}

/* One operand: on the batch's backend, aligned, and holding `bytes`. */
static rayo_status convert_operand(const rayo_batch *batch, const rayo_operand *o, size_t bytes,
                                   size_t align, const char *what, rayo_dev_operand *out)
{
    out->buf = NULL;
    out->offset = 0;
    if (!bytes)
        return RAYO_OK;
    if (!o->buf)
        return rayo__fail(RAYO_E_INVALID, "%s buffer is NULL", what);
    if (o->buf->be != batch->be)
        return rayo__fail(RAYO_E_INVALID, "%s buffer belongs to backend %s, the batch to %s", what,
                         o->buf->be->name, batch->be->name);
    if (o->offset % align)
        return rayo__fail(RAYO_E_INVALID, "%s offset %zu is not a multiple of %zu", what, o->offset, align);
    rayo_status st = check_range(o->buf, o->offset, o->buf, bytes);
    if (st != RAYO_OK) { /* rayo_last_error() is the buffer rayo__fail writes: copy it first */
        char why[256];
        snprintf(why, sizeof why, "%s", rayo_last_error());
        return rayo__fail(st, "%s: %s", what, why);
    }
    out->buf = o->buf->handle;
    out->offset = o->offset;
    return RAYO_OK;
}

/* A host-pointer twin of the batch call, so the op's checks can be reused. */
static rayo_call shape_of(const rayo_batch_call *c)
{
    static const float dummy[1];
    rayo_call s = {sizeof s, c->op, c->flags, c->dtypes, c->m, c->n, c->k, c->alpha, c->beta,
                   c->a.buf ? dummy : NULL, c->b.buf ? dummy : NULL, c->c.buf ? dummy : NULL,
                   c->y.buf ? (void *)dummy : NULL, c->lda, c->ldb, c->ldc, c->ldy, c->precision, 0,
                   c->params, 0, 0};
    return s;
}

/* A copy of the op's parameter struct that lives as long as the batch
 * (the caller's may not): the fields this library knows, its own size. */
static rayo_status keep_params(rayo_batch *batch, const rayo_op_info *op, const void *params, const void **out)
{
    *out = NULL;
    if (!params)
        return RAYO_OK;
    size_t size = op->sig == RAYO_SIG_ROPE ? sizeof(rayo_rope_params) : sizeof(rayo_attention_params);
    if (batch->params_count == batch->params_cap) {
        size_t cap = batch->params_cap ? 2 * batch->params_cap : 8;
        void **grown = realloc(batch->params, cap * sizeof *grown);
        if (!grown)
            return rayo__fail(RAYO_E_NOMEM, "cannot grow the batch");
        batch->params = grown;
        batch->params_cap = cap;
    }
    void *copy = malloc(size);
    if (!copy)
        return rayo__fail(RAYO_E_NOMEM, "cannot copy the op's parameters");
    memcpy(copy, params, size); /* validated: the caller's struct holds at least this */
    *(size_t *)copy = size;     /* struct_size, the first field of both */
    batch->params[batch->params_count++] = copy;
    *out = copy;
    return RAYO_OK;
}

/* The 1.0 size of rayo_batch_call: the smallest this library takes. */
#define BATCH_CALL_V1_0_SIZE (offsetof(rayo_batch_call, params) + sizeof(const void *))

/* A batch call as a full-size one: an older 1.x header's call gets zeros
 * for what it lacks; a newer one's unknown fields must be 0. */
static rayo_status full_batch_call(const rayo_batch_call *call, rayo_batch_call *full)
{
    if (call->struct_size < BATCH_CALL_V1_0_SIZE)
        return rayo__fail(RAYO_E_INVALID, "batch call: struct_size is %u: set it to sizeof(rayo_batch_call)",
                         (unsigned)call->struct_size);
    for (size_t i = sizeof *full; i < call->struct_size; i++)
        if (((const unsigned char *)call)[i])
            return rayo__fail(RAYO_E_UNSUPPORTED, "batch call: it sets fields of a newer rayo than this one");
    memset(full, 0, sizeof *full);
    memcpy(full, call, call->struct_size < sizeof *full ? call->struct_size : sizeof *full);
    full->struct_size = sizeof *full;
    return RAYO_OK;
}

static size_t operand_align(rayo_dtype dt)
{
    size_t align = rayo_dtype_block_bytes(dt);
    return align > 4 || align == 0 ? 1 : align;
}

/* The call on the plugin's buffer handles, checked: shape, operands on the
 * batch's backend, aligned and inside their buffers.  params is left NULL. */
static rayo_status convert_call(const rayo_batch *batch, const rayo_batch_call *call, rayo_dev_call *d)
{
    rayo_call shape = shape_of(call);
    const rayo_op_info *op;
    rayo_status st = call_validate_shape(&shape, &op);
    if (st != RAYO_OK)
        return st;
    size_t counts[4];
    call_operand_counts(&shape, counts);
    bool arg = op->sig == RAYO_SIG_ARGREDUCE;
    *d = (rayo_dev_call){sizeof *d, call->op, call->flags, call->dtypes, call->m, call->n, call->k, call->alpha,
                         call->beta, {0}, {0}, {0}, {0}, call->lda, call->ldb, call->ldc, call->ldy,
                         call->precision, 0, NULL, {0}, 0, 0, 0, 0};
    const rayo_operand *src[4] = {&call->a, &call->b, &call->c, &call->y};
    rayo_dev_operand *dst[4] = {&d->a, &d->b, &d->c, &d->y};
    static const char *const what[4] = {"first input", "second input", "third input", "output"};
    for (int i = 0; i < 4 && st == RAYO_OK; i++) {
        rayo_dtype dt = RAYO_DTYPE_OF(call->dtypes, i);
        size_t bytes = sizeof(uint64_t);
        if (!(i == 3 && arg) && !rayo_dtype_row_bytes(dt, counts[i], &bytes))
            return rayo__fail(RAYO_E_INVALID, "%s: %s is not whole %s blocks", op->name, what[i], rayo_dtype_name(dt));
        st = convert_operand(batch, src[i], bytes, operand_align(dt), what[i], dst[i]);
        if (st == RAYO_OK && i < 3 && dst[i]->buf && atomic_load(&src[i]->buf->constant))
            d->constant_operands |= RAYO_CONSTANT_A << i;
    }
    if (st == RAYO_OK && d->y.buf && atomic_load(&call->y.buf->constant))
        return rayo__fail(RAYO_E_STATE, "%s: the output's buffer is constant (rayo_buffer_set_constant)", op->name);
    return st;
}

/* The step fields make sense: only used operands move, by whole aligned
 * units; only an attention call's length grows. */
static rayo_status check_step_fields(const rayo_batch_call *c)
{
    const rayo_operand *o[4] = {&c->a, &c->b, &c->c, &c->y};
    for (int i = 0; i < 4; i++) {
        size_t align = operand_align(RAYO_DTYPE_OF(c->dtypes, i));
        if (c->step_bytes[i] && (!o[i]->buf || c->step_bytes[i] % align))
            return rayo__fail(RAYO_E_INVALID, "step_bytes[%d] is %zu: %s", i, c->step_bytes[i],
                             o[i]->buf ? "not a multiple of the operand's alignment" : "the operand is unused");
    }
    if (c->step_flags & ~RAYO_STEP_KV_LENGTH)
        return rayo__fail(RAYO_E_INVALID, "step_flags 0x%x: unknown flags", (unsigned)c->step_flags);
    if ((c->step_flags & RAYO_STEP_KV_LENGTH) && (c->op != RAYO_OP_ATTENTION || !c->params))
        return rayo__fail(RAYO_E_INVALID, "RAYO_STEP_KV_LENGTH is for an attention call with its parameters");
    return RAYO_OK;
}

static bool moves_with_step(const rayo_batch_call *c)
{
    return (c->step_bytes[0] | c->step_bytes[1] | c->step_bytes[2] | c->step_bytes[3] | c->step_flags) != 0;
}

/* The call at `step`: operand offsets advanced; with RAYO_STEP_KV_LENGTH an
 * attention's k and n_kv grown (its parameters then in *attn).  c->params
 * is the batch's full-size copy. */
static rayo_status batch_call_at(const rayo_batch_call *c, size_t step, rayo_batch_call *out,
                                 rayo_attention_params *attn)
{
    *out = *c;
    rayo_operand *o[4] = {&out->a, &out->b, &out->c, &out->y};
    for (int i = 0; i < 4; i++) {
        size_t by = c->step_bytes[i];
        if (by && step > (SIZE_MAX - o[i]->offset) / by)
            return rayo__fail(RAYO_E_OVERFLOW, "step %zu moves operand %d past any buffer", step, i);
        o[i]->offset += step * by;
    }
    if (c->step_flags & RAYO_STEP_KV_LENGTH) {
        *attn = *(const rayo_attention_params *)c->params;
        if (attn->n_kv > SIZE_MAX - step)
            return rayo__fail(RAYO_E_OVERFLOW, "step %zu: the attention's length overflows", step);
        attn->n_kv += step;
        out->k += step;
        out->params = attn;
    }
    return RAYO_OK;
}

/* The call checked as it would run at `step`. */
static rayo_status check_at_step(const rayo_batch *batch, const rayo_batch_call *c, size_t step)
{
    rayo_batch_call at;
    rayo_attention_params attn;
    rayo_dev_call d;
    rayo_status st = batch_call_at(c, step, &at, &attn);
    return st == RAYO_OK ? convert_call(batch, &at, &d) : st;
}

/* Records an entry into the plugin's batch: at step 0 with its step fields
 * when the plugin replays, else as it runs at the batch's step. */
static rayo_status plugin_record(rayo_batch *batch, batch_entry *e)
{
    rayo_batch_call at;
    rayo_attention_params attn;
    rayo_dev_call d;
    rayo_status st = batch->replays ? RAYO_OK : batch_call_at(&e->call, batch->step, &at, &attn);
    if (st == RAYO_OK)
        st = convert_call(batch, batch->replays ? &e->call : &at, &d);
    if (st != RAYO_OK)
        return st;
    d.params = e->call.params;
    if (batch->replays) {
        memcpy(d.step_bytes, e->call.step_bytes, sizeof d.step_bytes);
        d.step_flags = e->call.step_flags;
    } else if (at.params == &attn) {
        if (!e->at_step && !(e->at_step = malloc(sizeof *e->at_step)))
            return rayo__fail(RAYO_E_NOMEM, "out of memory");
        *e->at_step = attn;
        d.params = e->at_step;
    }
    void *state;
    return memory_of(batch->be, &state)->batch_record(state, batch->handle, &d);
}

static rayo_status reserve_entry(rayo_batch *batch)
{
    if (batch->entry_count < batch->entry_cap)
        return RAYO_OK;
    size_t cap = batch->entry_cap ? 2 * batch->entry_cap : 32;
    batch_entry *grown = realloc(batch->entries, cap * sizeof *grown);
    if (!grown)
        return rayo__fail(RAYO_E_NOMEM, "cannot grow the batch");
    batch->entries = grown;
    batch->entry_cap = cap;
    return RAYO_OK;
}

/* A recordable call: checked at step 0 and at the batch's step, its
 * parameters copied into the batch (e->call.params). */
static rayo_status prepare_entry(rayo_batch *batch, const rayo_batch_call *call, batch_entry *e)
{
    rayo_status st = full_batch_call(call, &e->call);
    if (st == RAYO_OK)
        st = check_step_fields(&e->call);
    rayo_dev_call d;
    if (st == RAYO_OK)
        st = convert_call(batch, &e->call, &d);
    if (st != RAYO_OK)
        return st;
    rayo_operand *o[4] = {&e->call.a, &e->call.b, &e->call.c, &e->call.y};
    const rayo_dev_operand *used[4] = {&d.a, &d.b, &d.c, &d.y};
    for (int i = 0; i < 4; i++)
        if (!used[i]->buf) { /* the op reads no byte of it */
            *o[i] = (rayo_operand){NULL, 0};
            e->call.step_bytes[i] = 0;
        }
    const rayo_op_info *op = rayo_op_by_id(e->call.op);
    void *mstate;
    if (memory_of(batch->be, &mstate) != &rayo_host_memory && !backend_kernel(batch->be, e->call.op, e->call.dtypes))
        return rayo__fail(RAYO_E_UNSUPPORTED, "batch on %s: it does not implement %s with these dtypes",
                         batch->be->name, op->name);
    st = keep_params(batch, op, e->call.params, &e->call.params);
    if (st == RAYO_OK && batch->step)
        st = check_at_step(batch, &e->call, batch->step);
    return st;
}

RAYO_API rayo_status rayo_batch_record(rayo_batch *batch, const rayo_batch_call *call)
{
    rayo__clear_error();
    rayo_status st = batch_live(batch);
    if (st != RAYO_OK)
        return st;
    if (!call)
        return rayo__fail(RAYO_E_INVALID, "call is NULL");
    if (batch->state != BATCH_RECORDING)
        return rayo__fail(RAYO_E_STATE, "the batch was already submitted");
    batch_entry e = {{0}, NULL};
    st = prepare_entry(batch, call, &e);
    if (st == RAYO_OK)
        st = reserve_entry(batch);
    const rayo_operand *used[4] = {&e.call.a, &e.call.b, &e.call.c, &e.call.y};
    for (int i = 0; i < 4 && st == RAYO_OK; i++)
        st = batch_use(batch, used[i]->buf);
    if (st == RAYO_OK && batch->handle)
        st = plugin_record(batch, &e);
    if (st != RAYO_OK) {
        free(e.at_step);
        return st;
    }
    batch->entries[batch->entry_count++] = e;
    return RAYO_OK;
}

/* Replaces the plugin's batch by a new recording of every entry at the
 * batch's step (a plugin that cannot replay). */
static rayo_status record_again(rayo_batch *batch)
{
    void *state;
    const rayo_memory_api *mem = memory_of(batch->be, &state);
    if (batch->handle)
        mem->batch_free(state, batch->handle);
    batch->handle = NULL;
    rayo_status st = mem->batch_begin(state, &batch->handle);
    if (st != RAYO_OK) {
        batch->handle = NULL;
        return st;
    }
    for (size_t i = 0; i < batch->entry_count && st == RAYO_OK; i++)
        st = plugin_record(batch, &batch->entries[i]);
    if (st == RAYO_OK)
        batch->stale = false;
    return st;
}

/* A live batch that is not running (submit, set_step). */
static rayo_status batch_idle(const rayo_batch *batch, const char *what)
{
    rayo_status st = batch_live(batch);
    if (st == RAYO_OK && batch->state == BATCH_SUBMITTED)
        st = rayo__fail(RAYO_E_STATE, "the batch is running: wait for it before %s", what);
    return st;
}

RAYO_API rayo_status rayo_batch_submit(rayo_batch *batch)
{
    rayo__clear_error();
    rayo_status st = batch_idle(batch, "submitting it again");
    if (st == RAYO_OK && batch->stale)
        st = record_again(batch);
    if (st != RAYO_OK)
        return st;
    void *state;
    st = memory_of(batch->be, &state)->batch_submit(state, batch->handle);
    batch->state = BATCH_SUBMITTED;
    batch->stale = !batch->replays;
    if (st != RAYO_OK) {
        batch->state = BATCH_DONE;
        batch->result = st;
    }
    return st;
}

RAYO_API rayo_status rayo_batch_set_step(rayo_batch *batch, size_t step)
{
    rayo__clear_error();
    rayo_status st = batch_idle(batch, "setting its step");
    if (st != RAYO_OK)
        return st;
    bool moves = false;
    for (size_t i = 0; i < batch->entry_count; i++) {
        const rayo_batch_call *c = &batch->entries[i].call;
        if (!moves_with_step(c))
            continue;
        moves = true;
        st = check_at_step(batch, c, step);
        if (st != RAYO_OK)
            return rayo__fail(st, "step %zu, call %zu (%s): %s", step, i, rayo_op_by_id(c->op)->name,
                             rayo_last_error());
    }
    if (step == batch->step)
        return RAYO_OK;
    if (batch->replays && batch->handle) {
        void *state;
        st = memory_of(batch->be, &state)->batch_set_step(state, batch->handle, step);
        if (st != RAYO_OK)
            return st;
    }
    batch->step = step;
    batch->stale |= moves && !batch->replays;
    return RAYO_OK;
}

RAYO_API rayo_status rayo_batch_wait(rayo_batch *batch, uint64_t timeout_ns)
{
    rayo__clear_error();
    rayo_status live = batch_live(batch);
    if (live != RAYO_OK)
        return live;
    if (batch->state == BATCH_RECORDING)
        return rayo__fail(RAYO_E_STATE, "the batch was not submitted");
    if (batch->state == BATCH_DONE)
        return batch->result;
    void *state;
    rayo_status st = memory_of(batch->be, &state)->batch_wait(state, batch->handle, timeout_ns);
    if (st == RAYO_E_TIMEOUT)
        return st;
    if (st == RAYO_E_DEVICE_LOST)
        atomic_store(&batch->be->lost, true);
    batch->state = BATCH_DONE;
    batch->result = st;
    return st;
}

/* Waits for a submitted batch and frees its device side. */
static void batch_free_device(rayo_batch *batch)
{
    if (batch->state == BATCH_SUBMITTED)
        rayo_batch_wait(batch, UINT64_MAX);
    void *state;
    if (batch->handle)
        memory_of(batch->be, &state)->batch_free(state, batch->handle);
    batch->handle = NULL;
}

RAYO_API void rayo_batch_destroy(rayo_batch *batch)
{
    if (!batch)
        return;
    if (batch->ctx) {
        batch_free_device(batch);
        unlink_batch(batch->ctx, batch);
    }
    for (size_t i = 0; i < batch->use_count; i++)
        buffer_release(batch->uses[i]);
    free(batch->uses);
    for (size_t i = 0; i < batch->params_count; i++)
        free(batch->params[i]);
    free(batch->params);
    for (size_t i = 0; i < batch->entry_count; i++)
        free(batch->entries[i].at_step);
    free(batch->entries);
    free(batch);
}

/* rayo_close: every device resource goes; the handles stay, detached. */
void buffers_close_all(rayo_context *ctx, bool call_plugins)
{
    pthread_mutex_lock(&ctx->objects_lock);
    for (rayo_batch *b = ctx->batches; b; b = b->next) {
        if (call_plugins)
            batch_free_device(b);
        b->ctx = NULL;
    }
    for (rayo_buffer *b = ctx->buffers; b; b = b->next) {
        void *state;
        if (call_plugins)
            memory_of(b->be, &state)->buffer_free(state, b->handle);
        b->handle = NULL;
        b->ctx = NULL;
    }
    ctx->batches = NULL;
    ctx->buffers = NULL;
    pthread_mutex_unlock(&ctx->objects_lock);
}
