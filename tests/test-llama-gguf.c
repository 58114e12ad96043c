/* SPDX-License-Identifier: MIT */
/* test-llama-gguf.c - examples/llama's GGUF reader on a valid file (every
 * value type read back as written) and on broken ones (every truncation, and
 * one file per check, each refused with the offset and the field named);
 * the generator's Q4_K / Q6_K quantizers against rayo-dtype.h's dequantizers;
 * the tokenizer on a hand-made vocabulary with hand-worked merges. */
#include "testutil.h"
#include "test-rng.h"
#include "gguf-write.h"
#include "rayo.h" /* the Q4_K and Q6_K quantizers */
#include "tokenizer.h"
#include <math.h>

/* ---- files ------------------------------------------------------------ */
typedef struct variant {
    uint32_t version, alignment, n_dims, ggml_type, value_type, array_type, bool_value;
    uint64_t n_tensors_claim, n_kv_claim, ne0, ne1, offset, array_n_claim;
    int duplicate_key, key_len_lie, skip_data;
    uint64_t a_ne1;   /* rows of tensor a (f32 x 8 at offset 0): 3 runs into b */
    int b_at_zero;    /* tensor b at offset 0, where a is */
} variant;

static variant valid(void)
{
    return (variant){3, 64, 2, GGML_TYPE_Q8_0, GGUF_U8, GGUF_U32, 1, 0, 0, 32, 2, 0, 0, 0, 0, 0, 2, 0};
}

#define N_KV 16

static void write_kvs(gguf_writer *w, const variant *v)
{
    gw_kv_u32(w, "general.alignment", v->alignment);
    gw_str(w, "t.u8");
    gw_u32(w, v->value_type); /* GGUF_U8 unless a test changes it */
    uint8_t b = 200;
    gw_bytes(w, &b, 1);
    gw_str(w, "t.i8"); gw_u32(w, GGUF_I8); b = 0x80; gw_bytes(w, &b, 1);
    gw_str(w, "t.u16"); gw_u32(w, GGUF_U16); b = 0x34; gw_bytes(w, &b, 1); b = 0x12; gw_bytes(w, &b, 1);
    gw_str(w, "t.i16"); gw_u32(w, GGUF_I16); b = 0xfe; gw_bytes(w, &b, 1); b = 0xff; gw_bytes(w, &b, 1);
    gw_kv_u32(w, "t.u32", 4000000000u);
    gw_str(w, "t.i32"); gw_u32(w, GGUF_I32); gw_u32(w, (uint32_t)-7);
    gw_kv_f32(w, "t.f32", 1.5f);
    gw_str(w, "t.bool"); gw_u32(w, GGUF_BOOL); b = (uint8_t)v->bool_value; gw_bytes(w, &b, 1);
    gw_kv_str(w, "t.string", "h\xc3\xa9llo");
    gw_str(w, "t.u64"); gw_u32(w, GGUF_U64); gw_u64(w, UINT64_C(1) << 40);
    gw_str(w, "t.i64"); gw_u32(w, GGUF_I64); gw_u64(w, (uint64_t)INT64_C(-5));
    gw_str(w, "t.f64"); gw_u32(w, GGUF_F64);
    double d = -0.25;
    gw_bytes(w, &d, 8);
    gw_kv_array(w, "t.arr_u32", v->array_type, v->array_n_claim ? v->array_n_claim : 3);
    for (uint32_t i = 0; i < 3; i++)
        gw_u32(w, 10 + i);
    gw_kv_array(w, "t.arr_str", GGUF_STRING, 2);
    gw_str(w, "one");
    gw_str(w, "");
    if (v->key_len_lie) {
        gw_u64(w, UINT64_C(1) << 50); /* a key length past the end */
        gw_bytes(w, "t.x", 3);
    } else {
        gw_str(w, v->duplicate_key ? "t.u32" : "t.last");
    }
    gw_u32(w, GGUF_U32);
    gw_u32(w, 1);
}

static void build(gguf_writer *w, const variant *v)
{
    uint64_t ne_a[2] = {8, v->a_ne1}, ne_b[8] = {v->ne0, v->ne1, 1, 1, 1, 1, 1, 1};
    *w = (gguf_writer){0};
    gw_bytes(w, "GGUF", 4);
    gw_u32(w, v->version);
    gw_u64(w, v->n_tensors_claim ? v->n_tensors_claim : 2);
    gw_u64(w, v->n_kv_claim ? v->n_kv_claim : N_KV);
    write_kvs(w, v);
    gw_tensor_info(w, "a", 2, ne_a, GGML_TYPE_F32, 0);
    gw_tensor_info(w, "b", v->n_dims, ne_b, v->ggml_type, v->b_at_zero ? 0 : v->offset ? v->offset : 64);
    if (v->skip_data)
        return;
    gw_pad(w, v->alignment > 0 && v->alignment <= 4096 ? v->alignment : 32);
    for (int i = 0; i < 16; i++)
        gw_f32(w, (float)i);
    gw_pad(w, 64);
    for (int i = 0; i < 2 * 34; i++) { /* two Q8_0 blocks */
        uint8_t b = (uint8_t)i;
        gw_bytes(w, &b, 1);
    }
}

/* Parses a private copy of exactly the bytes (so a sanitizer sees overreads). */
static int parse(const uint8_t *p, size_t n, gguf_file **g, char *err, size_t errlen)
{
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, p, n);
    int rc = gguf_parse(copy, n, g, err, errlen);
    if (rc == 0) {
        gguf_close(*g); /* parse again from the caller's bytes, which live on */
        rc = gguf_parse(p, n, g, err, errlen);
    }
    free(copy);
    return rc;
}

static void test_valid(void)
{
    gguf_writer w;
    variant v = valid();
    build(&w, &v);
    gguf_file *g;
    char err[300] = "";
    CHECK(parse(w.p, w.len, &g, err, sizeof err) == 0, "valid file refused: %s", err);
    if (!g) {
        gw_free(&w);
        return;
    }
    CHECK(g->n_kv == N_KV && g->n_tensors == 2 && g->alignment == 64, "counts");
    CHECK(gguf_find(g, "t.u8")->v.u == 200 && gguf_find(g, "t.i8")->v.i == -128, "8-bit");
    CHECK(gguf_find(g, "t.u16")->v.u == 0x1234 && gguf_find(g, "t.i16")->v.i == -2, "16-bit");
    uint32_t u;
    float f;
    gguf_str s;
    CHECK(gguf_get_u32(g, "t.u32", &u, err, sizeof err) == 0 && u == 4000000000u, "u32");
    CHECK(gguf_get_u32(g, "t.i32", &u, err, sizeof err) != 0 && strstr(err, "not a u32"),
          "negative i32 taken as u32: %s", err);
    CHECK(gguf_get_u32(g, "t.u64", &u, err, sizeof err) != 0, "2^40 taken as u32");
    CHECK(gguf_get_f32(g, "t.f32", &f, err, sizeof err) == 0 && f == 1.5f, "f32");
    CHECK(gguf_get_f32(g, "t.f64", &f, err, sizeof err) == 0 && f == -0.25f, "f64");
    CHECK(gguf_find(g, "t.bool")->v.u == 1 && gguf_find(g, "t.i64")->v.i == -5, "bool, i64");
    CHECK(gguf_get_str(g, "t.string", &s, err, sizeof err) == 0 && s.len == 6 &&
          !memcmp(s.p, "h\xc3\xa9llo", 6), "string");
    CHECK(gguf_get_str(g, "t.nope", &s, err, sizeof err) != 0 && strstr(err, "missing"), "missing");
    const gguf_kv *a = gguf_find(g, "t.arr_u32"), *as = gguf_find(g, "t.arr_str");
    CHECK(a->v.arr.n == 3 && gguf_arr_int(a, 2) == 12 && gguf_arr_num(a, 0) == 10.0, "array");
    gguf_str one = gguf_arr_str(as, 0), empty = gguf_arr_str(as, 1);
    CHECK(one.len == 3 && !memcmp(one.p, "one", 3) && empty.len == 0, "string array");
    const gguf_tensor *tb = gguf_tensor_find(g, "b"), *ta = gguf_tensor_find(g, "a");
    CHECK(g->data_offset % 64 == 0 && ta->data == w.p + g->data_offset, "data offset");
    CHECK(tb->dtype == RAYO_DTYPE_Q8_0 && tb->bytes == 68 &&
          (const uint8_t *)tb->data == w.p + g->data_offset + 64 && ((const uint8_t *)tb->data)[5] == 5,
          "tensor b in place");
    CHECK(((const float *)ta->data)[7] == 7.0f && ta->ne[0] == 8 && ta->ne[1] == 2, "tensor a");
    gguf_close(g);
    gw_free(&w);
}

/* Every cut of a valid file is refused with an offset, never read past. */
static void test_truncations(void)
{
    gguf_writer w;
    variant v = valid();
    build(&w, &v);
    int refused = 0, named = 0;
    for (size_t n = 0; n < w.len; n++) {
        gguf_file *g = NULL;
        char err[300] = "";
        if (parse(w.p, n, &g, err, sizeof err) != 0) {
            refused++;
            named += !strncmp(err, "offset ", 7);
        } else {
            gguf_close(g);
        }
    }
    CHECK(refused == (int)w.len && named == refused, "%d of %zu cuts refused, %d name an offset",
          refused, w.len, named);
    gw_free(&w);
}

static void expect_refusal(const char *what, variant v, const char *text)
{
    gguf_writer w;
    build(&w, &v);
    gguf_file *g = NULL;
    char err[300] = "";
    int rc = parse(w.p, w.len, &g, err, sizeof err);
    CHECK(rc != 0 && strstr(err, text) && !strncmp(err, "offset ", 7),
          "%s: rc %d, message '%s' (wanted '%s')", what, rc, err, text);
    if (rc == 0)
        gguf_close(g);
    gw_free(&w);
}

static void test_refusals(void)
{
    variant v;
    v = valid(); v.version = 2;                 expect_refusal("version", v, "version: 2");
    v = valid(); v.n_tensors_claim = UINT64_C(1) << 60; expect_refusal("tensors", v, "tensor count");
    v = valid(); v.n_kv_claim = UINT64_C(1) << 40; expect_refusal("kv count", v, "key/value count");
    v = valid(); v.n_kv_claim = N_KV + 1;       expect_refusal("kv count +1", v, "");
    v = valid(); v.key_len_lie = 1;             expect_refusal("key length", v, "string length");
    v = valid(); v.value_type = 99;             expect_refusal("value type", v, "type 99 is unknown");
    v = valid(); v.array_type = GGUF_ARRAY;     expect_refusal("nested array", v, "nested");
    v = valid(); v.array_n_claim = UINT64_C(1) << 61; expect_refusal("array count", v, "array of");
    v = valid(); v.bool_value = 2;              expect_refusal("bool", v, "bool value 2");
    v = valid(); v.n_dims = 5;                  expect_refusal("n_dims", v, "n_dims 5");
    v = valid(); v.n_dims = 0;                  expect_refusal("n_dims 0", v, "n_dims 0");
    v = valid(); v.ggml_type = 3;               expect_refusal("q4_1", v, "not supported");
    v = valid(); v.ne0 = 33;                    expect_refusal("partial block", v, "whole number");
    v = valid(); v.ne1 = 0;                     expect_refusal("zero dim", v, "zero or overflows");
    v = valid(); v.ne0 = UINT64_C(1) << 40; v.ne1 = UINT64_C(1) << 40;
    expect_refusal("overflow", v, "zero or overflows");
    v = valid(); v.offset = 96;                 expect_refusal("misaligned", v, "not aligned");
    v = valid(); v.offset = 1 << 20;            expect_refusal("out of file", v, "data at");
    v = valid(); v.alignment = 24;              expect_refusal("alignment", v, "power of two");
    v = valid(); v.duplicate_key = 1;           expect_refusal("duplicate", v, "appears twice");
    v = valid(); v.skip_data = 1;               expect_refusal("no data", v, "tensor");
    v = valid(); v.b_at_zero = 1;               expect_refusal("same offset", v, "overlap");
    v = valid(); v.a_ne1 = 3;                   expect_refusal("a runs into b", v, "overlap");
    gguf_file *g;
    char err[300];
    CHECK(gguf_parse((const uint8_t *)"GGML\3\0\0\0", 8, &g, err, sizeof err) && strstr(err, "magic"),
          "magic: %s", err);
    CHECK(gguf_open("/nonexistent.gguf", &g, err, sizeof err) && strstr(err, "/nonexistent.gguf"),
          "missing file: %s", err);
    CHECK(gguf_open("/", &g, err, sizeof err) && strstr(err, "not a regular file"), "dir: %s", err);
}

/* ---- quantizers ------------------------------------------------------------ */
static void check_quantizer(const char *name, void (*q)(const float *, void *, size_t),
                            rayo_dtype dt, double tol)
{
    enum { N = 4 * 256 };
    float x[N], y[N];
    uint8_t blocks[4 * 210];
    for (int trial = 0; trial < 50; trial++) {
        double scale = pow(10.0, rng_uniform(-3, 3)), amax = 0, err = 0;
        for (int i = 0; i < N; i++) {
            /* trials of all-positive, all-negative and mixed data */
            double lo = trial % 3 == 1 ? 0 : -1, hi = trial % 3 == 2 ? 0 : 1;
            x[i] = (float)(scale * rng_uniform(lo, hi));
            if (fabs(x[i]) > amax) /* not fmax: gcc 12's aarch64 vectoriser crashes on it */
                amax = fabs(x[i]);
        }
        q(x, blocks, N);
        rayo_dequantize_row(dt, blocks, y, N);
        for (int i = 0; i < N; i++)
            if (fabs((double)y[i] - x[i]) > err) /* not fmax (gcc 12 aarch64 ICE) */
                err = fabs((double)y[i] - x[i]);
        CHECK(err <= tol * amax, "%s trial %d: max error %g of max |x| %g", name, trial, err, amax);
    }
    memset(x, 0, sizeof x);
    q(x, blocks, N);
    rayo_dequantize_row(dt, blocks, y, N);
    CHECK(y[0] == 0 && y[N - 1] == 0, "%s of zeros", name);
}

/* ---- tokenizer ----------------------------------------------------------- */
#define SP "\xe2\x96\x81"
static const struct { const char *text; float score; } PIECES[] = {
    {SP, -1}, {"a", -1}, {"b", -1}, {"c", -1}, {"ab", -5}, {"bc", -2}, {SP "a", -3},
    {SP "ab", -4}, {"abc", -10}, {SP "abc", -20}, {"ca", -6}, {"ac", -6}};
#define N_PIECES (sizeof PIECES / sizeof *PIECES)
enum { FIRST = 259 }; /* ids: <unk> <s> </s>, 256 bytes, then PIECES */

static void build_vocab_file(gguf_writer *w)
{
    uint32_t n = FIRST + N_PIECES;
    char text[16];
    *w = (gguf_writer){0};
    gw_header(w, 0, 5);
    gw_kv_str(w, "tokenizer.ggml.model", "llama");
    gw_kv_array(w, "tokenizer.ggml.tokens", GGUF_STRING, n);
    for (uint32_t i = 0; i < n; i++) {
        if (i >= FIRST)
            gw_str(w, PIECES[i - FIRST].text);
        else if (i >= 3) {
            snprintf(text, sizeof text, "<0x%02X>", i - 3);
            gw_str(w, text);
        } else
            gw_str(w, i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
    }
    gw_kv_array(w, "tokenizer.ggml.scores", GGUF_F32, n);
    for (uint32_t i = 0; i < n; i++)
        gw_f32(w, i >= FIRST ? PIECES[i - FIRST].score : 0);
    gw_kv_array(w, "tokenizer.ggml.token_type", GGUF_I32, n);
    for (uint32_t i = 0; i < n; i++)
        gw_u32(w, i == 0 ? 2 : i < 3 ? 3 : i < FIRST ? 6 : 1);
    gw_kv_u32(w, "tokenizer.ggml.bos_token_id", 1);
}

static void expect_tokens(const vocab *v, const char *text, int bos, const int32_t *want,
                          size_t n_want)
{
    int32_t got[64];
    size_t n = 0;
    int rc = vocab_encode(v, text, bos, got, 64, &n);
    int same = rc == 0 && n == n_want && !memcmp(got, want, n * sizeof *got);
    CHECK(same, "'%s': %zu tokens, first %d %d %d", text, n, n > 0 ? got[0] : -1,
          n > 1 ? got[1] : -1, n > 2 ? got[2] : -1);
}

static void test_tokenizer(void)
{
    gguf_writer w;
    build_vocab_file(&w);
    gguf_file *g;
    vocab v;
    char err[300] = "";
    if (gguf_parse(w.p, w.len, &g, err, sizeof err) || vocab_load(&v, g, err, sizeof err)) {
        CHECK(0, "vocabulary file: %s", err);
        return;
    }
    /* "▁abc": bc (-2) first, then ▁a (-3), then ▁a + bc = ▁abc (-20) */
    expect_tokens(&v, "abc", 0, (const int32_t[]){FIRST + 9}, 1);
    expect_tokens(&v, "ab", 1, (const int32_t[]){1, FIRST + 7}, 2);
    expect_tokens(&v, "a b", 0, (const int32_t[]){FIRST + 6, FIRST, FIRST + 2}, 3);
    /* ties go to the leftmost pair: "▁cac" -> ▁ ca c, not ▁ c ac */
    expect_tokens(&v, "cac", 0, (const int32_t[]){FIRST, FIRST + 10, FIRST + 3}, 3);
    /* é is no token: its two bytes */
    expect_tokens(&v, "\xc3\xa9", 0, (const int32_t[]){FIRST, 3 + 0xc3, 3 + 0xa9}, 3);
    char buf[16];
    CHECK(vocab_piece(&v, FIRST + 6, buf, sizeof buf) == 2 && !memcmp(buf, " a", 2), "piece ▁a");
    CHECK(vocab_piece(&v, 3 + 0x41, buf, sizeof buf) == 1 && buf[0] == 'A', "byte piece");
    CHECK(vocab_piece(&v, 1, buf, sizeof buf) == 0, "control piece");
    /* any text comes back from its tokens */
    static const char *const parts[] = {"a", "b", "c", " ", "\xc3\xa9", "x", "\n"};
    for (int trial = 0; trial < 200; trial++) {
        char text[64] = "", out[256];
        int len = (int)rng_uniform(1, 12);
        for (int i = 0; i < len; i++)
            strcat(text, parts[rng_next() % 7]);
        int32_t ids[128];
        size_t n = 0, m = 0;
        vocab_encode(&v, text, 0, ids, 128, &n);
        for (size_t i = 0; i < n; i++)
            m += vocab_piece(&v, ids[i], out + m, sizeof out - m);
        CHECK(m == strlen(text) + 1 && out[0] == ' ' && !memcmp(out + 1, text, m - 1),
              "round trip of '%s'", text);
    }
    vocab_free(&v);
    gguf_close(g);
    gw_free(&w);
}

int main(void)
{
    rng_seed_from_env();
    test_valid();
    test_truncations();
    test_refusals();
    check_quantizer("q4_k", rayo_quantize_q4_k, RAYO_DTYPE_Q4_K, 0.1);
    check_quantizer("q6_k", rayo_quantize_q6_k, RAYO_DTYPE_Q6_K, 0.03);
    test_tokenizer();
    return test_summary();
}
