/* SPDX-License-Identifier: MIT */
/* gguf-write.c - GGUF header writer (see gguf-write.h). */
#include "gguf-write.h"
#include <stdlib.h>
#include <string.h>

void gw_bytes(gguf_writer *w, const void *src, size_t n)
{
    if (w->oom)
        return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *p = realloc(w->p, cap);
        if (!p) {
            w->oom = 1;
            return;
        }
        w->p = p;
        w->cap = cap;
    }
    memcpy(w->p + w->len, src, n);
    w->len += n;
}

static void gw_le(gguf_writer *w, uint64_t v, unsigned n)
{
    uint8_t b[8];
    for (unsigned i = 0; i < n; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    gw_bytes(w, b, n);
}

void gw_u32(gguf_writer *w, uint32_t v) { gw_le(w, v, 4); }
void gw_u64(gguf_writer *w, uint64_t v) { gw_le(w, v, 8); }

void gw_f32(gguf_writer *w, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    gw_u32(w, u);
}

void gw_str(gguf_writer *w, const char *s)
{
    size_t n = strlen(s);
    gw_u64(w, n);
    gw_bytes(w, s, n);
}

void gw_header(gguf_writer *w, uint64_t n_tensors, uint64_t n_kv)
{
    gw_bytes(w, "GGUF", 4);
    gw_u32(w, 3);
    gw_u64(w, n_tensors);
    gw_u64(w, n_kv);
}

static void gw_key(gguf_writer *w, const char *key, gguf_type type)
{
    gw_str(w, key);
    gw_u32(w, type);
}

void gw_kv_u32(gguf_writer *w, const char *key, uint32_t v)
{
    gw_key(w, key, GGUF_U32);
    gw_u32(w, v);
}

void gw_kv_f32(gguf_writer *w, const char *key, float v)
{
    gw_key(w, key, GGUF_F32);
    gw_f32(w, v);
}

void gw_kv_bool(gguf_writer *w, const char *key, int v)
{
    gw_key(w, key, GGUF_BOOL);
    uint8_t b = v ? 1 : 0;
    gw_bytes(w, &b, 1);
}

void gw_kv_str(gguf_writer *w, const char *key, const char *v)
{
    gw_key(w, key, GGUF_STRING);
    gw_str(w, v);
}

void gw_kv_array(gguf_writer *w, const char *key, gguf_type elem, uint64_t n)
{
    gw_key(w, key, GGUF_ARRAY);
    gw_u32(w, elem);
    gw_u64(w, n);
}

void gw_tensor_info(gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                    uint32_t ggml_type, uint64_t offset)
{
    gw_str(w, name);
    gw_u32(w, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        gw_u64(w, ne[d]);
    gw_u32(w, ggml_type);
    gw_u64(w, offset);
}

void gw_pad(gguf_writer *w, uint32_t align)
{
    static const uint8_t zero[64];
    while (w->len % align)
        gw_bytes(w, zero, align - w->len % align < 64 ? align - w->len % align : 64);
}

void gw_free(gguf_writer *w)
{
    free(w->p);
    w->p = NULL;
    w->len = w->cap = 0;
}
