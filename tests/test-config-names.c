/* SPDX-License-Identifier: MIT */
/* test-config-names.c - configuration mistakes that only the loader's answer
 * reveals: backend names nobody has (with the close name suggested), lists
 * separated by blanks, sections of unknown backends, keys a plugin does not
 * read, plugin folders that are not there, a plugin file named unlike its
 * descriptor.  Each is said once at the default level, with where it was
 * set, and a file's count of problems is the number of lines said about it. */
#include "testutil.h"
#include <unistd.h>

#ifndef FAKE_DIR
#error "FAKE_DIR must name the folder of the test plugins"
#endif

static char dir[] = "/tmp/rayo-test-names-XXXXXX";

/* How many times `needle` occurs in `hay`. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Opens with these settings at the default log level; the log is kept in test_log. */
static rayo_context *open_with(const char *settings)
{
    rayo_context *ctx = NULL;
    CHECK(test_open(&ctx, settings) == RAYO_OK, "open: %s", rayo_last_error());
    return ctx;
}

/* The settings produce `want` in the log exactly once. */
static void expect_once(const char *settings, const char *want)
{
    rayo_close(open_with(settings));
    CHECK(count_of(test_log, want) == 1, "want once: %s\nlog:\n%s", want, test_log);
}

static void test_unknown_names(void)
{
    expect_once("[dispatch]\norder = avx5l2\n",
                "<application settings>:2: [dispatch] order: no backend is called \"avx5l2\" (did you mean avx512?)");
    expect_once("[op.matmul]\norder = cdua, scalar\n",
                "<application settings>:2: [op.matmul] order: no backend is called \"cdua\" (did you mean cuda?)");
    expect_once("[op.matmul.f32.q4_k.f32]\norder = vulcan\n",
                "[op.matmul.f32.q4_k.f32] order: no backend is called \"vulcan\" (did you mean vulkan?)");
    expect_once("[plugins]\ndeny = avx3\n", "[plugins] deny: no backend is called \"avx3\" (did you mean avx2?)");
    expect_once("[backend.avx5l2]\nenabled = no\n",
                "<application settings>:2: [backend.avx5l2]: no backend is called \"avx5l2\" (did you mean avx512?)");
    expect_once("[dispatch]\norder = zzzzzz\n", "no backend is called \"zzzzzz\"\n"); /* nothing close: no guess */
    setenv("RAYO_BACKEND", "cdua", 1);
    expect_once(NULL, "env RAYO_BACKEND: [dispatch] order: no backend is called \"cdua\" (did you mean cuda?)");
    unsetenv("RAYO_BACKEND");
    /* A backend of this tree that is not installed here is no mistake. */
    rayo_close(open_with("[dispatch]\norder = cuda, neon, scalar\n[backend.cuda]\nenabled = yes\n"));
    CHECK(strstr(test_log, "no backend is called") == NULL, "known names are not warned about:\n%s", test_log);
}

/* "scalar avx2" is two names, as "scalar, avx2" is. */
static void test_blank_separated(void)
{
    static const char *const orders[] = {"scalar avx2", "scalar,avx2", "scalar ,\tavx2"};
    for (size_t i = 0; i < 3; i++) {
        char settings[128];
        snprintf(settings, sizeof settings, "[dispatch]\norder = %s\n", orders[i]);
        rayo_context *ctx = open_with(settings);
        const char *add = ctx ? rayo_backend_for(ctx, RAYO_OP_ADD, 0, 1000) : NULL;
        CHECK(add && !strcmp(add, "scalar"), "order = %s: add goes to %s", orders[i], add ? add : "nothing");
        CHECK(strstr(test_log, "no backend is called") == NULL, "order = %s is understood:\n%s", orders[i], test_log);
        rayo_close(ctx);
    }
}

/* A key of a plugin's section that neither the core nor the plugin reads. */
static void test_plugin_keys(void)
{
    char settings[1024];
    snprintf(settings, sizeof settings,
             "[plugins]\nload = %s/rayo-fakegood.so\n[backend.fakegood]\nmystery = 1\nfake_key = 2\nenabled = yes\n",
             FAKE_DIR);
    rayo_context *ctx = open_with(settings);
    rayo_backend_info b = {.struct_size = sizeof b};
    CHECK(ctx && test_backend(ctx, "fakegood", &b) == RAYO_OK && b.status == RAYO_BACKEND_LOADED, "fakegood loads");
    CHECK(count_of(test_log, "<application settings>:4: [backend.fakegood] mystery: the fakegood plugin does not "
                             "know this key") == 1, "unknown key said once with its line:\n%s", test_log);
    CHECK(strstr(test_log, "fake_key") == NULL && strstr(test_log, "enabled") == NULL,
          "keys read are not warned about:\n%s", test_log);
    rayo_close(ctx);
}

/* Writes <dir>/name with text into path (size 512); false if it cannot. */
static bool write_conf(char *path, const char *name, const char *text)
{
    snprintf(path, 512, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "create %s", path);
    if (!f)
        return false;
    fputs(text, f);
    fclose(f);
    return true;
}

static void test_plugin_dirs(void)
{
    expect_once("[plugins]\npath = /nonexistent/rayo-plugins\n",
                "<application settings>:2: [plugins] path: /nonexistent/rayo-plugins: No such file or directory");
    char path[512], conf[1024];
    if (!write_conf(path, "test.conf", "[plugins]\npath = plugins-next-to-me\n"))
        return;
    setenv("RAYO_CONFIG", path, 1);
    snprintf(conf, sizeof conf, "%s:2: [plugins] path: %s/plugins-next-to-me: No such file or directory "
             "(a relative path is relative to the folder of the file that names it)", path, dir);
    expect_once(NULL, conf);
    unsetenv("RAYO_CONFIG");
    unlink(path);
}

/* The status of the file at `path` in the list of config files. */
static const char *file_status(rayo_context *ctx, const char *path)
{
    for (size_t i = 0; ctx && i < rayo_config_file_count(ctx); i++) {
        const char *status;
        const char *p = rayo_config_file(ctx, i, &status);
        if (p && !strcmp(p, path))
            return status;
    }
    return "(not listed)";
}

/* Problems found after the file was read count against it, as many as said;
 * a setting read once per op is still warned about once. */
static void test_problem_count(void)
{
    char path[512], prefix[520];
    if (!write_conf(path, "count.conf", "[dispatch]\norder = cdua\nno_such_key = 1\n[op.matmul]\nprecision = bogus\n"
                                        "[backend.avx5l2]\nenabled = no\n[plugins]\npath = /nonexistent\n"))
        return;
    setenv("RAYO_CONFIG", path, 1);
    rayo_context *ctx = open_with(NULL);
    snprintf(prefix, sizeof prefix, "%s:", path);
    int said = count_of(test_log, prefix);
    char want[64];
    snprintf(want, sizeof want, "read, %d problems (see warnings)", said);
    const char *status = file_status(ctx, path);
    CHECK(said == 5, "5 problems said about the file, got %d:\n%s", said, test_log);
    CHECK(!strcmp(status, want), "status \"%s\", want \"%s\"", status, want);
    CHECK(count_of(test_log, "precision = bogus") == 1, "the precision warning once:\n%s", test_log);
    rayo_close(ctx);
    unsetenv("RAYO_CONFIG");
    unlink(path);
}

/* An order naming a backend that is not loaded says so once, not per op. */
static void test_once_per_setting(void)
{
    rayo_close(open_with("[rayo]\nlog = debug\n[plugins]\ndeny = vulkan\n[dispatch]\norder = vulkan, scalar\n"));
    CHECK(count_of(test_log, "names backend \"vulkan\", which is not loaded") == 1, "said once:\n%.2000s", test_log);
}

static void test_misnamed_file(void)
{
    char settings[512];
    snprintf(settings, sizeof settings, "[plugins]\nload = %s/rayo-fakemisnamed.so\n", FAKE_DIR);
    rayo_context *ctx = open_with(settings);
    rayo_backend_info b = {.struct_size = sizeof b};
    CHECK(ctx && test_backend(ctx, "othername", &b) == RAYO_OK && b.status == RAYO_BACKEND_LOADED,
          "the plugin loads under its descriptor's name");
    CHECK(count_of(test_log, "rayo-fakemisnamed.so: the file name says \"fakemisnamed\" but the plugin calls "
                             "itself \"othername\"") == 1, "the mismatch is said once:\n%s", test_log);
    rayo_close(ctx);
}

int main(void)
{
    test_clear_rayo_env();
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    test_unknown_names();
    test_blank_separated();
    test_plugin_keys();
    test_plugin_dirs();
    test_problem_count();
    test_once_per_setting();
    test_misnamed_file();
    rmdir(dir);
    return test_summary();
}
