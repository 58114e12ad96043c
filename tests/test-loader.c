/* SPDX-License-Identifier: MIT */
/* test-loader.c - the loader's answer to every kind of plugin, using the
 * plugins of tests/plugins/ (built only for this test). */
#include "testutil.h"
#include <unistd.h>

#ifndef FAKE_DIR
#error "FAKE_DIR must name the folder of the test plugins"
#endif

static char settings[4096];

/* Settings that load one fake plugin by path and allow only it and scalar. */
static const char *with_fake(const char *variant, const char *extra)
{
    snprintf(settings, sizeof settings,
             "[rayo]\nlog = debug\n[plugins]\nload = %s/rayo-fake%s.so\nallow = scalar, fake%s\n%s",
             FAKE_DIR, variant, variant, extra ? extra : "");
    return settings;
}

static bool reason_has(rayo_backend_info *b, const char *text)
{
    return b->reason && strstr(b->reason, text) != NULL;
}

/* The plugin's status and a piece of its reason, after opening with it. */
static void expect_status(const char *variant, rayo_backend_status want, const char *reason_part)
{
    rayo_context *ctx;
    char name[64];
    snprintf(name, sizeof name, "fake%s", variant);
    CHECK(test_open(&ctx, with_fake(variant, NULL)) == RAYO_OK, "open with %s: %s", name, rayo_last_error());
    rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
    rayo_status st = test_backend(ctx, name, &b);
    CHECK(st == RAYO_OK, "%s is listed", name);
    if (st == RAYO_OK) {
        CHECK(b.status == want, "%s: status %d, want %d (reason: %s)", name, b.status, want, b.reason);
        CHECK(reason_has(&b, reason_part), "%s: reason \"%s\" should mention \"%s\"", name, b.reason, reason_part);
    }
    rayo_close(ctx);
}

static void test_rejections(void)
{
    expect_status("abi2", RAYO_BACKEND_REJECTED, "ABI 2");
    expect_status("nodesc", RAYO_BACKEND_REJECTED, "descriptor");
    expect_status("badmagic", RAYO_BACKEND_REJECTED, "magic");
    expect_status("probefail", RAYO_BACKEND_UNAVAILABLE, "fake accelerator not present");
    expect_status("initfail", RAYO_BACKEND_UNAVAILABLE, "fake init refuses");
}

/* A newer minor: accepted; op ids this core does not know are ignored. */
static void test_newer_minor(void)
{
    rayo_context *ctx;
    CHECK(test_open(&ctx, with_fake("newer", NULL)) == RAYO_OK, "open");
    rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
    CHECK(test_backend(ctx, "fakenewer", &b) == RAYO_OK && b.status == RAYO_BACKEND_LOADED,
          "ABI 1.7 plugin loads (reason: %s)", b.reason);
    CHECK(b.abi_minor == 7, "minor read as %u", b.abi_minor);
    CHECK(b.op_count == 1, "only the known op counts: %zu", b.op_count);
    CHECK(rayo_backend_for(ctx, RAYO_OP_ADD, 0, 10) && !strcmp(rayo_backend_for(ctx, RAYO_OP_ADD, 0, 10), "fakenewer"),
          "add goes to the newer plugin");
    rayo_close(ctx);
}

/* The core's CPU check refuses a plugin compiled for a feature the CPU
 * "lacks" (masked through the test hook RAYO_CPU_DISABLE). */
static void test_cpu_features(void)
{
#if defined(__x86_64__)
    const char *feature = "sse2";
#elif defined(__aarch64__)
    const char *feature = "asimd";
#else
    const char *feature = "simd128";
#endif
    rayo_context *ctx;
    rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
    CHECK(test_open(&ctx, with_fake("needcpu", NULL)) == RAYO_OK, "open");
    CHECK(test_backend(ctx, "fakeneedcpu", &b) == RAYO_OK && b.status == RAYO_BACKEND_LOADED,
          "loads where the CPU has %s (reason: %s)", feature, b.reason);
    rayo_close(ctx);
    setenv("RAYO_CPU_DISABLE", feature, 1);
    CHECK(test_open(&ctx, with_fake("needcpu", NULL)) == RAYO_OK, "open");
    CHECK(test_backend(ctx, "fakeneedcpu", &b) == RAYO_OK && b.status == RAYO_BACKEND_REJECTED,
          "refused when %s is masked (status %d)", feature, b.status);
    CHECK(reason_has(&b, feature), "reason names %s: %s", feature, b.reason);
    rayo_close(ctx);
    unsetenv("RAYO_CPU_DISABLE");
}

static void fill(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = test_random();
}

static bool add_is_right(const float *a, const float *b, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (y[i] != a[i] + b[i])
            return false;
    return true;
}

/* A plugin with only `add`: add runs there, every other op falls through. */
static void test_partial_plugin(void)
{
    enum { N = 1000 };
    float a[N], b[N], y[N];
    fill(a, N);
    fill(b, N);
    rayo_context *ctx;
    CHECK(test_open(&ctx, with_fake("good", NULL)) == RAYO_OK, "open");
    const char *add_be = rayo_backend_for(ctx, RAYO_OP_ADD, 0, N);
    const char *mul_be = rayo_backend_for(ctx, RAYO_OP_MUL, 0, N);
    CHECK(add_be && !strcmp(add_be, "fakegood"), "add goes to fakegood, not %s", add_be ? add_be : "nothing");
    CHECK(mul_be && !strcmp(mul_be, "scalar"), "mul falls through to scalar, not %s", mul_be ? mul_be : "nothing");
    CHECK(rayo_add(ctx, a, b, y, N) == RAYO_OK && add_is_right(a, b, y, N), "add result");
    CHECK(strstr(test_log, "fake add ran") != NULL, "the fake kernel ran");
    CHECK(rayo_mul(ctx, a, b, y, N) == RAYO_OK && y[7] == a[7] * b[7], "mul result via scalar");
    rayo_close(ctx);
}

/* Where a host-memory call of add goes with a GPU backend (fakegpu) ahead
 * of scalar: below the GPU link's threshold, to scalar. */
static void expect_offload(const char *extra, size_t below, size_t from, const char *why)
{
    rayo_context *ctx;
    CHECK(test_open(&ctx, with_fake("gpu", extra)) == RAYO_OK, "open: %s", rayo_last_error());
    const char *small = rayo_backend_for(ctx, RAYO_OP_ADD, 0, below);
    const char *large = from ? rayo_backend_for(ctx, RAYO_OP_ADD, 0, from) : "fakegpu";
    CHECK(small && !strcmp(small, "scalar"), "%s: add(%zu) goes to %s, want scalar", why, below, small ? small : "-");
    CHECK(large && !strcmp(large, "fakegpu"), "%s: add(%zu) goes to %s, want fakegpu", why, from, large ? large : "-");
    rayo_close(ctx);
}

/* Thresholds, most specific first: [op.NAME] offload_threshold.BACKEND,
 * [op.NAME] offload_threshold, [dispatch] offload_threshold.BACKEND,
 * [dispatch] offload_threshold, 262144; "never"; a bad value is skipped. */
static void test_offload_thresholds(void)
{
    expect_offload(NULL, 262143, 262144, "default");
    expect_offload("[dispatch]\noffload_threshold = 100\n", 99, 100, "[dispatch]");
    expect_offload("[dispatch]\noffload_threshold = 100\noffload_threshold.fakegpu = 300\n", 299, 300,
                   "[dispatch] per backend");
    expect_offload("[dispatch]\noffload_threshold.fakegpu = 300\n[op.add]\noffload_threshold = 40\n", 39, 40,
                   "[op.add] over [dispatch] per backend");
    expect_offload("[op.add]\noffload_threshold = 40\noffload_threshold.fakegpu = 5000\n", 4999, 5000,
                   "[op.add] per backend");
    expect_offload("[op.add]\noffload_threshold.fakegpu = never\n", SIZE_MAX - 1, 0, "never");
    expect_offload("[op.add]\noffload_threshold.fakegpu = lots\noffload_threshold = 70\n", 69, 70,
                   "a bad value skipped");
    CHECK(strstr(test_log, "offload_threshold.fakegpu = \"lots\" is not a size") != NULL, "bad value reported:\n%s",
          test_log);
    expect_offload("[op.add]\noffload_threshold.other = 5\n", 262143, 262144, "another backend's threshold");
    CHECK(strstr(test_log, "unknown key") == NULL, "per-backend keys are known:\n%s", test_log);
}

/* The precision a kernel gets: a call's own STRICT or RELAXED, else what
 * [op.NAME] precision or [op.NAME.COMBO] precision say (strict by default). */
static void expect_precision(const char *extra, rayo_precision asked, unsigned want)
{
    float a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, y[3];
    rayo_context *ctx;
    char want_log[64];
    CHECK(test_open(&ctx, with_fake("good", extra)) == RAYO_OK, "open with %s", extra);
    rayo_call c = {.struct_size = sizeof c, .op = RAYO_OP_ADD, .n = 3, .a = a, .b = b, .y = y,
                   .precision = (uint32_t)asked};
    CHECK(rayo_run(ctx, &c) == RAYO_OK && add_is_right(a, b, y, 3), "add with precision %d", (int)asked);
    snprintf(want_log, sizeof want_log, "fake add ran (precision %u)", want);
    CHECK(strstr(test_log, want_log) != NULL, "%s, asked %d: the kernel should get %u:\n%s", extra, (int)asked,
          want, test_log);
    rayo_close(ctx);
}

static void test_precision_setting(void)
{
    const char *relaxed = "[op.add]\nprecision = relaxed\n";
    expect_precision("", RAYO_PRECISION_DEFAULT, RAYO_PRECISION_DEFAULT);
    expect_precision(relaxed, RAYO_PRECISION_DEFAULT, RAYO_PRECISION_RELAXED);
    expect_precision(relaxed, RAYO_PRECISION_STRICT, RAYO_PRECISION_STRICT);
    expect_precision("", RAYO_PRECISION_RELAXED, RAYO_PRECISION_RELAXED);
    expect_precision("[op.add]\nprecision = relaxed\n[op.add.f32]\nprecision = strict\n",
                     RAYO_PRECISION_DEFAULT, RAYO_PRECISION_DEFAULT);
}

/* A plugin that fails at run time: the call still succeeds, through the
 * next backend, with the right result, and the failure is logged. */
static void test_runtime_failure(void)
{
    enum { N = 333 };
    float a[N], b[N], y[N];
    fill(a, N);
    fill(b, N);
    rayo_context *ctx;
    CHECK(test_open(&ctx, with_fake("runfail", NULL)) == RAYO_OK, "open");
    const char *first = rayo_backend_for(ctx, RAYO_OP_ADD, 0, N);
    CHECK(first && !strcmp(first, "fakerunfail"), "the failing plugin is first in the chain");
    CHECK(rayo_add(ctx, a, b, y, N) == RAYO_OK, "add succeeds despite the failure: %s", rayo_last_error());
    CHECK(add_is_right(a, b, y, N), "and its result is right");
    CHECK(strstr(test_log, "simulated failure") != NULL, "the failure is logged:\n%s", test_log);
    rayo_close(ctx);

    CHECK(test_open(&ctx, with_fake("lost", NULL)) == RAYO_OK, "open");
    CHECK(rayo_add(ctx, a, b, y, N) == RAYO_OK && add_is_right(a, b, y, N), "add after device loss");
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    CHECK(test_backend(ctx, "fakelost", &info) == RAYO_OK && reason_has(&info, "lost"),
          "the lost backend says so: %s", info.reason);
    const char *now = rayo_backend_for(ctx, RAYO_OP_ADD, 0, N);
    CHECK(now && !strcmp(now, "scalar"), "a lost backend is skipped afterwards");
    rayo_close(ctx);
}

static void test_deny_and_order(void)
{
    rayo_context *ctx;
    rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
    CHECK(test_open(&ctx, with_fake("good", "deny = fakegood\n")) == RAYO_OK, "open");
    CHECK(test_backend(ctx, "fakegood", &b) == RAYO_OK && b.status == RAYO_BACKEND_DISABLED, "deny works");
    rayo_close(ctx);
    CHECK(test_open(&ctx, with_fake("good", "[dispatch]\norder = scalar\n")) == RAYO_OK, "open");
    const char *be = rayo_backend_for(ctx, RAYO_OP_ADD, 0, 10);
    CHECK(be && !strcmp(be, "scalar"), "dispatch.order puts scalar first: %s", be ? be : "none");
    rayo_close(ctx);
    CHECK(test_open(&ctx, with_fake("good", "[op.add]\norder = scalar\n")) == RAYO_OK, "open");
    be = rayo_backend_for(ctx, RAYO_OP_ADD, 0, 10);
    CHECK(be && !strcmp(be, "scalar"), "op.add.order puts scalar first: %s", be ? be : "none");
    rayo_close(ctx);
}

/* Two files with one name: the first in the search path wins. */
static void test_shadowing(void)
{
    char dir[] = "/tmp/rayo-test-shadow-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s/rayo-fakegood.so %s/", FAKE_DIR, dir);
    CHECK(system(cmd) == 0, "copy plugin");
    snprintf(settings, sizeof settings, "[plugins]\npath = %s:%s\nallow = scalar, fakegood\n", dir, FAKE_DIR);
    rayo_context *ctx;
    CHECK(test_open(&ctx, settings) == RAYO_OK, "open");
    int loaded = 0, shadowed = 0;
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
        rayo_backend_get(ctx, i, &b);
        if (strcmp(b.name, "fakegood"))
            continue;
        if (b.status == RAYO_BACKEND_LOADED)
            loaded += strstr(b.path, dir) != NULL;
        if (b.status == RAYO_BACKEND_SHADOWED)
            shadowed += reason_has(&b, dir);
    }
    CHECK(loaded == 1 && shadowed == 1, "first copy loaded (%d), second shadowed (%d)", loaded, shadowed);
    rayo_close(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

static bool mapped(const char *needle)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (fgets(line, sizeof line, f))
        found |= strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* rayo_close unloads every plugin. */
static void test_unload(void)
{
    if (access("/proc/self/maps", R_OK) != 0) {
        printf("SKIP unload check: no /proc/self/maps\n");
        return;
    }
    rayo_context *ctx;
    CHECK(test_open(&ctx, with_fake("good", NULL)) == RAYO_OK, "open");
    CHECK(mapped("rayo-fakegood.so"), "plugin mapped while open");
    rayo_close(ctx);
    CHECK(!mapped("rayo-fakegood.so"), "plugin unmapped after close");
}

/* No usable plugin at all: rayo_open says why instead of crashing. */
static void test_nothing_loads(void)
{
    rayo_options o = {0};
    o.struct_size = sizeof o;
    o.no_config_files = 1;
    o.log = test_log_capture;
    o.settings = "[plugins]\nallow = nothing-has-this-name\n";
    rayo_context *ctx = NULL;
    rayo_status st = rayo_open(&ctx, &o);
    CHECK(st == RAYO_E_NO_BACKEND && ctx == NULL, "open fails cleanly: %d", st);
    CHECK(strstr(rayo_last_error(), "rayo-info") != NULL, "message points to rayo-info: %s", rayo_last_error());
}

int main(void)
{
    test_clear_rayo_env();
    test_rejections();
    test_newer_minor();
    test_cpu_features();
    test_partial_plugin();
    test_offload_thresholds();
    test_precision_setting();
    test_runtime_failure();
    test_deny_and_order();
    test_shadowing();
    test_unload();
    test_nothing_loads();
    return test_summary();
}
