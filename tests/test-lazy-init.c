/* SPDX-License-Identifier: MIT */
/* test-lazy-init.c - a device plugin (vulkan) starts at its first use, not at
 * rayo_open: small calls leave it idle, a call that reaches it, a use by
 * name or a question about its device starts it once, and the results are
 * right either way.  A software device (lavapipe) started by a large call
 * takes no calls unless an order names it, as when it was started at open.
 * [rayo] lazy_init = no starts it at open.  Needs the vulkan plugin and a
 * device (lavapipe will do): SKIP otherwise. */
#include "testutil.h"

#define STARTING "vulkan: starting its device (first use)"

/* A context at log level debug, with these settings after lazy_init's. */
static rayo_context *open_debug(const char *settings)
{
    char all[512];
    snprintf(all, sizeof all, "[rayo]\nlog = debug\n%s", settings ? settings : "");
    rayo_context *ctx = NULL;
    CHECK(test_open(&ctx, all) == RAYO_OK, "open: %s", rayo_last_error());
    return ctx;
}

static bool started(void)
{
    return strstr(test_log, STARTING) != NULL;
}

/* y = a + b on n elements, checked exactly (float addition is exact to compare). */
static void check_add(rayo_context *ctx, size_t n, const char *what)
{
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *y = malloc(n * sizeof *y);
    if (!a || !b || !y) {
        CHECK(0, "out of memory");
        free(a); free(b); free(y);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = test_random();
        b[i] = test_random();
        y[i] = -999.0f;
    }
    CHECK(rayo_add(ctx, a, b, y, n) == RAYO_OK, "%s: add: %s", what, rayo_last_error());
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += y[i] != a[i] + b[i];
    CHECK(bad == 0, "%s: %zu of %zu sums wrong", what, bad, n);
    free(a); free(b); free(y);
}

/* Whether vulkan loads with a device when started at open; its type. */
static bool vulkan_here(rayo_device_type *type)
{
    rayo_context *ctx = open_debug("lazy_init = no\n");
    rayo_backend_info b = {.struct_size = sizeof b};
    bool here = ctx && test_backend(ctx, "vulkan", &b) == RAYO_OK && b.status == RAYO_BACKEND_LOADED;
    *type = b.device_type;
    if (here) /* started at open: the plugin's lines are there, and no deferred start */
        CHECK(started() == false && strstr(test_log, "vulkan: ") != NULL, "lazy_init = no: started at open");
    rayo_close(ctx);
    return here;
}

static void test_first_use_by_size(rayo_device_type type)
{
    rayo_context *ctx = open_debug(NULL);
    if (!ctx)
        return;
    CHECK(strstr(test_log, "its device starts at first use") != NULL, "deferred at open:\n%.3000s", test_log);
    CHECK(!started(), "not started by rayo_open");
    check_add(ctx, 1000, "below the offload threshold");
    CHECK(!started(), "not started by a small call");
    check_add(ctx, 300000, "above the offload threshold");
    CHECK(started(), "started by a call that reaches it");
    if (type != RAYO_DEVICE_GPU) {
        CHECK(strstr(test_log, "calls go to it only where an order names it") != NULL, "software device set aside");
        const char *be = rayo_backend_for(ctx, RAYO_OP_ADD, 0, 300000);
        CHECK(be && strcmp(be, "vulkan"), "a software device takes no calls by default: %s", be ? be : "none");
    }
    size_t starts = 0;
    for (const char *p = strstr(test_log, STARTING); p; p = strstr(p + 1, STARTING))
        starts++;
    check_add(ctx, 300000, "again");
    CHECK(starts == 1, "started once, not %zu times", starts);
    rayo_close(ctx);
}

static void test_named(void)
{
    rayo_context *ctx = open_debug("[dispatch]\norder = vulkan\noffload_threshold = 0\n");
    if (!ctx)
        return;
    CHECK(!started(), "an order naming it does not start it at open");
    check_add(ctx, 1000, "order = vulkan");
    CHECK(started(), "the first call starts it");
    const char *be = rayo_backend_for(ctx, RAYO_OP_ADD, 0, 1000);
    CHECK(be && !strcmp(be, "vulkan"), "named in the order, it runs the call: %s", be ? be : "none");
    rayo_close(ctx);

    ctx = open_debug(NULL);
    rayo_buffer *buf = NULL;
    CHECK(ctx && rayo_buffer_create(ctx, "vulkan", 4096, &buf) == RAYO_OK, "buffer by name: %s", rayo_last_error());
    CHECK(started(), "a buffer on it starts it");
    rayo_buffer_destroy(buf);
    rayo_close(ctx);
}

static void test_asked(rayo_device_type type)
{
    rayo_context *ctx = open_debug(NULL);
    rayo_backend_info b = {.struct_size = sizeof b};
    CHECK(ctx && test_backend(ctx, "vulkan", &b) == RAYO_OK, "vulkan listed");
    CHECK(started(), "rayo_backend_get starts it");
    CHECK(b.status == RAYO_BACKEND_LOADED && b.device && b.device[0] && b.device_type == type,
          "its device as at open: %s, type %d (want %d)", b.device ? b.device : "(none)", (int)b.device_type,
          (int)type);
    rayo_close(ctx);
}

/* The plugin's keys, read at init or later per call, are known to the core;
 * a key it does not read is warned about, at whichever start. */
static void test_plugin_keys(void)
{
    static const char *const lazy[] = {"lazy_init = no\n", ""};
    for (int i = 0; i < 2; i++) {
        char settings[256];
        snprintf(settings, sizeof settings, "%s[backend.vulkan]\ngemv_rows = 4\ntyped_matmul_transpose = yes\n"
                 "mystery_key = 1\n", lazy[i]);
        rayo_context *ctx = open_debug(settings);
        rayo_backend_info b = {.struct_size = sizeof b};
        CHECK(ctx && test_backend(ctx, "vulkan", &b) == RAYO_OK, "vulkan listed");
        CHECK(strstr(test_log, "[backend.vulkan] mystery_key: the vulkan plugin does not know this key"),
              "%s: an unknown key is warned about:\n%.3000s", lazy[i], test_log);
        CHECK(!strstr(test_log, "gemv_rows: the vulkan") && !strstr(test_log, "typed_matmul_transpose: the vulkan"),
              "%s: keys read per call are known", lazy[i]);
        rayo_close(ctx);
    }
}

int main(void)
{
    test_clear_rayo_env();
    rayo_device_type type;
    if (!vulkan_here(&type)) {
        printf("SKIP: the vulkan plugin does not load here (no plugin or no device): rayo-info says why\n");
        return 77;
    }
    test_first_use_by_size(type);
    test_named();
    test_asked(type);
    test_plugin_keys();
    return test_summary();
}
