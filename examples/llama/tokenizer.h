/* SPDX-License-Identifier: MIT */
/* tokenizer.h - the SentencePiece-style tokenizer of llama GGUF files
 * (tokenizer.ggml.model = "llama"), as llama.cpp reads it: spaces become
 * "▁" (U+2581) and a leading "▁" is added; the text is split into UTF-8
 * characters, and the adjacent pair whose concatenation is a token of the
 * highest score is merged, again and again (the leftmost pair on ties);
 * a character left that is no token falls back to its <0xNN> byte tokens. */
#ifndef LLAMA_TOKENIZER_H
#define LLAMA_TOKENIZER_H

#include "gguf.h"
#include <stddef.h>
#include <stdint.h>

enum { TOKEN_NORMAL = 1, TOKEN_UNKNOWN = 2, TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4,
       TOKEN_UNUSED = 5, TOKEN_BYTE = 6 };

typedef struct vocab {
    uint32_t n;
    gguf_str *text;         /* into the GGUF mapping */
    float *score;
    int32_t *type;
    int32_t bos, eos, unk;
    int add_bos, add_space_prefix;
    int32_t byte_token[256];/* <0xNN>, or -1 */
    uint32_t *slots;        /* hash table of token ids + 1; 0 = empty */
    size_t n_slots;         /* a power of two */
} vocab;

/* 0, or -1 with a message. */
int vocab_load(vocab *v, const gguf_file *g, char *err, size_t errlen);
void vocab_free(vocab *v);
/* The id of a token text, or -1. */
int32_t vocab_find(const vocab *v, const char *s, size_t len);
/* Encodes text; *n gets the token count (BOS first when add_bos).  Returns 0,
 * or -1 when out of memory or more than cap tokens would be needed. */
int vocab_encode(const vocab *v, const char *text, int add_bos, int32_t *out, size_t cap,
                 size_t *n);
/* The bytes token id stands for (control tokens: none); returns the length
 * written (at most cap; longer pieces are cut). */
size_t vocab_piece(const vocab *v, int32_t id, char *buf, size_t cap);

#endif
