/* cuda-host.c - ops on host memory.
 *
 * A call takes a "lane" (a stream with pinned host staging and device
 * staging, both reused across calls and grown on demand), packs its inputs
 * into the pinned buffer, sends them in one copy, runs the kernels, copies
 * the output back into the pinned buffer and synchronises.  Only when all of
 * that succeeded is the output copied to the caller's memory: on failure the
 * caller's data is untouched and the core passes the call to the next
 * backend. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"

#include <stdint.h>
#include <string.h>

#define ALIGN 256
#define MIN_STAGING (1u << 20)

/* ---- lanes ----------------------------------------------------------------- */
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
            memset(l, 0, sizeof *l);
            CUresult r = st->drv->cuStreamCreate(&l->stream, CU_STREAM_NON_BLOCKING);
            if (r != CUDA_SUCCESS) {
                pthread_mutex_unlock(&st->lock);
                return cuda_fail(st, r, "cuStreamCreate");
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

static size_t grow_size(size_t need, size_t have)
{
    size_t s = have * 2 > need ? have * 2 : need;
    if (s < MIN_STAGING)
        s = MIN_STAGING;
    return (s + 65535) & ~(size_t)65535;
}

/* Makes the lane's staging at least `bytes` on both sides. */
static rayo_status lane_reserve(cuda_state *st, cuda_lane *l, size_t bytes)
{
    const cuda_driver *drv = st->drv;
    if (l->host_size < bytes) {
        size_t size = grow_size(bytes, l->host_size);
        if (l->host)
            drv->cuMemFreeHost(l->host);
        l->host = NULL;
        l->host_size = 0;
        CUresult r = drv->cuMemHostAlloc(&l->host, size, 0);
        if (r != CUDA_SUCCESS) {
            l->host = NULL;
            return cuda_fail(st, r, "pinned staging (cuMemHostAlloc)");
        }
        l->host_size = size;
    }
    if (l->dev_size < bytes) {
        size_t size = grow_size(bytes, l->dev_size);
        if (l->dev)
            drv->cuMemFree(l->dev);
        l->dev = 0;
        l->dev_size = 0;
        CUresult r = drv->cuMemAlloc(&l->dev, size);
        if (r != CUDA_SUCCESS) {
            l->dev = 0;
            return cuda_fail(st, r, "device staging (cuMemAlloc)");
        }
        l->dev_size = size;
    }
    return RAYO_OK;
}

void cuda_lanes_destroy(cuda_state *st)
{
    for (int i = 0; i < st->lane_count; i++) {
        cuda_lane *l = &st->lanes[i];
        if (l->stream)
            st->drv->cuStreamSynchronize(l->stream);
        if (l->host)
            st->drv->cuMemFreeHost(l->host);
        if (l->dev)
            st->drv->cuMemFree(l->dev);
        if (l->stream)
            st->drv->cuStreamDestroy(l->stream);
    }
    st->lane_count = 0;
}

/* ---- the staging layout of one call ------------------------------------------ */
typedef struct segment {
    const void *src;      /* host input, or NULL */
    size_t bytes;
    size_t offset;        /* in the staging buffers */
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

/* ---- the call ---------------------------------------------------------------- */
static rayo_status run_staged(cuda_state *st, cuda_lane *l, const rayo_call *call, const layout *lo,
                              cuda_op *op)
{
    const cuda_driver *drv = st->drv;
    unsigned char *host = l->host;
    for (int i = 0; i < 4; i++)
        if (lo->in[i].src && lo->in[i].bytes)
            memcpy(host + lo->in[i].offset, lo->in[i].src, lo->in[i].bytes);
    CUresult r = CUDA_SUCCESS;
    if (lo->inputs_end)
        r = drv->cuMemcpyHtoDAsync(l->dev, host, lo->inputs_end, l->stream);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, "copy to the device");
    rayo_status s = cuda_launch_op(st, l->stream, op);
    if (s != RAYO_OK) {
        drv->cuStreamSynchronize(l->stream); /* staging is reused: drain the copy */
        return s;
    }
    r = drv->cuMemcpyDtoHAsync(host + lo->y_offset, l->dev + lo->y_offset, lo->y_bytes, l->stream);
    if (r != CUDA_SUCCESS) {
        drv->cuStreamSynchronize(l->stream);
        return cuda_fail(st, r, "copy from the device");
    }
    r = drv->cuStreamSynchronize(l->stream);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, r, cuda_op_name(call->op));
    memcpy(call->y, host + lo->y_offset, lo->y_bytes);
    return RAYO_OK;
}

rayo_status cuda_host_call(void *state, const rayo_call *call)
{
    if (rayo_call_strided(call) && !cuda_strides_supported(call->op, call->dtypes))
        return RAYO_E_UNSUPPORTED; /* row strides: only some ops on cuda yet */
    cuda_state *st = state;
    rayo_status s = cuda_op_supported(call->op, call->flags);
    if (s != RAYO_OK)
        return s;
    if (cuda_check_host_call(st, call) != 0)
        return RAYO_E_INVALID;
    if ((s = cuda_enter(st)) != RAYO_OK)
        return s;
    cuda_op op = {call->op, call->flags, call->m, call->n, call->k, call->alpha, call->beta, 0, 0, 0, 0, 0,
                  call->dtypes, call->lda, call->ldb, call->ldy, call->params};
    layout lo;
    if (plan_layout(call, cuda_scratch_bytes(st, &op), &lo) != 0) {
        st->host->set_error(st->host, "cuda: sizes overflow");
        return RAYO_E_OVERFLOW;
    }
    cuda_lane *l = NULL;
    if ((s = lane_acquire(st, &l)) != RAYO_OK)
        return s;
    s = lane_reserve(st, l, lo.total ? lo.total : 1);
    if (s == RAYO_OK) {
        CUdeviceptr base = l->dev;
        op.a = lo.in[0].bytes ? base + lo.in[0].offset : 0;
        op.b = lo.in[1].bytes ? base + lo.in[1].offset : 0;
        op.c = lo.in[2].bytes ? base + lo.in[2].offset : 0;
        op.y = base + lo.y_offset;
        op.scratch = lo.scratch_bytes ? base + lo.scratch_offset : 0;
        s = run_staged(st, l, call, &lo, &op);
    }
    lane_release(st, l);
    return s;
}
