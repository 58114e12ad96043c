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

typedef struct llama_model {
    size_t n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ffn, n_vocab, n_ctx, rope_dims;
    float eps, freq_base;
    lm_weight tok_embd, output;     /* output = tok_embd when the file ties them */
    const float *output_norm;
    llama_layer *layers;
    float *k_cache, *v_cache;       /* [layer][n_ctx][n_kv_heads * head_dim] */
    size_t n_past;                  /* positions in the cache */
} llama_model;

/* Reads the hyperparameters and finds every tensor; n_ctx 0: the file's
 * context length (capped at 4096).  progress(done, total) is called per layer. */
int llama_load(llama_model *m, const gguf_file *g, size_t n_ctx, char *err, size_t errlen,
               void (*progress)(size_t done, size_t total));
void llama_free(llama_model *m);
/* Runs n tokens at positions n_past.. and appends them to the cache; logits
 * (n_vocab) of the last one go to logits when it is not NULL. */
rayo_status llama_eval(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                       float *logits);

#endif
