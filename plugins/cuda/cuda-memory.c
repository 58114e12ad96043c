/* SPDX-License-Identifier: MIT */
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

enum batch_state { BATCH_RECORDING, BATCH_SUBMITTED, BATCH_DONE };

/* A batch: its ops, and the calls they came from (for the step).  Replayed
 * (submitted again after a wait), it launches a CUDA graph of its ops'
 * kernels, built at the second submit; a step that moves an op sets that
 * op's kernel nodes in place (the others stay as they are).  Right after a
 * graph launch at step s, the ops and their nodes already move to s + 1,
 * replay's usual next step, while the GPU runs step s (apply_next_step). */
typedef struct cuda_batch {
    cuda_op *ops;
    rayo_dev_call *calls;         /* full size, at step 0, with their step fields */
    rayo_attention_params *attn;  /* an op's parameters at the step (RAYO_STEP_KV_LENGTH) */
    size_t count, cap;
    enum batch_state state;
    rayo_status status;   /* first error while queueing */
    CUstream stream;
    CUevent done;
    CUdeviceptr scratch;
    size_t scratch_bytes;
    size_t step;          /* set by batch_set_step: the step the next submit runs */
    size_t ops_step;      /* the step ops (and the graph's nodes but those of moved_op) are at */
    int new_ops;          /* ops recorded (at step 0) since the ops were set to a step */
    CUgraph graph;        /* the ops' kernels as a chain of kernel nodes */
    CUgraphExec exec;     /* NULL: not built (yet), or graphs off */
    CUgraphNode *nodes;   /* of graph, in launch order */
    size_t node_count, node_cap;
    size_t *first_node;   /* per op: its first node and how many it has */
    size_t *op_nodes;
    unsigned char *op_group; /* per op: ops launched with it (cuda_launch_group), 0 when in an earlier one's */
    unsigned char *moved_op; /* per op: its nodes' parameters are out of date */
    int graph_stale;      /* build the graph anew */
    int no_graph;         /* launch one by one (no graphs, or building one failed) */
    size_t submits;       /* the first launches one by one: a graph pays off on replay */
} cuda_batch;

/* While a thread builds or updates a batch's graph, its launches become
 * kernel nodes (cuda_launch_kernel). */
typedef struct graph_rec {
    cuda_state *st;
    cuda_batch *b;
    int update;           /* 0: append nodes to b->graph; 1: set b->nodes[next..end) in b->exec */
    size_t next, end;
} graph_rec;
static _Thread_local graph_rec *recording;

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
    cuda_state *st = state;
    cuda_batch *b = calloc(1, sizeof *b);
    if (!b)
        return RAYO_E_NOMEM;
    b->state = BATCH_RECORDING;
    b->no_graph = !st->drv->has_graphs || !st->use_graphs;
    *out = b;
    return RAYO_OK;
}

static CUdeviceptr operand(const rayo_dev_operand *o)
{
    return o->buf ? ((cuda_buffer *)o->buf)->ptr + o->offset : 0;
}

static cuda_op op_of(const rayo_dev_call *call)
{
    return (cuda_op){call->op, call->flags, call->m, call->n, call->k, call->alpha, call->beta,
                     operand(&call->a), operand(&call->b), operand(&call->c), operand(&call->y), 0,
                     call->dtypes, call->lda, call->ldb, call->ldy, call->params, call->precision, 0,
                     cuda_family_of(call->op, call->dtypes)};
}

/* The array at *(void **)array resized to cap elements of `size` bytes;
 * 0 when out of memory (the array then stays as it was). */
static int resize(void *array, size_t cap, size_t size)
{
    void **p = array, *grown = realloc(*p, cap * size);
    if (grown)
        *p = grown;
    return grown != NULL;
}

/* Room for one more op in each per-op array. */
static rayo_status grow(cuda_batch *b)
{
    if (b->count < b->cap)
        return RAYO_OK;
    size_t cap = b->cap ? b->cap * 2 : 16;
    if (!resize(&b->ops, cap, sizeof *b->ops) || !resize(&b->calls, cap, sizeof *b->calls) ||
        !resize(&b->attn, cap, sizeof *b->attn) || !resize(&b->first_node, cap, sizeof *b->first_node) ||
        !resize(&b->op_nodes, cap, sizeof *b->op_nodes) || !resize(&b->moved_op, cap, 1) ||
        !resize(&b->op_group, cap, 1))
        return RAYO_E_NOMEM;
    b->cap = cap;
    return RAYO_OK;
}

static rayo_status batch_record(void *state, void *batch, const rayo_dev_call *in)
{
    cuda_state *st = state;
    cuda_batch *b = batch;
    if (b->state != BATCH_RECORDING)
        return RAYO_E_STATE;
    rayo_dev_call call;
    rayo_dev_call_copy(in, &call);
    cuda_op op = op_of(&call);
    if ((call.lda | call.ldb | call.ldc | call.ldy) && !(op.family && op.family->strided))
        return RAYO_E_UNSUPPORTED; /* row strides: only some ops on cuda yet */
    rayo_status s = cuda_op_check(st, &op);
    if (s == RAYO_OK)
        s = grow(b);
    if (s != RAYO_OK)
        return s; /* not recorded: the core passes the call on */
    size_t need = cuda_scratch_bytes(st, &op);
    if (need > b->scratch_bytes)
        b->scratch_bytes = need;
    b->ops[b->count] = op;
    b->moved_op[b->count] = 0;
    b->op_group[b->count] = 1;
    b->calls[b->count++] = call;
    b->new_ops = 1; /* the new op is at step 0: set it to the batch's step */
    return RAYO_OK;
}

static rayo_status batch_set_step(void *state, void *batch, size_t step)
{
    (void)state;
    cuda_batch *b = batch;
    if (b->state == BATCH_SUBMITTED)
        return RAYO_E_STATE;
    b->step = step;
    return RAYO_OK;
}

static int moves_with_step(const rayo_dev_call *c)
{
    return (c->step_bytes[0] | c->step_bytes[1] | c->step_bytes[2] | c->step_bytes[3] | c->step_flags) != 0;
}

/* Op i as it runs at `step` (its parameters at the step in *attn), with the
 * scratch it has now. */
static cuda_op op_at_step(const cuda_batch *b, size_t i, size_t step, rayo_attention_params *attn)
{
    rayo_dev_call at;
    rayo_dev_call_at_step(&b->calls[i], step, &at, attn);
    cuda_op op = op_of(&at);
    op.scratch = b->ops[i].scratch;
    op.scratch_size = b->ops[i].scratch_size;
    return op;
}

/* The scratch the ops need at `step` (an attention's partials grow with its
 * length); the ops stay as they are. */
static size_t step_scratch(cuda_state *st, const cuda_batch *b, size_t step)
{
    size_t need = 0;
    for (size_t i = 0; i < b->count; i++) {
        if (!moves_with_step(&b->calls[i]))
            continue;
        rayo_attention_params attn;
        cuda_op op = op_at_step(b, i, step, &attn);
        size_t n = cuda_scratch_bytes(st, &op);
        need = n > need ? n : need;
    }
    return need;
}

/* The ops whose calls move with the step, set to `step`; the scratch they
 * then need. */
static size_t apply_step(cuda_state *st, cuda_batch *b, size_t step)
{
    size_t need = 0;
    for (size_t i = 0; i < b->count; i++) {
        if (!moves_with_step(&b->calls[i]))
            continue;
        b->ops[i] = op_at_step(b, i, step, &b->attn[i]);
        b->moved_op[i] = 1;
        size_t n = cuda_scratch_bytes(st, &b->ops[i]);
        need = n > need ? n : need;
    }
    b->ops_step = step;
    b->new_ops = 0;
    return need;
}

/* Every op's scratch: the batch's, at least `need` bytes (the batch is not
 * running: its old scratch can go). */
static rayo_status set_scratch(cuda_state *st, cuda_batch *b, size_t need)
{
    if (need > b->scratch_bytes || (!b->scratch && b->scratch_bytes)) {
        size_t bytes = need > b->scratch_bytes ? need + need / 2 : b->scratch_bytes;
        if (b->scratch)
            st->drv->cuMemFree(b->scratch);
        b->scratch = 0;
        b->scratch_bytes = 0;
        CUresult r = bytes ? st->drv->cuMemAlloc(&b->scratch, bytes) : CUDA_SUCCESS;
        if (r != CUDA_SUCCESS)
            return cuda_fail(st, r, "batch scratch (cuMemAlloc)");
        b->scratch_bytes = b->scratch ? bytes : 0;
        b->graph_stale = 1;
    }
    for (size_t i = 0; i < b->count; i++) {
        b->ops[i].scratch = b->scratch;
        b->ops[i].scratch_size = b->scratch_bytes;
    }
    return RAYO_OK;
}

/* The stream, its event and the scratch the ops share, made at the first submit. */
static rayo_status prepare(cuda_state *st, cuda_batch *b)
{
    const cuda_driver *drv = st->drv;
    CUresult r = drv->cuStreamCreate(&b->stream, CU_STREAM_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = drv->cuEventCreate(&b->done, CU_EVENT_DISABLE_TIMING);
    return r == CUDA_SUCCESS ? set_scratch(st, b, b->scratch_bytes) : cuda_fail(st, r, "batch submit");
}

rayo_status launch_all_plain(cuda_state *st, CUstream stream, const cuda_op *ops, size_t count)
{
    rayo_status s = RAYO_OK;
    for (size_t i = 0, n; i < count && s == RAYO_OK; i += n) {
        n = cuda_launch_group(st, &ops[i], count - i);
        s = cuda_launch_ops(st, stream, &ops[i], n);
    }
    return s;
}

static rayo_status launch_all(cuda_state *st, cuda_batch *b)
{
    return launch_all_plain(st, b->stream, b->ops, b->count);
}

/* A kernel node after prev by a programmatic edge: its blocks may be
 * launched while prev runs, and wait in griddepcontrol.wait (every sm_90
 * kernel's first instruction) until prev has completed, its memory visible.
 * Where the driver refuses that edge, an ordinary one. */
static CUresult add_node_programmatic(cuda_state *st, CUgraph graph, const CUgraphNode *prev, CUgraphNode *node,
                                      const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = st->drv->cuGraphAddKernelNode(node, graph, NULL, 0, p);
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphEdgeData edge = {CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC, 0, CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC, {0}};
    if (st->drv->cuGraphAddDependencies_v2(graph, prev, node, &edge, 1) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    CUgraphEdgeData plain = {0};
    return st->drv->cuGraphAddDependencies_v2(graph, prev, node, &plain, 1);
}

/* Whether a kernel of `blocks` blocks of `threads` threads follows the one
 * before it by a programmatic edge.  Launched early, its blocks take the
 * room free on the SMs at that moment, then the room the kernel before frees
 * first: two blocks to an SM where two fit, though on an idle GPU each would
 * have had an SM of its own.  For a grid of big blocks (a quarter of an SM's
 * threads) numbering between half the SMs and the SMs, that costs more than
 * the launch it hides (on an H200, TinyLlama's 2048-row gemvs, 128 blocks of
 * 512 threads on 132 SMs: about 2 us each), so these follow by an ordinary
 * edge.  Fuller grids fill every SM either way, fewer blocks are a short
 * kernel whose launch is most of its time, and small blocks share an SM at
 * little cost. */
static int programmatic_into(const cuda_state *st, unsigned blocks, unsigned threads)
{
    unsigned sms = (unsigned)st->sm_count;
    return threads < 512 || blocks >= sms || 2 * blocks <= sms;
}

CUresult cuda_launch_kernel(cuda_state *st, CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned smem, CUstream stream, void **params, void **extra)
{
    graph_rec *g = recording;
    if (!g || g->st != st)
        return st->drv->cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra);
    CUDA_KERNEL_NODE_PARAMS p = {fn, gx, gy, gz, bx, by, bz, smem, params, extra, NULL, NULL};
    cuda_batch *b = g->b;
    if (g->update) /* the op must launch as many kernels as when the graph was built */
        return g->next < g->end ? st->drv->cuGraphExecKernelNodeSetParams(b->exec, b->nodes[g->next++], &p)
                                : CUDA_ERROR_INVALID_VALUE;
    if (b->node_count == b->node_cap) {
        size_t cap = b->node_cap ? 2 * b->node_cap : 64;
        if (!resize(&b->nodes, cap, sizeof *b->nodes))
            return CUDA_ERROR_OUT_OF_MEMORY;
        b->node_cap = cap;
    }
    const CUgraphNode *prev = b->node_count ? &b->nodes[b->node_count - 1] : NULL;
    int programmatic = prev && st->pdl_edges && programmatic_into(st, gx * gy * gz, bx * by * bz);
    CUresult r = programmatic ? add_node_programmatic(st, b->graph, prev, &b->nodes[b->node_count], &p)
                              : st->drv->cuGraphAddKernelNode(&b->nodes[b->node_count], b->graph, prev,
                                                              prev ? 1 : 0, &p);
    b->node_count += r == CUDA_SUCCESS;
    return r;
}

static void drop_graph(cuda_state *st, cuda_batch *b)
{
    if (b->exec)
        st->drv->cuGraphExecDestroy(b->exec);
    if (b->graph)
        st->drv->cuGraphDestroy(b->graph);
    b->exec = NULL;
    b->graph = NULL;
    b->node_count = 0;
}

/* The ops' kernels as a chain of kernel nodes, instantiated into b->exec
 * (from the second submit on: the first launches them one by one).
 * RAYO_E_UNSUPPORTED when that failed (nothing was queued). */
static rayo_status build_graph(cuda_state *st, cuda_batch *b)
{
    drop_graph(st, b);
    if (st->drv->cuGraphCreate(&b->graph, 0) != CUDA_SUCCESS) {
        b->graph = NULL;
        return RAYO_E_UNSUPPORTED;
    }
    graph_rec g = {st, b, 0, 0, 0};
    rayo_status s = RAYO_OK;
    recording = &g;
    for (size_t i = 0, n; i < b->count && s == RAYO_OK; i += n) {
        n = cuda_launch_group(st, &b->ops[i], b->count - i);
        b->first_node[i] = b->node_count;
        s = cuda_launch_ops(st, b->stream, &b->ops[i], n);
        for (size_t j = i; j < i + n; j++) { /* the group's nodes are its first op's */
            b->first_node[j] = b->first_node[i];
            b->op_nodes[j] = j == i ? b->node_count - b->first_node[i] : 0;
            b->op_group[j] = j == i ? (unsigned char)n : 0;
            b->moved_op[j] = 0;
        }
    }
    recording = NULL;
    if (s != RAYO_OK || st->drv->cuGraphInstantiate(&b->exec, b->graph, 0) != CUDA_SUCCESS) {
        b->exec = NULL;
        drop_graph(st, b);
        return RAYO_E_UNSUPPORTED;
    }
    b->graph_stale = 0;
    return RAYO_OK;
}

/* The nodes of the ops the step moved, set in place in b->exec (each
 * launch group with a moved op launched again into its own nodes).
 * RAYO_E_UNSUPPORTED when a group launched other kernels than before, or
 * the ops group otherwise: the graph is then built anew. */
static rayo_status update_moved(cuda_state *st, cuda_batch *b)
{
    rayo_status s = RAYO_OK;
    for (size_t i = 0, n; i < b->count && s == RAYO_OK; i += n) {
        n = b->op_group[i] ? b->op_group[i] : 1;
        int moved = 0;
        for (size_t j = i; j < i + n && j < b->count; j++) {
            moved |= b->moved_op[j];
            b->moved_op[j] = 0;
        }
        if (!moved)
            continue;
        if (cuda_launch_group(st, &b->ops[i], b->count - i) != n)
            return RAYO_E_UNSUPPORTED;
        graph_rec g = {st, b, 1, b->first_node[i], b->first_node[i] + b->op_nodes[i]};
        recording = &g;
        s = cuda_launch_ops(st, b->stream, &b->ops[i], n);
        recording = NULL;
        if (s != RAYO_OK || g.next != g.end)
            s = RAYO_E_UNSUPPORTED;
    }
    return s;
}

/* The ops on the batch's stream: through its graph (*by_graph 1), or one
 * by one. */
static rayo_status run_ops(cuda_state *st, cuda_batch *b, int *by_graph)
{
    if (st->profile)
        return cuda_profile_launch(st, b->stream, b->ops, b->count);
    if (b->submits++ == 0 || b->no_graph)
        return launch_all(st, b);
    if (b->exec && !b->graph_stale && update_moved(st, b) != RAYO_OK)
        b->graph_stale = 1;
    if ((!b->exec || b->graph_stale) && build_graph(st, b) != RAYO_OK) {
        st->host->log(st->host, RAYO_LOG_DEBUG, "batch of %zu ops: no graph, launched one by one", b->count);
        b->no_graph = 1;
        return launch_all(st, b);
    }
    CUresult r = st->drv->cuGraphLaunch(b->exec, b->stream);
    *by_graph = r == CUDA_SUCCESS;
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, "cuGraphLaunch");
}

/* Replay's usual next step, ops_step + 1, applied to the ops and their
 * graph nodes while the GPU runs the launch just queued, so that the next
 * submit at that step has nothing left to update.  A node's new parameters
 * take effect at the exec's next launch; the one queued keeps its own.  Not
 * when that step needs more scratch than the batch has: the queued launch
 * uses the scratch, which cannot be replaced now.  A submit at another step
 * applies that one (ops_step tells), and the core checks a step only when it
 * is set: one that no caller sets is never launched. */
static void apply_next_step(cuda_state *st, cuda_batch *b)
{
    size_t next = b->ops_step + 1;
    if (next == 0 || step_scratch(st, b, next) > b->scratch_bytes)
        return;
    apply_step(st, b, next);
    if (update_moved(st, b) != RAYO_OK)
        b->graph_stale = 1;
}

/* Ops run one after another on the batch's stream, so they share one
 * scratch; a batch may be submitted again once waited for (replay). */
static rayo_status batch_submit(void *state, void *batch)
{
    cuda_state *st = state;
    cuda_batch *b = batch;
    if (b->state == BATCH_SUBMITTED)
        return RAYO_E_STATE;
    rayo_status s = cuda_enter(st);
    if (s == RAYO_OK && !b->stream)
        s = prepare(st, b);
    if (s != RAYO_OK)
        return s;
    if (b->new_ops || b->step != b->ops_step)
        s = set_scratch(st, b, apply_step(st, b, b->step));
    int by_graph = 0;
    if (s == RAYO_OK)
        s = run_ops(st, b, &by_graph);
    CUresult r = st->drv->cuEventRecord(b->done, b->stream);
    if (r != CUDA_SUCCESS && s == RAYO_OK)
        s = cuda_fail(st, r, "cuEventRecord");
    b->status = s;
    b->state = s == RAYO_OK ? BATCH_SUBMITTED : BATCH_DONE;
    if (s == RAYO_OK && by_graph)
        apply_next_step(st, b);
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
    if (b->state == BATCH_RECORDING)
        return RAYO_E_STATE;
    if (b->state == BATCH_DONE || b->status != RAYO_OK) {
        b->state = BATCH_DONE;
        return b->status;
    }
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
    b->state = BATCH_DONE;
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
        drop_graph(st, b);
        st->drv->cuStreamDestroy(b->stream);
    }
    free(b->ops);
    free(b->calls);
    free(b->attn);
    free(b->nodes);
    free(b->first_node);
    free(b->op_nodes);
    free(b->moved_op);
    free(b->op_group);
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
    .batch_set_step = batch_set_step,
};
