/* model.h - a Llama-architecture decoder (TinyLlama, Llama 2/3 layouts) over
 * weights memory-mapped from a GGUF file, computed with rayo calls (lm-ops.h). */
#ifndef LLAMA_MODEL_H
#define LLAMA_MODEL_H

#include "gguf.h"
#include "lm-ops.h"

typedef struct llama_layer {
    const float *attn_norm, *ffn_norm;
    lm_weight q, k, v, o, gate, up, down;
} llama_layer;

/* Activations of up to n_batch tokens, allocated once at load. */
typedef struct llama_scratch {
    size_t n_batch;
    float *x, *xn, *q, *att, *gate, *up; /* [n_batch][n_embd or n_ffn] */
    int32_t *pos;                         /* the batch's positions */
} llama_scratch;

typedef struct llama_model {
    size_t n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ffn, n_vocab, n_ctx, rope_dims;
    float eps, freq_base;
    lm_weight tok_embd, output;     /* output = tok_embd when the file ties them */
    const float *output_norm;
    llama_layer *layers;
    float *k_cache, *v_cache;       /* [layer][n_ctx][n_kv_heads * head_dim] */
    size_t n_past;                  /* positions in the cache */
    llama_scratch s;
    /* Precision of the weight products and attention (rayo.h): relaxed lets
     * the backends use their fastest kernels within the relaxed contract. */
    rayo_precision precision;
} llama_model;

/* Reads the hyperparameters, finds every tensor and allocates the KV cache
 * and the activations of n_batch tokens; n_ctx 0: the file's context length
 * (capped at 4096); n_batch 0: 512 (at most n_ctx).  Precision: relaxed.
 * progress(done, total) is called per layer. */
int llama_load(llama_model *m, const gguf_file *g, size_t n_ctx, size_t n_batch, char *err,
               size_t errlen, void (*progress)(size_t done, size_t total));
void llama_free(llama_model *m);
/* Runs n tokens at positions n_past.. (n_batch at a time: one matmul per
 * weight per batch) and appends them to the cache; logits (n_vocab) of the
 * last one go to logits when it is not NULL. */
rayo_status llama_eval(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                       float *logits);

#endif
