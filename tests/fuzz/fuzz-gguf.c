/* SPDX-License-Identifier: MIT */
/* fuzz-gguf.c - libFuzzer target: examples/llama's GGUF reader on any bytes,
 * then what a model load does with a file the reader accepted: typed
 * lookups, the llama shape and tensor checks, the vocabulary and an encode
 * and decode with it.  Built and run by tests/fuzz/run.sh; seeds in
 * tests/fuzz/seeds-gguf (small files from gguf-make, whole and cut). */
#include "gguf.h"
#include "model.h"
#include "tokenizer.h"
#include <stdlib.h>
#include <string.h>

static void use_vocab(const gguf_file *g)
{
    vocab v;
    char err[300];
    if (vocab_load(&v, g, err, sizeof err))
        return;
    int32_t ids[64];
    size_t n = 0;
    char buf[64];
    vocab_encode(&v, "Hello w\xc3\xb6rld  ab\n", 1, ids, 64, &n);
    for (size_t i = 0; i < n; i++)
        vocab_piece(&v, ids[i], buf, sizeof buf);
    for (int32_t id = -1; id < 8; id++)
        vocab_piece(&v, id, buf, sizeof buf);
    vocab_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *g;
    char err[300];
    if (gguf_parse(data, size, &g, err, sizeof err))
        return 0;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        uint32_t u;
        float f;
        gguf_str s;
        gguf_get_u32(g, g->kv[i].key, &u, err, sizeof err);
        gguf_get_f32(g, g->kv[i].key, &f, err, sizeof err);
        gguf_get_str(g, g->kv[i].key, &s, err, sizeof err);
        if (g->kv[i].type == GGUF_ARRAY && g->kv[i].v.arr.n) {
            if (g->kv[i].v.arr.type == GGUF_STRING)
                free(gguf_arr_strs(&g->kv[i]));
            else
                (void)gguf_arr_num(&g->kv[i], g->kv[i].v.arr.n - 1);
        }
    }
    llama_model m;
    if (llama_load(&m, g, 64, 0, err, sizeof err, NULL) == 0)
        llama_free(&m);
    use_vocab(g);
    gguf_close(g);
    return 0;
}
