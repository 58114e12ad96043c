/* test-vulkan - the vulkan backend through rayo's public API: device
 * buffers, batches of chained ops (every signature class, operands at
 * unaligned offsets, multi-pass reductions), concurrent host-memory calls,
 * the pipeline cache, and the validation layer's messages being caught.
 * Results are checked against float64 references on fresh random inputs.
 *
 *   test-vulkan                       the tests (validation on where the
 *                                     layer is installed); SKIP (77) with
 *                                     the reason where vulkan is unusable
 *   test-vulkan --probe               exit 0 if vulkan loads, else 77
 *   test-vulkan --expect-unavailable TEXT [SETTINGS]
 *                                     exit 0 if vulkan does not load and its
 *                                     reason contains TEXT (SETTINGS: more
 *                                     rayo.conf text, \n as line breaks)
 */
#include "testutil.h"

#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#define BASE_SETTINGS "[plugins]\nallow = scalar, vulkan\n[dispatch]\norder = vulkan\n"

static unsigned long long rng;

static float frand(void)         /* uniform in [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
}

/* The vulkan backend's status and reason in ctx; false if it is not listed. */
static bool vulkan_info(rayo_context *ctx, rayo_backend_info *info)
{
    for (size_t i = 0; i < rayo_backend_count(ctx); i++)
        if (rayo_backend_get(ctx, i, info) == RAYO_OK && !strcmp(info->name, "vulkan"))
            return true;
    return false;
}

/* Opens a context with BASE_SETTINGS + extra; returns NULL if it fails. */
static rayo_context *open_with(const char *extra)
{
    static char settings[4096];
    snprintf(settings, sizeof settings, "%s%s", BASE_SETTINGS, extra ? extra : "");
    rayo_context *ctx = NULL;
    test_log[0] = 0;
    if (test_open(&ctx, settings) != RAYO_OK)
        return NULL;
    return ctx;
}

/* "\n" written as two characters on a command line becomes a line break. */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == 'n') {
            *w++ = '\n';
            r++;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
}

static int expect_unavailable(const char *text, char *extra)
{
    if (extra)
        unescape(extra);
    rayo_context *ctx = open_with(extra);
    if (!ctx) {
        printf("FAIL: rayo_open: %s\n", rayo_last_error());
        return 1;
    }
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    int rc = 1;
    if (!vulkan_info(ctx, &info))
        printf("FAIL: the vulkan plugin was not found\n");
    else if (info.status == RAYO_BACKEND_LOADED)
        printf("FAIL: vulkan loaded (device %s) though it should not\n", info.device);
    else if (!strstr(info.reason, text))
        printf("FAIL: vulkan unavailable, but the reason \"%s\" lacks \"%s\"\n", info.reason, text);
    else {
        printf("ok: vulkan unavailable: %s\n", info.reason);
        rc = 0;
    }
    rayo_close(ctx);
    return rc;
}

/* ---- checks against float64 -------------------------------------------------- */

static rayo_context *ctx;

static rayo_buffer *new_buffer(size_t bytes)
{
    rayo_buffer *b = NULL;
    rayo_status st = rayo_buffer_create(ctx, "vulkan", bytes, &b);
    CHECK(st == RAYO_OK, "buffer_create(%zu): %s", bytes, rayo_last_error());
    return b;
}

/* Compares n results with references: |y - ref| <= tol * scale + tol_abs. */
static void compare(const char *what, const float *y, const double *ref, const double *scale,
                    size_t n, double tol)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        double s = scale ? scale[i] : fabs(ref[i]);
        if (!(fabs(y[i] - ref[i]) <= tol * s + 1e-30)) {
            if (!bad)
                first = i;
            bad++;
        }
    }
    CHECK(bad == 0, "%s: %zu of %zu wrong, first [%zu] = %.9g, reference %.9g", what, bad, n,
          first, bad ? y[first] : 0.0, bad ? ref[first] : 0.0);
}

static rayo_status run_batch(const rayo_batch_call *calls, size_t count)
{
    rayo_batch *batch = NULL;
    rayo_status st = rayo_batch_create(ctx, "vulkan", &batch);
    for (size_t i = 0; st == RAYO_OK && i < count; i++)
        st = rayo_batch_record(batch, &calls[i]);
    if (st == RAYO_OK)
        st = rayo_batch_submit(batch);
    if (st == RAYO_OK)
        st = rayo_batch_wait(batch, UINT64_MAX);
    if (batch)
        rayo_batch_destroy(batch);
    return st;
}

static void test_buffers(void)
{
    const size_t n = 10007;
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    fill(in, n);
    rayo_buffer *b = new_buffer(n * sizeof(float));
    if (!b)
        return;
    CHECK(rayo_buffer_size(b) == n * sizeof(float), "size %zu", rayo_buffer_size(b));
    CHECK(!strcmp(rayo_buffer_backend(b), "vulkan"), "backend %s", rayo_buffer_backend(b));
    CHECK(rayo_buffer_write(b, 0, in, n * sizeof(float)) == RAYO_OK, "write: %s", rayo_last_error());
    /* a partial write at an odd word offset, then read back all */
    CHECK(rayo_buffer_write(b, 7 * sizeof(float), in + 100, 33 * sizeof(float)) == RAYO_OK, "write");
    CHECK(rayo_buffer_read(b, 0, out, n * sizeof(float)) == RAYO_OK, "read: %s", rayo_last_error());
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = (i >= 7 && i < 40) ? in[100 + i - 7] : in[i];
        bad += out[i] != want;
    }
    CHECK(bad == 0, "buffer contents: %zu words wrong", bad);
    rayo_buffer_destroy(b);
    free(in);
    free(out);
}

/* Ten chained elementwise ops in one batch, operands at word offsets that
 * are not multiples of 4 (the scalar shader path) and that are (vec4). */
static void test_chain(size_t n, size_t off)
{
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref);
    fill(x, n);
    rayo_buffer *bx = new_buffer((n + off) * sizeof(float)), *by = new_buffer((n + off) * sizeof(float));
    if (!bx || !by)
        return;
    CHECK(rayo_buffer_write(bx, off * 4, x, n * 4) == RAYO_OK, "write");
    const uint32_t ops[10] = {RAYO_OP_ADD, RAYO_OP_SCALE, RAYO_OP_TANH, RAYO_OP_MUL, RAYO_OP_SIGMOID,
                              RAYO_OP_SUB, RAYO_OP_ABS, RAYO_OP_SQRT, RAYO_OP_SILU, RAYO_OP_EXP};
    rayo_batch_call calls[10];
    for (int i = 0; i < 10; i++) {
        bool binary = ops[i] == RAYO_OP_ADD || ops[i] == RAYO_OP_MUL || ops[i] == RAYO_OP_SUB;
        calls[i] = (rayo_batch_call){
            .struct_size = sizeof(rayo_batch_call), .op = ops[i], .n = n, .alpha = 0.75f,
            .a = {i == 0 ? bx : by, off * 4}, .b = {binary ? bx : NULL, binary ? off * 4 : 0},
            .y = {by, off * 4},
        };
    }
    rayo_status st = run_batch(calls, 10);
    CHECK(st == RAYO_OK, "chain batch n=%zu: %s", n, rayo_last_error());
    CHECK(rayo_buffer_read(by, off * 4, y, n * 4) == RAYO_OK, "read");
    for (size_t i = 0; i < n; i++) {
        double v = (double)x[i] + x[i];
        v = tanh(0.75 * v);
        v = v * x[i];
        v = 1 / (1 + exp(-v));
        v = fabs(v - x[i]);
        v = sqrt(v);
        v = v / (1 + exp(-v));
        ref[i] = exp(v);
    }
    char what[64];
    snprintf(what, sizeof what, "chain of 10 ops, n=%zu offset=%zu", n, off);
    compare(what, y, ref, NULL, n, 2e-5);
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(by);
    free(x);
    free(y);
    free(ref);
}

/* Reductions into a buffer: one pass (small n) and two passes (large n). */
static void test_reductions(size_t n)
{
    float *x = malloc(n * sizeof *x), *z = malloc(n * sizeof *z);
    fill(x, n);
    fill(z, n);
    x[n / 3] = 3.5f;                     /* the maximum, once */
    rayo_buffer *bx = new_buffer(n * 4 + 4), *bz = new_buffer(n * 4), *out = new_buffer(64);
    if (!bx || !bz || !out)
        return;
    rayo_buffer_write(bx, 4, x, n * 4);  /* at word 1: not 16-byte aligned */
    rayo_buffer_write(bz, 0, z, n * 4);
    rayo_batch_call calls[] = {
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_SUM, .n = n, .a = {bx, 4}, .y = {out, 0}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_DOT, .n = n, .a = {bx, 4}, .b = {bz, 0}, .y = {out, 4}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_MAX, .n = n, .a = {bx, 4}, .y = {out, 8}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_NORM_L2, .n = n, .a = {bx, 4}, .y = {out, 12}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ARGMAX, .n = n, .a = {bx, 4}, .y = {out, 16}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_NORM_L1, .n = n, .a = {bx, 4}, .y = {out, 24}},
    };
    CHECK(run_batch(calls, 6) == RAYO_OK, "reductions n=%zu: %s", n, rayo_last_error());
    float r[4], l1;
    size_t idx = 0;
    rayo_buffer_read(out, 0, r, 16);
    rayo_buffer_read(out, 16, &idx, sizeof idx);
    rayo_buffer_read(out, 24, &l1, 4);
    double sum = 0, dot = 0, abs_sum = 0, abs_dot = 0, sq = 0;
    for (size_t i = 0; i < n; i++) {
        sum += x[i];
        abs_sum += fabs(x[i]);
        dot += (double)x[i] * z[i];
        abs_dot += fabs((double)x[i] * z[i]);
        sq += (double)x[i] * x[i];
    }
    CHECK(fabs(r[0] - sum) <= 1e-5 * abs_sum, "sum n=%zu: %.9g vs %.9g", n, r[0], sum);
    CHECK(fabs(r[1] - dot) <= 1e-5 * abs_dot, "dot n=%zu: %.9g vs %.9g", n, r[1], dot);
    CHECK(r[2] == 3.5f, "max n=%zu: %g", n, r[2]);
    CHECK(fabs(r[3] - sqrt(sq)) <= 1e-5 * sqrt(sq), "norm_l2 n=%zu: %.9g vs %.9g", n, r[3], sqrt(sq));
    CHECK(idx == n / 3, "argmax n=%zu: %zu, expected %zu", n, idx, n / 3);
    CHECK(fabs(l1 - abs_sum) <= 1e-5 * abs_sum, "norm_l1 n=%zu: %.9g vs %.9g", n, l1, abs_sum);
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(bz);
    rayo_buffer_destroy(out);
    free(x);
    free(z);
}

/* Row ops in one batch: softmax of x, and layernorm of x (gamma, no beta)
 * followed by bias + gelu on its result. */
static void test_rows(size_t m, size_t n)
{
    size_t mn = m * n;
    float *x = malloc(mn * 4), *g = malloc(n * 4), *bias = malloc(n * 4);
    float *ys = malloc(mn * 4), *yl = malloc(mn * 4);
    double *rs = malloc(mn * sizeof *rs), *rl = malloc(mn * sizeof *rl);
    fill(x, mn);
    fill(g, n);
    fill(bias, n);
    rayo_buffer *bx = new_buffer(mn * 4), *bg = new_buffer(n * 4), *bb = new_buffer(n * 4);
    rayo_buffer *bs = new_buffer(mn * 4), *bl = new_buffer(mn * 4);
    if (!bx || !bg || !bb || !bs || !bl)
        return;
    rayo_buffer_write(bx, 0, x, mn * 4);
    rayo_buffer_write(bg, 0, g, n * 4);
    rayo_buffer_write(bb, 0, bias, n * 4);
    rayo_batch_call calls[] = {
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_SOFTMAX, .m = m, .n = n, .a = {bx, 0}, .y = {bs, 0}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_LAYERNORM, .m = m, .n = n, .alpha = 1e-5f, .a = {bx, 0}, .b = {bg, 0},
         .y = {bl, 0}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_BIAS_ACT, .flags = RAYO_ACT_GELU, .m = m, .n = n, .a = {bl, 0},
         .b = {bb, 0}, .y = {bl, 0}},
    };
    CHECK(run_batch(calls, 3) == RAYO_OK, "rows %zux%zu: %s", m, n, rayo_last_error());
    rayo_buffer_read(bs, 0, ys, mn * 4);
    rayo_buffer_read(bl, 0, yl, mn * 4);
    for (size_t i = 0; i < m; i++) {
        const float *row = x + i * n;
        double mx = -INFINITY, s = 0, mean = 0, var = 0;
        for (size_t j = 0; j < n; j++) {
            mx = fmax(mx, row[j]);
            mean += row[j];
        }
        mean /= n;
        for (size_t j = 0; j < n; j++) {
            s += exp(row[j] - mx);
            var += (row[j] - mean) * (row[j] - mean);
        }
        var /= n;
        for (size_t j = 0; j < n; j++) {
            rs[i * n + j] = exp(row[j] - mx) / s;
            double v = (float)((row[j] - mean) / sqrt(var + 1e-5) * g[j]) + (double)bias[j];
            rl[i * n + j] = 0.5 * v * (1 + erf(v / sqrt(2.0)));
        }
    }
    char what[64];
    snprintf(what, sizeof what, "softmax %zux%zu", m, n);
    compare(what, ys, rs, NULL, mn, 1e-5);
    /* v = layernorm + bias may cancel to near 0: an absolute floor of 1 */
    for (size_t i = 0; i < mn; i++)
        rs[i] = fmax(fabs(rl[i]), 1.0);
    snprintf(what, sizeof what, "layernorm + bias_act(gelu) %zux%zu", m, n);
    compare(what, yl, rl, rs, mn, 1e-5);
    free(x);
    free(g);
    free(bias);
    free(ys);
    free(yl);
    free(rs);
    free(rl);
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(bg);
    rayo_buffer_destroy(bb);
    rayo_buffer_destroy(bs);
    rayo_buffer_destroy(bl);
}

/* matmul (transposes, beta != 0), then gemv and transpose of the result. */
static void test_matrix(size_t m, size_t n, size_t k, unsigned flags)
{
    float *a = malloc(m * k * 4), *b = malloc(k * n * 4), *c = malloc(m * n * 4);
    float *v = malloc(n * 4), *y = malloc(m * n * 4), *gv = malloc(m * 4);
    double *ref = malloc(m * n * sizeof *ref), *scale = malloc(m * n * sizeof *scale);
    fill(a, m * k);
    fill(b, k * n);
    fill(c, m * n);
    fill(v, n);
    rayo_buffer *ba = new_buffer(m * k * 4 + 4), *bb = new_buffer(k * n * 4), *bc = new_buffer(m * n * 4);
    rayo_buffer *bv = new_buffer(n * 4), *bg = new_buffer(m * 4), *bt = new_buffer(m * n * 4);
    if (!ba || !bb || !bc || !bv || !bg || !bt)
        return;
    rayo_buffer_write(ba, 4, a, m * k * 4);
    rayo_buffer_write(bb, 0, b, k * n * 4);
    rayo_buffer_write(bc, 0, c, m * n * 4);
    rayo_buffer_write(bv, 0, v, n * 4);
    const float alpha = 1.5f, beta = -0.5f;
    rayo_batch_call calls[] = {
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
         .a = {ba, 4}, .b = {bb, 0}, .y = {bc, 0}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_GEMV, .m = m, .n = n, .alpha = 1.0f, .a = {bc, 0}, .b = {bv, 0}, .y = {bg, 0}},
        {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_TRANSPOSE, .m = m, .n = n, .a = {bc, 0}, .y = {bt, 0}},
    };
    CHECK(run_batch(calls, 3) == RAYO_OK, "matrix %zux%zux%zu: %s", m, n, k, rayo_last_error());
    rayo_buffer_read(bc, 0, y, m * n * 4);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (size_t p = 0; p < k; p++) {
                double ai = (flags & RAYO_TRANS_A) ? a[p * m + i] : a[i * k + p];
                double bj = (flags & RAYO_TRANS_B) ? b[j * k + p] : b[p * n + j];
                s += ai * bj;
                mag += fabs(ai * bj);
            }
            ref[i * n + j] = alpha * s + beta * c[i * n + j];
            scale[i * n + j] = fabs(alpha) * mag + fabs(beta * c[i * n + j]);
        }
    char what[80];
    snprintf(what, sizeof what, "matmul %zux%zux%zu flags %u", m, n, k, flags);
    compare(what, y, ref, scale, m * n, 1e-5);
    /* gemv and transpose read the device's C: check them against it */
    float *t = malloc(m * n * 4);
    rayo_buffer_read(bg, 0, gv, m * 4);
    rayo_buffer_read(bt, 0, t, m * n * 4);
    size_t bad_t = 0;
    for (size_t i = 0; i < m; i++) {
        double s = 0, mag = 0;
        for (size_t j = 0; j < n; j++) {
            s += (double)y[i * n + j] * v[j];
            mag += fabs((double)y[i * n + j] * v[j]);
            bad_t += t[j * m + i] != y[i * n + j];
        }
        ref[i] = s;
        scale[i] = mag;
    }
    snprintf(what, sizeof what, "gemv after matmul %zux%zu", m, n);
    compare(what, gv, ref, scale, m, 1e-5);
    CHECK(bad_t == 0, "transpose %zux%zu: %zu wrong", m, n, bad_t);
    void *mem[] = {a, b, c, v, y, gv, ref, scale, t};
    for (int i = 0; i < 9; i++)
        free(mem[i]);
    rayo_buffer *bufs[] = {ba, bb, bc, bv, bg, bt};
    for (int i = 0; i < 6; i++)
        rayo_buffer_destroy(bufs[i]);
}

/* Host-memory calls from several threads at once on one context. */
typedef struct worker {
    int id, bad;
    rayo_status st;
} worker;

static void *host_calls(void *arg)
{
    worker *w = arg;
    size_t n = 3000 + (size_t)w->id * 517;
    float *a = malloc(n * 4), *b = malloc(n * 4), *y = malloc(n * 4);
    unsigned seed = (unsigned)w->id * 7919u + 1;
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(rand_r(&seed) % 1000) / 64.0f;
        b[i] = (float)(rand_r(&seed) % 1000) / 32.0f;
    }
    for (int rep = 0; rep < 20 && w->st == RAYO_OK; rep++) {
        rayo_call call = {.struct_size = sizeof(rayo_call), .op = rep % 2 ? RAYO_OP_MUL : RAYO_OP_ADD, .n = n, .a = a, .b = b, .y = y};
        w->st = rayo_run_on(ctx, "vulkan", &call);
        for (size_t i = 0; i < n && w->st == RAYO_OK; i++)
            w->bad += y[i] != (rep % 2 ? a[i] * b[i] : a[i] + b[i]);
    }
    free(a);
    free(b);
    free(y);
    return NULL;
}

static void test_threads(void)
{
    enum { THREADS = 4 };
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){i, 0, RAYO_OK};
        pthread_create(&th[i], NULL, host_calls, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].st == RAYO_OK && w[i].bad == 0, "thread %d: %s, %d wrong", i,
              rayo_strerror(w[i].st), w[i].bad);
    }
}

static bool has_pipeline_cache(const char *cache_home)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/rayo/vulkan", cache_home);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = !strncmp(e->d_name, "pipelines-", 10);
    closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    test_clear_rayo_env();
    if (argc > 2 && !strcmp(argv[1], "--expect-unavailable"))
        return expect_unavailable(argv[2], argc > 3 ? argv[3] : NULL);

    char cache_home[] = "/tmp/rayo-test-vulkan-XXXXXX";
    if (!mkdtemp(cache_home))
        return 99;
    setenv("XDG_CACHE_HOME", cache_home, 1);

    /* validation on where the layer is installed */
    const char *validation = "[backend.vulkan]\nvalidation = yes\n";
    ctx = open_with(validation);
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    if (ctx && vulkan_info(ctx, &info) && info.status != RAYO_BACKEND_LOADED &&
        strstr(info.reason, "is not installed")) {
        printf("note: %s: running without validation\n", info.reason);
        rayo_close(ctx);
        validation = "";
        ctx = open_with(validation);
    }
    if (!ctx) {
        printf("FAIL: rayo_open: %s\n", rayo_last_error());
        return 1;
    }
    if (!vulkan_info(ctx, &info) || info.status != RAYO_BACKEND_LOADED) {
        printf("SKIP: vulkan: %s\n", vulkan_info(ctx, &info) ? info.reason : "plugin not built");
        rayo_close(ctx);
        rmdir(cache_home);
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) {
        printf("vulkan: %s\n", info.device);
        rayo_close(ctx);
        return 0;
    }
    rng = (unsigned long long)time(NULL) * 2654435761u + (unsigned long long)getpid();
    printf("vulkan on %s%s, seed %llu\n", info.device, *validation ? ", validation on" : "", rng);

    test_buffers();
    test_chain(1, 1);
    test_chain(1000, 4);
    test_chain(70001, 3);
    test_reductions(5);
    test_reductions(3001);
    test_reductions(300007);            /* two passes */
    test_rows(1, 1);
    test_rows(7, 300);
    test_rows(3, 2049);
    test_matrix(1, 1, 1, 0);
    test_matrix(65, 67, 33, 0);
    test_matrix(64, 64, 64, 0);
    test_matrix(64, 128, 48, RAYO_TRANS_A);
    test_matrix(37, 29, 130, RAYO_TRANS_B);
    test_matrix(128, 64, 32, RAYO_TRANS_A | RAYO_TRANS_B);
    test_threads();
    rayo_close(ctx);
    CHECK(has_pipeline_cache(cache_home), "no pipeline cache written under %s/rayo/vulkan", cache_home);

    /* a reopened context reads that cache and still computes right */
    ctx = open_with(validation);
    test_chain(333, 0);
    rayo_close(ctx);

    /* a validation message makes the backend fail (here: at init) */
    if (*validation) {
        char why[256];
        snprintf(why, sizeof why, "%s", "[backend.vulkan]\nvalidation = yes\nvalidation_selftest = yes\n");
        ctx = open_with(why);
        CHECK(ctx && vulkan_info(ctx, &info) && info.status != RAYO_BACKEND_LOADED &&
              strstr(info.reason, "validation layer reported"),
              "a planted validation error went unnoticed (%s)", ctx ? info.reason : "no context");
        CHECK(strstr(test_log, "validation:") != NULL, "the validation message was not logged");
        rayo_close(ctx);
    }
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_home);
    if (system(cmd) != 0)
        fprintf(stderr, "note: could not remove %s\n", cache_home);
    return test_summary();
}
