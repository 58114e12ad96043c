/* SPDX-License-Identifier: MIT */
/* vk-batches.c - the plugin's memory API: device buffers (allocated from the
 * device pool, read and written directly when the memory is host-visible,
 * else through a staging buffer) and batches (command contexts, vk-submit.c,
 * into which vk_record puts the ops; replayed with batch_set_step).  The top layer: it calls
 * the op recorders and the context functions, and neither calls back. */
#include "vk-internal.h"

#include <stdlib.h>
#include <string.h>

static rayo_status mem_buffer_alloc(void *state, size_t bytes, void **buf)
{
    vk_state *s = state;
    vk_buf *b = NULL;
    rayo_status st = vk_buf_alloc_for_app(s, bytes, &b);
    if (st == RAYO_OK)
        b->id = atomic_fetch_add(&s->buf_ids, 1) + 1; /* the key of its kept copies */
    *buf = b;
    return st;
}

static void mem_buffer_free(void *state, void *buf)
{
    vk_state *s = state;
    /* a batch still running may use it: let the queue finish first */
    vk_queue_drain(s);
    vk_copies_forget(s, buf);
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
    rayo_status st = buffer_copy(state, buf, offset, (void *)(uintptr_t)src, bytes, 1);
    /* the buffer's kept weight copies are stale now (also after a failed write) */
    atomic_fetch_add(&((vk_buf *)buf)->writes, 1);
    return st;
}

static rayo_status mem_buffer_read(void *state, void *buf, size_t offset, void *dst, size_t bytes)
{
    return buffer_copy(state, buf, offset, dst, bytes, 0);
}

/* ---- batches ----------------------------------------------------------------
 * A batch is a list of segments, each a context (command buffer) of its
 * own, submitted together in order.  Calls that do not move with the
 * batch's step go into static segments, recorded once and submitted again
 * as they are at every replay; each run of calls that move (rayo_dev_call
 * step fields: a KV-cache slot, an attention's growing length) has a
 * segment of its own, recorded again at the step a submit runs at when that
 * step changed.  A single static call between two moving runs joins them
 * (one context recorded again instead of three submitted: a decode layer's
 * rope of q between the k, v products and the rope of k).  So a decode step
 * replayed at every token re-records only its few moving calls.
 *
 * Recordings are made ahead ([backend.vulkan] record_ahead): once a
 * submit found the step changed (the batch is replayed step after step),
 * right after queueing it the plugin records the next step, while the
 * device runs this one, and the submit at that step queues it as it is.
 * `step` (the default) records the whole batch at the next step into one
 * context: one command buffer a step, with no boundary between the static
 * and moving calls (each costs the device about 6 us on an H200, and a
 * decode step had ~45); `moving` records only the moving segments again.
 * Recording at submit time held the device up: 0.34-0.44 ms of host time
 * before each TinyLlama-shape decode step on an H200, 0.7 ms for the 7B
 * shape.  A step other than the next one is recorded at its submit as
 * before.  The core checks every step an application sets
 * (rayo_batch_set_step), so a recording ahead is only ever submitted at a
 * step found valid; one that fails (a step past the buffers) is dropped. */
typedef struct vk_segment {
    vk_ctx *cx;
    rayo_dev_call *calls;     /* its calls at step 0 (params valid until batch_free) */
    size_t count;
    bool moving;              /* recorded again when the step changes */
    size_t step;              /* the step cx was recorded at */
    size_t recorded;          /* calls recorded into cx (the rest at the first submit) */
    vk_ctx *ahead;            /* moving: recorded at ahead_step (NULL: none) */
    size_t ahead_step;
} vk_segment;

typedef struct vk_batch {
    vk_segment *seg;
    size_t count, cap;
    size_t step;              /* batch_set_step's */
    rayo_status error;        /* the first error while recording */
    vk_ctx **cxs;             /* the segments' contexts, for the submission */
    double begun;             /* profile clock at begin */
    bool submitted_once;
    bool stepping;            /* a submit found the step changed: record ahead */
    vk_ctx *whole;            /* the whole batch recorded at whole_step (record_ahead = step) */
    size_t whole_step;
    vk_ctx *running;          /* the whole-batch context last submitted (NULL: the segments were) */
    bool logged;              /* its recording ahead was logged */
    vk_ctx *ahead;            /* until the first submit: the calls recorded ahead, for
                               * their pipelines only (compile_threads; NULL: none) */
    bool deferring;           /* a call's pipeline was queued: it and the later calls are
                               * recorded at the first submit */
    bool whole_started;       /* a whole recording's pipelines were started ahead */
} vk_batch;

static size_t calls_of(const vk_batch *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->count; i++)
        n += b->seg[i].count;
    return n;
}

static bool call_moves(const rayo_dev_call *c)
{
    return (c->step_bytes[0] | c->step_bytes[1] | c->step_bytes[2] | c->step_bytes[3]) || c->step_flags;
}

/* A new last segment with a fresh context. */
static rayo_status add_segment(vk_state *s, vk_batch *b, bool moving)
{
    if (b->count == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 8;
        vk_segment *grown = realloc(b->seg, cap * sizeof *grown);
        vk_ctx **cxs = grown ? realloc(b->cxs, cap * sizeof *cxs) : NULL;
        if (grown)
            b->seg = grown;
        if (!cxs)
            return RAYO_E_NOMEM;
        b->cxs = cxs;
        b->cap = cap;
    }
    vk_segment *g = &b->seg[b->count];
    *g = (vk_segment){NULL, NULL, 0, moving, b->step, 0, NULL, 0};
    rayo_status st = vk_ctx_acquire(s, &g->cx);
    if (st != RAYO_OK)
        return st;
    vk_profile_begin(s, g->cx);
    b->cxs[b->count++] = g->cx;
    return RAYO_OK;
}

/* Records one call (as it runs at the step to record) into cx. */
static rayo_status record_one(vk_state *s, vk_ctx *cx, const rayo_dev_call *at)
{
    rayo_status st = vk_record(s, cx, at);
    if (st != RAYO_OK && cx->error == RAYO_OK)
        cx->error = st;
    if (st == RAYO_OK)
        vk_profile_op(s, cx, at);
    return st;
}

/* Records one call into cx as it runs at `step`. */
static rayo_status record_at(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, size_t step)
{
    rayo_dev_call at;
    rayo_attention_params attn;
    rayo_dev_call_at_step(call, step, &at, &attn);
    return record_one(s, cx, &at);
}

/* A context whose recordings only find the pipelines they need, starting
 * the compilation of those not made yet on the plugin's workers (a first
 * run's driver compiles each for 0.04-0.6 s on an H200: side by side, not
 * one after the other as the calls come). */
static rayo_status ahead_ctx(vk_state *s, vk_ctx **out)
{
    *out = NULL;
    rayo_status st = s->compile_threads ? vk_ctx_acquire(s, out) : RAYO_E_UNSUPPORTED;
    if (st == RAYO_OK) {
        (*out)->ahead = true;
        (*out)->prof_count = 0; /* no timestamps */
    }
    return st;
}

/* Keeps a call of the segment and records it into its context at the
 * batch's step.  While the batch records ahead it goes there first: where
 * that queued one of its pipelines for compiling, the call and every later
 * one wait for the first submit (record_pending), so that the compiling
 * goes on while the application records the rest; else it is recorded
 * now, as without compile threads. */
static rayo_status add_call(vk_state *s, vk_batch *b, vk_segment *g, const rayo_dev_call *call)
{
    rayo_dev_call *grown = realloc(g->calls, (g->count + 1) * sizeof *grown);
    if (!grown)
        return RAYO_E_NOMEM;
    g->calls = grown;
    rayo_dev_call_copy(call, &g->calls[g->count++]);
    const rayo_dev_call *kept = &g->calls[g->count - 1];
    if (b->ahead) {
        unsigned long queued = atomic_load(&s->jobs_queued);
        rayo_status st = record_at(s, b->ahead, kept, b->step);
        b->deferring = b->deferring || atomic_load(&s->jobs_queued) != queued;
        if (st != RAYO_OK || b->deferring)
            return st;
    }
    g->recorded = g->count;
    return record_at(s, g->cx, kept, b->step);
}

/* At the first submit: the calls recorded ahead, recorded into their
 * segments' contexts (at each one's step, as queue_step expects) while
 * their pipelines compile. */
static rayo_status record_pending(vk_state *s, vk_batch *b)
{
    rayo_status st = RAYO_OK;
    size_t pending = 0;
    for (size_t i = 0; i < b->count && st == RAYO_OK; i++) {
        vk_segment *g = &b->seg[i];
        for (; g->recorded < g->count && st == RAYO_OK; pending++)
            st = record_at(s, g->cx, &g->calls[g->recorded++], g->step);
    }
    if (pending)
        s->host->log(s->host, RAYO_LOG_DEBUG, "%zu of a batch's %zu calls recorded at its first submit, "
                     "their new pipelines compiled meanwhile (compile_threads)", pending, calls_of(b));
    vk_ctx_release(s, b->ahead);
    b->ahead = NULL;
    return st;
}

/* Before a moving call: a last static segment of one call after a moving
 * one gives its call to that one (its own recording is dropped unsubmitted). */
static rayo_status join_lone_call(vk_state *s, vk_batch *b)
{
    if (b->count < 2 || b->seg[b->count - 1].moving || b->seg[b->count - 1].count != 1 ||
        !b->seg[b->count - 2].moving)
        return RAYO_OK;
    vk_segment lone = b->seg[--b->count];
    rayo_status st = add_call(s, b, &b->seg[b->count - 1], &lone.calls[0]);
    vk_ctx_release(s, lone.cx);
    free(lone.calls);
    return st;
}

static rayo_status mem_batch_begin(void *state, void **batch)
{
    vk_batch *b = calloc(1, sizeof *b);
    if (!b)
        return RAYO_E_NOMEM;
    b->begun = vk_profile_clock(state);
    (void)ahead_ctx(state, &b->ahead); /* none: each call recorded as it comes */
    rayo_status st = add_segment(state, b, false);
    if (st != RAYO_OK) {
        vk_ctx_release(state, b->ahead);
        free(b->seg);
        free(b->cxs);
        free(b);
        b = NULL;
    }
    *batch = b;
    return st;
}

static rayo_status mem_batch_record(void *state, void *batch, const rayo_dev_call *call)
{
    vk_batch *b = batch;
    if (b->submitted_once)
        return RAYO_E_STATE;
    if (b->error != RAYO_OK)
        return b->error;
    bool moving = call_moves(call);
    rayo_status st = moving ? join_lone_call(state, b) : RAYO_OK;
    if (st == RAYO_OK && moving != b->seg[b->count - 1].moving)
        st = add_segment(state, b, moving);
    if (st == RAYO_OK)
        st = add_call(state, b, &b->seg[b->count - 1], call);
    if (st != RAYO_OK)
        b->error = st;
    return st;
}

static rayo_status mem_batch_set_step(void *state, void *batch, size_t step)
{
    (void)state;
    ((vk_batch *)batch)->step = step;
    return RAYO_OK;
}

/* Where the plugin runs neighbouring calls as one dispatch: an add and the
 * rmsnorm of its sum; an rmsnorm and the relaxed 8-bit gemvs of its output
 * that follow it (each normalising x itself, the first storing the norm's
 * output), with, where they follow, the ropes of q and k (in the q and k
 * products) or the swiglu of gate and up (gate, up and swiglu in one).
 * Records calls[0] (and those fused with it) into cx at `step`; returns
 * how many it took. */
#define FUSE_MAX 6 /* an rmsnorm, the q, k and v products, the ropes of q and k */

/* The product gemv of norm's output with the norm in it, else alone. */
static rayo_status record_norm_product(vk_state *s, vk_ctx *cx, const rayo_dev_call *norm, const rayo_dev_call *gemv)
{
    rayo_status st = vk_record_norm_gemv(s, cx, norm, gemv, false);
    if (st == RAYO_E_UNSUPPORTED)
        return record_one(s, cx, gemv);
    if (st == RAYO_OK)
        vk_profile_op(s, cx, gemv);
    return st;
}

/* at[0 .. 6): rmsnorm, q, k, v products, ropes of q and k (vk_norm_ropes_suit):
 * q's and k's products with their ropes, then v's (the ropes before v's
 * product: the check found that v's reads and writes meet none of theirs),
 * each with the norm in it (v's alone where it does not fuse: q's dispatch
 * stored the norm's output); each rope's time under its product's.  0
 * where nothing was recorded (q's rope does not fuse after all). */
static size_t record_norm_ropes(vk_state *s, vk_ctx *cx, const rayo_dev_call *at, rayo_status *st)
{
    *st = vk_record_norm_gemv_rope(s, cx, &at[0], &at[1], &at[4], true);
    if (*st == RAYO_E_UNSUPPORTED)
        return 0;
    if (*st != RAYO_OK)
        return 6;
    vk_profile_op(s, cx, &at[1]);
    bool rope_k_later = false;
    *st = vk_record_norm_gemv_rope(s, cx, &at[0], &at[2], &at[5], false);
    if (*st == RAYO_E_UNSUPPORTED) {
        rope_k_later = true;
        *st = record_norm_product(s, cx, &at[0], &at[2]);
    } else if (*st == RAYO_OK) {
        vk_profile_op(s, cx, &at[2]);
    }
    if (*st == RAYO_OK)
        *st = record_norm_product(s, cx, &at[0], &at[3]);
    if (*st == RAYO_OK && rope_k_later)
        *st = record_one(s, cx, &at[5]);
    return 6;
}

/* at[0], an rmsnorm, and what fuses with it (see record_fused_at); 0: none. */
static size_t record_norm_fused(vk_state *s, vk_ctx *cx, const rayo_dev_call *at, size_t n, rayo_status *st)
{
    const rayo_dev_call *six[6] = {&at[0], &at[1], &at[2], &at[3], &at[4], &at[5]};
    if (n >= 6 && vk_norm_ropes_suit(s, six)) {
        size_t took = record_norm_ropes(s, cx, at, st);
        if (took)
            return took;
    }
    if (n >= 4) {
        rayo_status fused = vk_record_norm_glu(s, cx, &at[0], &at[1], &at[2], &at[3], true);
        if (fused != RAYO_E_UNSUPPORTED) {
            *st = fused;
            if (fused == RAYO_OK)
                vk_profile_op(s, cx, &at[1]); /* gate's time holds up's, swiglu's and the norm's */
            return 4;
        }
    }
    size_t took = 0;
    for (size_t g = 1; g < n && *st == RAYO_OK; g++) {
        rayo_status fused = vk_record_norm_gemv(s, cx, &at[0], &at[g], g == 1);
        if (fused == RAYO_E_UNSUPPORTED)
            break;
        *st = fused;
        took = g + 1;
        if (fused == RAYO_OK)
            vk_profile_op(s, cx, &at[g]); /* each product's time holds the norm's too */
    }
    return took;
}

static size_t record_fused_at(vk_state *s, vk_ctx *cx, const rayo_dev_call *const *calls, size_t left, size_t step,
                              rayo_status *st)
{
    rayo_dev_call at[FUSE_MAX];
    rayo_attention_params attn[FUSE_MAX];
    size_t n = left < FUSE_MAX ? left : FUSE_MAX, took = 0;
    for (size_t i = 0; i < n; i++)
        rayo_dev_call_at_step(calls[i], step, &at[i], &attn[i]);
    *st = RAYO_OK;
    if (n >= 2 && at[0].op == RAYO_OP_ADD) {
        rayo_status fused = vk_record_add_rmsnorm(s, cx, &at[0], &at[1]);
        if (fused != RAYO_E_UNSUPPORTED) {
            *st = fused;
            took = 2;
            if (fused == RAYO_OK)
                vk_profile_op(s, cx, &at[1]); /* the pair's time under the rmsnorm */
        }
    } else if (at[0].op == RAYO_OP_RMSNORM) {
        took = record_norm_fused(s, cx, at, n, st);
    }
    if (!took) {
        *st = record_at(s, cx, calls[0], step);
        return 1;
    }
    if (*st != RAYO_OK && cx->error == RAYO_OK)
        cx->error = *st;
    return took;
}

/* calls[0 .. total) recorded into cx at `step`, neighbours fused; *fused
 * (where not NULL): how many went into the dispatch of the one before. */
static rayo_status record_fused_all(vk_state *s, vk_ctx *cx, const rayo_dev_call *const *calls, size_t total,
                                    size_t step, size_t *fused)
{
    rayo_status st = RAYO_OK;
    size_t recorded = 0;
    for (size_t k = 0; k < total && st == RAYO_OK; recorded++)
        k += record_fused_at(s, cx, calls + k, total - k, step, &st);
    if (fused)
        *fused = total - recorded;
    return st;
}

/* A first pass over the calls into a context recording ahead: every
 * pipeline they need starts compiling at once. */
static void start_pipelines(vk_state *s, const rayo_dev_call *const *calls, size_t total, size_t step)
{
    vk_ctx *cx;
    if (ahead_ctx(s, &cx) != RAYO_OK)
        return;
    (void)record_fused_all(s, cx, calls, total, step, NULL); /* errors: the real recording says */
    vk_ctx_release(s, cx);
}

/* A new context holding the calls of segments segs[0 .. n) as they run at
 * `step`, neighbouring calls fused where the plugin can ([backend.vulkan]
 * fuse): the batch's calls are all known here, unlike at its first
 * recording, call by call; *fused (where not NULL) says how many were
 * recorded with the call before them; `first`: its pipelines are started
 * ahead (start_pipelines). */
static rayo_status record_new(vk_state *s, const vk_segment *segs, size_t n, size_t step, vk_ctx **out,
                              size_t *fused, bool first)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += segs[i].count;
    const rayo_dev_call **calls = malloc((total ? total : 1) * sizeof *calls);
    if (!calls)
        return RAYO_E_NOMEM;
    for (size_t i = 0, k = 0; i < n; i++)
        for (size_t j = 0; j < segs[i].count; j++)
            calls[k++] = &segs[i].calls[j];
    if (first) /* the pipelines of its fused dispatches are new */
        start_pipelines(s, calls, total, step);
    vk_ctx *cx;
    rayo_status st = vk_ctx_acquire(s, &cx);
    if (st == RAYO_OK) {
        vk_profile_begin(s, cx);
        st = record_fused_all(s, cx, calls, total, step, fused);
        if (st != RAYO_OK)
            vk_ctx_release(s, cx);
        else
            *out = cx;
    }
    free(calls);
    return st;
}

/* A moving segment as it runs at the batch's step (the batch is idle): its
 * recording ahead where that was made at this step, else a new one. */
static rayo_status rerecord(vk_state *s, vk_batch *b, vk_segment *g)
{
    vk_ctx *cx = NULL;
    if (g->ahead && g->ahead_step == b->step) {
        cx = g->ahead;
        g->ahead = NULL;
    } else {
        rayo_status st = record_new(s, g, 1, b->step, &cx, NULL, false);
        if (st != RAYO_OK)
            return st;
    }
    vk_ctx_release(s, g->cx);
    g->cx = cx;
    b->cxs[g - b->seg] = cx;
    g->step = b->step;
    return RAYO_OK;
}

/* After queueing a step of a batch replayed step after step: the next
 * step recorded while the device runs this one (the whole batch, or each
 * moving segment). */
static void record_ahead(vk_state *s, vk_batch *b)
{
    size_t next = b->step + 1;
    if (s->record_ahead == VK_AHEAD_NO || !b->stepping || next == 0)
        return;
    if (s->record_ahead == VK_AHEAD_STEP) {
        if (!b->whole || b->whole_step != next) {
            vk_ctx_release(s, b->whole); /* made at another step */
            b->whole = NULL;
            size_t fused;
            bool first = !b->whole_started;
            b->whole_started = true;
            if (record_new(s, b->seg, b->count, next, &b->whole, &fused, first) == RAYO_OK) {
                b->whole_step = next;
                if (!b->logged)
                    s->host->log(s->host, RAYO_LOG_DEBUG, "a replayed batch recorded ahead: %zu calls, %zu of "
                                 "them in the dispatch of the one before (fuse)", calls_of(b), fused);
                b->logged = true;
            }
        }
        return;
    }
    for (size_t i = 0; i < b->count; i++) {
        vk_segment *g = &b->seg[i];
        if (!g->moving || (g->ahead && g->ahead_step == next))
            continue;
        vk_ctx_release(s, g->ahead); /* made at another step */
        g->ahead = NULL;
        if (record_new(s, g, 1, next, &g->ahead, NULL, false) == RAYO_OK)
            g->ahead_step = next;
    }
}

/* A recording reading a weight's kept f16 copy that a write made stale
 * since (vk-weight-copies.c) is dropped and the segment recorded again
 * (the new recording makes the copy again, or converts per call). */
static rayo_status drop_stale(vk_state *s, vk_batch *b)
{
    if (b->whole && !vk_copies_fresh(s, b->whole)) {
        vk_ctx_release(s, b->whole);
        b->whole = NULL;
    }
    rayo_status st = RAYO_OK;
    for (size_t i = 0; i < b->count && st == RAYO_OK; i++) {
        vk_segment *g = &b->seg[i];
        if (g->ahead && !vk_copies_fresh(s, g->ahead)) {
            vk_ctx_release(s, g->ahead);
            g->ahead = NULL;
        }
        if (!vk_copies_fresh(s, g->cx))
            st = rerecord(s, b, g);
    }
    return st;
}

/* The contexts the last submit queued, in order. */
static vk_ctx *const *queued(const vk_batch *b, size_t *n)
{
    *n = b->running ? 1 : b->count;
    return b->running ? &b->running : b->cxs;
}

/* Queues the batch at its step: the whole batch recorded ahead at it, or
 * the segments, moving ones recorded again where their step differs. */
static rayo_status queue_step(vk_state *s, vk_batch *b)
{
    vk_ctx_release(s, b->running); /* the batch is idle: done with it */
    b->running = NULL;
    rayo_status st = drop_stale(s, b);
    if (st != RAYO_OK)
        return st;
    if (b->whole && b->whole_step == b->step) {
        b->running = b->whole;
        b->whole = NULL;
    }
    for (size_t i = 0; i < b->count && st == RAYO_OK; i++)
        if (b->seg[i].moving && b->seg[i].step != b->step) {
            b->stepping = true;
            if (!b->running)
                st = rerecord(s, b, &b->seg[i]);
        }
    size_t n;
    vk_ctx *const *cxs = queued(b, &n);
    for (size_t i = 0; i < n; i++)
        vk_profile_submitted(s, cxs[i]);
    return st;
}

static rayo_status mem_batch_submit(void *state, void *batch)
{
    vk_state *s = state;
    vk_batch *b = batch;
    if (b->error != RAYO_OK)
        return b->error;
    double t0 = b->submitted_once ? vk_profile_clock(s) : b->begun;
    rayo_status st = b->submitted_once ? RAYO_OK : record_pending(s, b);
    if (st == RAYO_OK)
        st = queue_step(s, b);
    vk_profile_host(s, t0);
    size_t n;
    vk_ctx *const *cxs = queued(b, &n);
    if (st == RAYO_OK)
        st = vk_ctx_submit_all(s, cxs, n);
    b->submitted_once = true;
    if (st != RAYO_OK)
        b->error = st;
    else
        record_ahead(s, b);
    return st;
}

static rayo_status mem_batch_wait(void *state, void *batch, uint64_t timeout_ns)
{
    vk_batch *b = batch;
    if (b->error != RAYO_OK)
        return b->error;
    size_t n;
    vk_ctx *const *cxs = queued(b, &n);
    /* all were submitted together: the last one done is all of them done */
    rayo_status st = vk_ctx_wait(state, cxs[n - 1], timeout_ns);
    for (size_t i = 0; i + 1 < n && st == RAYO_OK; i++)
        st = vk_ctx_wait(state, cxs[i], 0);
    for (size_t i = 0; i < n && st == RAYO_OK; i++)
        vk_profile_collect(state, cxs[i]);
    return st;
}

static void mem_batch_free(void *state, void *batch)
{
    vk_batch *b = batch;
    for (size_t i = 0; i < b->count; i++) {
        vk_ctx_release(state, b->seg[i].cx);
        vk_ctx_release(state, b->seg[i].ahead);
        free(b->seg[i].calls);
    }
    vk_ctx_release(state, b->whole);
    vk_ctx_release(state, b->running);
    vk_ctx_release(state, b->ahead);
    free(b->seg);
    free(b->cxs);
    free(b);
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
    .batch_set_step = mem_batch_set_step,
};
