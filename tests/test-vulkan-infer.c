/* SPDX-License-Identifier: MIT */
/* test-vulkan-infer - the vulkan backend's inference ops in batches on
 * device buffers: what rayo-conform (host calls, packed operands) does not
 * reach.  Operands sit at odd byte offsets and between guard bytes, rows
 * have strides, f16 outputs share their end words with neighbours, rope
 * runs in place, get_rows meets a bad index.  Each result is compared with
 * the scalar backend's result of the same call on host copies (rayo-conform
 * checks that one against float64): bit for bit for the exact ops, within
 * a few times the op's contract for the others.  Inputs are fresh random
 * numbers (RAYO_CONFORM_SEED repeats a run).  SKIP (77) where vulkan is
 * unusable.
 */
#include "testutil.h"
#include "conform.h"

#include <math.h>

#define SETTINGS "[plugins]\nallow = scalar, vulkan\n[dispatch]\norder = vulkan\n"
#define GUARD 0xa5

static rayo_context *ctx;
static conform_rng rng;

/* A device buffer holding `before` guard bytes, data, and 64 guard bytes. */
static rayo_buffer *upload(const void *data, size_t bytes, size_t before)
{
    size_t total = before + bytes + 64;
    unsigned char *img = malloc(total);
    rayo_buffer *b = NULL;
    CHECK(img != NULL, "out of memory");
    memset(img, GUARD, total);
    if (data)
        memcpy(img + before, data, bytes);
    CHECK(rayo_buffer_create(ctx, "vulkan", total, &b) == RAYO_OK, "buffer: %s", rayo_last_error());
    CHECK(rayo_buffer_write(b, 0, img, total) == RAYO_OK, "write: %s", rayo_last_error());
    free(img);
    return b;
}

/* The buffer's whole contents (before + bytes + 64 guard bytes). */
static unsigned char *download(rayo_buffer *b, size_t bytes, size_t before)
{
    unsigned char *img = malloc(before + bytes + 64);
    CHECK(rayo_buffer_read(b, 0, img, before + bytes + 64) == RAYO_OK, "read: %s", rayo_last_error());
    return img;
}

static void expect_guards(const unsigned char *img, size_t bytes, size_t before, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < before; i++)
        bad += img[i] != GUARD;
    for (size_t i = before + bytes; i < before + bytes + 64; i++)
        bad += img[i] != GUARD;
    CHECK(bad == 0, "%s: %zu guard bytes around the output changed", what, bad);
}

static rayo_status run_one(const rayo_batch_call *call)
{
    return test_run_batch(ctx, "vulkan", call, 1);
}

/* The scalar backend's y for the host form of a batch call. */
static void scalar_result(const rayo_batch_call *bc, const void *a, const void *b, const void *c,
                          void *y)
{
    rayo_call call = {
        .struct_size = sizeof call, .op = bc->op, .flags = bc->flags, .dtypes = bc->dtypes,
        .m = bc->m, .n = bc->n, .k = bc->k, .alpha = bc->alpha, .beta = bc->beta,
        .a = a, .b = b, .c = c, .y = y, .lda = bc->lda, .ldb = bc->ldb, .ldc = bc->ldc,
        .ldy = bc->ldy, .params = bc->params,
    };
    rayo_status st = rayo_run_on(ctx, "scalar", &call);
    CHECK(st == RAYO_OK, "scalar reference: %s", rayo_last_error());
}

static void fill_floats(float *p, size_t n) { conform_fill_uniform(&rng, p, n, -1, 1); }

/* ---- gemv ------------------------------------------------------------------------ */

/* y = 1.5 A x + 0.5 y, A (m x n, row stride lda) at byte `off` of its
 * buffer; relaxed: the relaxed contract (2e-3 of the sum of |terms|), which
 * lets Q8_0 and Q4_0 round x to 8 bits (shaders/gemv_int8.comp). */
static void test_gemv_at(rayo_dtype dt, size_t m, size_t n, size_t lda, size_t off, size_t x_off,
                         int relaxed)
{
    size_t row_bytes = 0, a_bytes;
    rayo_dtype_row_bytes(dt, lda, &row_bytes);
    a_bytes = row_bytes * m;
    unsigned char *a = malloc(a_bytes);
    float *x = malloc(n * 4), *y = malloc(m * 4), *ref = malloc(m * 4), *row = malloc(lda * 4);
    for (size_t r = 0; r < m; r++)
        conform_fill_row(&rng, dt, a + r * row_bytes, lda, -1, 1);
    fill_floats(x, n);
    fill_floats(y, m);
    memcpy(ref, y, m * 4);
    rayo_buffer *ba = upload(a, a_bytes, off), *bx = upload(x, n * 4, x_off), *by = upload(y, m * 4, 4);
    rayo_batch_call call = {
        .struct_size = sizeof call, .op = RAYO_OP_GEMV,
        .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
        .m = m, .n = n, .alpha = 1.5f, .beta = 0.5f, .lda = lda,
        .a = {ba, off}, .b = {bx, x_off}, .y = {by, 4},
        .precision = relaxed ? RAYO_PRECISION_RELAXED : RAYO_PRECISION_STRICT,
    };
    rayo_status st = run_one(&call);
    CHECK(st == RAYO_OK, "gemv %s: %s", rayo_dtype_name(dt), rayo_last_error());
    scalar_result(&call, a, x, NULL, ref);
    unsigned char *img = download(by, m * 4, 4);
    expect_guards(img, m * 4, 4, "gemv");
    size_t bad = 0;
    for (size_t r = 0; r < m; r++) {
        float got;
        memcpy(&got, img + 4 + 4 * r, 4);
        rayo_dequantize_row(dt, a + r * row_bytes, row, n);
        double terms = 0.5 * fabs(y[r]);
        for (size_t j = 0; j < n; j++)
            terms += 1.5 * fabs((double)row[j] * x[j]);
        bad += !(fabs(got - ref[r]) <= (relaxed ? 2e-3 : 4e-5) * terms);
    }
    CHECK(bad == 0, "gemv %s%s, m %zu n %zu lda %zu, A at byte %zu: %zu of %zu rows off the scalar result",
          rayo_dtype_name(dt), relaxed ? " (relaxed)" : "", m, n, lda, off, bad, m);
    rayo_buffer_destroy(ba);
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(by);
    free(a), free(x), free(y), free(ref), free(row), free(img);
}

static void test_gemv(rayo_dtype dt, size_t m, size_t n, size_t lda, size_t off, size_t x_off)
{
    test_gemv_at(dt, m, n, lda, off, x_off, 0);
}

/* Every f16 bit pattern through gemv: A (2048 x 32) holds the 65536
 * patterns, x = e_j picks column j, and y[r] must be that weight exactly
 * (zeros and subnormals take the shader's exact decode, the rest the
 * device's conversion).  Rows holding an Inf or NaN are skipped (their sum
 * is NaN). */
static void test_gemv_f16_patterns(void)
{
    enum { M = 2048, N = 32 };
    uint16_t *a = malloc(sizeof(uint16_t) * M * N);
    float x[N], y[M];
    CHECK(a != NULL, "out of memory");
    for (size_t i = 0; i < (size_t)M * N; i++)
        a[i] = (uint16_t)i;
    rayo_buffer *ba = upload(a, sizeof(uint16_t) * M * N, 0), *bx = upload(NULL, sizeof x, 0);
    rayo_buffer *by = upload(NULL, sizeof y, 0);
    size_t bad = 0;
    for (size_t j = 0; j < N; j++) {
        memset(x, 0, sizeof x);
        x[j] = 1.0f;
        CHECK(rayo_buffer_write(bx, 0, x, sizeof x) == RAYO_OK, "write: %s", rayo_last_error());
        rayo_batch_call call = {
            .struct_size = sizeof call, .op = RAYO_OP_GEMV,
            .dtypes = RAYO_DTYPES(RAYO_DTYPE_F16, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
            .m = M, .n = N, .alpha = 1.0f, .a = {ba, 0}, .b = {bx, 0}, .y = {by, 0},
        };
        CHECK(run_one(&call) == RAYO_OK, "gemv f16 patterns: %s", rayo_last_error());
        CHECK(rayo_buffer_read(by, 0, y, sizeof y) == RAYO_OK, "read: %s", rayo_last_error());
        for (size_t r = 0; r < M; r++) {
            int finite = 1;
            for (size_t c = 0; c < N; c++)
                finite &= (a[r * N + c] & 0x7c00) != 0x7c00;
            float want = rayo_f16_to_f32(a[r * N + j]);
            bad += finite && want != y[r];
        }
    }
    CHECK(bad == 0, "gemv f16: %zu bit patterns not decoded exactly", bad);
    rayo_buffer_destroy(ba);
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(by);
    free(a);
}

/* ---- exact ops: convert and get_rows ------------------------------------------------ */

static void expect_same_bytes(const unsigned char *got, const void *want, size_t bytes, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++)
        bad += got[i] != ((const unsigned char *)want)[i];
    CHECK(bad == 0, "%s: %zu of %zu bytes differ from the scalar result", what, bad, bytes);
}

/* x (n of `from`, at byte x_off) -> y (n of `to`, at byte y_off). */
static void test_convert(rayo_dtype from, rayo_dtype to, size_t n, size_t x_off, size_t y_off)
{
    size_t xb = 0, yb = 0;
    rayo_dtype_row_bytes(from, n, &xb);
    rayo_dtype_row_bytes(to, n, &yb);
    unsigned char *x = malloc(xb + 1), *want = malloc(yb + 1);
    conform_fill_row(&rng, from, x, n, -70000, 70000);    /* f16 overflows too */
    if (from == RAYO_DTYPE_F32 && n > 2) {                 /* specials and a subnormal */
        float sp[3] = {NAN, -0.0f, 1e-40f};
        memcpy(x, sp, sizeof sp);
    }
    rayo_buffer *bx = upload(x, xb, x_off), *by = upload(NULL, yb, y_off);
    rayo_batch_call call = {
        .struct_size = sizeof call, .op = RAYO_OP_CONVERT,
        .dtypes = RAYO_DTYPES(from, RAYO_DTYPE_NONE, RAYO_DTYPE_NONE, to), .n = n,
        .a = {bx, x_off}, .y = {by, y_off},
    };
    char what[96];
    snprintf(what, sizeof what, "convert %s -> %s, n %zu, x at %zu, y at %zu", rayo_dtype_name(from),
             rayo_dtype_name(to), n, x_off, y_off);
    CHECK(run_one(&call) == RAYO_OK, "%s: %s", what, rayo_last_error());
    scalar_result(&call, x, NULL, NULL, want);
    unsigned char *img = download(by, yb, y_off);
    expect_guards(img, yb, y_off, what);
    expect_same_bytes(img + y_off, want, yb, what);
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(by);
    free(x), free(want), free(img);
}

/* rows of a (rows x n table of dt, row stride lda) at byte off; one index
 * out of range where bad: the batch reports RAYO_E_INVALID and y keeps
 * its bytes, as on the CPU backends. */
static void test_get_rows(rayo_dtype dt, size_t rows, size_t n, size_t lda, size_t off, int bad)
{
    enum { N_IDX = 9 };
    size_t row_bytes = 0, ldy = n + 3;
    rayo_dtype_row_bytes(dt, lda, &row_bytes);
    unsigned char *table = malloc(rows * row_bytes);
    for (size_t r = 0; r < rows; r++)
        conform_fill_row(&rng, dt, table + r * row_bytes, lda, -2, 2);
    int32_t idx[N_IDX];
    for (int i = 0; i < N_IDX; i++)
        idx[i] = (int32_t)(conform_rng_next(&rng) % rows);
    if (bad)
        idx[4] = bad > 0 ? (int32_t)rows : INT32_MIN;
    size_t y_bytes = ((N_IDX - 1) * ldy + n) * 4;
    float *want = malloc(y_bytes);
    memset(want, GUARD, y_bytes);
    rayo_buffer *bt = upload(table, rows * row_bytes, off), *bi = upload(idx, sizeof idx, 0);
    rayo_buffer *by = upload(want, y_bytes, 8);
    rayo_batch_call call = {
        .struct_size = sizeof call, .op = RAYO_OP_GET_ROWS,
        .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_I32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
        .m = N_IDX, .n = n, .k = rows, .lda = lda, .ldy = ldy,
        .a = {bt, off}, .b = {bi, 0}, .y = {by, 8},
    };
    char what[96];
    snprintf(what, sizeof what, "get_rows %s, %zu x %zu (lda %zu) at byte %zu%s", rayo_dtype_name(dt),
             rows, n, lda, off, bad ? ", a bad index" : "");
    rayo_status st = run_one(&call);
    if (bad)
        CHECK(st == RAYO_E_INVALID, "%s: status %s, not RAYO_E_INVALID", what, rayo_strerror(st));
    else
        CHECK(st == RAYO_OK, "%s: %s", what, rayo_last_error());
    if (!bad)
        scalar_result(&call, table, idx, NULL, want);
    unsigned char *img = download(by, y_bytes, 8);
    expect_guards(img, y_bytes, 8, what);
    expect_same_bytes(img + 8, want, y_bytes, what); /* bad: every byte as it was */
    rayo_buffer_destroy(bt);
    rayo_buffer_destroy(bi);
    rayo_buffer_destroy(by);
    free(table), free(want), free(img);
}

/* ---- float ops: rope in place, swiglu with strides, attention -------------------------- */

/* got and want within rel * scale + abs of each other, n floats. */
static void expect_close(const float *got, const float *want, size_t n, double rel, double abs_tol,
                         const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !(fabs((double)got[i] - want[i]) <= rel * fabs(want[i]) + abs_tol);
    CHECK(bad == 0, "%s: %zu of %zu values off the scalar result", what, bad, n);
}

static void test_rope_in_place(rayo_rope_mode mode, size_t tokens, size_t heads, size_t dim, size_t rot)
{
    size_t ld = heads * dim + 5, bytes = ((tokens - 1) * ld + heads * dim) * 4;
    float *x = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    int32_t *pos = malloc(tokens * 4);
    fill_floats(x, bytes / 4);
    for (size_t t = 0; t < tokens; t++)
        pos[t] = (int32_t)(conform_rng_next(&rng) % 8192);
    rayo_rope_params p = {.struct_size = sizeof p, .mode = mode, .rot_dims = (uint32_t)rot,
                          .freq_base = 10000, .freq_scale = 1, .n_heads = heads, .head_dim = dim};
    rayo_buffer *bx = upload(x, bytes, 12), *bp = upload(pos, tokens * 4, 0);
    rayo_batch_call call = {
        .struct_size = sizeof call, .op = RAYO_OP_ROPE,
        .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
        .m = tokens, .n = dim, .lda = ld, .ldy = ld, .params = &p,
        .a = {bx, 12}, .b = {bp, 0}, .y = {bx, 12},
    };
    CHECK(run_one(&call) == RAYO_OK, "rope: %s", rayo_last_error());
    memcpy(want, x, bytes);
    scalar_result(&call, x, pos, NULL, want);
    unsigned char *img = download(bx, bytes, 12);
    memcpy(got, img + 12, bytes);
    expect_close(got, want, bytes / 4, 8e-6, 8e-6, "rope in place");
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(bp);
    free(x), free(want), free(got), free(pos), free(img);
}

static void test_glu(uint32_t op, size_t rows, size_t cols)
{
    /* gate and up: the halves of one [gate | up] matrix; y with a stride */
    size_t ld = 2 * cols, ldy = cols + 2, in_bytes = rows * ld * 4, y_bytes = ((rows - 1) * ldy + cols) * 4;
    float *gu = malloc(in_bytes), *want = malloc(y_bytes), *got = malloc(y_bytes);
    conform_fill_uniform(&rng, gu, rows * ld, -6, 6);
    memset(want, GUARD, y_bytes);
    rayo_buffer *bg = upload(gu, in_bytes, 0), *by = upload(want, y_bytes, 4);
    rayo_batch_call call = {
        .struct_size = sizeof call, .op = op, .m = rows, .n = cols, .lda = ld, .ldb = ld, .ldy = ldy,
        .a = {bg, 0}, .b = {bg, cols * 4}, .y = {by, 4},
    };
    CHECK(run_one(&call) == RAYO_OK, "glu %u: %s", op, rayo_last_error());
    scalar_result(&call, gu, gu + cols, NULL, want);
    unsigned char *img = download(by, y_bytes, 4);
    expect_guards(img, y_bytes, 4, "glu");
    memcpy(got, img + 4, y_bytes);
    expect_close(got, want, y_bytes / 4, 8e-6, 4e-7, "glu");
    rayo_buffer_destroy(bg);
    rayo_buffer_destroy(by);
    free(gu), free(want), free(got), free(img);
}

/* One KV head of a bigger cache (strides), f32 or f16, causal. */
/* relaxed: the call at relaxed precision, judged against its 2e-3 bound */
static void test_attention_at(rayo_dtype kv, size_t n_q, size_t n_kv, size_t heads, size_t kv_heads, size_t dim,
                              bool relaxed)
{
    size_t es = kv == RAYO_DTYPE_F16 ? 2 : 4, k_token = kv_heads * dim + 3;
    size_t q_elems = n_q * heads * dim, kv_elems = (n_kv - 1) * k_token + kv_heads * dim;
    float *q = malloc(q_elems * 4);
    float *want = malloc(q_elems * 4), *got = malloc(q_elems * 4);
    unsigned char *k = malloc(kv_elems * es), *v = malloc(kv_elems * es);
    fill_floats(q, q_elems);
    conform_fill_row(&rng, kv, k, kv_elems, -1, 1);
    conform_fill_row(&rng, kv, v, kv_elems, -1, 1);
    rayo_attention_params p = {
        .struct_size = sizeof p, .flags = RAYO_ATTN_CAUSAL, .kv_dtype = kv, .n_q = n_q, .n_kv = n_kv,
        .n_heads = heads, .n_kv_heads = kv_heads, .head_dim = dim, .scale = 0.3f,
        .k_token = k_token, .v_token = k_token,
    };
    rayo_buffer *bq = upload(q, q_elems * 4, 0), *bk = upload(k, kv_elems * es, 2 * es);
    rayo_buffer *bv = upload(v, kv_elems * es, es), *bo = upload(NULL, q_elems * 4, 4);
    rayo_batch_call call = {
        .struct_size = sizeof call, .op = RAYO_OP_ATTENTION,
        .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, kv, kv, RAYO_DTYPE_F32),
        .m = n_q, .n = dim, .k = n_kv, .params = &p,
        .a = {bq, 0}, .b = {bk, 2 * es}, .c = {bv, es}, .y = {bo, 4},
        .precision = relaxed ? RAYO_PRECISION_RELAXED : RAYO_PRECISION_DEFAULT,
    };
    char what[104];
    snprintf(what, sizeof what, "attention %s, %zu x %zu, %zu/%zu heads x %zu%s", rayo_dtype_name(kv), n_q,
             n_kv, heads, kv_heads, dim, relaxed ? ", relaxed" : "");
    CHECK(run_one(&call) == RAYO_OK, "%s: %s", what, rayo_last_error());
    scalar_result(&call, q, k, v, want);
    unsigned char *img = download(bo, q_elems * 4, 4);
    expect_guards(img, q_elems * 4, 4, what);
    memcpy(got, img + 4, q_elems * 4);
    /* |v| <= 1: 4x the SUM contract; relaxed, the 2e-3 of rayo-ops.h */
    expect_close(got, want, q_elems, 0, relaxed ? 2e-3 : 4e-5, what);
    rayo_buffer_destroy(bq);
    rayo_buffer_destroy(bk);
    rayo_buffer_destroy(bv);
    rayo_buffer_destroy(bo);
    free(q), free(want), free(got), free(k), free(v), free(img);
}

static void test_attention(rayo_dtype kv, size_t n_q, size_t n_kv, size_t heads, size_t kv_heads, size_t dim)
{
    test_attention_at(kv, n_q, n_kv, heads, kv_heads, dim, false);
}

/* ---- typed matmul ------------------------------------------------------------------ */

/* One matmul C = alpha op(A) op(B) + beta C with A, B in dtypes, row strides
 * (ld = cols + pad), each operand at an odd offset between guard bytes. */
typedef struct typed_mm {
    rayo_batch_call call;
    unsigned char *a, *b;
    float *c, *want;
    size_t a_rows, a_cols, b_rows, b_cols, a_bytes, b_bytes, c_floats;
    rayo_buffer *ba, *bb, *bc;
} typed_mm;

/* rows x cols (+pad) of dtype dt, random; *bytes: its size. */
static unsigned char *typed_matrix(rayo_dtype dt, size_t rows, size_t ld, size_t *bytes)
{
    size_t row_bytes = 0;
    rayo_dtype_row_bytes(dt, ld, &row_bytes);
    *bytes = row_bytes * rows;
    unsigned char *p = malloc(*bytes + 1);
    CHECK(p != NULL, "out of memory");
    for (size_t r = 0; r < rows; r++)
        conform_fill_row(&rng, dt, p + r * row_bytes, ld, -1, 1);
    return p;
}

static void typed_mm_make(typed_mm *t, rayo_dtype adt, rayo_dtype bdt, uint32_t flags, size_t m,
                          size_t n, size_t k, size_t pad_a, size_t pad_b, size_t pad_c, float beta)
{
    memset(t, 0, sizeof *t);
    t->a_rows = flags & RAYO_TRANS_A ? k : m, t->a_cols = flags & RAYO_TRANS_A ? m : k;
    t->b_rows = flags & RAYO_TRANS_B ? n : k, t->b_cols = flags & RAYO_TRANS_B ? k : n;
    size_t lda = t->a_cols + pad_a, ldb = t->b_cols + pad_b, ldc = n + pad_c;
    t->a = typed_matrix(adt, t->a_rows, lda, &t->a_bytes);
    t->b = typed_matrix(bdt, t->b_rows, ldb, &t->b_bytes);
    t->c_floats = (m - 1) * ldc + n;
    t->c = malloc(t->c_floats * 4);
    t->want = malloc(t->c_floats * 4);
    fill_floats(t->c, t->c_floats);
    memcpy(t->want, t->c, t->c_floats * 4);
    size_t a_off = adt == RAYO_DTYPE_F32 ? 4 : adt == RAYO_DTYPE_F16 || adt == RAYO_DTYPE_BF16 ? 6 : 3;
    size_t b_off = bdt == RAYO_DTYPE_F16 || bdt == RAYO_DTYPE_BF16 ? 2 : rayo_dtype_is_block(bdt) ? 5 : 8;
    t->ba = upload(t->a, t->a_bytes, a_off);
    t->bb = upload(t->b, t->b_bytes, b_off);
    t->bc = upload(t->c, t->c_floats * 4, 12);
    t->call = (rayo_batch_call){
        .struct_size = sizeof t->call, .op = RAYO_OP_MATMUL, .flags = flags,
        .dtypes = RAYO_DTYPES(adt, bdt, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
        .m = m, .n = n, .k = k, .alpha = 1.25f, .beta = beta,
        .lda = pad_a ? lda : 0, .ldb = pad_b ? ldb : 0, .ldy = pad_c ? ldc : 0,
        .a = {t->ba, a_off}, .b = {t->bb, b_off}, .y = {t->bc, 12},
    };
}

/* Element (r, c) of a stored matrix as f32. */
static double typed_at(rayo_dtype dt, const unsigned char *p, size_t ld, size_t r, size_t c, float *row)
{
    size_t row_bytes = 0;
    rayo_dtype_row_bytes(dt, ld, &row_bytes);
    rayo_dequantize_row(dt, p + r * row_bytes, row, ld);
    return row[c];
}

/* The device result against the scalar backend's, within 4x the SUM
 * contract of the terms; the gaps of C and the guards untouched. */
static void typed_mm_check(typed_mm *t)
{
    const rayo_batch_call *c = &t->call;
    rayo_dtype adt = RAYO_DTYPE_OF(c->dtypes, 0), bdt = RAYO_DTYPE_OF(c->dtypes, 1);
    char what[128];
    snprintf(what, sizeof what, "matmul %s x %s, %zu x %zu x %zu, flags %u, ld %zu/%zu/%zu",
             rayo_dtype_name(adt), rayo_dtype_name(bdt), c->m, c->n, c->k, c->flags, c->lda, c->ldb, c->ldy);
    scalar_result(c, t->a, t->b, NULL, t->want);
    unsigned char *img = download(t->bc, t->c_floats * 4, 12);
    expect_guards(img, t->c_floats * 4, 12, what);
    size_t lda = c->lda ? c->lda : t->a_cols, ldb = c->ldb ? c->ldb : t->b_cols, ldc = c->ldy ? c->ldy : c->n;
    float *arow = malloc(lda * 4), *brow = malloc(ldb * 4);
    size_t bad = 0, gaps = 0;
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < ldc && i * ldc + j < t->c_floats; j++) {
            float got;
            memcpy(&got, img + 12 + 4 * (i * ldc + j), 4);
            if (j >= c->n) {    /* a gap: as it was */
                gaps += memcmp(&got, &t->c[i * ldc + j], 4) != 0;
                continue;
            }
            double terms = fabs(c->beta * t->c[i * ldc + j]);
            for (size_t p = 0; p < c->k; p++) {
                double av = c->flags & RAYO_TRANS_A ? typed_at(adt, t->a, lda, p, i, arow)
                                                    : typed_at(adt, t->a, lda, i, p, arow);
                double bv = c->flags & RAYO_TRANS_B ? typed_at(bdt, t->b, ldb, j, p, brow)
                                                    : typed_at(bdt, t->b, ldb, p, j, brow);
                terms += fabs(c->alpha * av * bv);
            }
            bad += !(fabs(got - t->want[i * ldc + j]) <= 4e-5 * terms + 1e-30);
        }
    CHECK(bad == 0 && gaps == 0, "%s: %zu elements off the scalar result, %zu gap elements changed",
          what, bad, gaps);
    rayo_buffer_destroy(t->ba);
    rayo_buffer_destroy(t->bb);
    rayo_buffer_destroy(t->bc);
    free(t->a), free(t->b), free(t->c), free(t->want), free(arow), free(brow), free(img);
}

/* Several typed matmuls in one batch: the context's scratch grows and is
 * reused between them (run with typed_matmul_transpose = no and yes). */
static void test_typed_matmuls(void)
{
    typed_mm t[7];
    typed_mm_make(&t[0], RAYO_DTYPE_F32, RAYO_DTYPE_Q4_K, RAYO_TRANS_B, 9, 20, 512, 0, 256, 0, 0.0f);
    typed_mm_make(&t[1], RAYO_DTYPE_F16, RAYO_DTYPE_F16, RAYO_TRANS_A, 7, 5, 33, 3, 0, 2, 0.5f);
    typed_mm_make(&t[2], RAYO_DTYPE_F32, RAYO_DTYPE_Q8_0, RAYO_TRANS_B, 70, 40, 64, 5, 32, 1, -1.5f);
    typed_mm_make(&t[3], RAYO_DTYPE_BF16, RAYO_DTYPE_BF16, RAYO_TRANS_A | RAYO_TRANS_B, 3, 66, 130, 0, 1, 0, 0.0f);
    typed_mm_make(&t[4], RAYO_DTYPE_F32, RAYO_DTYPE_Q6_K, RAYO_TRANS_B, 65, 67, 256, 1, 0, 3, 0.25f);
    /* the identity table grown to 1030 rows (its buffer rounded up), then
     * read up to row 1080 */
    typed_mm_make(&t[5], RAYO_DTYPE_F32, RAYO_DTYPE_Q8_0, RAYO_TRANS_B, 2, 1030, 32, 0, 0, 0, 0.0f);
    typed_mm_make(&t[6], RAYO_DTYPE_F32, RAYO_DTYPE_F16, RAYO_TRANS_B, 3, 1080, 8, 0, 0, 0, 0.0f);
    rayo_batch_call calls[7];
    for (int i = 0; i < 7; i++)
        calls[i] = t[i].call;
    rayo_status st = test_run_batch(ctx, "vulkan", calls, 7);
    CHECK(st == RAYO_OK, "typed matmuls in a batch: %s", rayo_last_error());
    for (int i = 0; i < 7; i++)
        typed_mm_check(&t[i]);
}

int main(void)
{
    test_clear_rayo_env();
    char settings[512];
    /* Q6_K too on the 8-bit gemv path (the default leaves it on the float one) */
    snprintf(settings, sizeof settings, "%s[backend.vulkan]\ngemv_int8 = all\n", SETTINGS);
    if (test_open(&ctx, settings) != RAYO_OK) {
        printf("FAIL: rayo_open: %s\n", rayo_last_error());
        return 1;
    }
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    int found = 0;
    for (size_t i = 0; i < rayo_backend_count(ctx); i++)
        if (rayo_backend_get(ctx, i, &info) == RAYO_OK && !strcmp(info.name, "vulkan")) {
            found = 1;
            break;
        }
    if (!found || info.status != RAYO_BACKEND_LOADED) {
        printf("SKIP: vulkan: %s\n", found ? info.reason : "plugin not built");
        rayo_close(ctx);
        return 77;
    }
    uint64_t seed = conform_default_seed();
    conform_rng_seed(&rng, seed);
    printf("vulkan on %s, seed %llu (RAYO_CONFORM_SEED repeats it)\n", info.device,
           (unsigned long long)seed);

    const rayo_dtype weights[] = {RAYO_DTYPE_F16, RAYO_DTYPE_BF16, RAYO_DTYPE_Q8_0,
                                  RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K};
    for (size_t i = 0; i < sizeof weights / sizeof weights[0]; i++) {
        rayo_dtype dt = weights[i];
        size_t blk = rayo_dtype_block_elems(dt), n = blk > 1 ? 2 * 256 : 261;
        test_gemv(dt, 37, n, n, 0, 0);                        /* aligned: the wide loads */
        test_gemv(dt, 5, n, n + (blk > 1 ? 256 : 3), dt == RAYO_DTYPE_F16 || dt == RAYO_DTYPE_BF16 ? 6 : 3, 4);
        /* block weights, relaxed, rows of 1024 values (long enough for
         * 8-bit x): blocks at odd byte offsets (A at byte 3; the aligned
         * case, the even ones) */
        if (blk > 1) {
            test_gemv_at(dt, 37, 1024, 1024, 0, 0, 1);
            test_gemv_at(dt, 7, 1024, 1024 + 256, 3, 4, 1);
        }
    }
    test_gemv_f16_patterns();
    test_convert(RAYO_DTYPE_F32, RAYO_DTYPE_F16, 1001, 4, 2);  /* y's first and last words shared */
    test_convert(RAYO_DTYPE_F32, RAYO_DTYPE_BF16, 4099, 0, 6);
    test_convert(RAYO_DTYPE_F16, RAYO_DTYPE_F32, 777, 2, 4);
    test_convert(RAYO_DTYPE_BF16, RAYO_DTYPE_F32, 9000, 6, 0);
    test_convert(RAYO_DTYPE_Q8_0, RAYO_DTYPE_F32, 32 * 130, 1, 4);
    test_convert(RAYO_DTYPE_Q4_0, RAYO_DTYPE_F32, 32 * 7, 3, 0);
    test_convert(RAYO_DTYPE_Q4_K, RAYO_DTYPE_F32, 256 * 17, 5, 8);
    test_convert(RAYO_DTYPE_Q6_K, RAYO_DTYPE_F32, 256 * 3, 7, 4);
    test_get_rows(RAYO_DTYPE_F32, 20, 33, 40, 4, 0);
    test_get_rows(RAYO_DTYPE_F16, 11, 17, 17, 2, 1);
    test_get_rows(RAYO_DTYPE_Q4_K, 6, 512, 768, 3, 0);
    test_get_rows(RAYO_DTYPE_Q6_K, 5, 256, 256, 1, -1);
    test_get_rows(RAYO_DTYPE_Q8_0, 9, 64, 96, 5, 0);
    test_rope_in_place(RAYO_ROPE_NORM, 7, 3, 64, 64);
    test_rope_in_place(RAYO_ROPE_NEOX, 4, 2, 80, 32);
    test_glu(RAYO_OP_SWIGLU, 5, 300);
    test_glu(RAYO_OP_GEGLU, 3, 129);
    test_glu(RAYO_OP_GEGLU_TANH, 2, 64);
    test_attention(RAYO_DTYPE_F16, 1, 1000, 8, 2, 64);       /* decode: chunks and the merge pass */
    test_attention(RAYO_DTYPE_F32, 9, 40, 4, 4, 32);         /* one chunk */
    test_attention(RAYO_DTYPE_F16, 3, 300, 24, 2, 16);       /* 12 heads per KV head: two groups */
    /* the value pass's layouts: head_dim 48 (two key slices, idle lanes),
     * 80 and 128 (one slice), 256 (two dimensions per invocation) */
    test_attention(RAYO_DTYPE_F32, 1, 260, 6, 2, 48);
    test_attention(RAYO_DTYPE_F16, 2, 150, 8, 4, 80);
    test_attention(RAYO_DTYPE_F32, 1, 300, 4, 1, 128);
    test_attention(RAYO_DTYPE_F16, 1, 140, 4, 2, 256);
    /* relaxed prompts by attention_prompt.comp: blocks of 16 rows, key
     * tiles of 32 and 8 (head_dim 256), blocks and tiles cut short, groups
     * of 4, 1, 3 */
    test_attention_at(RAYO_DTYPE_F16, 37, 100, 8, 2, 128, true);
    test_attention_at(RAYO_DTYPE_F16, 20, 40, 3, 3, 256, true);
    test_attention_at(RAYO_DTYPE_F32, 70, 90, 6, 2, 33, true);
    test_attention_at(RAYO_DTYPE_F32, 48, 60, 32, 4, 64, true);
    /* relaxed decode at short caches by attention_short.comp: 1 to 4
     * queries, groups of 8, 1, 3 and 16, head_dim 64, 128, odd and 256,
     * 1 key to the default limit's 1024 (four keys an invocation) */
    test_attention_at(RAYO_DTYPE_F16, 1, 192, 32, 4, 64, true);
    test_attention_at(RAYO_DTYPE_F32, 4, 1024, 8, 8, 128, true);
    test_attention_at(RAYO_DTYPE_F32, 2, 31, 12, 3, 33, true);
    test_attention_at(RAYO_DTYPE_F16, 3, 5, 16, 1, 256, true);
    test_attention_at(RAYO_DTYPE_F32, 1, 1, 4, 4, 64, true);
    rayo_close(ctx);
    /* typed matmul with a transposed B read as it is, and transposed once more */
    for (int tr = 0; tr < 2; tr++) {
        snprintf(settings, sizeof settings, "%s[backend.vulkan]\ntyped_matmul_transpose = %s\n",
                 SETTINGS, tr ? "yes" : "no");
        ctx = NULL;
        CHECK(test_open(&ctx, settings) == RAYO_OK, "rayo_open: %s", rayo_last_error());
        if (ctx)
            test_typed_matmuls();
        rayo_close(ctx);
    }
    /* relaxed decode by attention_dec.comp, grouped heads too: 1 to 4
     * queries, groups of 8, 1, 3 and 16 (two workgroups of heads), head_dim
     * 64, 128, odd and 256, f16 rows off their words (odd strides), past
     * the 64 keys attention_short.comp takes here (at them: one key an
     * invocation); prompts in blocks of 32 rows where they fit */
    snprintf(settings, sizeof settings, "%s[backend.vulkan]\nattention_decode = all\nattention_prompt_rows = 32\n"
             "attention_short_keys = 64\n", SETTINGS);
    ctx = NULL;
    CHECK(test_open(&ctx, settings) == RAYO_OK, "rayo_open: %s", rayo_last_error());
    if (ctx) {
        test_attention_at(RAYO_DTYPE_F16, 1, 1000, 32, 4, 64, true);
        test_attention_at(RAYO_DTYPE_F32, 4, 300, 8, 8, 128, true);
        test_attention_at(RAYO_DTYPE_F16, 2, 150, 12, 4, 33, true);
        test_attention_at(RAYO_DTYPE_F16, 3, 70, 16, 1, 256, true);
        test_attention_at(RAYO_DTYPE_F16, 2, 64, 8, 2, 128, true);
        /* a relaxed prompt by attention_prompt.comp in blocks of 32 rows */
        test_attention_at(RAYO_DTYPE_F32, 128, 128, 4, 4, 64, true);
    }
    rayo_close(ctx);
    return test_summary();
}
