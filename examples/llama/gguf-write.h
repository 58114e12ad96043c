/* SPDX-License-Identifier: MIT */
/* gguf-write.h - builds the header part of a GGUF file (magic to the end of
 * the tensor infos) in memory.  Used by the generator (gguf-make) and by the
 * reader's tests, which also write broken files with it. */
#ifndef LLAMA_GGUF_WRITE_H
#define LLAMA_GGUF_WRITE_H

#include "gguf.h"
#include <stddef.h>
#include <stdint.h>

typedef struct gguf_writer {
    uint8_t *p;
    size_t len, cap;
    int oom;        /* an allocation failed: the buffer is incomplete */
} gguf_writer;

void gw_bytes(gguf_writer *w, const void *src, size_t n);
void gw_u32(gguf_writer *w, uint32_t v);
void gw_u64(gguf_writer *w, uint64_t v);
void gw_f32(gguf_writer *w, float v);
void gw_str(gguf_writer *w, const char *s);
/* "GGUF", version 3, the counts. */
void gw_header(gguf_writer *w, uint64_t n_tensors, uint64_t n_kv);
void gw_kv_u32(gguf_writer *w, const char *key, uint32_t v);
void gw_kv_f32(gguf_writer *w, const char *key, float v);
void gw_kv_bool(gguf_writer *w, const char *key, int v);
void gw_kv_str(gguf_writer *w, const char *key, const char *v);
/* Key, ARRAY, element type, count: the caller writes the elements. */
void gw_kv_array(gguf_writer *w, const char *key, gguf_type elem, uint64_t n);
void gw_tensor_info(gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                    uint32_t ggml_type, uint64_t offset);
/* Zero bytes up to the next multiple of align. */
void gw_pad(gguf_writer *w, uint32_t align);
void gw_free(gguf_writer *w);

#endif
