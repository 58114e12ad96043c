/* SPDX-License-Identifier: MIT */
/* test-avx2-dispatch.c - the avx2 backend in the core's hands:
 *
 *   1. refusal: with RAYO_CPU_DISABLE=avx2 (or fma) - the core's test hook
 *      that masks CPU features - the core rejects the plugin before running
 *      any of its code, says which feature is missing, and every op then
 *      runs, correctly, on scalar;
 *   2. on this CPU (when it has AVX2+FMA) avx2 loads and is ahead of scalar
 *      for every op and dtype combination of the op list, and RAYO_BACKEND=scalar or [dispatch] order = scalar in
 *      a config file (RAYO_CONFIG) each put scalar first.
 * Part 2 skips (the test still checks part 1) where the CPU lacks AVX2.
 */
#include "testutil.h"

#include <ctype.h>
#include <math.h>
#include <unistd.h>

/* Does text contain word, ignoring case ("lacks AVX2" names avx2)? */
static bool mentions(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = text; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == word[i])
            i++;
        if (i == n)
            return true;
    }
    return false;
}

/* add, dot and softmax through the public API, checked against doubles. */
static void check_ops_work(rayo_context *ctx, const char *why)
{
    enum { N = 1000 };
    static float a[N], b[N], y[N];
    double dot_ref = 0.0, max_ref = -INFINITY;
    for (int i = 0; i < N; i++) {
        a[i] = test_random();
        b[i] = test_random();
        dot_ref += (double)a[i] * b[i];
        max_ref = a[i] > max_ref ? a[i] : max_ref;
    }
    CHECK(rayo_add(ctx, a, b, y, N) == RAYO_OK, "%s: rayo_add: %s", why, rayo_last_error());
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += y[i] != a[i] + b[i];
    CHECK(bad == 0, "%s: %d wrong sums", why, bad);
    float d = 0.0f;
    CHECK(rayo_dot(ctx, a, b, N, &d) == RAYO_OK && fabs(d - dot_ref) < 1e-4, "%s: dot %g, want %g", why,
          (double)d, dot_ref);
    CHECK(rayo_softmax(ctx, a, y, 1, N) == RAYO_OK, "%s: rayo_softmax: %s", why, rayo_last_error());
    double total = 0.0, den = 0.0;
    for (int i = 0; i < N; i++) {
        total += y[i];
        den += exp(a[i] - max_ref);
    }
    CHECK(fabs(total - 1.0) < 1e-5, "%s: softmax row sums to %g", why, total);
    CHECK(fabs(y[7] - exp(a[7] - max_ref) / den) < 1e-6, "%s: softmax y[7] = %g, want %g", why, (double)y[7],
          exp(a[7] - max_ref) / den);
}

/* Every op's first backend at a mid size, for each of its dtype
 * combinations: avx2, like scalar, has a kernel for all of them (the
 * inference ops and matmul/gemv with half or quantized weights included). */
static void check_first_everywhere(rayo_context *ctx, const char *want, const char *why)
{
    for (size_t i = 0; i < rayo_op_count(); i++) {
        const rayo_op_info *op = rayo_op_at(i);
        for (size_t c = 0; c < rayo_op_combo_count(op->id); c++) {
            uint32_t dtypes = rayo_op_combo(op->id, c)->dtypes;
            const char *first = rayo_backend_for(ctx, op->id, dtypes, 4096);
            CHECK(first && !strcmp(first, want), "%s: %s (dtypes 0x%08x) goes to %s, want %s", why, op->name,
                  (unsigned)dtypes, first ? first : "(none)", want);
        }
    }
}

static void check_refused(const char *masked, const char *feature)
{
    char why[64];
    snprintf(why, sizeof why, "RAYO_CPU_DISABLE=%s", masked);
    setenv("RAYO_CPU_DISABLE", masked, 1);
    rayo_context *ctx = NULL;
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "%s: open: %s", why, rayo_last_error());
    unsetenv("RAYO_CPU_DISABLE");
    if (!ctx)
        return;
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    bool listed = test_backend(ctx, "avx2", &info) == RAYO_OK;
    CHECK(listed, "%s: avx2 not listed at all", why);
    if (listed) {
        CHECK(info.status == RAYO_BACKEND_REJECTED, "%s: avx2 status %d, want rejected", why, (int)info.status);
        CHECK(mentions(info.reason, feature), "%s: reason \"%s\" does not name %s", why, info.reason, feature);
        printf("%s: avx2 rejected: %s\n", why, info.reason);
    }
    check_first_everywhere(ctx, "scalar", why);
    check_ops_work(ctx, why);
    rayo_close(ctx);
}

/* Writes a config file and points RAYO_CONFIG at it. */
static char *write_config(const char *text)
{
    static char path[] = "/tmp/rayo-test-avx2-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    ssize_t len = (ssize_t)strlen(text);
    bool ok = write(fd, text, (size_t)len) == len;
    close(fd);
    return ok ? path : NULL;
}

static void check_order_flips(void)
{
    rayo_context *ctx = NULL;
    setenv("RAYO_BACKEND", "scalar", 1);
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "RAYO_BACKEND=scalar: open: %s", rayo_last_error());
    unsetenv("RAYO_BACKEND");
    if (ctx) {
        check_first_everywhere(ctx, "scalar", "RAYO_BACKEND=scalar");
        rayo_close(ctx);
    }
    char *path = write_config("[dispatch]\norder = scalar\n");
    CHECK(path != NULL, "cannot write a config file in /tmp");
    if (!path)
        return;
    setenv("RAYO_CONFIG", path, 1);
    ctx = NULL;
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "RAYO_CONFIG: open: %s", rayo_last_error());
    unsetenv("RAYO_CONFIG");
    if (ctx) {
        check_first_everywhere(ctx, "scalar", "[dispatch] order = scalar in RAYO_CONFIG");
        rayo_close(ctx);
    }
    unlink(path);
}

int main(void)
{
    test_clear_rayo_env();
    srand((unsigned)getpid());
    check_refused("avx2", "avx2");
    check_refused("fma", "fma");
    check_refused("sse2,avx2", "avx2");

    /* avx512, where it loads, ranks above avx2 (tests/test-avx512-info.sh
     * checks that): this part is about avx2 against scalar. */
    rayo_context *ctx = NULL;
    CHECK(test_open(&ctx, "[backend.avx512]\nenabled = no\n") == RAYO_OK, "open: %s", rayo_last_error());
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    if (ctx && test_backend(ctx, "avx2", &info) == RAYO_OK && info.status == RAYO_BACKEND_LOADED) {
        check_first_everywhere(ctx, "avx2", "default order");
        check_ops_work(ctx, "avx2");
        rayo_close(ctx);
        check_order_flips();
    } else {
        printf("SKIP (part 2): avx2 does not load on this machine: %s\n", info.reason ? info.reason : "not listed");
        if (ctx)
            rayo_close(ctx);
    }
    return test_summary();
}
