/* model.c - the Llama block: x += attn(rmsnorm(x)); x += ffn(rmsnorm(x)),
 * attn with rope on q and k, grouped-query heads over a KV cache, ffn the
 * SwiGLU down(silu(gate x) * up x); then rmsnorm and the output projection. */
#include "model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    *w = (lm_weight){t->dtype, t->data, rows, cols};
    return 0;
}

static int norm(const float **w, const gguf_file *g, const char *name, size_t n, char *err,
                size_t errlen)
{
    const gguf_tensor *t = tensor(g, name, n, 0, 1, err, errlen);
    *w = t ? t->data : NULL;
    return t ? 0 : -1;
}

/* Reads one byte per page of a weight, so that loading (not the first token)
 * pays for bringing the file into memory, and the progress line means it. */
static void prefault(const lm_weight *w)
{
    size_t row_bytes = 0;
    rayo_dtype_row_bytes(w->dtype, w->cols, &row_bytes);
    const volatile uint8_t *p = w->data;
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

static int scratch_alloc(llama_scratch *s, const llama_model *m, size_t n)
{
    s->n_batch = n;
    s->x = malloc(n * m->n_embd * sizeof(float));
    s->xn = malloc(n * m->n_embd * sizeof(float));
    s->q = malloc(n * m->n_embd * sizeof(float));
    s->att = malloc(n * m->n_embd * sizeof(float));
    s->gate = malloc(n * m->n_ffn * sizeof(float));
    s->up = malloc(n * m->n_ffn * sizeof(float));
    s->pos = malloc(n * sizeof(int32_t));
    return s->x && s->xn && s->q && s->att && s->gate && s->up && s->pos ? 0 : -1;
}

static void scratch_free(llama_scratch *s)
{
    free(s->x);
    free(s->xn);
    free(s->q);
    free(s->att);
    free(s->gate);
    free(s->up);
    free(s->pos);
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
    size_t kv = m->n_kv_heads * m->head_dim, cache = m->n_layers * m->n_ctx * kv;
    m->layers = calloc(m->n_layers, sizeof *m->layers);
    m->k_cache = calloc(cache, sizeof *m->k_cache);
    m->v_cache = calloc(cache, sizeof *m->v_cache);
    if (!m->layers || !m->k_cache || !m->v_cache ||
        scratch_alloc(&m->s, m, n_batch < m->n_ctx ? n_batch : m->n_ctx)) {
        snprintf(err, errlen, "out of memory for a %zu-position KV cache and %zu-token batches",
                 m->n_ctx, n_batch);
        llama_free(m);
        return -1;
    }
    for (size_t l = 0; l < m->n_layers; l++) {
        if (load_layer(m, g, l, err, errlen)) {
            llama_free(m);
            return -1;
        }
        prefault_layer(&m->layers[l]);
        if (progress)
            progress(l + 1, m->n_layers);
    }
    return 0;
}

void llama_free(llama_model *m)
{
    free(m->layers);
    free(m->k_cache);
    free(m->v_cache);
    scratch_free(&m->s);
    memset(m, 0, sizeof *m);
}

/* ---- evaluation ------------------------------------------------------------ */
#define TRY(call) do { rayo_status st_ = (call); if (st_ != RAYO_OK) return st_; } while (0)

static rayo_status attention_block(rayo_context *ctx, llama_model *m, size_t l, size_t n)
{
    const llama_layer *L = &m->layers[l];
    llama_scratch *s = &m->s;
    rayo_precision pr = m->precision;
    size_t kvw = m->n_kv_heads * m->head_dim, e = m->n_embd;
    float *k = m->k_cache + (l * m->n_ctx + m->n_past) * kvw;
    float *v = m->v_cache + (l * m->n_ctx + m->n_past) * kvw;
    TRY(rayo_rmsnorm(ctx, s->x, L->attn_norm, NULL, s->xn, n, e, m->eps));
    TRY(lm_linear(ctx, &L->q, s->xn, n, s->q, pr));
    TRY(lm_linear(ctx, &L->k, s->xn, n, k, pr)); /* straight into the cache */
    TRY(lm_linear(ctx, &L->v, s->xn, n, v, pr));
    TRY(lm_rope(ctx, s->q, n, m->n_heads, m->head_dim, m->rope_dims, m->freq_base, s->pos));
    TRY(lm_rope(ctx, k, n, m->n_kv_heads, m->head_dim, m->rope_dims, m->freq_base, s->pos));
    lm_attn a = {n, m->n_past + n, m->n_heads, m->n_kv_heads, m->head_dim, kvw};
    TRY(lm_attention(ctx, &a, s->q, m->k_cache + l * m->n_ctx * kvw,
                     m->v_cache + l * m->n_ctx * kvw, s->att, pr));
    TRY(lm_linear(ctx, &L->o, s->att, n, s->xn, pr));
    return rayo_add(ctx, s->x, s->xn, s->x, n * e);
}

static rayo_status ffn_block(rayo_context *ctx, const llama_model *m, size_t l, size_t n)
{
    const llama_layer *L = &m->layers[l];
    const llama_scratch *s = &m->s;
    TRY(rayo_rmsnorm(ctx, s->x, L->ffn_norm, NULL, s->xn, n, m->n_embd, m->eps));
    TRY(lm_linear(ctx, &L->gate, s->xn, n, s->gate, m->precision));
    TRY(lm_linear(ctx, &L->up, s->xn, n, s->up, m->precision));
    TRY(lm_swiglu(ctx, s->gate, s->up, s->gate, n, m->n_ffn));
    TRY(lm_linear(ctx, &L->down, s->gate, n, s->xn, m->precision));
    return rayo_add(ctx, s->x, s->xn, s->x, n * m->n_embd);
}

/* One batch of n <= n_batch tokens through every layer. */
static rayo_status forward(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                           float *logits)
{
    llama_scratch *s = &m->s;
    for (size_t t = 0; t < n; t++)
        s->pos[t] = (int32_t)(m->n_past + t);
    TRY(lm_get_rows(ctx, &m->tok_embd, tokens, n, s->x));
    for (size_t l = 0; l < m->n_layers; l++) {
        TRY(attention_block(ctx, m, l, n));
        TRY(ffn_block(ctx, m, l, n));
    }
    if (!logits)
        return RAYO_OK;
    const float *last = s->x + (n - 1) * m->n_embd;
    TRY(rayo_rmsnorm(ctx, last, m->output_norm, NULL, s->xn, 1, m->n_embd, m->eps));
    return lm_linear(ctx, &m->output, s->xn, 1, logits, m->precision);
}

rayo_status llama_eval(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                       float *logits)
{
    if (n == 0 || n > m->n_ctx - m->n_past)
        return RAYO_E_INVALID;
    for (size_t t = 0; t < n; t++)
        if (tokens[t] < 0 || (size_t)tokens[t] >= m->n_vocab)
            return RAYO_E_INVALID;
    for (size_t done = 0; done < n;) {
        size_t batch = n - done < m->s.n_batch ? n - done : m->s.n_batch;
        TRY(forward(ctx, m, tokens + done, batch, done + batch == n ? logits : NULL));
        m->n_past += batch;
        done += batch;
    }
    return RAYO_OK;
}
