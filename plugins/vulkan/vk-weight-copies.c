/* SPDX-License-Identifier: MIT */
/* vk-weight-copies.c - the f16 copies of weights that relaxed prompt
 * products (vk-half-prompt.c) keep from one call to the next.
 *
 * Each such product turns its weight B (quantized or half) into f16 rows
 * scaled by a power of two each (half_rows.comp).  A model's weights never
 * change between prompts, so the copy, row exponents included, is kept,
 * keyed by the source buffer's id (never its address: a freed address comes
 * back), the operand's offset, dtype, rows, columns and row stride, and
 * later calls read it instead of converting again.
 *
 * Why a kept copy always equals what a conversion would make now: the
 * plugin sees every write to its buffers.  An application writes only
 * through buffer_write (the plugin API has no mapping; mapped_small
 * buffers are written by memcpy inside it), which counts the buffer's
 * writes (vk_buf.writes).  The device writes only in dispatches the
 * plugin records, all through vk_ctx_dispatch, which marks each buffer
 * bound to a slot a shader may write (vk_buf.device_written, never cleared:
 * a recorded batch writes again at every replay).  So a copy is valid
 * while its source is not freed, has the write count the copy was made
 * at, and was never bound for writing; a device-written buffer is never
 * kept.
 *
 * A copy is made at once, in a submission of its own that is waited for,
 * and enters the table only then: a failure leaves no entry.  A recording
 * that reads a copy lists the entry's id (vk_ctx.copies): before each
 * submission vk-batches.c records again a batch whose copies went stale
 * since it was recorded (a weight written in between, by the host or by
 * a dispatch recorded later), and vk_ctx_submit_all refuses any recording
 * that would still read one.  A stale entry is retired at the next lookup
 * of its key, the queue drained first, so no running command buffer reads
 * memory that is freed; buffer_free retires the buffer's entries (after
 * its own drain).
 *
 * [backend.vulkan] weight_copies: auto (a quarter of the largest
 * device-local heap), no, or a limit in MiB.  Past the limit new weights
 * are converted per call as before (no eviction: what is kept stays kept).
 */
#include "vk-internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct copy_key {
    uint64_t buf_id;
    size_t offset, rows, cols, ld;
    uint32_t dtype;
} copy_key;

typedef struct copy_entry {
    uint64_t id;                /* what recordings list (ascending in the table) */
    copy_key key;
    const vk_buf *src;
    unsigned long writes;       /* src's write count when the copy was made */
    vk_buf *copy;
} copy_entry;

struct vk_copies {
    pthread_mutex_t lock;
    copy_entry *e;
    size_t count, cap;
    uint64_t last_id;
    VkDeviceSize limit, kept;   /* bytes */
    unsigned long hits, made;
    bool full_logged;
};

static const VkDeviceSize MiB = (VkDeviceSize)1 << 20;

/* A quarter of the largest device-local heap. */
static VkDeviceSize auto_limit(const vk_state *s)
{
    VkDeviceSize largest = 0;
    for (uint32_t i = 0; i < s->mem_props.memoryHeapCount; i++)
        if ((s->mem_props.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            s->mem_props.memoryHeaps[i].size > largest)
            largest = s->mem_props.memoryHeaps[i].size;
    return largest / 4;
}

void vk_copies_init(vk_state *s)
{
    const char *v = s->host->config(s->host, "weight_copies");
    s->copies = NULL;
    if (!s->half_prompt || (v && (!strcasecmp(v, "no") || !strcmp(v, "0"))))
        return;
    VkDeviceSize limit = auto_limit(s);
    if (v && strcasecmp(v, "auto")) {
        char *end;
        unsigned long long mib = strtoull(v, &end, 10);
        if (end == v || *end)
            s->host->log(s->host, RAYO_LOG_WARN, "weight_copies = %s: not auto, no or a size in MiB; "
                         "auto taken", v);
        else
            limit = (VkDeviceSize)mib * MiB;
    }
    struct vk_copies *c = calloc(1, sizeof *c);
    if (!c)
        return;
    pthread_mutex_init(&c->lock, NULL);
    c->limit = limit;
    s->copies = c;
    s->host->log(s->host, RAYO_LOG_DEBUG, "weight_copies: up to %llu MiB of f16 weight copies kept",
                 (unsigned long long)(limit / MiB));
}

static copy_key key_of(const rayo_dev_call *call)
{
    const vk_buf *src = call->b.buf;
    return (copy_key){.buf_id = src->id, .offset = call->b.offset, .rows = call->n, .cols = call->k,
                      .ld = call->ldb ? call->ldb : call->k, .dtype = RAYO_DTYPE_OF(call->dtypes, 1)};
}

static bool same_key(const copy_key *a, const copy_key *b)
{
    return a->buf_id == b->buf_id && a->offset == b->offset && a->rows == b->rows && a->cols == b->cols &&
           a->ld == b->ld && a->dtype == b->dtype;
}

static bool entry_fresh(const copy_entry *e)
{
    return atomic_load(&e->src->writes) == e->writes && !atomic_load(&e->src->device_written);
}

/* The entry with this id (the table is ordered by id), or NULL. */
static const copy_entry *find_id(const struct vk_copies *c, uint64_t id)
{
    size_t lo = 0, hi = c->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->e[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->count && c->e[lo].id == id ? &c->e[lo] : NULL;
}

/* Frees entry i's copy (no command buffer may read it any more: the caller drained the queue). */
static void retire(vk_state *s, struct vk_copies *c, size_t i)
{
    c->kept -= c->e[i].copy->size;
    vk_buf_free(s, c->e[i].copy);
    memmove(&c->e[i], &c->e[i + 1], (c->count - i - 1) * sizeof *c->e);
    c->count--;
}

/* Converts call's b into a new copy of bytes, in a submission of its own,
 * waited for: entered in the table only once made.  (Under c->lock: the
 * submission's check, vk_copies_fresh, takes no lock for a context that
 * reads no copy, as this one.) */
static copy_entry *make(vk_state *s, struct vk_copies *c, const rayo_dev_call *call, VkDeviceSize bytes,
                        vk_copy_maker maker)
{
    copy_entry *table = vk_room_for_one(c->e, &c->cap, c->count, sizeof *c->e);
    if (!table)
        return NULL;
    c->e = table;
    const vk_buf *src = call->b.buf;
    unsigned long writes = atomic_load(&src->writes);
    vk_buf *copy = NULL;
    vk_ctx *own = NULL;
    vk_binding dst;
    rayo_status st = vk_buf_alloc(s, &s->device_pool, bytes, &copy);
    if (st == RAYO_OK)
        st = vk_bind(s, copy, 0, bytes, &dst);
    if (st == RAYO_OK)
        st = vk_ctx_acquire(s, &own);
    if (st == RAYO_OK)
        st = maker(s, own, call, &dst);
    if (st == RAYO_OK)
        st = vk_ctx_submit(s, own);
    if (st == RAYO_OK)
        st = vk_ctx_wait(s, own, UINT64_MAX);
    vk_ctx_release(s, own);
    if (st != RAYO_OK) {
        vk_buf_free(s, copy);
        return NULL;
    }
    copy_entry *e = &c->e[c->count++];
    *e = (copy_entry){.id = ++c->last_id, .key = key_of(call), .src = src, .writes = writes, .copy = copy};
    c->kept += copy->size;
    c->made++;
    return e;
}

/* Lists entry id among those cx reads. */
static bool list_in(vk_ctx *cx, uint64_t id)
{
    uint64_t *ids = vk_room_for_one(cx->copies, &cx->copy_cap, cx->copy_count, sizeof *cx->copies);
    if (!ids)
        return false;
    cx->copies = ids;
    cx->copies[cx->copy_count++] = id;
    return true;
}

/* The fresh entry of call's b: kept, made now where there is room, or NULL. */
static const copy_entry *lookup(vk_state *s, struct vk_copies *c, const rayo_dev_call *call, VkDeviceSize bytes,
                                vk_copy_maker maker)
{
    copy_key key = key_of(call);
    for (size_t i = 0; i < c->count; i++) {
        if (!same_key(&c->e[i].key, &key))
            continue;
        if (entry_fresh(&c->e[i])) {
            c->hits++;
            return &c->e[i];
        }
        if (vk_queue_drain(s) != RAYO_OK)
            return NULL;
        retire(s, c, i);
        break;
    }
    const vk_buf *src = call->b.buf;
    if (atomic_load(&src->device_written))
        return NULL;
    if (c->kept + bytes > c->limit) {
        if (!c->full_logged)
            s->host->log(s->host, RAYO_LOG_DEBUG, "weight_copies: the limit of %llu MiB is reached with %zu "
                         "copies (%llu MiB) kept; further weights are converted per call",
                         (unsigned long long)(c->limit / MiB), c->count, (unsigned long long)(c->kept / MiB));
        c->full_logged = true;
        return NULL;
    }
    return make(s, c, call, bytes, maker);
}

bool vk_weight_copy(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, VkDeviceSize bytes, vk_copy_maker make_copy,
                    vk_binding *out)
{
    struct vk_copies *c = s->copies;
    const vk_buf *src = call->b.buf;
    if (!c || !src->id) /* only an application's buffers: the plugin's own are temporaries */
        return false;
    pthread_mutex_lock(&c->lock);
    const copy_entry *e = lookup(s, c, call, bytes, make_copy);
    bool ok = e && list_in(cx, e->id) && vk_bind(s, e->copy, 0, bytes, out) == RAYO_OK;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

bool vk_copies_fresh(vk_state *s, const vk_ctx *cx)
{
    struct vk_copies *c = s->copies;
    if (!c || !cx->copy_count)
        return true;
    bool fresh = true;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < cx->copy_count && fresh; i++) {
        const copy_entry *e = find_id(c, cx->copies[i]);
        fresh = e && entry_fresh(e);
    }
    pthread_mutex_unlock(&c->lock);
    return fresh;
}

void vk_copies_forget(vk_state *s, const vk_buf *buf)
{
    struct vk_copies *c = s->copies;
    if (!c || !buf || !buf->id)
        return;
    pthread_mutex_lock(&c->lock);
    for (size_t i = c->count; i-- > 0;)
        if (c->e[i].key.buf_id == buf->id)
            retire(s, c, i);
    pthread_mutex_unlock(&c->lock);
}

void vk_copies_fini(vk_state *s)
{
    struct vk_copies *c = s->copies;
    if (!c)
        return;
    s->host->log(s->host, RAYO_LOG_DEBUG, "weight_copies: %lu made, %lu calls served by one, %zu kept (%llu MiB)",
                 c->made, c->hits, c->count, (unsigned long long)(c->kept / MiB));
    while (c->count)
        retire(s, c, c->count - 1);
    free(c->e);
    pthread_mutex_destroy(&c->lock);
    free(c);
    s->copies = NULL;
}
