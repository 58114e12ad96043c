/* SPDX-License-Identifier: MIT */
/* test-config.c - the configuration layers, their precedence, and what
 * happens with malformed, empty and unknown input. */
#include "testutil.h"
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/rayo-test-config-XXXXXX";

static void write_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "create %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void make_dir(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
}

/* Opens with <root>/etc as sysconfdir (the files are read) and settings. */
static rayo_context *open_layers(const char *settings)
{
    char sysconf[512];
    snprintf(sysconf, sizeof sysconf, "%s/etc", root);
    rayo_options o = {0};
    o.struct_size = sizeof o;
    o.sysconf_dir = sysconf;
    char vendor[512];
    snprintf(vendor, sizeof vendor, "%s/vendor", root);
    o.vendor_conf_dir = vendor;
    o.settings = settings;
    o.log = test_log_capture;
    test_log[0] = '\0';
    rayo_context *ctx = NULL;
    rayo_status st = rayo_open(&ctx, &o);
    CHECK(st == RAYO_OK, "open: %s", rayo_last_error());
    return ctx;
}

static void expect_threshold(const char *settings, const char *want, const char *layer)
{
    rayo_context *ctx = open_layers(settings);
    if (!ctx)
        return;
    const char *got = rayo_config_get(ctx, "dispatch", "offload_threshold");
    CHECK(got && !strcmp(got, want), "after %s: offload_threshold = %s, want %s", layer, got ? got : "(unset)", want);
    rayo_close(ctx);
}

/* Each layer overrides the one before it. */
static void test_precedence(void)
{
    char path[512];
    make_dir("etc");
    make_dir("etc/conf.d");
    make_dir("xdg");
    make_dir("xdg/rayo");
    snprintf(path, sizeof path, "%s/xdg", root);
    setenv("XDG_CONFIG_HOME", path, 1);

    write_file("etc/rayo.conf", "[dispatch]\noffload_threshold = 1\n");
    expect_threshold(NULL, "1", "rayo.conf");
    write_file("etc/conf.d/20-b.conf", "[dispatch]\noffload_threshold = 3\n");
    write_file("etc/conf.d/10-a.conf", "[dispatch]\noffload_threshold = 2\n");
    write_file("etc/conf.d/30-c.conf.disabled", "[dispatch]\noffload_threshold = 99\n");
    expect_threshold(NULL, "3", "conf.d in lexical order (20-b after 10-a; non-.conf ignored)");
    write_file("xdg/rayo/rayo.conf", "[dispatch]\noffload_threshold = 4\n");
    expect_threshold(NULL, "4", "$XDG_CONFIG_HOME/rayo/rayo.conf");
    make_dir("xdg/rayo/conf.d");
    write_file("xdg/rayo/conf.d/50-calibrated.conf", "[dispatch]\noffload_threshold = 45\n");
    expect_threshold(NULL, "45", "$XDG_CONFIG_HOME/rayo/conf.d after the user's rayo.conf");
    snprintf(path, sizeof path, "%s/xdg/rayo/conf.d/50-calibrated.conf", root);
    unlink(path); /* it would override the values checked below */
    write_file("explicit.conf", "[dispatch]\noffload_threshold = 5\n");
    snprintf(path, sizeof path, "%s/explicit.conf", root);
    setenv("RAYO_CONFIG", path, 1);
    expect_threshold(NULL, "5", "RAYO_CONFIG");
    expect_threshold("[dispatch]\noffload_threshold = 6\n", "6", "application settings");

    /* Environment variables sit between RAYO_CONFIG and the application. */
    write_file("explicit.conf", "[dispatch]\norder = nothing\n");
    setenv("RAYO_BACKEND", "scalar", 1);
    rayo_context *ctx = open_layers(NULL);
    const char *order = ctx ? rayo_config_get(ctx, "dispatch", "order") : NULL;
    CHECK(order && !strcmp(order, "scalar"), "RAYO_BACKEND overrides the file: %s", order ? order : "(unset)");
    rayo_close(ctx);
    ctx = open_layers("[dispatch]\norder = app\n");
    order = ctx ? rayo_config_get(ctx, "dispatch", "order") : NULL;
    CHECK(order && !strcmp(order, "app"), "settings override RAYO_BACKEND: %s", order ? order : "(unset)");
    rayo_close(ctx);
    unsetenv("RAYO_BACKEND");

    /* RAYO_DISABLE adds to plugins.deny. */
    write_file("explicit.conf", "[plugins]\ndeny = a\n");
    setenv("RAYO_DISABLE", "b", 1);
    ctx = open_layers(NULL);
    const char *deny = ctx ? rayo_config_get(ctx, "plugins", "deny") : NULL;
    CHECK(deny && strstr(deny, "a") && strstr(deny, "b"), "deny list merges: %s", deny ? deny : "(unset)");
    rayo_close(ctx);
    unsetenv("RAYO_DISABLE");
    unsetenv("RAYO_CONFIG");
}

/* rayo-info's list of files: every layer, in order, with its status. */
static void test_files_listed(void)
{
    rayo_context *ctx = open_layers(NULL);
    if (!ctx)
        return;
    size_t n = rayo_config_file_count(ctx);
    const char *expected[] = {"vendor/*.conf", "etc/rayo.conf", "etc/conf.d/10-a.conf", "etc/conf.d/20-b.conf",
                              "xdg/rayo/rayo.conf"};
    const char *want_status[] = {"no such directory", "read", "read", "read", "read"};
    CHECK(n >= 5, "%zu files listed", n);
    for (size_t i = 0; i < 5 && i < n; i++) {
        const char *status;
        const char *path = rayo_config_file(ctx, i, &status);
        CHECK(path && strstr(path, expected[i]), "file %zu is %s, want %s", i, path ? path : "?", expected[i]);
        CHECK(status && !strcmp(status, want_status[i]), "status of %s: %s", path ? path : "?",
              status ? status : "?");
    }
    rayo_close(ctx);
}

/* A malformed line is reported with file:line and skipped; the rest loads. */
static void test_malformed(void)
{
    char user_file[512];
    snprintf(user_file, sizeof user_file, "%s/xdg/rayo/rayo.conf", root);
    unlink(user_file); /* it would override the value checked below */
    write_file("etc/conf.d/40-bad.conf",
               "[dispatch]\n"
               "this line has no equals sign\n"
               "offload_threshold = 77\n"
               "[unterminated\n"
               "[rayo]\n"
               "no_such_key = 1\n"
               "[op.no_such_op]\n"
               "order = scalar\n"
               "[strange]\n"
               "x = 1\n"
               "[op.matmul]\n"
               "precision = relaxed\n"
               "[op.matmul.f32.q4_k.f32]\n"
               "precision = strict\n"
               "offload_threshold = 5\n"
               "[op.matmul.f32.q9_9.f32]\n"
               "order = scalar\n");
    rayo_context *ctx = open_layers(NULL);
    if (!ctx)
        return;
    const char *got = rayo_config_get(ctx, "dispatch", "offload_threshold");
    CHECK(got && !strcmp(got, "77"), "the good line after a bad one loads: %s", got ? got : "(unset)");
    CHECK(strstr(test_log, "40-bad.conf:2: malformed") != NULL, "line 2 reported:\n%s", test_log);
    CHECK(strstr(test_log, "40-bad.conf:4: malformed") != NULL, "line 4 reported:\n%s", test_log);
    CHECK(strstr(test_log, "40-bad.conf:6: unknown key") != NULL, "unknown key reported:\n%s", test_log);
    CHECK(strstr(test_log, "40-bad.conf:8: unknown op") != NULL, "unknown op reported:\n%s", test_log);
    CHECK(strstr(test_log, "40-bad.conf:10: unknown section") != NULL, "unknown section reported:\n%s", test_log);
    CHECK(rayo_config_get(ctx, "rayo", "no_such_key") == NULL, "unknown keys are not kept");
    /* [op.NAME] precision and [op.NAME.COMBO] (a combination as rayo-info names it) are known. */
    got = rayo_config_get(ctx, "op.matmul", "precision");
    CHECK(got && !strcmp(got, "relaxed"), "[op.matmul] precision is kept: %s", got ? got : "(unset)");
    got = rayo_config_get(ctx, "op.matmul.f32.q4_k.f32", "precision");
    CHECK(got && !strcmp(got, "strict"), "[op.matmul.f32.q4_k.f32] precision is kept: %s", got ? got : "(unset)");
    CHECK(strstr(test_log, "40-bad.conf:12:") == NULL && strstr(test_log, "40-bad.conf:14:") == NULL,
          "precision is a known key:\n%s", test_log);
    CHECK(strstr(test_log, "40-bad.conf:15: unknown key") != NULL, "offload_threshold per combination reported:\n%s",
          test_log);
    CHECK(strstr(test_log, "40-bad.conf:17: unknown dtype combination") != NULL, "unknown combination reported:\n%s",
          test_log);
    bool listed = false;
    for (size_t i = 0; i < rayo_config_file_count(ctx); i++) {
        const char *status;
        const char *path = rayo_config_file(ctx, i, &status);
        if (strstr(path, "40-bad.conf"))
            listed = strstr(status, "problem") != NULL;
    }
    CHECK(listed, "the file is listed with its problems");
    rayo_close(ctx);
    char path[512];
    snprintf(path, sizeof path, "%s/etc/conf.d/40-bad.conf", root);
    unlink(path);
}

static void test_empty_and_missing(void)
{
    write_file("etc/conf.d/50-empty.conf", "");
    write_file("etc/conf.d/60-comments.conf", "# only a comment\n; another\n\n");
    rayo_context *ctx = open_layers(NULL);
    CHECK(ctx != NULL, "empty files are fine");
    CHECK(strstr(test_log, "50-empty") == NULL && strstr(test_log, "60-comments") == NULL,
          "nothing to say about empty files:\n%s", test_log);
    rayo_close(ctx);
    setenv("RAYO_CONFIG", "/nonexistent/rayo.conf", 1);
    ctx = open_layers(NULL);
    CHECK(ctx != NULL, "a missing RAYO_CONFIG file does not stop rayo");
    CHECK(strstr(test_log, "/nonexistent/rayo.conf") != NULL, "but it is reported:\n%s", test_log);
    rayo_close(ctx);
    unsetenv("RAYO_CONFIG");
}

/* Values that are not what a key expects are reported, defaults apply. */
static void test_bad_values(void)
{
    rayo_context *ctx = open_layers("[rayo]\nthreads = lots\nlog = loud\n[dispatch]\noffload_threshold = -5\n");
    if (!ctx)
        return;
    CHECK(strstr(test_log, "threads") != NULL, "bad thread count reported:\n%s", test_log);
    CHECK(strstr(test_log, "loud") != NULL, "bad log level reported:\n%s", test_log);
    CHECK(strstr(test_log, "not a size") != NULL, "bad threshold reported:\n%s", test_log);
    CHECK(rayo_thread_count(ctx) >= 1, "threads still works");
    rayo_close(ctx);
    ctx = open_layers("[rayo]\nthreads = 3\n");
    CHECK(ctx && rayo_thread_count(ctx) == 3, "threads = 3 gives 3 threads");
    rayo_close(ctx);
}

/* The environment is ignored when the application says so. */
static void test_no_environment(void)
{
    setenv("RAYO_BACKEND", "from-env", 1);
    rayo_options o = {0};
    o.struct_size = sizeof o;
    o.no_config_files = 1;
    o.no_environment = 1;
    o.log = test_log_capture;
    rayo_context *ctx = NULL;
    CHECK(rayo_open(&ctx, &o) == RAYO_OK, "open");
    CHECK(ctx && rayo_config_get(ctx, "dispatch", "order") == NULL, "RAYO_BACKEND ignored");
    CHECK(ctx && rayo_config_file_count(ctx) == 0, "no files read");
    rayo_close(ctx);
    unsetenv("RAYO_BACKEND");
}

static bool ends_with(const char *s, const char *tail)
{
    size_t ls = s ? strlen(s) : 0, lt = strlen(tail);
    return ls >= lt && !strcmp(s + ls - lt, tail);
}

/* dispatch.order after opening, and the origin rayo reports for it. */
static void expect_order(const char *want, const char *want_origin, const char *why)
{
    rayo_context *ctx = open_layers(NULL);
    if (!ctx)
        return;
    const char *got = rayo_config_get(ctx, "dispatch", "order");
    const char *origin = rayo_config_origin(ctx, "dispatch", "order");
    if (want)
        CHECK(got && !strcmp(got, want), "%s: order = %s, want %s", why, got ? got : "(unset)", want);
    else
        CHECK(got == NULL, "%s: order = %s, want it unset", why, got);
    if (want_origin)
        CHECK(ends_with(origin, want_origin), "%s: origin %s, want ...%s", why, origin ? origin : "(none)",
              want_origin);
    /* The same entry appears in the list of every setting read. */
    bool listed = !want_origin;
    for (size_t i = 0; i < rayo_config_setting_count(ctx); i++) {
        const char *sec, *key, *value;
        const char *o = rayo_config_setting(ctx, i, &sec, &key, &value);
        if (o && want_origin && ends_with(o, want_origin) && !strcmp(sec, "dispatch") && !strcmp(key, "order"))
            listed = !strcmp(value, want);
    }
    CHECK(listed, "%s: the setting is listed with its origin", why);
    CHECK(rayo_config_setting(ctx, rayo_config_setting_count(ctx), NULL, NULL, NULL) == NULL,
          "no setting past the end");
    rayo_close(ctx);
}

/* Where a file's status in rayo-info says `want`. */
static void expect_file_status(const char *file, const char *want)
{
    rayo_context *ctx = open_layers(NULL);
    const char *status = NULL;
    for (size_t i = 0; ctx && i < rayo_config_file_count(ctx); i++) {
        const char *st;
        const char *path = rayo_config_file(ctx, i, &st);
        if (ends_with(path, file))
            status = st;
    }
    CHECK(status && strstr(status, want), "%s: status %s, want %s", file, status ? status : "(not listed)", want);
    rayo_close(ctx);
}

/* Packages' drop-ins (the vendor directory) come before the administrator's
 * files, and a same-named file in etc/conf.d masks a vendor one. */
static void test_vendor_layer(void)
{
    make_dir("vendor");
    write_file("etc/rayo.conf", "[dispatch]\noffload_threshold = 1\n");
    expect_order(NULL, NULL, "no order anywhere");
    write_file("vendor/50-avx2.conf", "# from a package\n[dispatch]\norder = avx2\n");
    expect_order("avx2", "vendor/50-avx2.conf:3", "a vendor drop-in alone");
    write_file("etc/rayo.conf", "[dispatch]\noffload_threshold = 1\norder = scalar\n");
    expect_order("scalar", "etc/rayo.conf:3", "the administrator's rayo.conf beats a vendor drop-in");
    write_file("vendor/60-vulkan.conf", "[dispatch]\norder = vulkan\n");
    expect_order("scalar", "etc/rayo.conf:3", "even a vendor drop-in that sorts later");
    write_file("etc/rayo.conf", "[dispatch]\noffload_threshold = 1\n");
    expect_order("vulkan", "vendor/60-vulkan.conf:2", "vendor drop-ins in lexical order");
    write_file("etc/conf.d/60-vulkan.conf", "# masks the package's file\n");
    expect_order("avx2", "vendor/50-avx2.conf:3", "a same-named file in etc/conf.d masks the vendor one");
    expect_file_status("vendor/60-vulkan.conf", "masked by");
    write_file("etc/conf.d/70-admin.conf", "[dispatch]\norder = cuda\n");
    expect_order("cuda", "etc/conf.d/70-admin.conf:2", "the administrator's conf.d beats vendor drop-ins");
    expect_file_status("vendor/50-avx2.conf", "read");
    static const char *const made[] = {"vendor/50-avx2.conf", "vendor/60-vulkan.conf", "etc/conf.d/60-vulkan.conf",
                                       "etc/conf.d/70-admin.conf"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", root, made[i]);
        unlink(path);
    }
}

int main(void)
{
    test_clear_rayo_env();
    CHECK(mkdtemp(root) != NULL, "temp dir");
    test_precedence();
    test_files_listed();
    test_malformed();
    test_empty_and_missing();
    test_bad_values();
    test_no_environment();
    test_vendor_layer();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return test_summary();
}
