/* SPDX-License-Identifier: MIT */
/* gguf-make.c - writes a Llama-architecture GGUF file with random weights
 * (no model weights can be downloaded here; llama.cpp and rayo-llama both
 * load what this writes).  Shapes come from a preset or options, the weight
 * types from a scheme:
 *   f32, f16, bf16, q8_0, q4_0   every 2-D weight in that type
 *   q4_k_m   like llama.cpp's Q4_K_M: Q4_K, with attn_v and ffn_down in Q6_K
 *            in the first and last eighth of the layers and every third
 *            layer between, and output in Q6_K
 *   mix      the types in turn, tensor by tensor (tests every format)
 * Norm weights are f32, as llama.cpp writes them.  The same seed gives the
 * same file.  A tied output gets small embeddings: with random weights the
 * token's own embedding would otherwise win every step.  Q4_K and Q6_K blocks come from librayo's simple min/max quantizers. */
#define _POSIX_C_SOURCE 200809L
#include "gguf-write.h"
#include <math.h>
#include <rayo.h> /* rayo-dtype.h, and the Q4_K / Q6_K quantizers */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    unsigned layers, embd, heads, kv_heads, ffn, vocab, ctx;
    int untied;
} shape;

static const shape TINY = {2, 256, 4, 2, 512, 384, 256, 1};
static const shape TINYLLAMA = {22, 2048, 32, 4, 5632, 32000, 2048, 1};

typedef struct tensor_plan {
    char name[64];
    uint32_t n_dims;
    uint64_t ne[2];
    uint32_t type;
    uint64_t offset, bytes;
    float spread;   /* values: uniform in [center - spread, center + spread] */
    float center;
} tensor_plan;

/* ---- random numbers (xorshift64*: reproducible across machines) ---------- */
static uint64_t rng_state;

static float uniform(void) /* in [-1, 1) */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((rng_state * UINT64_C(2685821657736338717)) >> 40) / 8388608.0f - 1.0f;
}

/* ---- the weight-type schemes -------------------------------------------- */
static int parse_type(const char *s, uint32_t *t)
{
    static const struct { const char *name; uint32_t type; } types[] = {
        {"f32", GGML_TYPE_F32}, {"f16", GGML_TYPE_F16}, {"bf16", GGML_TYPE_BF16},
        {"q8_0", GGML_TYPE_Q8_0}, {"q4_0", GGML_TYPE_Q4_0}, {"q4_k", GGML_TYPE_Q4_K},
        {"q6_k", GGML_TYPE_Q6_K}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcmp(s, types[i].name)) {
            *t = types[i].type;
            return 0;
        }
    return -1;
}

static int q4_k_m_more_bits(unsigned layer, unsigned layers)
{
    return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

static uint32_t type_for(const char *scheme, const char *name, unsigned layer, unsigned layers,
                         size_t index)
{
    static const uint32_t cycle[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K,
        GGML_TYPE_Q6_K, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32};
    uint32_t t;
    if (!strcmp(scheme, "mix"))
        return cycle[index % (sizeof cycle / sizeof *cycle)];
    if (strcmp(scheme, "q4_k_m"))
        return parse_type(scheme, &t) ? GGML_TYPE_F32 : t;
    if (!strcmp(name, "output.weight"))
        return GGML_TYPE_Q6_K;
    if ((strstr(name, "attn_v") || strstr(name, "ffn_down")) && q4_k_m_more_bits(layer, layers))
        return GGML_TYPE_Q6_K;
    return GGML_TYPE_Q4_K;
}

/* ---- the tensor list ------------------------------------------------------ */
static void plan_add(tensor_plan *p, size_t *n, const char *name, uint64_t ne0, uint64_t ne1,
                     uint32_t type, float spread, float center)
{
    tensor_plan *t = &p[(*n)++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = ne1 ? 2 : 1;
    t->ne[0] = ne0;
    t->ne[1] = ne1 ? ne1 : 1;
    t->type = type;
    t->spread = spread;
    t->center = center;
}

static size_t plan_tensors(const shape *s, const char *scheme, tensor_plan *p)
{
    size_t n = 0;
    unsigned hd = s->embd / s->heads, kv = hd * s->kv_heads;
    float w_embd = 1.7f / sqrtf((float)s->embd), w_ffn = 1.7f / sqrtf((float)s->ffn);
    plan_add(p, &n, "token_embd.weight", s->embd, s->vocab,
             type_for(scheme, "token_embd.weight", 0, s->layers, n), s->untied ? 1.0f : 0.05f, 0);
    for (unsigned l = 0; l < s->layers; l++) {
        static const char *const names[] = {"attn_norm", "attn_q", "attn_k", "attn_v",
            "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
        const uint64_t ne1[] = {0, s->embd, kv, kv, s->embd, 0, s->ffn, s->ffn, s->embd};
        for (size_t i = 0; i < 9; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%u.%s.weight", l, names[i]);
            int is_norm = ne1[i] == 0, down = i == 8;
            plan_add(p, &n, name, down ? s->ffn : s->embd, ne1[i], is_norm ? GGML_TYPE_F32 :
                     type_for(scheme, name, l, s->layers, n), is_norm ? 0.2f : down ? w_ffn :
                     w_embd, is_norm ? 1.0f : 0);
        }
    }
    plan_add(p, &n, "output_norm.weight", s->embd, 0, GGML_TYPE_F32, 0.2f, 1.0f);
    if (s->untied)
        plan_add(p, &n, "output.weight", s->embd, s->vocab,
                 type_for(scheme, "output.weight", 0, s->layers, n), w_embd * 3, 0);
    return n;
}

static int place(tensor_plan *p, size_t n, uint32_t align)
{
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        rayo_dtype dt;
        switch (p[i].type) {
        case GGML_TYPE_F16: dt = RAYO_DTYPE_F16; break;
        case GGML_TYPE_BF16: dt = RAYO_DTYPE_BF16; break;
        case GGML_TYPE_Q8_0: dt = RAYO_DTYPE_Q8_0; break;
        case GGML_TYPE_Q4_0: dt = RAYO_DTYPE_Q4_0; break;
        case GGML_TYPE_Q4_K: dt = RAYO_DTYPE_Q4_K; break;
        case GGML_TYPE_Q6_K: dt = RAYO_DTYPE_Q6_K; break;
        default: dt = RAYO_DTYPE_F32;
        }
        if (p[i].ne[0] % rayo_dtype_block_elems(dt)) {
            fprintf(stderr, "gguf-make: %s: %llu values per row is not a multiple of %s's block "
                    "(%zu)\n", p[i].name, (unsigned long long)p[i].ne[0], rayo_dtype_name(dt),
                    rayo_dtype_block_elems(dt));
            return -1;
        }
        p[i].bytes = p[i].ne[1] * (p[i].ne[0] / rayo_dtype_block_elems(dt)) *
                     rayo_dtype_block_bytes(dt);
        p[i].offset = off;
        off = (off + p[i].bytes + align - 1) / align * align;
    }
    return 0;
}

/* ---- metadata ------------------------------------------------------------- */
/* A SentencePiece-like vocabulary: <unk> <s> </s>, the 256 byte tokens, then
 * pieces of growing length over a small alphabet, with and without the
 * leading "▁" (scores fall with the index, as in llama's vocabularies). */
static const char ALPHABET[] = "etaoinshrdlucmfwypvbgkqjxzETAOINSHRDLUCMFWYPVBGKQJXZ0123456789.,!?'-";
#define SPACE "\xe2\x96\x81"

static void piece(unsigned i, char *out, size_t cap)
{
    size_t a = sizeof ALPHABET - 1, len = 1, count = 2 * a; /* pieces of length len */
    while (i >= count) {
        i -= (unsigned)count;
        len++;
        count *= a;
    }
    size_t pos = 0;
    if (i & 1)
        pos += (size_t)snprintf(out, cap, SPACE);
    i /= 2;
    for (size_t k = 0; k < len && pos + 1 < cap; k++, i /= (unsigned)a)
        out[pos++] = ALPHABET[i % a];
    out[pos] = '\0';
}

static void token_text(unsigned id, char *out, size_t cap)
{
    if (id < 3)
        snprintf(out, cap, "%s", id == 0 ? "<unk>" : id == 1 ? "<s>" : "</s>");
    else if (id < 259)
        snprintf(out, cap, "<0x%02X>", id - 3);
    else if (id == 259)
        snprintf(out, cap, SPACE);
    else
        piece(id - 260, out, cap);
}

static void write_vocab(gguf_writer *w, unsigned vocab)
{
    char text[64];
    gw_kv_str(w, "tokenizer.ggml.model", "llama");
    gw_kv_array(w, "tokenizer.ggml.tokens", GGUF_STRING, vocab);
    for (unsigned i = 0; i < vocab; i++) {
        token_text(i, text, sizeof text);
        gw_str(w, text);
    }
    gw_kv_array(w, "tokenizer.ggml.scores", GGUF_F32, vocab);
    for (unsigned i = 0; i < vocab; i++)
        gw_f32(w, i < 259 ? 0.0f : -(float)(i - 259));
    gw_kv_array(w, "tokenizer.ggml.token_type", GGUF_I32, vocab);
    for (unsigned i = 0; i < vocab; i++)
        gw_u32(w, i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);
    gw_kv_u32(w, "tokenizer.ggml.bos_token_id", 1);
    gw_kv_u32(w, "tokenizer.ggml.eos_token_id", 2);
    gw_kv_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    gw_kv_bool(w, "tokenizer.ggml.add_bos_token", 1);
    gw_kv_bool(w, "tokenizer.ggml.add_eos_token", 0);
}

#define N_KV 21

static void write_metadata(gguf_writer *w, const shape *s, const char *scheme)
{
    char name[80];
    snprintf(name, sizeof name, "rayo random llama %ux%u %s", s->layers, s->embd, scheme);
    gw_kv_str(w, "general.architecture", "llama");
    gw_kv_str(w, "general.name", name);
    gw_kv_u32(w, "general.alignment", 32);
    gw_kv_u32(w, "llama.context_length", s->ctx);
    gw_kv_u32(w, "llama.embedding_length", s->embd);
    gw_kv_u32(w, "llama.block_count", s->layers);
    gw_kv_u32(w, "llama.feed_forward_length", s->ffn);
    gw_kv_u32(w, "llama.rope.dimension_count", s->embd / s->heads);
    gw_kv_f32(w, "llama.rope.freq_base", 10000.0f);
    gw_kv_u32(w, "llama.attention.head_count", s->heads);
    gw_kv_u32(w, "llama.attention.head_count_kv", s->kv_heads);
    gw_kv_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    write_vocab(w, s->vocab); /* 9 keys */
}

/* ---- tensor data ---------------------------------------------------------- */
static int encode_row(uint32_t type, const float *x, size_t n, uint8_t *out)
{
    switch (type) {
    case GGML_TYPE_F32: memcpy(out, x, n * 4); return 0;
    case GGML_TYPE_Q8_0: rayo_quantize_q8_0(x, out, n); return 0;
    case GGML_TYPE_Q4_0: rayo_quantize_q4_0(x, out, n); return 0;
    case GGML_TYPE_Q4_K: rayo_quantize_q4_k(x, out, n); return 0;
    case GGML_TYPE_Q6_K: rayo_quantize_q6_k(x, out, n); return 0;
    default:
        for (size_t i = 0; i < n; i++) {
            uint16_t h = type == GGML_TYPE_F16 ? rayo_f32_to_f16(x[i]) : rayo_f32_to_bf16(x[i]);
            out[2 * i] = (uint8_t)h;
            out[2 * i + 1] = (uint8_t)(h >> 8);
        }
        return 0;
    }
}

static int write_tensor(FILE *fp, const tensor_plan *t, uint32_t align)
{
    size_t n = t->ne[0], row_bytes = t->bytes / t->ne[1];
    float *x = malloc(n * sizeof *x);
    uint8_t *row = malloc(row_bytes);
    int rc = x && row ? 0 : -1;
    for (uint64_t r = 0; rc == 0 && r < t->ne[1]; r++) {
        for (size_t i = 0; i < n; i++)
            x[i] = t->center + t->spread * uniform();
        encode_row(t->type, x, n, row);
        if (fwrite(row, 1, row_bytes, fp) != row_bytes)
            rc = -1;
    }
    static const uint8_t zero[64];
    size_t pad = (size_t)((align - t->bytes % align) % align);
    if (rc == 0 && pad && fwrite(zero, 1, pad, fp) != pad)
        rc = -1;
    free(x);
    free(row);
    return rc;
}

static int write_file(const char *path, const shape *s, const char *scheme, uint64_t seed)
{
    size_t cap = 9 * (size_t)s->layers + 4;
    tensor_plan *p = calloc(cap, sizeof *p);
    if (!p)
        return -1;
    size_t n = plan_tensors(s, scheme, p);
    gguf_writer w = {0};
    int rc = place(p, n, 32);
    if (rc == 0) {
        gw_header(&w, n, N_KV + 1);
        write_metadata(&w, s, scheme);
        gw_kv_str(&w, "general.rayo_scheme", scheme);
        for (size_t i = 0; i < n; i++)
            gw_tensor_info(&w, p[i].name, p[i].n_dims, p[i].ne, p[i].type, p[i].offset);
        gw_pad(&w, 32);
    }
    FILE *fp = rc == 0 && !w.oom ? fopen(path, "wb") : NULL;
    rc = fp && fwrite(w.p, 1, w.len, fp) == w.len ? 0 : -1;
    rng_state = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = write_tensor(fp, &p[i], 32);
        fprintf(stderr, "\rgguf-make: %zu/%zu tensors", i + 1, n);
    }
    fprintf(stderr, "\n");
    if (fp && fclose(fp))
        rc = -1;
    if (rc)
        fprintf(stderr, "gguf-make: %s: write failed\n", path);
    gw_free(&w);
    free(p);
    return rc;
}

/* ---- command line --------------------------------------------------------- */
static void usage(void)
{
    fprintf(stderr,
        "usage: gguf-make [options] -o FILE.gguf\n"
        "  --preset tiny|tinyllama   shapes (default tiny: 2 layers, 256 wide, vocab 384)\n"
        "  --scheme f32|f16|bf16|q8_0|q4_0|q4_k_m|mix   weight types (default mix)\n"
        "  --layers N --embd N --heads N --kv-heads N --ffn N --vocab N --ctx N\n"
        "  --tied | --untied         output.weight shares token_embd (tied) or not\n"
        "  --seed N                  (default 1)\n");
}

static int parse_args(int argc, char **argv, shape *s, const char **scheme, const char **out,
                      uint64_t *seed)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned *num = !strcmp(a, "--layers") ? &s->layers : !strcmp(a, "--embd") ? &s->embd :
            !strcmp(a, "--heads") ? &s->heads : !strcmp(a, "--kv-heads") ? &s->kv_heads :
            !strcmp(a, "--ffn") ? &s->ffn : !strcmp(a, "--vocab") ? &s->vocab :
            !strcmp(a, "--ctx") ? &s->ctx : NULL;
        if (!strcmp(a, "--tied") || !strcmp(a, "--untied")) {
            s->untied = a[2] == 'u';
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (num)
            *num = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--preset") && (!strcmp(v, "tiny") || !strcmp(v, "tinyllama")))
            *s = !strcmp(v, "tiny") ? TINY : TINYLLAMA;
        else if (!strcmp(a, "--scheme"))
            *scheme = v;
        else if (!strcmp(a, "--seed"))
            *seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "-o"))
            *out = v;
        else
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    shape s = TINY;
    const char *scheme = "mix", *out = NULL;
    uint64_t seed = 1;
    uint32_t t;
    if (parse_args(argc, argv, &s, &scheme, &out, &seed) || !out) {
        usage();
        return 2;
    }
    if (strcmp(scheme, "mix") && strcmp(scheme, "q4_k_m") && parse_type(scheme, &t)) {
        fprintf(stderr, "gguf-make: unknown scheme '%s'\n", scheme);
        return 2;
    }
    if (!s.layers || !s.heads || !s.kv_heads || s.embd % s.heads || s.heads % s.kv_heads ||
        (s.embd / s.heads) % 2 || s.vocab < 260 || !s.ffn || s.layers > 1000) {
        fprintf(stderr, "gguf-make: bad shape (heads must divide embd, kv-heads heads; head "
                "size even; vocab >= 260)\n");
        return 2;
    }
    return write_file(out, &s, scheme, seed) ? 1 : 0;
}
