/* SPDX-License-Identifier: MIT */
/* test-abi-core.c - the real core with plugins built against other headers.
 *
 * Without arguments it loads rayo-abi10.so (built from the frozen 1.0
 * header) and rayo-abi199.so (built from the 1.99 header: a larger
 * descriptor, 24-byte op entries, a larger memory API, an op id and a
 * dtype id this core does not know).  It proves:
 *   - an old (1.0) plugin loads and runs with this core: today that is the
 *     same minor, and the test keeps it true as the core's minor grows;
 *   - a newer plugin loads and runs with this core: the core steps through
 *     the op entries by op_entry_size (mul, the second entry, is found and
 *     runs), ignores what it does not know (exactly 2 ops taken), reads the
 *     descriptor and memory API only as far as it knows them, and hands the
 *     plugin 1.0-sized calls it can use (kernel and batch results right).
 *   - a batch replayed at moving steps (1.1) on plugins whose memory API
 *     cannot replay (a 1.0 one, a 1.99 one without batch_set_step) gives
 *     the results of recording it anew for every step;
 *   - an application built against a newer header (a larger rayo_call)
 *     works while the fields this library does not know are 0, and is
 *     refused with RAYO_E_UNSUPPORTED, not misread, when it sets them.
 * With arguments PLUGIN NAME MINOR it checks one plugin that implements at
 * least add the same way (tests/abi/test-abi-cxx.sh: a C++17 plugin). */
#include "../testutil.h"
#include <time.h>

#ifndef ABI_PLUGIN_DIR
#error "ABI_PLUGIN_DIR must name the folder of the test plugins"
#endif

static bool sums_right(const float *a, const float *b, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (y[i] != a[i] + b[i])
            return false;
    return true;
}

/* add (and mul when the plugin has it) on the plugin alone, many sizes. */
static void run_ops(rayo_context *ctx, const char *name, bool with_mul)
{
    static const size_t sizes[] = {1, 2, 7, 64, 1000, 4099};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *y = malloc(n * sizeof *y);
        for (size_t i = 0; i < n; i++) {
            a[i] = test_random() * 100.0f;
            b[i] = test_random() * 100.0f;
        }
        rayo_call c = {.struct_size = sizeof c, .op = RAYO_OP_ADD, .n = n, .a = a, .b = b, .y = y};
        rayo_status st = rayo_run_on(ctx, name, &c);
        CHECK(st == RAYO_OK && sums_right(a, b, y, n), "%s: add of %zu (%s)", name, n, rayo_last_error());
        if (with_mul) {
            c.op = RAYO_OP_MUL;
            bool right = rayo_run_on(ctx, name, &c) == RAYO_OK;
            for (size_t i = 0; i < n; i++)
                right &= y[i] == a[i] * b[i];
            CHECK(right, "%s: mul of %zu (%s)", name, n, rayo_last_error());
        }
        free(a);
        free(b);
        free(y);
    }
}

/* One add in a batch on the plugin's own buffers (its memory API). */
static void run_batch(rayo_context *ctx, const char *name)
{
    enum { N = 37 };
    float a[N], b[N], y[N];
    for (size_t i = 0; i < N; i++) {
        a[i] = test_random();
        b[i] = test_random();
    }
    rayo_buffer *buf = NULL;
    rayo_batch *batch = NULL;
    CHECK(rayo_buffer_create(ctx, name, 3 * sizeof a, &buf) == RAYO_OK, "%s: buffer (%s)", name, rayo_last_error());
    CHECK(rayo_batch_create(ctx, name, &batch) == RAYO_OK, "%s: batch (%s)", name, rayo_last_error());
    if (buf && batch) {
        rayo_buffer_write(buf, 0, a, sizeof a);
        rayo_buffer_write(buf, sizeof a, b, sizeof b);
        rayo_batch_call c = {.struct_size = sizeof c, .op = RAYO_OP_ADD, .n = N, .a = {buf, 0},
                             .b = {buf, sizeof a}, .y = {buf, 2 * sizeof a}};
        CHECK(rayo_batch_record(batch, &c) == RAYO_OK && rayo_batch_submit(batch) == RAYO_OK &&
                  rayo_batch_wait(batch, UINT64_MAX) == RAYO_OK,
              "%s: batch runs (%s)", name, rayo_last_error());
        CHECK(rayo_buffer_read(buf, 2 * sizeof a, y, sizeof y) == RAYO_OK && sums_right(a, b, y, N),
              "%s: batched add", name);
    }
    rayo_batch_destroy(batch);
    rayo_buffer_destroy(buf);
}

/* A batch recorded once and replayed at moving steps (1.1) on a plugin
 * whose memory API cannot replay: the core records it again before each
 * submit.  Step s adds row s of a to b (written anew before each submit)
 * into row s of y; steps out of order, one twice. */
static void run_replay(rayo_context *ctx, const char *name)
{
    enum { N = 19, ROWS = 5 };
    static const size_t order[] = {2, 0, 4, 1, 1, 3};
    float a[ROWS][N], b[ROWS][N], y[ROWS][N];
    for (size_t r = 0; r < ROWS; r++)
        for (size_t i = 0; i < N; i++)
            a[r][i] = test_random();
    rayo_buffer *ba = NULL, *bb = NULL, *by = NULL;
    rayo_batch *batch = NULL;
    bool ok = rayo_buffer_create(ctx, name, sizeof a, &ba) == RAYO_OK &&
              rayo_buffer_create(ctx, name, sizeof b[0], &bb) == RAYO_OK &&
              rayo_buffer_create(ctx, name, sizeof y, &by) == RAYO_OK &&
              rayo_buffer_write(ba, 0, a, sizeof a) == RAYO_OK && rayo_batch_create(ctx, name, &batch) == RAYO_OK;
    rayo_batch_call c = {.struct_size = sizeof c, .op = RAYO_OP_ADD, .n = N, .a = {ba, 0}, .b = {bb, 0},
                         .y = {by, 0}, .step_bytes = {sizeof a[0], 0, 0, sizeof y[0]}};
    ok = ok && rayo_batch_record(batch, &c) == RAYO_OK;
    for (size_t i = 0; ok && i < sizeof order / sizeof order[0]; i++) {
        size_t s = order[i];
        for (size_t k = 0; k < N; k++)
            b[s][k] = test_random();
        ok = rayo_buffer_write(bb, 0, b[s], sizeof b[s]) == RAYO_OK && rayo_batch_set_step(batch, s) == RAYO_OK &&
             rayo_batch_submit(batch) == RAYO_OK && rayo_batch_wait(batch, UINT64_MAX) == RAYO_OK;
    }
    CHECK(ok, "%s: replayed batch runs (%s)", name, rayo_last_error());
    ok = ok && rayo_buffer_read(by, 0, y, sizeof y) == RAYO_OK;
    for (size_t r = 0; ok && r < ROWS; r++)
        ok = sums_right(a[r], b[r], y[r], N);
    CHECK(ok, "%s: every replayed step added its rows", name);
    CHECK(rayo_batch_set_step(batch, ROWS) == RAYO_E_INVALID, "%s: a step past the buffers is refused", name);
    rayo_batch_destroy(batch);
    rayo_buffer_destroy(ba);
    rayo_buffer_destroy(bb);
    rayo_buffer_destroy(by);
}

/* rayo_run with the call of a newer header: 16 more bytes. */
static void newer_application(rayo_context *ctx)
{
    float a[5] = {1, 2, 3, 4, 5}, b[5] = {5, 4, 3, 2, 1}, y[5] = {0};
    union {
        rayo_call call;
        unsigned char bytes[sizeof(rayo_call) + 16];
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.call = (rayo_call){.struct_size = sizeof newer, .op = RAYO_OP_ADD, .n = 5, .a = a, .b = b, .y = y};
    CHECK(rayo_run(ctx, &newer.call) == RAYO_OK && sums_right(a, b, y, 5),
          "a newer call with its new fields 0 runs (%s)", rayo_last_error());
    newer.bytes[sizeof(rayo_call) + 3] = 1;
    y[0] = -1;
    CHECK(rayo_run(ctx, &newer.call) == RAYO_E_UNSUPPORTED && y[0] == -1,
          "a newer call that sets a field this library lacks is refused");
    CHECK(strstr(rayo_last_error(), "newer") != NULL, "the message says why: %s", rayo_last_error());
}

/* The plugin loaded with this minor and this many ops taken. */
static bool loaded(rayo_context *ctx, const char *name, unsigned minor, size_t ops)
{
    rayo_backend_info b = {.struct_size = sizeof b};
    bool found = test_backend(ctx, name, &b) == RAYO_OK;
    CHECK(found && b.status == RAYO_BACKEND_LOADED, "%s loads (reason: %s)", name, found ? b.reason : "not listed");
    if (!found || b.status != RAYO_BACKEND_LOADED)
        return false;
    CHECK(b.abi_major == 1 && b.abi_minor == minor, "%s: ABI %u.%u, want 1.%u", name, b.abi_major, b.abi_minor,
          minor);
    if (ops)
        CHECK(b.op_count == ops, "%s: %zu ops taken, want %zu", name, b.op_count, ops);
    return true;
}

static char settings[4096];

static rayo_status open_with(rayo_context **ctx, const char *load, const char *allow)
{
    /* The plugins' devices are the host CPU: started at first use, such a
     * device takes calls by dispatch only where an order names it. */
    snprintf(settings, sizeof settings, "[rayo]\nlog = debug\n[plugins]\nload = %s\nallow = %s\n"
             "[dispatch]\norder = %s\n", load, allow, allow);
    return test_open(ctx, settings);
}

static int check_default_plugins(void)
{
    rayo_context *ctx;
    char load[1024];
    snprintf(load, sizeof load, "%s/rayo-abi10.so:%s/rayo-abi199.so", ABI_PLUGIN_DIR, ABI_PLUGIN_DIR);
    CHECK(open_with(&ctx, load, "abi10, abi199") == RAYO_OK, "open: %s", rayo_last_error());
    /* add and mul; op 250 and dtype 31 are not this core's */
    if (loaded(ctx, "abi10", 0, 2)) {
        run_ops(ctx, "abi10", true);
        run_batch(ctx, "abi10");
        run_replay(ctx, "abi10");
    }
    if (loaded(ctx, "abi199", 99, 2)) {
        run_ops(ctx, "abi199", true);
        run_batch(ctx, "abi199");
        run_replay(ctx, "abi199");
    }
    newer_application(ctx);
    rayo_close(ctx);
    return test_summary();
}

/* PLUGIN NAME MINOR: a plugin with at least add, on host memory. */
static int check_one_plugin(const char *path, const char *name, unsigned minor)
{
    rayo_context *ctx;
    CHECK(open_with(&ctx, path, name) == RAYO_OK, "open: %s", rayo_last_error());
    if (loaded(ctx, name, minor, 0)) {
        CHECK(rayo_backend_for(ctx, RAYO_OP_ADD, 0, 100) && !strcmp(rayo_backend_for(ctx, RAYO_OP_ADD, 0, 100), name),
              "add goes to %s", name);
        run_ops(ctx, name, false);
    }
    if (test_failed)
        fprintf(stderr, "log:\n%s", test_log);
    rayo_close(ctx);
    return test_summary();
}

int main(int argc, char **argv)
{
    test_clear_rayo_env();
    srand((unsigned)time(NULL));
    if (argc == 4)
        return check_one_plugin(argv[1], argv[2], (unsigned)atoi(argv[3]));
    if (argc != 1) {
        fprintf(stderr, "usage: %s [PLUGIN.so NAME MINOR]\n", argv[0]);
        return 99;
    }
    return check_default_plugins();
}
