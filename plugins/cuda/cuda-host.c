/* SPDX-License-Identifier: MIT */
/* cuda-host.c - ops on host memory.
 *
 * A call takes a "lane": a copy stream and a compute stream, a bounded host
 * staging area (pinned once, reused by every call; see cuda-internal.h) and
 * device staging that holds the whole call.  Inputs go to the device chunk
 * by chunk through the staging slots: the host copies a chunk into one slot
 * (on the core's thread pool) while the copy engine sends the one before.
 * The result comes back the same way.  A large matmul is split into blocks
 * of rows of C, so that A's and C's copies overlap the kernels of the
 * other blocks (B goes first, whole).
 *
 * Failure rule: the caller's output is written only from copies that follow
 * the kernels' successful completion, and an output that is also an input
 * (axpy's y, matmul's C with beta != 0) is assembled in a temporary buffer
 * and copied out only when everything succeeded, so the core can pass a
 * failed call on with the caller's data intact. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 256
#define MIN_DEVICE_STAGING (1u << 20)
/* Host copies from this size up are split over the core's thread pool. */
#define PARALLEL_COPY_MIN (1u << 20)
/* A matmul is split into row blocks of C from this much work (m*n*k) up;
 * blocks are whole multiples of the tiled kernels' rows. */
#define BLOCKED_MATMUL_MIN_WORK (1ull << 30)
#define MATMUL_BLOCK_ROWS 256
#define MATMUL_MAX_BLOCKS 8

/* ---- lanes ----------------------------------------------------------------- */
static CUresult lane_create(const cuda_driver *drv, cuda_lane *l)
{
    memset(l, 0, sizeof *l);
    CUresult r = drv->cuStreamCreate(&l->stream, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = drv->cuStreamCreate(&l->compute, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventCreate(&l->uploaded, CU_EVENT_DISABLE_TIMING);
    for (int i = 0; i < 2 && r == CUDA_SUCCESS; i++)
        r = drv->cuEventCreate(&l->computed[i], CU_EVENT_DISABLE_TIMING);
    for (int i = 0; i < CUDA_STAGING_SLOTS && r == CUDA_SUCCESS; i++)
        r = drv->cuEventCreate(&l->slots[i].done, CU_EVENT_DISABLE_TIMING);
    return r;
}

static void lane_destroy(const cuda_state *st, cuda_lane *l)
{
    const cuda_driver *drv = st->drv;
    if (l->stream)
        drv->cuStreamSynchronize(l->stream);
    if (l->compute)
        drv->cuStreamSynchronize(l->compute);
    if (l->staging && l->pinned)
        drv->cuMemFreeHost(l->staging);
    else if (l->staging)
        st->host->free_aligned(l->staging);
    if (l->dev)
        drv->cuMemFree(l->dev);
    for (int i = 0; i < CUDA_STAGING_SLOTS; i++)
        if (l->slots[i].done)
            drv->cuEventDestroy(l->slots[i].done);
    CUevent events[] = {l->uploaded, l->computed[0], l->computed[1]};
    for (int i = 0; i < 3; i++)
        if (events[i])
            drv->cuEventDestroy(events[i]);
    if (l->compute)
        drv->cuStreamDestroy(l->compute);
    if (l->stream)
        drv->cuStreamDestroy(l->stream);
    memset(l, 0, sizeof *l);
}

static rayo_status lane_acquire(cuda_state *st, cuda_lane **out)
{
    pthread_mutex_lock(&st->lock);
    for (;;) {
        for (int i = 0; i < st->lane_count; i++)
            if (!st->lanes[i].busy) {
                st->lanes[i].busy = 1;
                *out = &st->lanes[i];
                pthread_mutex_unlock(&st->lock);
                return RAYO_OK;
            }
        if (st->lane_count < st->lane_limit) {
            cuda_lane *l = &st->lanes[st->lane_count];
            CUresult r = lane_create(st->drv, l);
            if (r != CUDA_SUCCESS) {
                lane_destroy(st, l);
                pthread_mutex_unlock(&st->lock);
                return cuda_fail(st, r, "lane (cuStreamCreate, cuEventCreate)");
            }
            l->busy = 1;
            st->lane_count++;
            *out = l;
            pthread_mutex_unlock(&st->lock);
            return RAYO_OK;
        }
        pthread_cond_wait(&st->lane_free, &st->lock);
    }
}

static void lane_release(cuda_state *st, cuda_lane *l)
{
    pthread_mutex_lock(&st->lock);
    l->busy = 0;
    pthread_cond_signal(&st->lane_free);
    pthread_mutex_unlock(&st->lock);
}

/* The lane's host staging, once: pinned unless that fails or is turned
 * off; a failed pinned allocation falls back to pageable memory with one
 * log line per context, never an error. */
static rayo_status lane_staging(cuda_state *st, cuda_lane *l)
{
    if (l->staging)
        return RAYO_OK;
    size_t bytes = st->staging_bytes;
    CUresult r = st->use_pinned ? st->drv->cuMemHostAlloc(&l->staging, bytes, 0) : CUDA_SUCCESS;
    l->pinned = st->use_pinned && r == CUDA_SUCCESS;
    if (!l->pinned) {
        l->staging = st->host->alloc_aligned(4096, bytes);
        if (!l->staging)
            return RAYO_E_NOMEM;
        if (st->use_pinned && !atomic_exchange(&st->pinned_warned, 1)) {
            char text[160];
            st->host->log(st->host, RAYO_LOG_WARN,
                          "cuda: pinned staging of %zu bytes failed (cuMemHostAlloc: %s); host-memory calls "
                          "copy through pageable memory, more slowly",
                          bytes, cuda_error_text(st->drv, r, text, sizeof text));
        }
    }
    l->slot_bytes = bytes / CUDA_STAGING_SLOTS;
    for (int i = 0; i < CUDA_STAGING_SLOTS; i++)
        l->slots[i].host = (unsigned char *)l->staging + (size_t)i * l->slot_bytes;
    return RAYO_OK;
}

static size_t grow_size(size_t need, size_t have)
{
    size_t s = have * 2 > need ? have * 2 : need;
    if (s < MIN_DEVICE_STAGING)
        s = MIN_DEVICE_STAGING;
    return (s + 65535) & ~(size_t)65535;
}

/* Makes the lane's device staging at least `bytes`. */
static rayo_status lane_reserve(cuda_state *st, cuda_lane *l, size_t bytes)
{
    rayo_status s = lane_staging(st, l);
    if (s != RAYO_OK || l->dev_size >= bytes)
        return s;
    size_t size = grow_size(bytes, l->dev_size);
    if (l->dev)
        st->drv->cuMemFree(l->dev);
    l->dev = 0;
    l->dev_size = 0;
    CUresult r = st->drv->cuMemAlloc(&l->dev, size);
    if (r != CUDA_SUCCESS) {
        l->dev = 0;
        return cuda_fail(st, r, "device staging (cuMemAlloc)");
    }
    l->dev_size = size;
    return RAYO_OK;
}

void cuda_lanes_destroy(cuda_state *st)
{
    for (int i = 0; i < st->lane_count; i++)
        lane_destroy(st, &st->lanes[i]);
    st->lane_count = 0;
}

/* ---- host copies and the staging slots ---------------------------------------- */
typedef struct copy_job {
    unsigned char *dst;
    const unsigned char *src;
    size_t bytes, piece;
} copy_job;

static void copy_piece(void *arg, size_t task, unsigned worker)
{
    (void)worker;
    const copy_job *j = arg;
    size_t at = task * j->piece;
    if (at < j->bytes)
        memcpy(j->dst + at, j->src + at, j->bytes - at < j->piece ? j->bytes - at : j->piece);
}

/* memcpy on the core's thread pool: one thread copies pageable memory to
 * pinned memory more slowly than PCIe moves it. */
static void host_copy(const cuda_state *st, void *dst, const void *src, size_t bytes)
{
    const rayo_host *h = st->host;
    unsigned threads = h->num_threads ? h->num_threads(h) : 1;
    if (bytes < PARALLEL_COPY_MIN || threads < 2 || !h->parallel_for) {
        memcpy(dst, src, bytes);
        return;
    }
    size_t tasks = bytes / (PARALLEL_COPY_MIN / 2);
    if (tasks > threads)
        tasks = threads;
    copy_job j = {dst, src, bytes, ((bytes + tasks - 1) / tasks + 63) & ~(size_t)63};
    h->parallel_for(h, (bytes + j.piece - 1) / j.piece, copy_piece, &j);
}

/* The next slot, once the copy last queued on it has finished (and a
 * download that landed there has been copied out). */
static rayo_status slot_take(cuda_state *st, cuda_lane *l, cuda_slot **out)
{
    cuda_slot *slot = &l->slots[l->next_slot];
    l->next_slot = (l->next_slot + 1) % CUDA_STAGING_SLOTS;
    CUresult r = st->drv->cuEventSynchronize(slot->done);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "copy between host and device");
    if (slot->pending_dst) {
        host_copy(st, slot->pending_dst, slot->host, slot->pending_bytes);
        slot->pending_dst = NULL;
    }
    *out = slot;
    return RAYO_OK;
}

/* Copies out the downloads still in the slots; the copy stream must have
 * been synchronised. */
static void slots_flush(cuda_state *st, cuda_lane *l)
{
    for (int i = 0; i < CUDA_STAGING_SLOTS; i++) {
        cuda_slot *slot = &l->slots[i];
        if (slot->pending_dst)
            host_copy(st, slot->pending_dst, slot->host, slot->pending_bytes);
        slot->pending_dst = NULL;
    }
}

/* After a failure: waits for everything queued and drops downloads. */
static void lane_drain(cuda_state *st, cuda_lane *l)
{
    st->drv->cuStreamSynchronize(l->stream);
    st->drv->cuStreamSynchronize(l->compute);
    for (int i = 0; i < CUDA_STAGING_SLOTS; i++)
        l->slots[i].pending_dst = NULL;
}

/* ---- the staging layout of one call ------------------------------------------ */
typedef struct segment {
    const void *src;      /* host input, or NULL */
    size_t bytes;
    size_t offset;        /* in the device staging */
} segment;

typedef struct layout {
    segment in[4];        /* a, b, c, and y when the op reads it */
    size_t y_offset, y_bytes;
    int y_is_input;
    size_t scratch_offset, scratch_bytes;
    size_t inputs_end;    /* bytes [0, inputs_end) go to the device */
    size_t total;
} layout;

static int add_segment(size_t *cursor, size_t bytes, size_t *offset)
{
    size_t at = (*cursor + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (at < *cursor || bytes > SIZE_MAX - at)
        return -1;
    *offset = at;
    *cursor = at + bytes;
    return 0;
}

/* Bytes of a, b, c and y for the call (0 = not used): the element counts of
 * rayo-plugin.h, in each operand's dtype; argmax's index is a size_t in a
 * host call. */
static int operand_sizes(const rayo_call *c, size_t sz[4], int *y_in)
{
    int sig = rayo_op_signature(c->op);
    size_t count[4];
    if (sig < 0 || rayo_operand_counts(c, sig, count) != 0)
        return -1;
    for (int i = 0; i < 4; i++)
        if (!rayo_dtype_row_bytes(RAYO_DTYPE_OF(c->dtypes, i), count[i], &sz[i]))
            return -1;
    if (sig == RAYO_SIG_ARGREDUCE)
        sz[3] = sizeof(size_t);
    /* a strided output (rows or heads with gaps) is copied in, so that
     * copying it back leaves the gaps as they were */
    *y_in = rayo_output_is_input(c, sig) || c->ldy != 0 || sig == RAYO_SIG_ROPE || sig == RAYO_SIG_ATTENTION;
    return 0;
}

static int plan_layout(const rayo_call *c, size_t scratch, layout *lo)
{
    size_t sz[4];
    int y_in;
    memset(lo, 0, sizeof *lo);
    if (operand_sizes(c, sz, &y_in) != 0)
        return -1;
    const void *src[4] = {c->a, c->b, c->c, c->y};
    size_t cursor = 0;
    for (int i = 0; i < 3; i++) {
        lo->in[i].src = sz[i] ? src[i] : NULL;
        lo->in[i].bytes = sz[i];
        if (sz[i] && add_segment(&cursor, sz[i], &lo->in[i].offset) != 0)
            return -1;
    }
    if (add_segment(&cursor, sz[3], &lo->y_offset) != 0)
        return -1;
    lo->y_bytes = sz[3];
    lo->y_is_input = y_in;
    if (y_in) {
        lo->in[3].src = c->y;
        lo->in[3].bytes = sz[3];
        lo->in[3].offset = lo->y_offset;
    }
    lo->inputs_end = y_in ? cursor : lo->y_offset;
    if (add_segment(&cursor, scratch, &lo->scratch_offset) != 0)
        return -1;
    lo->scratch_bytes = scratch;
    lo->total = cursor;
    return 0;
}

/* ---- copies ----------------------------------------------------------------- */
/* Fills a slot with the inputs' bytes that fall in [begin, begin + len) of
 * the device staging (small inputs share a chunk, large ones take many). */
static void fill_slot(const cuda_state *st, const layout *lo, unsigned char *slot, size_t begin, size_t len)
{
    for (int i = 0; i < 4; i++) {
        const segment *g = &lo->in[i];
        size_t from = g->offset > begin ? g->offset : begin;
        size_t to = g->offset + g->bytes < begin + len ? g->offset + g->bytes : begin + len;
        if (g->src && from < to)
            host_copy(st, slot + (from - begin), (const unsigned char *)g->src + (from - g->offset), to - from);
    }
}

/* Moves bytes [begin, end) of the device staging in slot-sized chunks:
 * to the device from the inputs (dst NULL), or from the device to dst, where
 * slot_take and slots_flush copy each chunk once it has arrived. */
static rayo_status transfer(cuda_state *st, cuda_lane *l, const layout *lo, unsigned char *dst, size_t begin,
                            size_t end)
{
    while (begin < end) {
        size_t len = end - begin < l->slot_bytes ? end - begin : l->slot_bytes;
        cuda_slot *slot = NULL;
        rayo_status s = slot_take(st, l, &slot);
        if (s != RAYO_OK)
            return s;
        CUresult r;
        if (dst) {
            r = st->drv->cuMemcpyDtoHAsync(slot->host, l->dev + begin, len, l->stream);
        } else {
            fill_slot(st, lo, slot->host, begin, len);
            r = st->drv->cuMemcpyHtoDAsync(l->dev + begin, slot->host, len, l->stream);
        }
        if (r == CUDA_SUCCESS)
            r = st->drv->cuEventRecord(slot->done, l->stream);
        if (r != CUDA_SUCCESS)
            return cuda_fail(st, r, dst ? "copy from the device" : "copy to the device");
        if (dst) {
            slot->pending_dst = dst;
            slot->pending_bytes = len;
            dst += len;
        }
        begin += len;
    }
    return RAYO_OK;
}

static rayo_status upload(cuda_state *st, cuda_lane *l, const layout *lo, size_t begin, size_t end)
{
    return transfer(st, l, lo, NULL, begin, end);
}

static rayo_status download(cuda_state *st, cuda_lane *l, unsigned char *dst, size_t begin, size_t end)
{
    return transfer(st, l, NULL, dst, begin, end);
}

/* ---- the call ---------------------------------------------------------------- */
typedef struct call_plan {
    layout lo;
    cuda_op op;           /* on device staging */
    size_t blocks;        /* row blocks of a matmul; 1 otherwise */
    size_t block_rows;
    unsigned char *out;   /* where downloads go: the caller's y, or a temporary */
} call_plan;

/* Row blocks of C for a matmul large enough for its copies to be worth
 * overlapping; A must be stored by rows (no RAYO_TRANS_A), and B in f32 (a
 * typed B would be dequantized again for every block). */
static void plan_blocks(const rayo_call *c, call_plan *p)
{
    p->blocks = 1;
    p->block_rows = c->m;
    if (rayo_op_signature(c->op) != RAYO_SIG_MATMUL || (c->flags & RAYO_TRANS_A) || c->dtypes != 0 ||
        (double)c->m * (double)c->n * (double)c->k < (double)BLOCKED_MATMUL_MIN_WORK)
        return;
    size_t want = c->m / (2 * MATMUL_BLOCK_ROWS);
    if (want < 2)
        return;
    if (want > MATMUL_MAX_BLOCKS)
        want = MATMUL_MAX_BLOCKS;
    size_t rows = (c->m + want - 1) / want;
    p->block_rows = (rows + MATMUL_BLOCK_ROWS - 1) / MATMUL_BLOCK_ROWS * MATMUL_BLOCK_ROWS;
    p->blocks = (c->m + p->block_rows - 1) / p->block_rows;
}

/* The op on rows [r0, r1) of C. */
static cuda_op block_op(const call_plan *p, size_t r0, size_t r1)
{
    cuda_op op = p->op;
    op.m = r1 - r0;
    op.a += r0 * p->op.k * sizeof(float);
    op.y += r0 * p->op.n * sizeof(float);
    return op;
}

static rayo_status run_whole(cuda_state *st, cuda_lane *l, const call_plan *p)
{
    const layout *lo = &p->lo;
    rayo_status s = upload(st, l, lo, 0, lo->inputs_end);
    if (s == RAYO_OK)
        s = cuda_launch_op(st, l->stream, &p->op);
    if (s == RAYO_OK)
        s = download(st, l, p->out, lo->y_offset, lo->y_offset + lo->y_bytes);
    return s;
}

/* Block i's kernels start when its A (and C) rows are there; block i-1's
 * rows of C come back while block i computes. */
static rayo_status run_blocks(cuda_state *st, cuda_lane *l, const call_plan *p)
{
    const cuda_driver *drv = st->drv;
    const layout *lo = &p->lo;
    size_t a_row = p->op.k * sizeof(float), y_row = p->op.n * sizeof(float);
    rayo_status s = upload(st, l, lo, lo->in[1].offset, lo->in[1].offset + lo->in[1].bytes);
    for (size_t i = 0; i <= p->blocks && s == RAYO_OK; i++) {
        CUresult r = CUDA_SUCCESS;
        if (i < p->blocks) {
            size_t r0 = i * p->block_rows, r1 = r0 + p->block_rows < p->op.m ? r0 + p->block_rows : p->op.m;
            s = upload(st, l, lo, lo->in[0].offset + r0 * a_row, lo->in[0].offset + r1 * a_row);
            if (s == RAYO_OK && lo->y_is_input)
                s = upload(st, l, lo, lo->y_offset + r0 * y_row, lo->y_offset + r1 * y_row);
            if (s != RAYO_OK)
                break;
            r = drv->cuEventRecord(l->uploaded, l->stream);
            if (r == CUDA_SUCCESS)
                r = drv->cuStreamWaitEvent(l->compute, l->uploaded, 0);
            cuda_op op = block_op(p, r0, r1);
            if (r == CUDA_SUCCESS && (s = cuda_launch_op(st, l->compute, &op)) != RAYO_OK)
                break;
            if (r == CUDA_SUCCESS)
                r = drv->cuEventRecord(l->computed[i % 2], l->compute);
        }
        if (r == CUDA_SUCCESS && i > 0) {
            size_t r0 = (i - 1) * p->block_rows;
            size_t r1 = r0 + p->block_rows < p->op.m ? r0 + p->block_rows : p->op.m;
            r = drv->cuStreamWaitEvent(l->stream, l->computed[(i - 1) % 2], 0);
            if (r == CUDA_SUCCESS)
                s = download(st, l, p->out + r0 * y_row, lo->y_offset + r0 * y_row, lo->y_offset + r1 * y_row);
        }
        if (r != CUDA_SUCCESS)
            s = cuda_fail(st, r, "matmul in blocks (events)");
    }
    return s;
}

static rayo_status run_planned(cuda_state *st, cuda_lane *l, const rayo_call *call, call_plan *p)
{
    CUdeviceptr base = l->dev;
    const layout *lo = &p->lo;
    p->op.a = lo->in[0].bytes ? base + lo->in[0].offset : 0;
    p->op.b = lo->in[1].bytes ? base + lo->in[1].offset : 0;
    p->op.c = lo->in[2].bytes ? base + lo->in[2].offset : 0;
    p->op.y = base + lo->y_offset;
    p->op.scratch = lo->scratch_bytes ? base + lo->scratch_offset : 0;
    p->op.scratch_size = lo->scratch_bytes;
    /* An output that is also an input reaches the caller in one piece,
     * after everything succeeded: from one slot, or through a temporary. */
    unsigned char *temp = NULL;
    if (lo->y_is_input && lo->y_bytes > l->slot_bytes && !(temp = malloc(lo->y_bytes)))
        return RAYO_E_NOMEM;
    p->out = temp ? temp : call->y;
    rayo_status s = p->blocks > 1 ? run_blocks(st, l, p) : run_whole(st, l, p);
    if (s == RAYO_OK) {
        CUresult r = st->drv->cuStreamSynchronize(l->stream); /* the last download, after every kernel */
        if (r != CUDA_SUCCESS)
            s = cuda_fail(st, r, cuda_op_name(call->op));
    }
    if (s != RAYO_OK) {
        lane_drain(st, l);
    } else {
        slots_flush(st, l);
        if (temp)
            memcpy(call->y, temp, lo->y_bytes);
    }
    free(temp);
    return s;
}

rayo_status cuda_host_call(void *state, const rayo_call *call, const cuda_family *family)
{
    if (rayo_call_strided(call) && !family->strided)
        return RAYO_E_UNSUPPORTED; /* row strides: only some ops on cuda yet */
    cuda_state *st = state;
    call_plan p;
    memset(&p, 0, sizeof p);
    p.op = (cuda_op){call->op, call->flags, call->m, call->n, call->k, call->alpha, call->beta, 0, 0, 0, 0, 0,
                     call->dtypes, call->lda, call->ldb, call->ldy, call->params, call->precision, 0, family};
    rayo_status s = cuda_op_check(st, &p.op);
    if (s != RAYO_OK)
        return s;
    if (cuda_check_host_call(st, call) != 0)
        return RAYO_E_INVALID;
    if ((s = cuda_enter(st)) != RAYO_OK)
        return s;
    plan_blocks(call, &p);
    cuda_op first = p.op;
    first.m = p.block_rows;
    size_t scratch = cuda_scratch_bytes(st, &p.op), block_scratch = cuda_scratch_bytes(st, &first);
    if (plan_layout(call, scratch > block_scratch ? scratch : block_scratch, &p.lo) != 0) {
        st->host->set_error(st->host, "cuda: sizes overflow");
        return RAYO_E_OVERFLOW;
    }
    cuda_lane *l = NULL;
    if ((s = lane_acquire(st, &l)) != RAYO_OK)
        return s;
    s = lane_reserve(st, l, p.lo.total ? p.lo.total : 1);
    if (s == RAYO_OK)
        s = run_planned(st, l, call, &p);
    lane_release(st, l);
    return s;
}
