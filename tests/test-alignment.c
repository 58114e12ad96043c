/* SPDX-License-Identifier: MIT */
/* test-alignment.c - a pointer that is not aligned to its element type (a
 * float at an odd address) is refused with RAYO_E_INVALID and a message
 * naming the operand, on the fast paths of small calls and the full check
 * alike, and the output is left untouched; pointers that are merely not
 * vector-aligned (4 bytes off a 64-byte boundary) are fine and give the
 * right results on every loaded backend.  rayo(3): pointers need the
 * alignment of their element type. */
#include "testutil.h"
#include <stdint.h>

static unsigned char arena[4][4096] __attribute__((aligned(64)));

/* A float pointer `off` bytes into arena `i`, its first floats set. */
static float *at(int i, size_t off)
{
    float *p = (float *)(void *)(arena[i] + off);
    for (size_t j = 0; j < 64; j++) {
        float v = (float)(j % 7) - 3.0f;
        memcpy((unsigned char *)p + j * sizeof v, &v, sizeof v);
    }
    return p;
}

static void expect_refused(rayo_status st, const char *operand, const char *what)
{
    CHECK(st == RAYO_E_INVALID, "%s: status %s, want invalid argument", what, rayo_strerror(st));
    char want[64];
    snprintf(want, sizeof want, "operand %s at ", operand);
    CHECK(strstr(rayo_last_error(), want) && strstr(rayo_last_error(), "is not aligned to its element type"),
          "%s: message \"%s\" should name operand %s", what, rayo_last_error(), operand);
}

/* The output's bytes are what they were (the call was refused before any
 * backend ran). */
static void expect_untouched(const unsigned char *before, int arena_index, const char *what)
{
    CHECK(!memcmp(before, arena[arena_index], sizeof arena[0]), "%s: the output was written", what);
}

static void test_refused(rayo_context *ctx)
{
    unsigned char before[sizeof arena[0]];
    float *y = at(2, 1);
    memcpy(before, arena[2], sizeof before);
    expect_refused(rayo_add(ctx, at(0, 1), at(1, 0), at(3, 0), 17), "a", "add, a at +1");
    expect_refused(rayo_add(ctx, at(0, 0), at(1, 2), at(3, 0), 17), "b", "add, b at +2");
    expect_refused(rayo_add(ctx, at(0, 0), at(1, 0), y, 17), "y", "add, y at +1");
    expect_untouched(before, 2, "add");
    expect_refused(rayo_softmax(ctx, at(0, 3), at(3, 0), 2, 5), "a", "softmax, x at +3");
    expect_refused(rayo_matmul(ctx, 0, 3, 4, 5, 1.0f, at(0, 0), at(1, 1), 0.0f, at(3, 0)), "b", "matmul, B at +1");
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[4];
    rayo_matrix half = {arena[0] + 1, RAYO_DTYPE_F16, 0};
    expect_refused(rayo_gemv_ex(ctx, 0, 4, 8, 1.0f, half, x, 0.0f, out, RAYO_PRECISION_DEFAULT), "a",
                   "gemv, f16 weights at +1");
    rayo_matrix table = {at(0, 0), RAYO_DTYPE_F32, 0};
    const int32_t *idx = (const int32_t *)(const void *)(arena[1] + 2);
    memset(arena[1], 0, 16);
    expect_refused(rayo_get_rows(ctx, table, 4, 4, idx, 2, at(3, 0), 0), "b", "get_rows, indices at +2");
}

/* 4 bytes off a 64-byte boundary: aligned to float, not to any vector. */
static void test_accepted(rayo_context *ctx)
{
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info b = {.struct_size = sizeof b};
        if (rayo_backend_get(ctx, i, &b) != RAYO_OK || b.status != RAYO_BACKEND_LOADED)
            continue;
        float *a = at(0, 4), *bb = at(1, 12), *y = at(2, 4);
        rayo_call c = {.struct_size = sizeof c, .op = RAYO_OP_ADD, .n = 61, .a = a, .b = bb, .y = y};
        rayo_status st = rayo_run_on(ctx, b.name, &c);
        size_t bad = 0;
        for (size_t j = 0; st == RAYO_OK && j < 61; j++)
            bad += y[j] != a[j] + bb[j];
        CHECK(st == RAYO_OK && bad == 0, "%s: add at +4/+12/+4: %s, %zu wrong", b.name, rayo_strerror(st), bad);
    }
}

int main(void)
{
    test_clear_rayo_env();
    rayo_context *ctx;
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "open: %s", rayo_last_error());
    if (!ctx)
        return test_summary();
    test_refused(ctx);
    test_accepted(ctx);
    rayo_close(ctx);
    return test_summary();
}
