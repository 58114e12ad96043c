/* SPDX-License-Identifier: MIT */
/* tokenizer.c - SentencePiece-style BPE from GGUF metadata (see tokenizer.h). */
#include "tokenizer.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPACE "\xe2\x96\x81" /* U+2581, SentencePiece's visible space */

static uint64_t hash(const char *s, size_t len)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * UINT64_C(1099511628211);
    return h;
}

int32_t vocab_find(const vocab *v, const char *s, size_t len)
{
    size_t mask = v->n_slots - 1;
    for (size_t i = hash(s, len) & mask; v->slots[i]; i = (i + 1) & mask) {
        const gguf_str *t = &v->text[v->slots[i] - 1];
        if (t->len == len && !memcmp(t->p, s, len))
            return (int32_t)(v->slots[i] - 1);
    }
    return -1;
}

static int build_table(vocab *v)
{
    v->n_slots = 16;
    while (v->n_slots < 2 * (size_t)v->n)
        v->n_slots *= 2;
    v->slots = calloc(v->n_slots, sizeof *v->slots);
    if (!v->slots)
        return -1;
    for (uint32_t id = 0; id < v->n; id++) {
        if (vocab_find(v, v->text[id].p, v->text[id].len) >= 0)
            continue; /* a duplicate text: the first id wins */
        size_t i = hash(v->text[id].p, v->text[id].len) & (v->n_slots - 1);
        while (v->slots[i])
            i = (i + 1) & (v->n_slots - 1);
        v->slots[i] = id + 1;
    }
    return 0;
}

static const gguf_kv *array_of(const gguf_file *g, const char *key, uint32_t n, int numeric,
                               char *err, size_t errlen)
{
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type != GGUF_ARRAY || (n && kv->v.arr.n != n) ||
        (numeric ? kv->v.arr.type == GGUF_STRING : kv->v.arr.type != GGUF_STRING)) {
        snprintf(err, errlen, "metadata key '%s': %s", key, !kv ? "missing" :
                 "not an array of the vocabulary's size and type");
        return NULL;
    }
    return kv;
}

static int32_t id_or(const gguf_file *g, const char *key, int32_t dflt, uint32_t n)
{
    uint32_t id;
    char err[8];
    return gguf_get_u32(g, key, &id, err, sizeof err) == 0 && id < n ? (int32_t)id : dflt;
}

static int flag_or(const gguf_file *g, const char *key, int dflt)
{
    const gguf_kv *kv = gguf_find(g, key);
    return kv && kv->type == GGUF_BOOL ? (int)kv->v.u : dflt;
}

static void read_specials(vocab *v, const gguf_file *g)
{
    v->bos = id_or(g, "tokenizer.ggml.bos_token_id", 1 < v->n ? 1 : -1, v->n);
    v->eos = id_or(g, "tokenizer.ggml.eos_token_id", 2 < v->n ? 2 : -1, v->n);
    v->unk = id_or(g, "tokenizer.ggml.unknown_token_id", 0, v->n);
    v->add_bos = flag_or(g, "tokenizer.ggml.add_bos_token", 1);
    v->add_space_prefix = flag_or(g, "tokenizer.ggml.add_space_prefix", 1);
    for (int b = 0; b < 256; b++) {
        char text[8];
        snprintf(text, sizeof text, "<0x%02X>", b);
        v->byte_token[b] = vocab_find(v, text, 6);
    }
}

int vocab_load(vocab *v, const gguf_file *g, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    gguf_str model;
    if (gguf_get_str(g, "tokenizer.ggml.model", &model, err, errlen))
        return -1;
    if (model.len != 5 || memcmp(model.p, "llama", 5)) {
        snprintf(err, errlen, "tokenizer.ggml.model '%.*s' is not supported (only 'llama' is)",
                 (int)(model.len < 40 ? model.len : 40), model.p);
        return -1;
    }
    const gguf_kv *tokens = array_of(g, "tokenizer.ggml.tokens", 0, 0, err, errlen);
    if (!tokens || tokens->v.arr.n == 0 || tokens->v.arr.n > (1u << 24)) {
        if (tokens)
            snprintf(err, errlen, "tokenizer.ggml.tokens: %llu tokens (1 .. 2^24 allowed)",
                     (unsigned long long)tokens->v.arr.n);
        return -1;
    }
    v->n = (uint32_t)tokens->v.arr.n;
    const gguf_kv *scores = array_of(g, "tokenizer.ggml.scores", v->n, 1, err, errlen);
    const gguf_kv *types = array_of(g, "tokenizer.ggml.token_type", v->n, 1, err, errlen);
    v->text = gguf_arr_strs(tokens);
    v->score = malloc(v->n * sizeof *v->score);
    v->type = malloc(v->n * sizeof *v->type);
    if (!scores || !types || !v->text || !v->score || !v->type || build_table(v)) {
        if (scores && types)
            snprintf(err, errlen, "out of memory for the vocabulary");
        vocab_free(v);
        return -1;
    }
    for (uint32_t i = 0; i < v->n; i++) {
        v->score[i] = (float)gguf_arr_num(scores, i);
        v->type[i] = (int32_t)gguf_arr_int(types, i);
    }
    read_specials(v, g);
    return 0;
}

void vocab_free(vocab *v)
{
    free(v->text);
    free(v->score);
    free(v->type);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

/* ---- encode ------------------------------------------------------------ */
typedef struct symbol {
    size_t start, len;
    int prev, next;     /* -1: none */
    float merge_score;  /* of merging with next; -INFINITY: no such token */
} symbol;

static void rate_pair(const vocab *v, const char *s, symbol *sym, int i)
{
    sym[i].merge_score = -INFINITY;
    int j = sym[i].next;
    if (j < 0)
        return;
    int32_t id = vocab_find(v, s + sym[i].start, sym[i].len + sym[j].len);
    if (id >= 0)
        sym[i].merge_score = v->score[id];
}

/* Spaces to "▁", with the leading one.  Returns a malloc'd string. */
static char *escape(const char *text, int prefix, size_t *len)
{
    size_t n = strlen(text), spaces = 0;
    for (size_t i = 0; i < n; i++)
        spaces += text[i] == ' ';
    char *s = malloc(n + 2 * spaces + (prefix ? 3 : 0) + 1), *p = s;
    if (!s)
        return NULL;
    if (prefix) {
        memcpy(p, SPACE, 3);
        p += 3;
    }
    for (size_t i = 0; i < n; i++) {
        if (text[i] == ' ') {
            memcpy(p, SPACE, 3);
            p += 3;
        } else {
            *p++ = text[i];
        }
    }
    *p = '\0';
    *len = (size_t)(p - s);
    return s;
}

static size_t utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : c >> 5 == 6 ? 2 : c >> 4 == 14 ? 3 : c >> 3 == 30 ? 4 : 1;
}

static int split_chars(const vocab *v, const char *s, size_t len, symbol *sym)
{
    int n = 0;
    for (size_t i = 0; i < len; n++) {
        size_t l = utf8_len((unsigned char)s[i]);
        sym[n].start = i;
        sym[n].len = l < len - i ? l : len - i;
        sym[n].prev = n - 1;
        sym[n].next = i + sym[n].len < len ? n + 1 : -1;
        i += sym[n].len;
    }
    for (int i = 0; i < n; i++)
        rate_pair(v, s, sym, i);
    return n;
}

static void merge_all(const vocab *v, const char *s, symbol *sym, int n)
{
    for (;;) {
        int best = -1;
        for (int i = n ? 0 : -1; i >= 0; i = sym[i].next)
            if (sym[i].merge_score > -INFINITY &&
                (best < 0 || sym[i].merge_score > sym[best].merge_score))
                best = i;
        if (best < 0)
            return;
        int gone = sym[best].next;
        sym[best].len += sym[gone].len;
        sym[best].next = sym[gone].next;
        if (sym[gone].next >= 0)
            sym[sym[gone].next].prev = best;
        rate_pair(v, s, sym, best);
        if (sym[best].prev >= 0)
            rate_pair(v, s, sym, sym[best].prev);
    }
}

static int emit(int32_t id, int32_t *out, size_t cap, size_t *n)
{
    if (*n >= cap)
        return -1;
    out[(*n)++] = id;
    return 0;
}

static int emit_symbol(const vocab *v, const char *s, const symbol *sym, int32_t *out,
                       size_t cap, size_t *n)
{
    int32_t id = vocab_find(v, s + sym->start, sym->len);
    if (id >= 0)
        return emit(id, out, cap, n);
    for (size_t b = 0; b < sym->len; b++) {
        int32_t bt = v->byte_token[(uint8_t)s[sym->start + b]];
        if (emit(bt >= 0 ? bt : v->unk, out, cap, n))
            return -1;
    }
    return 0;
}

int vocab_encode(const vocab *v, const char *text, int add_bos, int32_t *out, size_t cap,
                 size_t *n)
{
    *n = 0;
    if (add_bos && v->bos >= 0 && emit(v->bos, out, cap, n))
        return -1;
    if (!*text)
        return 0;
    size_t len;
    char *s = escape(text, v->add_space_prefix, &len);
    symbol *sym = s ? malloc(len * sizeof *sym) : NULL;
    int rc = sym ? 0 : -1;
    if (sym) {
        int count = split_chars(v, s, len, sym);
        merge_all(v, s, sym, count);
        for (int i = 0; rc == 0 && i >= 0; i = sym[i].next)
            rc = emit_symbol(v, s, &sym[i], out, cap, n);
    }
    free(sym);
    free(s);
    return rc;
}

/* ---- decode ------------------------------------------------------------ */
static int hex_byte(const gguf_str *t)
{
    unsigned b;
    char text[8];
    if (t->len != 6)
        return -1;
    memcpy(text, t->p, 6);
    text[6] = '\0';
    return sscanf(text, "<0x%2X>", &b) == 1 ? (int)b : -1;
}

size_t vocab_piece(const vocab *v, int32_t id, char *buf, size_t cap)
{
    if (id < 0 || (uint32_t)id >= v->n || cap == 0)
        return 0;
    const gguf_str *t = &v->text[id];
    size_t n = 0;
    if (v->type[id] == TOKEN_CONTROL || v->type[id] == TOKEN_UNUSED)
        return 0;
    if (v->type[id] == TOKEN_BYTE && hex_byte(t) >= 0) {
        buf[0] = (char)hex_byte(t);
        return 1;
    }
    for (size_t i = 0; i < t->len && n < cap; i++) {
        if (v->type[id] == TOKEN_NORMAL && i + 3 <= t->len && !memcmp(t->p + i, SPACE, 3)) {
            buf[n++] = ' ';
            i += 2;
        } else {
            buf[n++] = t->p[i];
        }
    }
    return n;
}
