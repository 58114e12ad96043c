/* SPDX-License-Identifier: MIT */
/* model.c - the Llama block: x += attn(rmsnorm(x)); x += ffn(rmsnorm(x)),
 * attn with rope on q and k, grouped-query heads over a KV cache, ffn the
 * SwiGLU down(silu(gate x) * up x); then rmsnorm and the output projection. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- loading ------------------------------------------------------------ */
static int get_size(const gguf_file *g, const char *key, size_t *v, size_t dflt, char *err,
                    size_t errlen)
{
    uint32_t u;
    if (dflt && !gguf_find(g, key)) {
        *v = dflt;
        return 0;
    }
    if (gguf_get_u32(g, key, &u, err, errlen))
        return -1;
    *v = u;
    return 0;
}

static int read_hparams(llama_model *m, const gguf_file *g, char *err, size_t errlen)
{
    gguf_str arch;
    if (gguf_get_str(g, "general.architecture", &arch, err, errlen))
        return -1;
    if (arch.len != 5 || memcmp(arch.p, "llama", 5)) {
        snprintf(err, errlen, "general.architecture '%.*s' is not llama",
                 (int)(arch.len < 40 ? arch.len : 40), arch.p);
        return -1;
    }
    if (get_size(g, "llama.embedding_length", &m->n_embd, 0, err, errlen) ||
        get_size(g, "llama.block_count", &m->n_layers, 0, err, errlen) ||
        get_size(g, "llama.feed_forward_length", &m->n_ffn, 0, err, errlen) ||
        get_size(g, "llama.attention.head_count", &m->n_heads, 0, err, errlen) ||
        get_size(g, "llama.attention.head_count_kv", &m->n_kv_heads, m->n_heads, err, errlen) ||
        get_size(g, "llama.context_length", &m->n_ctx, 2048, err, errlen) ||
        gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &m->eps, err, errlen))
        return -1;
    const struct { const char *key; size_t v; } sizes[] = {
        {"embedding_length", m->n_embd}, {"block_count", m->n_layers}, {"feed_forward_length", m->n_ffn},
        {"attention.head_count", m->n_heads}, {"attention.head_count_kv", m->n_kv_heads},
        {"context_length", m->n_ctx},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!sizes[i].v) {
            snprintf(err, errlen, "llama.%s is 0: it must be at least 1", sizes[i].key);
            return -1;
        }
    if (!m->n_heads || !m->n_kv_heads || m->n_embd % m->n_heads || m->n_heads % m->n_kv_heads ||
        !m->n_layers || m->n_layers > 1024 || (m->n_embd / m->n_heads) % 2) {
        snprintf(err, errlen, "inconsistent shape: %zu wide, %zu heads, %zu KV heads, %zu layers",
                 m->n_embd, m->n_heads, m->n_kv_heads, m->n_layers);
        return -1;
    }
    m->head_dim = m->n_embd / m->n_heads;
    if (get_size(g, "llama.rope.dimension_count", &m->rope_dims, m->head_dim, err, errlen))
        return -1;
    m->freq_base = 10000.0f;
    if (gguf_find(g, "llama.rope.freq_base") &&
        gguf_get_f32(g, "llama.rope.freq_base", &m->freq_base, err, errlen))
        return -1;
    if (m->rope_dims > m->head_dim || m->rope_dims % 2) {
        snprintf(err, errlen, "rope dimension count %zu is odd or exceeds the head size %zu",
                 m->rope_dims, m->head_dim);
        return -1;
    }
    return 0;
}

/* A tensor of exactly rows x cols (1-D when rows is 0), f32 when want_f32. */
static const gguf_tensor *tensor(const gguf_file *g, const char *name, size_t cols, size_t rows,
                                 int want_f32, char *err, size_t errlen)
{
    const gguf_tensor *t = gguf_tensor_find(g, name);
    if (!t) {
        snprintf(err, errlen, "tensor '%s' is missing", name);
        return NULL;
    }
    int shape_ok = t->ne[0] == cols && t->ne[1] == (rows ? rows : 1) && t->ne[2] == 1 &&
                   t->ne[3] == 1;
    if (!shape_ok || (want_f32 && t->dtype != RAYO_DTYPE_F32)) {
        snprintf(err, errlen, "tensor '%s' is %s %llux%llux%llu, expected %s%zux%zu", name,
                 rayo_dtype_name(t->dtype), (unsigned long long)t->ne[0],
                 (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                 want_f32 ? "f32 " : "", cols, rows ? rows : 1);
        return NULL;
    }
    return t;
}

static int weight(lm_weight *w, const gguf_file *g, const char *name, size_t cols, size_t rows,
                  char *err, size_t errlen)
{
    const gguf_tensor *t = tensor(g, name, cols, rows, 0, err, errlen);
    if (!t)
        return -1;
    /* the mapping is read only; a weight is never a call's output */
    *w = (lm_weight){t->dtype, {.host = (void *)(uintptr_t)t->data}, rows, cols};
    return 0;
}

static int norm(lm_ref *w, const gguf_file *g, const char *name, size_t n, char *err,
                size_t errlen)
{
    const gguf_tensor *t = tensor(g, name, n, 0, 1, err, errlen);
    *w = (lm_ref){.host = t ? (void *)(uintptr_t)t->data : NULL};
    return t ? 0 : -1;
}

/* Reads one byte per page of a weight, so that loading (not the first token)
 * pays for bringing the file into memory, and the progress line means it. */
static void prefault(const lm_weight *w)
{
    size_t row_bytes = 0;
    rayo_dtype_row_bytes(w->dtype, w->cols, &row_bytes);
    const volatile uint8_t *p = w->data.host;
    uint8_t sink = 0;
    for (size_t i = 0; i < row_bytes * w->rows; i += 4096)
        sink ^= p[i];
    (void)sink;
}

static void prefault_layer(const llama_layer *L)
{
    const lm_weight *w[] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        prefault(w[i]);
}

static int load_layer(llama_model *m, const gguf_file *g, size_t l, char *err, size_t errlen)
{
    llama_layer *L = &m->layers[l];
    size_t e = m->n_embd, kv = m->n_kv_heads * m->head_dim, f = m->n_ffn;
    char name[12][64];
    static const char *const parts[] = {"attn_norm", "ffn_norm", "attn_q", "attn_k", "attn_v",
        "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    for (int i = 0; i < 9; i++)
        snprintf(name[i], sizeof name[i], "blk.%zu.%s.weight", l, parts[i]);
    return norm(&L->attn_norm, g, name[0], e, err, errlen) ||
           norm(&L->ffn_norm, g, name[1], e, err, errlen) ||
           weight(&L->q, g, name[2], e, e, err, errlen) ||
           weight(&L->k, g, name[3], e, kv, err, errlen) ||
           weight(&L->v, g, name[4], e, kv, err, errlen) ||
           weight(&L->o, g, name[5], e, e, err, errlen) ||
           weight(&L->gate, g, name[6], e, f, err, errlen) ||
           weight(&L->up, g, name[7], e, f, err, errlen) ||
           weight(&L->down, g, name[8], f, e, err, errlen) ? -1 : 0;
}

static int load_io(llama_model *m, const gguf_file *g, char *err, size_t errlen)
{
    const gguf_tensor *t = gguf_tensor_find(g, "token_embd.weight");
    if (!t) {
        snprintf(err, errlen, "tensor 'token_embd.weight' is missing");
        return -1;
    }
    m->n_vocab = t->ne[1];
    if (weight(&m->tok_embd, g, "token_embd.weight", m->n_embd, m->n_vocab, err, errlen) ||
        norm(&m->output_norm, g, "output_norm.weight", m->n_embd, err, errlen))
        return -1;
    if (!gguf_tensor_find(g, "output.weight")) {
        m->output = m->tok_embd; /* tied */
        return 0;
    }
    return weight(&m->output, g, "output.weight", m->n_embd, m->n_vocab, err, errlen);
}

/* Zeroed; the KV cache's pages come as its positions are first written. */
static void *host_alloc(lm_ref *r, size_t bytes)
{
    *r = (lm_ref){.host = calloc(1, bytes ? bytes : 1)};
    return r->host;
}

/* Zeroed, on a cache line of its own, and every page written now: a
 * fresh large block's pages fault on their first write, which would
 * otherwise fall in the first prompt (tens of milliseconds on a virtual
 * machine); rows that start on a cache line keep two threads writing
 * neighbouring columns off each other's lines. */
static void *host_alloc_written(lm_ref *r, size_t bytes)
{
    size_t size = bytes ? (bytes + 63) & ~(size_t)63 : 64;
    *r = (lm_ref){.host = size >= bytes ? aligned_alloc(64, size) : NULL}; /* below: it wrapped */
    if (r->host)
        memset(r->host, 0, size);
    return r->host;
}

/* The KV cache and the activations in host memory. */
static int host_alloc_all(llama_model *m)
{
    llama_scratch *s = &m->s;
    size_t n = s->n_batch, e = m->n_embd * sizeof(float), f = m->n_ffn * sizeof(float);
    size_t cache = m->n_layers * m->n_ctx * m->n_kv_heads * m->head_dim * sizeof(float);
    int ok = host_alloc(&m->k_cache, cache) && host_alloc(&m->v_cache, cache) &&
             host_alloc_written(&s->x, n * e) && host_alloc_written(&s->xn, n * e) &&
             host_alloc_written(&s->q, n * e) && host_alloc_written(&s->att, n * e) &&
             host_alloc_written(&s->gate, n * f) && host_alloc_written(&s->up, n * f) &&
             host_alloc_written(&s->logits, m->n_vocab * sizeof(float)) &&
             host_alloc(&s->next, sizeof(uint64_t));
    s->ids_host = calloc(n, sizeof(int32_t));
    s->pos_host = calloc(m->n_ctx, sizeof(int32_t));
    s->ids = (lm_ref){.host = s->ids_host};
    s->pos = (lm_ref){.host = s->pos_host};
    for (size_t p = 0; s->pos_host && p < m->n_ctx; p++)
        s->pos_host[p] = (int32_t)p;
    return ok && s->ids_host && s->pos_host ? 0 : -1;
}

/* The host memory of host_alloc_all but the token and position arrays. */
static void host_free_all(llama_model *m)
{
    llama_scratch *s = &m->s;
    lm_ref *r[] = {&m->k_cache, &m->v_cache, &s->x, &s->xn, &s->q, &s->att, &s->gate, &s->up,
                   &s->logits, &s->next};
    for (size_t i = 0; i < sizeof r / sizeof *r; i++) {
        if (!r[i]->buf)
            free(r[i]->host);
        *r[i] = (lm_ref){0};
    }
}

int llama_load(llama_model *m, const gguf_file *g, size_t n_ctx, size_t n_batch, char *err,
               size_t errlen, void (*progress)(size_t done, size_t total))
{
    memset(m, 0, sizeof *m);
    m->precision = RAYO_PRECISION_RELAXED;
    if (read_hparams(m, g, err, errlen) || load_io(m, g, err, errlen))
        return -1;
    m->n_ctx = n_ctx ? n_ctx : m->n_ctx < 4096 ? m->n_ctx : 4096;
    n_batch = n_batch ? n_batch : 512;
    m->s.n_batch = n_batch < m->n_ctx ? n_batch : m->n_ctx;
    /* Every layer's tensors are checked before the KV cache and the batch
     * buffers are sized from the header's numbers: a file whose
     * feed_forward_length no tensor backs must not ask for gigabytes. */
    m->layers = calloc(m->n_layers, sizeof *m->layers);
    if (!m->layers) {
        snprintf(err, errlen, "out of memory for %zu layers", m->n_layers);
        return -1;
    }
    for (size_t l = 0; l < m->n_layers; l++) {
        if (load_layer(m, g, l, err, errlen)) {
            llama_free(m);
            return -1;
        }
    }
    if (host_alloc_all(m)) {
        snprintf(err, errlen, "out of memory for a %zu-position KV cache and %zu-token batches",
                 m->n_ctx, m->s.n_batch);
        llama_free(m);
        return -1;
    }
    for (size_t l = 0; l < m->n_layers; l++) {
        prefault_layer(&m->layers[l]);
        if (l + 1 == m->n_layers)
            prefault(&m->output); /* every prompt's last step reads all of it */
        if (progress)
            progress(l + 1, m->n_layers);
    }
    return 0;
}

void llama_free(llama_model *m)
{
    for (size_t i = 0; i < sizeof m->step_batch / sizeof *m->step_batch; i++)
        rayo_batch_destroy(m->step_batch[i]);
    host_free_all(m);
    free(m->s.ids_host);
    free(m->s.pos_host);
    for (size_t i = 0; i < m->n_bufs; i++)
        rayo_buffer_destroy(m->bufs[i]);
    free(m->bufs);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

/* ---- resident: tensors in a backend's buffers -------------------------------- */
static rayo_status new_buffer(llama_model *m, rayo_context *ctx, size_t bytes, lm_ref *r)
{
    rayo_buffer *b;
    rayo_status st = rayo_buffer_create(ctx, m->resident, bytes ? bytes : 4, &b);
    if (st != RAYO_OK)
        return st;
    m->bufs[m->n_bufs++] = b;
    *r = (lm_ref){.buf = b};
    return RAYO_OK;
}

/* A copy of host bytes in a new buffer; r then points there. */
static rayo_status upload(llama_model *m, rayo_context *ctx, size_t bytes, lm_ref *r)
{
    const void *host = r->host;
    rayo_status st = new_buffer(m, ctx, bytes, r);
    return st == RAYO_OK ? rayo_buffer_write(r->buf, 0, host, bytes) : st;
}

static rayo_status upload_weight(llama_model *m, rayo_context *ctx, lm_weight *w)
{
    size_t row_bytes = 0;
    rayo_dtype_row_bytes(w->dtype, w->cols, &row_bytes); /* checked by the reader */
    rayo_status st = upload(m, ctx, row_bytes * w->rows, &w->data);
    /* Final from here on: a CPU backend may keep them repacked for the prompt. */
    return st == RAYO_OK ? rayo_buffer_set_constant(w->data.buf) : st;
}

static rayo_status upload_layer(llama_model *m, rayo_context *ctx, llama_layer *L)
{
    size_t e = m->n_embd * sizeof(float);
    lm_weight *w[] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
    rayo_status st = upload(m, ctx, e, &L->attn_norm);
    if (st == RAYO_OK)
        st = upload(m, ctx, e, &L->ffn_norm);
    for (size_t i = 0; st == RAYO_OK && i < sizeof w / sizeof *w; i++)
        st = upload_weight(m, ctx, w[i]);
    return st;
}

/* The cache and activations as buffers, from their zeroed host arrays (a
 * new buffer's content is not defined), which are then freed. */
static rayo_status device_alloc_all(llama_model *m, rayo_context *ctx)
{
    llama_scratch *s = &m->s;
    size_t n = s->n_batch, e = m->n_embd * sizeof(float), f = m->n_ffn * sizeof(float);
    size_t cache = m->n_layers * m->n_ctx * m->n_kv_heads * m->head_dim * sizeof(float);
    struct { lm_ref *r; size_t bytes; } all[] = {{&m->k_cache, cache}, {&m->v_cache, cache},
        {&s->x, n * e}, {&s->xn, n * e}, {&s->q, n * e}, {&s->att, n * e}, {&s->gate, n * f},
        {&s->up, n * f}, {&s->logits, m->n_vocab * sizeof(float)},
        {&s->ids, n * sizeof(int32_t)}, {&s->pos, m->n_ctx * sizeof(int32_t)},
        {&s->next, sizeof(uint64_t)}};
    rayo_status st = RAYO_OK;
    for (size_t i = 0; st == RAYO_OK && i < sizeof all / sizeof *all; i++) {
        void *host = all[i].r->host;
        st = upload(m, ctx, all[i].bytes, all[i].r); /* from the zeroed host arrays */
        if (all[i].r->buf && host != m->s.ids_host && host != m->s.pos_host)
            free(host); /* the ids are still written there; llama_free frees both arrays */
    }
    return st;
}

/* An op with these dtypes that `backend` itself implements (a batch runs there only). */
static int backend_has(rayo_context *ctx, const char *backend, rayo_op op, uint32_t dtypes)
{
    for (size_t i = 0; i < rayo_chain_count(ctx, op, dtypes); i++) {
        rayo_link_info li = {.struct_size = sizeof li};
        if (rayo_chain_link(ctx, op, dtypes, i, &li) == RAYO_OK && !strcmp(li.backend, backend))
            return 1;
    }
    return 0;
}

/* Whether backend has op (gemv: w as A; matmul: w as B) for w's dtype. */
static int weight_op(rayo_context *ctx, const char *backend, rayo_op op, const lm_weight *w)
{
    const rayo_dtype f = RAYO_DTYPE_F32;
    return backend_has(ctx, backend, op, op == RAYO_OP_GEMV ? RAYO_DTYPES(w->dtype, f, f, f)
                                                            : RAYO_DTYPES(f, w->dtype, f, f));
}

static int weights_op(const llama_model *m, rayo_context *ctx, const char *backend, rayo_op op)
{
    if (!weight_op(ctx, backend, op, &m->output))
        return 0;
    for (size_t l = 0; l < m->n_layers; l++) {
        const llama_layer *L = &m->layers[l];
        const lm_weight *w[] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
        for (size_t i = 0; i < sizeof w / sizeof *w; i++)
            if (!weight_op(ctx, backend, op, w[i]))
                return 0;
    }
    return 1;
}

int llama_cpu_backend(rayo_context *ctx, const char *backend)
{
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info bi = {.struct_size = sizeof bi};
        if (rayo_backend_get(ctx, i, &bi) == RAYO_OK && !strcmp(bi.name, backend))
            return bi.device_type == RAYO_DEVICE_CPU;
    }
    return 0;
}

/* The first op the model needs that backend lacks, or NULL. */
static const char *missing_op(const llama_model *m, rayo_context *ctx, const char *backend)
{
    if (llama_cpu_backend(ctx, backend))
        return NULL;
    const rayo_dtype f = RAYO_DTYPE_F32, i32 = RAYO_DTYPE_I32;
    struct { rayo_op op; uint32_t dtypes; const char *name; } need[] = {
        {RAYO_OP_GET_ROWS, RAYO_DTYPES(m->tok_embd.dtype, i32, f, f), "get_rows"},
        {RAYO_OP_RMSNORM, 0, "rmsnorm"},
        {RAYO_OP_ROPE, RAYO_DTYPES(f, i32, f, f), "rope"}, {RAYO_OP_ATTENTION, 0, "attention"},
        {RAYO_OP_SWIGLU, 0, "swiglu"}};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!backend_has(ctx, backend, need[i].op, need[i].dtypes))
            return need[i].name;
    return weights_op(m, ctx, backend, RAYO_OP_GEMV) ? NULL : "gemv for the weights' dtypes";
}

int llama_resident(llama_model *m, rayo_context *ctx, const char *backend, char *err,
                   size_t errlen)
{
    const char *missing = missing_op(m, ctx, backend);
    if (missing) {
        snprintf(err, errlen, "backend %s has no %s", backend, missing);
        return -1;
    }
    /* 9 tensors per layer, 3 others, 12 activation and cache buffers */
    m->bufs = calloc(9 * m->n_layers + 3 + 12, sizeof *m->bufs);
    if (!m->bufs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->resident = backend;
    m->prefill_by_gemv = !llama_cpu_backend(ctx, backend) &&
                         !weights_op(m, ctx, backend, RAYO_OP_MATMUL);
    int tied = m->output.data.host == m->tok_embd.data.host;
    rayo_status st = upload_weight(m, ctx, &m->tok_embd);
    if (st == RAYO_OK && !tied)
        st = upload_weight(m, ctx, &m->output);
    if (tied)
        m->output = m->tok_embd;
    if (st == RAYO_OK)
        st = upload(m, ctx, m->n_embd * sizeof(float), &m->output_norm);
    for (size_t l = 0; st == RAYO_OK && l < m->n_layers; l++)
        st = upload_layer(m, ctx, &m->layers[l]);
    if (st == RAYO_OK)
        st = device_alloc_all(m, ctx);
    if (st != RAYO_OK) {
        /* the model is half moved: it cannot go on */
        snprintf(err, errlen, "moving the model to %s: %s: %s", backend, rayo_strerror(st),
                 rayo_last_error());
        return -2;
    }
    return 0;
}

/* ---- evaluation ------------------------------------------------------------ */
#define TRY(call) do { rayo_status st_ = (call); if (st_ != RAYO_OK) return st_; } while (0)
#define FLOATS(n) ((n) * sizeof(float))

static rayo_status attention_block(const lm_exec *e, llama_model *m, size_t l, size_t n)
{
    const llama_layer *L = &m->layers[l];
    const llama_scratch *s = &m->s;
    rayo_precision pr = m->precision;
    size_t kvw = m->n_kv_heads * m->head_dim, layer = FLOATS(l * m->n_ctx * kvw);
    lm_ref k_all = lm_at(m->k_cache, layer), v_all = lm_at(m->v_cache, layer);
    lm_ref k = lm_at(k_all, FLOATS(m->n_past * kvw)), v = lm_at(v_all, FLOATS(m->n_past * kvw));
    lm_ref pos = lm_at(s->pos, m->n_past * sizeof(int32_t));
    if (e->replay) { /* the token's cache slot moves one row per step, its position one entry */
        k.step = v.step = FLOATS(kvw);
        pos.step = sizeof(int32_t);
    }
    lm_rope_shape qr = {m->n_heads, m->head_dim, m->rope_dims, m->freq_base};
    lm_rope_shape kr = {m->n_kv_heads, m->head_dim, m->rope_dims, m->freq_base};
    lm_attn a = {n, m->n_past + n, m->n_heads, m->n_kv_heads, m->head_dim, kvw, e->replay};
    TRY(lm_rmsnorm(e, s->x, L->attn_norm, s->xn, n, m->n_embd, m->eps));
    TRY(lm_linear(e, &L->q, s->xn, n, s->q, pr));
    TRY(lm_linear(e, &L->k, s->xn, n, k, pr)); /* straight into the cache */
    TRY(lm_linear(e, &L->v, s->xn, n, v, pr));
    TRY(lm_rope(e, &qr, s->q, n, pos, s->pos_host + m->n_past));
    TRY(lm_rope(e, &kr, k, n, pos, s->pos_host + m->n_past));
    TRY(lm_attention(e, &a, s->q, k_all, v_all, s->att, pr));
    return lm_linear_add(e, &L->o, s->att, n, s->x, pr); /* the residual add in the product */
}

static rayo_status ffn_block(const lm_exec *e, const llama_model *m, size_t l, size_t n)
{
    const llama_layer *L = &m->layers[l];
    const llama_scratch *s = &m->s;
    TRY(lm_rmsnorm(e, s->x, L->ffn_norm, s->xn, n, m->n_embd, m->eps));
    TRY(lm_linear(e, &L->gate, s->xn, n, s->gate, m->precision));
    TRY(lm_linear(e, &L->up, s->xn, n, s->up, m->precision));
    TRY(lm_swiglu(e, s->gate, s->up, s->gate, n, m->n_ffn));
    return lm_linear_add(e, &L->down, s->gate, n, s->x, m->precision);
}

/* What an evaluation gives back of its last token: nothing, its logits, or
 * the index of their largest (greedy; in a batch, only the index comes back). */
enum eval_kind { EVAL_NONE, EVAL_LOGITS, EVAL_ARGMAX };

typedef struct eval_out {
    float *logits;      /* EVAL_LOGITS: n_vocab floats */
    int32_t *next;      /* EVAL_ARGMAX */
} eval_out;

static enum eval_kind kind_of(const eval_out *o)
{
    return o->next ? EVAL_ARGMAX : o->logits ? EVAL_LOGITS : EVAL_NONE;
}

/* One batch of n <= n_batch tokens (in s.ids, at positions s.pos on from
 * n_past) through every layer; then the last one's logits into s.logits,
 * and (EVAL_ARGMAX) the index of the largest into s.next. */
static rayo_status forward(const lm_exec *e, llama_model *m, size_t n, enum eval_kind kind)
{
    const llama_scratch *s = &m->s;
    TRY(lm_get_rows(e, &m->tok_embd, s->ids, s->ids_host, n, s->x));
    for (size_t l = 0; l < m->n_layers; l++) {
        TRY(attention_block(e, m, l, n));
        TRY(ffn_block(e, m, l, n));
    }
    if (kind == EVAL_NONE)
        return RAYO_OK;
    lm_ref last = lm_at(s->x, FLOATS((n - 1) * m->n_embd));
    TRY(lm_rmsnorm(e, last, m->output_norm, s->xn, 1, m->n_embd, m->eps));
    TRY(lm_linear(e, &m->output, s->xn, 1, s->logits, m->precision));
    return kind == EVAL_ARGMAX ? lm_argmax(e, s->logits, m->n_vocab, s->next) : RAYO_OK;
}

/* After a batch on the resident backend: what the caller asked for. */
static rayo_status read_out(const llama_model *m, const eval_out *o)
{
    const llama_scratch *s = &m->s;
    uint64_t index;
    switch (kind_of(o)) {
    case EVAL_LOGITS:
        return rayo_buffer_read(s->logits.buf, 0, o->logits, FLOATS(m->n_vocab));
    case EVAL_ARGMAX:
        TRY(rayo_buffer_read(s->next.buf, 0, &index, sizeof index));
        *o->next = (int32_t)index; /* < n_vocab */
        return RAYO_OK;
    default:
        return RAYO_OK;
    }
}

/* forward as one batch on the resident backend: the batch's tokens go up
 * first, the result comes back after. */
static rayo_status forward_resident(rayo_context *ctx, llama_model *m, size_t n, const eval_out *o)
{
    const llama_scratch *s = &m->s;
    TRY(rayo_buffer_write(s->ids.buf, 0, s->ids_host, n * sizeof(int32_t)));
    lm_exec e = {ctx, NULL, 0};
    TRY(rayo_batch_create(ctx, m->resident, &e.batch));
    rayo_status st = forward(&e, m, n, kind_of(o));
    if (st == RAYO_OK)
        st = rayo_batch_submit(e.batch);
    if (st == RAYO_OK)
        st = rayo_batch_wait(e.batch, UINT64_MAX);
    rayo_batch_destroy(e.batch);
    return st == RAYO_OK ? read_out(m, o) : st;
}

/* The replayed one-token batch of this kind, recorded at the first use and
 * again when the cache was rewound below where it was. */
static rayo_status step_batch(rayo_context *ctx, llama_model *m, enum eval_kind kind, rayo_batch **out)
{
    rayo_batch **b = &m->step_batch[kind];
    if (*b && m->n_past < m->step_base[kind]) {
        rayo_batch_destroy(*b);
        *b = NULL;
    }
    if (!*b) {
        lm_exec e = {ctx, NULL, 1};
        TRY(rayo_batch_create(ctx, m->resident, &e.batch));
        rayo_status st = forward(&e, m, 1, kind);
        if (st != RAYO_OK) {
            rayo_batch_destroy(e.batch);
            return st;
        }
        *b = e.batch;
        m->step_base[kind] = m->n_past;
        m->step_submits[kind] = 0;
    }
    *out = *b;
    return rayo_batch_set_step(*b, m->n_past - m->step_base[kind]);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* t: the times before the writes, the submit, the wait, the read and after. */
static void add_step_times(llama_model *m, enum eval_kind kind, const double t[5])
{
    if (++m->step_submits[kind] <= 2)
        return; /* recording, the first launch, building the graph: not the steady step */
    llama_step_times *st = &m->step_times;
    st->steps++;
    st->write += t[1] - t[0];
    st->submit += t[2] - t[1];
    st->wait += t[3] - t[2];
    st->read += t[4] - t[3];
}

/* One token on the resident backend through its replayed batch. */
static rayo_status forward_step(rayo_context *ctx, llama_model *m, const eval_out *o)
{
    const llama_scratch *s = &m->s;
    double t[5];
    t[0] = seconds();
    TRY(rayo_buffer_write(s->ids.buf, 0, s->ids_host, sizeof(int32_t)));
    t[1] = seconds();
    rayo_batch *b;
    TRY(step_batch(ctx, m, kind_of(o), &b));
    TRY(rayo_batch_submit(b));
    t[2] = seconds();
    TRY(rayo_batch_wait(b, UINT64_MAX));
    t[3] = seconds();
    TRY(read_out(m, o));
    t[4] = seconds();
    add_step_times(m, kind_of(o), t);
    return RAYO_OK;
}

static int replay_wanted(void)
{
    const char *v = getenv("RAYO_LLAMA_REPLAY");
    return !v || strcmp(v, "0") != 0;
}

/* forward on host memory; the greedy index by rayo_argmax. */
static rayo_status forward_host(rayo_context *ctx, llama_model *m, size_t n, const eval_out *o)
{
    lm_exec e = {ctx, NULL, 0};
    const float *logits = m->s.logits.host;
    TRY(forward(&e, m, n, kind_of(o) == EVAL_NONE ? EVAL_NONE : EVAL_LOGITS));
    if (o->logits)
        memcpy(o->logits, logits, FLOATS(m->n_vocab));
    if (o->next) {
        size_t index = 0;
        TRY(rayo_argmax(ctx, logits, m->n_vocab, &index));
        *o->next = (int32_t)index;
    }
    return RAYO_OK;
}

static rayo_status eval(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                        const eval_out *o)
{
    if (n == 0 || n > m->n_ctx - m->n_past)
        return RAYO_E_INVALID;
    for (size_t t = 0; t < n; t++)
        if (tokens[t] < 0 || (size_t)tokens[t] >= m->n_vocab)
            return RAYO_E_INVALID;
    size_t step = m->resident && m->prefill_by_gemv ? 1 : m->s.n_batch;
    for (size_t done = 0; done < n;) {
        size_t batch = n - done < step ? n - done : step;
        memcpy(m->s.ids_host, tokens + done, batch * sizeof *tokens);
        static const eval_out nothing = {NULL, NULL};
        const eval_out *out = done + batch == n ? o : &nothing;
        if (m->resident && batch == 1 && replay_wanted())
            TRY(forward_step(ctx, m, out));
        else
            TRY(m->resident ? forward_resident(ctx, m, batch, out) : forward_host(ctx, m, batch, out));
        m->n_past += batch;
        done += batch;
    }
    return RAYO_OK;
}

rayo_status llama_eval(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                       float *logits)
{
    eval_out o = {logits, NULL};
    return eval(ctx, m, tokens, n, &o);
}

rayo_status llama_eval_greedy(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                              int32_t *next)
{
    eval_out o = {NULL, next};
    return eval(ctx, m, tokens, n, &o);
}
