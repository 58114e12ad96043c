/* SPDX-License-Identifier: MIT */
/* model.h - a Llama-architecture decoder (TinyLlama, Llama 2/3 layouts) over
 * weights memory-mapped from a GGUF file, computed with rayo calls (lm-ops.h). */
#ifndef LLAMA_MODEL_H
#define LLAMA_MODEL_H

#include "gguf.h"
#include "lm-ops.h"

typedef struct llama_layer {
    lm_ref attn_norm, ffn_norm;     /* f32 */
    lm_weight q, k, v, o, gate, up, down;
} llama_layer;

/* Activations of up to n_batch tokens, allocated once: host memory, or
 * buffers of the resident backend. */
typedef struct llama_scratch {
    size_t n_batch;
    lm_ref x, xn, q, att, gate, up;     /* [n_batch][n_embd or n_ffn] f32 */
    lm_ref ids;                         /* [n_batch] i32: the batch's tokens */
    lm_ref pos;                         /* [n_ctx] i32: 0, 1, ..., written once; a batch reads
                                         * its positions from n_past on */
    lm_ref logits;                      /* [n_vocab] f32 (resident: read back after a batch) */
    lm_ref next;                        /* u64: the index of the largest logit (resident, greedy) */
    int32_t *ids_host, *pos_host;
} llama_scratch;

/* Host time of the replayed one-token steps, summed over those after each
 * batch's first two submits (which record it and build its graph). */
typedef struct llama_step_times {
    size_t steps;
    double write;       /* seconds in rayo_buffer_write: the token id */
    double submit;      /* rayo_batch_set_step and rayo_batch_submit */
    double wait;        /* rayo_batch_wait */
    double read;        /* rayo_buffer_read of the logits, or of their argmax (greedy) */
} llama_step_times;

typedef struct llama_model {
    size_t n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ffn, n_vocab, n_ctx, rope_dims;
    float eps, freq_base;
    lm_weight tok_embd, output;     /* output = tok_embd when the file ties them */
    lm_ref output_norm;
    llama_layer *layers;
    lm_ref k_cache, v_cache;        /* [layer][n_ctx][n_kv_heads * head_dim] f32 */
    size_t n_past;                  /* positions in the cache */
    llama_scratch s;
    /* Precision of the weight products and attention (rayo.h): relaxed lets
     * the backends use their fastest kernels within the relaxed contract. */
    rayo_precision precision;
    /* Resident (llama_resident): every tensor in buffers of this backend,
     * each evaluation one batch; NULL: host calls on the mapped file. */
    const char *resident;
    rayo_buffer **bufs;             /* the buffers, to destroy */
    size_t n_bufs;
    int prefill_by_gemv;            /* the resident backend has no matmul for the weights */
    /* One-token evaluations on the resident backend replay a batch recorded
     * once (rayo_batch_set_step: the cache slot and the attention length
     * move with the position): [0] without logits (prompt tokens), [1]
     * with, [2] with the index of their largest only (greedy); step_base:
     * n_past when each was recorded.  RAYO_LLAMA_REPLAY=0 in the environment
     * records every evaluation instead. */
    rayo_batch *step_batch[3];
    size_t step_base[3];
    size_t step_submits[3];         /* submits of each since it was recorded */
    llama_step_times step_times;
} llama_model;

/* Reads the hyperparameters, finds every tensor and allocates the KV cache
 * and the activations of n_batch tokens; n_ctx 0: the file's context length
 * (capped at 4096); n_batch 0: 512 (at most n_ctx).  Precision: relaxed.
 * progress(done, total) is called per layer. */
int llama_load(llama_model *m, const gguf_file *g, size_t n_ctx, size_t n_batch, char *err,
               size_t errlen, void (*progress)(size_t done, size_t total));
void llama_free(llama_model *m);
/* Moves the weights, the KV cache and the activations into buffers of
 * `backend` (rayo_buffer_create; a GPU's memory), so that each evaluation is
 * one batch on it and no weight crosses to the device again.  Returns 0; -1
 * naming the op when the backend lacks one the model needs (the model stays
 * on host memory, usable); -2 when moving failed half way (the model can
 * only be freed).  A backend without a matmul for the weights' dtypes gets
 * the prompt one token at a time (gemv). */
int llama_resident(llama_model *m, rayo_context *ctx, const char *backend, char *err,
                   size_t errlen);
/* Whether the loaded backend of this name runs on the CPU: its buffers are
 * host memory, and an op it lacks in a batch goes down its chain there. */
int llama_cpu_backend(rayo_context *ctx, const char *backend);
/* Runs n tokens at positions n_past.. (n_batch at a time: one matmul per
 * weight per batch) and appends them to the cache; logits (n_vocab) of the
 * last one go to logits when it is not NULL. */
rayo_status llama_eval(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                       float *logits);
/* llama_eval choosing greedily: *next = the index of the last token's
 * largest logit (the first one of equals).  Resident, the argmax runs in the
 * step's batch and only the index comes back, not the logits. */
rayo_status llama_eval_greedy(rayo_context *ctx, llama_model *m, const int32_t *tokens, size_t n,
                              int32_t *next);

#endif
