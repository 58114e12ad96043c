/* SPDX-License-Identifier: MIT */
/* test-hardening.c - bad plugin files, lying descriptors, bad config files,
 * fork, and handles used after destroy or close: each case must end with a
 * clear reason and the process alive (tests/plugins/fake.c builds the lying
 * plugins; the broken files are made here, in a temporary folder). */
#include "testutil.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef FAKE_DIR
#error "FAKE_DIR must name the folder of the test plugins"
#endif
#ifndef SCALAR_DIR
#error "SCALAR_DIR must name the folder of the scalar plugin"
#endif

static char dir[] = "/tmp/rayo-test-hardening-XXXXXX";
static char settings[8192];

static void run(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    CHECK(system(cmd) == 0, "%s", cmd);
}

/* The first `bytes` of src as dst (bytes 0: all of it). */
static void copy_file(const char *src, const char *dst, long bytes, mode_t mode)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    CHECK(in && out, "copy %s to %s", src, dst);
    if (in && out) {
        int c;
        for (long i = 0; (bytes == 0 || i < bytes) && (c = getc(in)) != EOF; i++)
            putc(c, out);
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    chmod(dst, mode);
}

static void make_empty(const char *path)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "create %s", path);
    if (f)
        fclose(f);
}

/* Opens with one plugin file loaded by path (plus scalar), returns its info. */
static bool load_one(const char *path, const char *name, const char *extra, rayo_context **ctx,
                     rayo_backend_info *info)
{
    snprintf(settings, sizeof settings, "[plugins]\nload = %s\n%s", path, extra ? extra : "");
    if (test_open(ctx, settings) != RAYO_OK)
        return false;
    for (size_t i = 0; i < rayo_backend_count(*ctx); i++)
        if (rayo_backend_get(*ctx, i, info) == RAYO_OK && !strcmp(info->path, path) && !strcmp(info->name, name))
            return true;
    return false;
}

/* The file's status and the start of its reason (the exact text rayo-info
 * prints after "reason: "). */
static void expect_file(const char *path, const char *name, rayo_backend_status want, const char *reason)
{
    rayo_context *ctx = NULL;
    rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
    bool listed = load_one(path, name, NULL, &ctx, &b);
    CHECK(listed, "%s is listed as %s", path, name);
    if (listed) {
        CHECK(b.status == want, "%s: status %d, want %d (reason: %s)", path, b.status, want, b.reason);
        CHECK(!strncmp(b.reason, reason, strlen(reason)), "%s: reason \"%s\", want \"%s...\"", path, b.reason,
              reason);
    }
    rayo_close(ctx);
}

static void fake_path(char *out, size_t size, const char *variant)
{
    snprintf(out, size, "%s/rayo-fake%s.so", FAKE_DIR, variant);
}

/* Files that are not plugins: refused before dlopen, with the reason. */
static void test_bad_files(void)
{
    char scalar[512], good[512], path[512];
    snprintf(scalar, sizeof scalar, "%s/rayo-scalar.so", SCALAR_DIR);
    fake_path(good, sizeof good, "good");

    snprintf(path, sizeof path, "%s/rayo-trunc1000.so", dir);
    copy_file(scalar, path, 1000, 0755);
    expect_file(path, "trunc1000", RAYO_BACKEND_REJECTED, "truncated ELF file: segment");
    snprintf(path, sizeof path, "%s/rayo-trunc20000.so", dir);
    copy_file(scalar, path, 20000, 0755);
    expect_file(path, "trunc20000", RAYO_BACKEND_REJECTED, "truncated ELF file: segment");
    snprintf(path, sizeof path, "%s/rayo-empty.so", dir);
    make_empty(path);
    expect_file(path, "empty", RAYO_BACKEND_REJECTED, "not an ELF shared object (no ELF header)");

    snprintf(path, sizeof path, "%s/rayo-fifo.so", dir);
    CHECK(mkfifo(path, 0600) == 0, "mkfifo");
    expect_file(path, "fifo", RAYO_BACKEND_REJECTED, "a FIFO, not a plugin file");
    snprintf(path, sizeof path, "%s/rayo-folder.so", dir);
    CHECK(mkdir(path, 0700) == 0, "mkdir");
    expect_file(path, "folder", RAYO_BACKEND_REJECTED, "a directory, not a plugin file");

    /* A foreign architecture: the header of a good plugin with another
     * e_machine (offset 18, little-endian). */
    snprintf(path, sizeof path, "%s/rayo-foreign.so", dir);
    copy_file(good, path, 0, 0755);
    int fd = open(path, O_WRONLY);
    unsigned char machine[2] = {183, 0}; /* EM_AARCH64 */
#if defined(__aarch64__)
    machine[0] = 62; /* EM_X86_64 */
#endif
    CHECK(fd >= 0 && pwrite(fd, machine, 2, 18) == 2, "patch e_machine");
    close(fd);
#if defined(__x86_64__)
    expect_file(path, "foreign", RAYO_BACKEND_REJECTED, "built for aarch64, this machine is x86-64");
#elif defined(__aarch64__)
    expect_file(path, "foreign", RAYO_BACKEND_REJECTED, "built for x86-64, this machine is aarch64");
#endif

    /* Writable by others: refused for root, a warning for anyone else. */
    snprintf(path, sizeof path, "%s/rayo-writable.so", dir);
    copy_file(good, path, 0, 0777);
    chmod(path, 0777);
    char extra[128];
    snprintf(extra, sizeof extra, "allow = scalar, fakegood, writable\n");
    rayo_context *ctx = NULL;
    rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
    bool listed = load_one(path, "writable", extra, &ctx, &b) ||
                  (rayo_close(ctx), load_one(path, "fakegood", extra, &ctx, &b));
    CHECK(listed, "writable plugin listed");
    if (geteuid() == 0)
        CHECK(listed && b.status == RAYO_BACKEND_REJECTED && strstr(b.reason, "writable by group or others"),
              "root refuses a world-writable plugin: %s", listed ? b.reason : "");
    else
        CHECK(listed && b.status == RAYO_BACKEND_LOADED && strstr(test_log, "writable by group or others"),
              "a world-writable plugin loads with a warning (status %d)", listed ? (int)b.status : -1);
    rayo_close(ctx);
}

/* Descriptors that lie: refused after dlopen, before any call. */
static void test_lying_descriptors(void)
{
    static const struct { const char *variant, *reason; } cases[] = {
        {"badops", "op table (1 entries) does not lie in the plugin"},
        {"manyops", "op_count 100000 is more than 4096"},
        {"badkernel", "kernel of op table entry 0 (op 3: mul) is not code of the plugin"},
        {"abssym", "'rayo_plugin' does not lie in the plugin's loaded segments"},
        {"smalldesc", "'rayo_plugin' is 8 bytes, a descriptor has at least"},
        {"memnull", "memory API function 1 is NULL"},
        {"memsize0", "memory API table of 0 bytes, need"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512], name[64];
        fake_path(path, sizeof path, cases[i].variant);
        snprintf(name, sizeof name, "fake%s", cases[i].variant);
        expect_file(path, name, RAYO_BACKEND_REJECTED, cases[i].reason);
    }
}

/* Denied by file name: the constructor never runs.  Allowed: it runs at
 * dlopen (documented: no loader can check before that). */
static void test_constructor(void)
{
    char path[512];
    fake_path(path, sizeof path, "ctor");
    unsetenv("RAYO_FAKE_CTOR_RAN");
    rayo_context *ctx = NULL;
    rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
    CHECK(load_one(path, "fakector", "deny = fakector\n", &ctx, &b) && b.status == RAYO_BACKEND_DISABLED &&
          !strcmp(b.reason, "denied by configuration (plugins.deny / RAYO_DISABLE)"), "denied by file name");
    rayo_close(ctx);
    CHECK(getenv("RAYO_FAKE_CTOR_RAN") == NULL, "a plugin denied by file name was never opened");
    CHECK(load_one(path, "fakector", NULL, &ctx, &b) && b.status == RAYO_BACKEND_LOADED, "allowed: loads");
    rayo_close(ctx);
    CHECK(getenv("RAYO_FAKE_CTOR_RAN") != NULL, "its constructor ran at dlopen");
}

/* A broken file earlier in the path does not hide a good one; 40 junk
 * files use no backend slots. */
static void test_shadow_and_junk(void)
{
    char first[256], path[512];
    snprintf(first, sizeof first, "%s/first", dir);
    CHECK(mkdir(first, 0700) == 0, "mkdir");
    snprintf(path, sizeof path, "%s/rayo-scalar.so", first);
    make_empty(path);
    for (int i = 0; i < 40; i++) {
        char junk[600];
        snprintf(junk, sizeof junk, "%s/rayo-junk%02d.so", first, i);
        make_empty(junk);
    }
    snprintf(settings, sizeof settings, "[plugins]\npath = %s:%s\n", first, SCALAR_DIR);
    rayo_context *ctx = NULL;
    CHECK(test_open(&ctx, settings) == RAYO_OK, "open");
    size_t junk = 0;
    bool scalar_loaded = false, empty_rejected = false;
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
        rayo_backend_get(ctx, i, &b);
        junk += !strncmp(b.name, "junk", 4) && b.status == RAYO_BACKEND_REJECTED &&
                !strcmp(b.reason, "not an ELF shared object (no ELF header)");
        if (!strcmp(b.name, "scalar")) {
            scalar_loaded |= b.status == RAYO_BACKEND_LOADED && strstr(b.path, SCALAR_DIR);
            empty_rejected |= b.status == RAYO_BACKEND_REJECTED && strstr(b.path, first);
        }
    }
    CHECK(junk == 40, "all 40 junk files listed with their reason: %zu", junk);
    CHECK(empty_rejected && scalar_loaded, "the empty rayo-scalar.so is rejected (%d), the real one loads (%d)",
          empty_rejected, scalar_loaded);
    float a[3] = {1, 2, 3}, y[3];
    CHECK(rayo_add(ctx, a, a, y, 3) == RAYO_OK && y[2] == 6, "and runs calls");
    rayo_close(ctx);
}

/* ---- config files ---- */
static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "create %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Opens with RAYO_CONFIG=path; returns the context (NULL on failure). */
static rayo_context *open_config(const char *path)
{
    setenv("RAYO_CONFIG", path, 1);
    rayo_context *ctx = NULL;
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "open with RAYO_CONFIG=%s: %s", path, rayo_last_error());
    unsetenv("RAYO_CONFIG");
    return ctx;
}

static void expect_config_status(const char *path, const char *want)
{
    rayo_context *ctx = open_config(path);
    const char *status = "";
    for (size_t i = 0; i < rayo_config_file_count(ctx); i++)
        if (!strcmp(rayo_config_file(ctx, i, &status), path))
            break;
    CHECK(!strcmp(status, want), "%s: status \"%s\", want \"%s\"", path, status, want);
    rayo_close(ctx);
}

static void expect_logged(const char *what, const char *text)
{
    CHECK(strstr(test_log, text) != NULL, "%s: log should say \"%s\":\n%s", what, text, test_log);
}

static void test_config_files(void)
{
    char path[512], fifo[512];
    expect_config_status("/dev/zero", "refused: a character device, not a file");
    snprintf(fifo, sizeof fifo, "%s/fifo.conf", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    expect_config_status(fifo, "refused: a FIFO, not a file");
    expect_config_status(dir, "refused: a directory, not a file");

    /* A long comment whose tail is a live setting, read in pieces before. */
    char text[1024];
    snprintf(path, sizeof path, "%s/long.conf", dir);
    snprintf(text, sizeof text, "[plugins]\n; %0300d load = /nonexistent/rayo-smuggled.so\n", 0);
    write_text(path, text);
    rayo_context *ctx = open_config(path);
    CHECK(rayo_config_get(ctx, "plugins", "load") == NULL, "nothing smuggled out of a long comment");
    char want[600];
    snprintf(want, sizeof want, "%s:2: line longer than 198 characters ignored (all of it)", path);
    expect_logged("long line", want);
    rayo_close(ctx);

    snprintf(path, sizeof path, "%s/bom.conf", dir);
    write_text(path, "\xEF\xBB\xBF[dispatch]\noffload_threshold = 7\n");
    ctx = open_config(path);
    const char *v = rayo_config_get(ctx, "dispatch", "offload_threshold");
    CHECK(v && !strcmp(v, "7"), "the first section of a file with a BOM is read: %s", v ? v : "(unset)");
    rayo_close(ctx);

    snprintf(path, sizeof path, "%s/indent.conf", dir);
    write_text(path, "[dispatch]\norder = scalar\n  avx2\n");
    ctx = open_config(path);
    v = rayo_config_get(ctx, "dispatch", "order");
    CHECK(v && !strcmp(v, "scalar"), "an indented line does not replace the value: %s", v ? v : "(unset)");
    snprintf(want, sizeof want, "%s:3: indented line ignored: continuation lines are not supported", path);
    expect_logged("indented line", want);
    rayo_close(ctx);

    snprintf(path, sizeof path, "%s/values.conf", dir);
    write_text(path, "[rayo]\nthreads = -1\n[dispatch]\noffload_threshold = abc\nforce_cpu = maybe\n"
                     "[op.add]\noffload_threshold = 99999999999999999999999\n");
    ctx = open_config(path);
    static const char *const said[] = {
        ":2: [rayo] threads = \"-1\" is not auto or 1..1024",
        ":4: [dispatch] offload_threshold = \"abc\" is not a size (digits only) or never: ignored",
        ":5: [dispatch] force_cpu = \"maybe\" is not yes/no, true/false, on/off or 1/0: using no",
        ":7: [op.add] offload_threshold = \"99999999999999999999999\" is too large: ignored",
    };
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++) {
        snprintf(want, sizeof want, "%s%s", path, said[i]);
        expect_logged("bad value", want);
    }
    rayo_close(ctx);
}

/* Relative load/path entries: relative to the config file's folder, never
 * a library search; a path longer than 255 characters is used whole. */
static void test_config_paths(void)
{
    char sub[256], path[512], good[512];
    fake_path(good, sizeof good, "good");
    snprintf(sub, sizeof sub, "%s/conf", dir);
    CHECK(mkdir(sub, 0700) == 0, "mkdir");
    snprintf(path, sizeof path, "%s/rayo-fakegood.so", sub);
    copy_file(good, path, 0, 0755);
    snprintf(path, sizeof path, "%s/rel.conf", sub);
    write_text(path, "[plugins]\nload = rayo-fakegood.so:libm.so.6\n");
    rayo_context *ctx = open_config(path);
    rayo_backend_info b = {.struct_size = sizeof(rayo_backend_info)};
    char want[600];
    snprintf(want, sizeof want, "%s/rayo-fakegood.so", sub);
    CHECK(test_backend(ctx, "fakegood", &b) == RAYO_OK && b.status == RAYO_BACKEND_LOADED &&
          !strcmp(b.path, want), "load = rayo-fakegood.so is the file next to the config");
    snprintf(want, sizeof want, "%s/libm.so.6", sub);
    CHECK(test_backend(ctx, "libm", &b) == RAYO_OK && !strcmp(b.path, want) &&
          !strcmp(b.reason, "cannot open: No such file or directory"),
          "load = libm.so.6 is no library search: %s", b.reason);
    rayo_close(ctx);

    /* 300 characters of folder names (two levels: NAME_MAX is 255). */
    char deep[1024], level[201];
    memset(level, 'd', 200);
    level[200] = '\0';
    snprintf(deep, sizeof deep, "%s/%s", dir, level);
    CHECK(mkdir(deep, 0700) == 0, "mkdir level 1");
    level[100] = '\0';
    size_t len = strlen(deep);
    snprintf(deep + len, sizeof deep - len, "/%s", level);
    CHECK(mkdir(deep, 0700) == 0, "mkdir level 2");
    snprintf(path, sizeof path, "%.400s/rayo-fakegood.so", deep);
    copy_file(good, path, 0, 0755);
    setenv("RAYO_PLUGIN_PATH", deep, 1);
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "open");
    CHECK(test_backend(ctx, "fakegood", &b) == RAYO_OK && b.status == RAYO_BACKEND_LOADED && !strcmp(b.path, path),
          "a plugin folder of %zu characters is used whole", strlen(deep));
    rayo_close(ctx);
    unsetenv("RAYO_PLUGIN_PATH");
}

/* ---- fork ---- */
static void test_fork(void)
{
    rayo_context *ctx;
    CHECK(test_open(&ctx, "[rayo]\nthreads = 4\n") == RAYO_OK, "open");
    enum { N = 512 };
    static float a[N * N], b[N * N], c[N * N];
    for (size_t i = 0; i < N * N; i++) {
        a[i] = (float)(i % 7);
        b[i] = 1.0f;
    }
    CHECK(rayo_matmul(ctx, 0, N, N, N, 1.0f, a, b, 0.0f, c) == RAYO_OK, "matmul before fork");
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30); /* a hang is a failure, not a stuck test suite */
        memset(c, 0, sizeof c);
        rayo_status st = rayo_matmul(ctx, 0, N, N, N, 1.0f, a, b, 0.0f, c);
        float want = 0;
        for (size_t k = 0; k < N; k++)
            want += a[5 * N + k];
        bool right = st == RAYO_OK && c[5 * N + 3] == want;
        rayo_close(ctx);
        _exit(right ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork and wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's matmul is right and it exits (status 0x%x%s)",
          status, WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? ": hung" : "");
    CHECK(rayo_matmul(ctx, 0, N, N, N, 1.0f, a, b, 0.0f, c) == RAYO_OK, "the parent goes on");
    rayo_close(ctx);
}

/* ---- handles after destroy and close ---- */
static void lifetimes_on(const char *backend)
{
    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    rayo_context *ctx;
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "open");
    rayo_buffer *a = NULL, *out = NULL;
    rayo_batch *batch = NULL;
    CHECK(rayo_buffer_create(ctx, backend, sizeof x, &a) == RAYO_OK, "%s buffer: %s", backend, rayo_last_error());
    CHECK(rayo_buffer_create(ctx, backend, sizeof x, &out) == RAYO_OK, "%s buffer", backend);
    CHECK(rayo_buffer_write(a, 0, x, sizeof x) == RAYO_OK, "write");
    CHECK(rayo_batch_create(ctx, backend, &batch) == RAYO_OK, "batch");
    rayo_batch_call call = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ADD, .n = N, .a = {a, 0}, .b = {a, 0}, .y = {out, 0}};
    CHECK(rayo_batch_record(batch, &call) == RAYO_OK, "record: %s", rayo_last_error());
    rayo_buffer_destroy(a); /* the batch keeps it alive */
    CHECK(rayo_batch_submit(batch) == RAYO_OK && rayo_batch_wait(batch, UINT64_MAX) == RAYO_OK,
          "%s: a batch whose input buffer was destroyed runs: %s", backend, rayo_last_error());
    CHECK(rayo_buffer_read(out, 0, y, sizeof y) == RAYO_OK && y[N - 1] == 2.0f * (N - 1), "%s: and is right",
          backend);
    rayo_batch_destroy(batch);

    /* Outstanding at close: freed by rayo_close, the handles detached. */
    CHECK(rayo_batch_create(ctx, backend, &batch) == RAYO_OK, "batch");
    rayo_batch_call copy = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_RELU, .n = N, .a = {out, 0}, .y = {out, 0}};
    CHECK(rayo_batch_record(batch, &copy) == RAYO_OK, "record");
    CHECK(rayo_batch_submit(batch) == RAYO_OK, "submit, not waited");
    rayo_close(ctx);
    CHECK(rayo_buffer_write(out, 0, x, sizeof x) == RAYO_E_STATE, "%s: write after close: RAYO_E_STATE", backend);
    CHECK(strstr(rayo_last_error(), "context was closed") != NULL, "says why: %s", rayo_last_error());
    CHECK(rayo_batch_wait(batch, 0) == RAYO_E_STATE, "wait after close: RAYO_E_STATE");
    CHECK(rayo_buffer_backend(out) == NULL, "no backend after close");
    rayo_batch_destroy(batch);
    rayo_buffer_destroy(out);
}

static void test_lifetimes(void)
{
    lifetimes_on("scalar");
    rayo_context *ctx;
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "open");
    rayo_backend_info vk = {.struct_size = sizeof(rayo_backend_info)};
    bool vulkan = test_backend(ctx, "vulkan", &vk) == RAYO_OK && vk.status == RAYO_BACKEND_LOADED;
    rayo_buffer *buf = NULL;
    CHECK(rayo_buffer_create(ctx, NULL, 64, &buf) == RAYO_OK, "default buffer");
    if (vulkan && vk.device_type == RAYO_DEVICE_SOFTWARE)
        CHECK(strcmp(rayo_buffer_backend(buf), "vulkan") != 0,
              "the default buffer is not on a software device (got %s)", rayo_buffer_backend(buf));
    rayo_buffer_destroy(buf);
    rayo_close(ctx);
    if (vulkan)
        lifetimes_on("vulkan");
    else
        printf("vulkan not loaded: lifetimes checked on scalar only\n");
}

int main(void)
{
    test_clear_rayo_env();
    unsetenv("RAYO_FAKE_CTOR_RAN");
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    test_bad_files();
    test_lying_descriptors();
    test_constructor();
    test_shadow_and_junk();
    test_config_files();
    test_config_paths();
    test_fork();
    test_lifetimes();
    run("rm -rf %s%s", dir, "");
    return test_summary();
}
