/* SPDX-License-Identifier: MIT */
/* test-neon.c - the neon backend through the real core (run under
 * qemu-aarch64 when cross-built; see tests/cross-aarch64.sh):
 *   - it loads and comes before scalar for every op and dtype combination it
 *     has; the others (convert, get_rows, typed matmul) go to scalar;
 *   - the core refuses it, with a reason naming asimd, when the CPU-feature
 *     mask hides Advanced SIMD (RAYO_CPU_DISABLE=asimd);
 *   - elementwise ops, reductions and row ops give NaN and Inf exactly where
 *     scalar does, on a grid of special values (odd lengths: vector tails);
 *     axpy is held to the float64 reference instead: its single-rounding FMA
 *     stays finite where scalar's alpha * x overflows before the add;
 *   - matmul across every edge of its 8 x 12 tiles, the 256-deep k slices,
 *     several C tiles (the pool), all transposes and beta, against double. */
#include "testutil.h"
#include "rayo-plugin.h"
#include <float.h>
#include <math.h>

static const float specials[] = {
    NAN, INFINITY, -INFINITY, 0.0f, -0.0f, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
    1e-45f, -1e-45f, 1.0f, -1.0f, 0.5f, -0.5f, 3.0f, -3.0f, 9.5f, -9.5f, 20.0f, -20.0f,
    44.0f, 88.7f, 89.0f, -87.5f, -103.9f, -105.0f, 1e-20f, -1e-20f, 7e12f, -7e12f,
};
#define N_SPECIAL (sizeof specials / sizeof specials[0])

static const char *describe(float v, char *buf, size_t size)
{
    snprintf(buf, size, "%.9g", v);
    return buf;
}

/* neon's y and scalar's y agree: the same NaN-ness, the same infinities,
 * finite values within twice the op's contract of each other. */
static bool agree(float yn, float ys, const rayo_op_info *op)
{
    if (isnan(yn) || isnan(ys))
        return isnan(yn) && isnan(ys);
    if (isinf(yn) || isinf(ys))
        return yn == ys;
    double tol = 2.0 * (op->tol_rel * fabs(ys) + op->tol_abs);
    if (op->tol_rel == 0 && op->tol_abs == 0)
        return yn == ys;
    return fabs((double)yn - ys) <= tol + 2e-45; /* one subnormal step of slack */
}

static void run_both(rayo_context *ctx, rayo_call *call, float *y_neon, float *y_scalar)
{
    call->y = y_neon;
    rayo_status sn = rayo_run_on(ctx, "neon", call);
    call->y = y_scalar;
    rayo_status ss = rayo_run_on(ctx, "scalar", call);
    CHECK(sn == RAYO_OK && ss == RAYO_OK, "op %u: neon %s, scalar %s (%s)", (unsigned)call->op,
          rayo_strerror(sn), rayo_strerror(ss), rayo_last_error());
}

/* ---- 1. preferred over scalar ------------------------------------------------ */
static void test_preferred(void)
{
    rayo_context *ctx;
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "rayo_open: %s", rayo_last_error());
    rayo_backend_info neon = {.struct_size = sizeof(rayo_backend_info)}, scalar = {.struct_size = sizeof(rayo_backend_info)};
    CHECK(test_backend(ctx, "neon", &neon) == RAYO_OK, "neon found");
    CHECK(test_backend(ctx, "scalar", &scalar) == RAYO_OK, "scalar found");
    CHECK(neon.status == RAYO_BACKEND_LOADED, "neon loaded: %s", neon.reason);
    CHECK(neon.rank < scalar.rank, "neon (position %u) before scalar (%u)", neon.rank, scalar.rank);
    /* neon has every f32 op and the decode path (gemv with every weight
       dtype, rope, attention, the gated units); matmul with other dtypes,
       convert and get_rows fall through to scalar.  Each dtype combination
       neon has is one entry of its op table. */
    size_t count = rayo_op_count(), neon_combos = 0;
    for (size_t i = 0; i < count; i++) {
        const rayo_op_info *op = rayo_op_at(i);
        for (size_t c = 0; c < rayo_op_combo_count(op->id); c++) {
            uint32_t dtypes = rayo_op_combo(op->id, c)->dtypes;
            bool on_scalar = op->id == RAYO_OP_CONVERT || op->id == RAYO_OP_GET_ROWS ||
                             (op->id == RAYO_OP_MATMUL && dtypes != 0);
            const char *want = on_scalar ? "scalar" : "neon";
            const char *first = rayo_backend_for(ctx, op->id, dtypes, 4096);
            neon_combos += !on_scalar;
            CHECK(first && !strcmp(first, want), "%s (dtypes 0x%08x) goes to %s first, want %s", op->name,
                  (unsigned)dtypes, first ? first : "(none)", want);
        }
    }
    CHECK(neon.op_count == neon_combos, "neon has %zu op entries, want %zu", neon.op_count, neon_combos);
    rayo_close(ctx);
}

/* ---- 2. refused where ASIMD is masked --------------------------------------------- */
static void expect_refused(rayo_context *ctx, const char *how)
{
    rayo_backend_info neon = {.struct_size = sizeof(rayo_backend_info)};
    CHECK(test_backend(ctx, "neon", &neon) == RAYO_OK, "%s: neon listed", how);
    CHECK(neon.status == RAYO_BACKEND_REJECTED, "%s: neon rejected (status %d)", how, (int)neon.status);
    CHECK(strstr(neon.reason, "asimd") != NULL, "%s: the reason names asimd: \"%s\"", how, neon.reason);
    const char *first = rayo_backend_for(ctx, RAYO_OP_MATMUL, 0, 1 << 20);
    CHECK(first && !strcmp(first, "scalar"), "%s: matmul falls to scalar (%s)", how, first ? first : "(none)");
    float a[3] = {1, 2, 3}, y[3];
    CHECK(rayo_add(ctx, a, a, y, 3) == RAYO_OK && y[2] == 6.0f, "%s: add still works", how);
}

/* RAYO_CPU_DISABLE is the core's test hook: it masks features in what the
 * HWCAP probe found, as if the CPU lacked them. */
static void test_refused(void)
{
    rayo_context *ctx;
    setenv("RAYO_CPU_DISABLE", "asimd", 1);
    CHECK(test_open(&ctx, NULL) == RAYO_OK, "open: %s", rayo_last_error());
    expect_refused(ctx, "RAYO_CPU_DISABLE=asimd");
    rayo_close(ctx);
    unsetenv("RAYO_CPU_DISABLE");
}

/* ---- 3. NaN/Inf where scalar has them ------------------------------------------------ */
static void compare_outputs(const rayo_op_info *op, const float *a, const float *b,
                            const float *yn, const float *ys, size_t n)
{
    char sa[32], sb[32];
    for (size_t i = 0; i < n; i++)
        CHECK(agree(yn[i], ys[i], op), "%s(%s%s%s): neon %.9g, scalar %.9g", op->name,
              describe(a[i], sa, sizeof sa), b ? ", " : "", b ? describe(b[i], sb, sizeof sb) : "",
              yn[i], ys[i]);
}

/* axpy against its float64 reference: y0 + alpha a, contract of SUM scale. */
static void check_axpy(rayo_context *ctx, const rayo_op_info *op, rayo_call *call, const float *a,
                       const float *y0, float *y)
{
    memcpy(y, y0, call->n * sizeof *y);
    call->y = y;
    CHECK(rayo_run_on(ctx, "neon", call) == RAYO_OK, "axpy on neon: %s", rayo_last_error());
    for (size_t i = 0; i < call->n; i++) {
        double ref = (double)call->alpha * a[i] + y0[i];
        double scale = fabs((double)call->alpha * a[i]) + fabs(y0[i]);
        bool ok = isnan(ref) ? isnan(y[i])
                  : fabs(ref) > FLT_MAX ? y[i] == (ref > 0 ? INFINITY : -INFINITY)
                  : fabs(y[i] - ref) <= op->tol_rel * scale + 2e-45;
        CHECK(ok, "axpy(%.9g, y = %.9g): neon %.9g, float64 reference %.9g", a[i], y0[i], y[i], ref);
    }
}

static void test_elementwise_specials(rayo_context *ctx)
{
    enum { N = N_SPECIAL * N_SPECIAL };
    static float a[N], b[N], yn[N], ys[N];
    for (size_t i = 0; i < N; i++) {
        a[i] = specials[i / N_SPECIAL];
        b[i] = specials[i % N_SPECIAL];
    }
    size_t count;
    count = rayo_op_count();
    for (size_t o = 0; o < count; o++) {
        const rayo_op_info *op = rayo_op_at(o);
        rayo_call call = {.struct_size = sizeof(rayo_call), .op = op->id, .a = a};
        switch (op->sig) {
        case RAYO_SIG_BINARY: call.b = b; call.n = N; break;
        case RAYO_SIG_UNARY: call.n = N_SPECIAL; break;
        case RAYO_SIG_UNARY_P: call.n = N_SPECIAL; call.alpha = 0.25f; break;
        case RAYO_SIG_UNARY_P2: call.n = N_SPECIAL; call.alpha = -1.5f; call.beta = 2.0f; break;
        case RAYO_SIG_AXPY: call.n = N; call.alpha = 1.5f; break;
        default: continue;
        }
        if (op->sig == RAYO_SIG_AXPY) {
            check_axpy(ctx, op, &call, a, b, yn);
            continue;
        }
        run_both(ctx, &call, yn, ys);
        compare_outputs(op, a, call.b, yn, ys, call.n);
    }
}

/* Every special value at several positions of vectors of odd lengths. */
static void test_reduction_specials(rayo_context *ctx)
{
    static const uint32_t reductions[] = {RAYO_OP_SUM, RAYO_OP_MAX, RAYO_OP_MIN, RAYO_OP_NORM_L1,
                                          RAYO_OP_NORM_L2, RAYO_OP_DOT};
    enum { N = 37 };
    float x[N], ones[N];
    for (size_t s = 0; s < N_SPECIAL; s++)
        for (size_t pos = 0; pos < N; pos += 12) {
            for (size_t i = 0; i < N; i++) {
                x[i] = (float)i * 0.25f - 4.0f;
                ones[i] = 1.0f;
            }
            x[pos] = specials[s];
            for (size_t r = 0; r < sizeof reductions / sizeof reductions[0]; r++) {
                const rayo_op_info *op = rayo_op_by_id(reductions[r]);
                float yn, ys;
                rayo_call call = {.struct_size = sizeof(rayo_call), .op = op->id, .n = N, .a = x, .b = ones};
                run_both(ctx, &call, &yn, &ys);
                char sv[32];
                CHECK(agree(yn, ys, op), "%s with %s at %zu: neon %.9g, scalar %.9g", op->name,
                      describe(specials[s], sv, sizeof sv), pos, yn, ys);
            }
            size_t in, is;
            rayo_call call = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ARGMAX, .n = N, .a = x};
            call.y = &in;
            CHECK(rayo_run_on(ctx, "neon", &call) == RAYO_OK, "argmax on neon");
            call.y = &is;
            CHECK(rayo_run_on(ctx, "scalar", &call) == RAYO_OK, "argmax on scalar");
            CHECK(in == is, "argmax with %.9g at %zu: neon %zu, scalar %zu", specials[s], pos, in, is);
        }
}

/* Rows holding one special value each (3 rows of 13: tails of vectors). */
static void test_row_specials(rayo_context *ctx)
{
    static const uint32_t row_ops[] = {RAYO_OP_SOFTMAX, RAYO_OP_LOG_SOFTMAX, RAYO_OP_LAYERNORM,
                                       RAYO_OP_RMSNORM};
    enum { M = 3, N = 13 };
    float x[M * N], yn[M * N], ys[M * N];
    for (size_t s = 0; s < N_SPECIAL; s++) {
        for (size_t i = 0; i < M * N; i++)
            x[i] = (float)(i % N) * 0.5f - 3.0f;
        x[N + 5] = specials[s];
        for (size_t r = 0; r < sizeof row_ops / sizeof row_ops[0]; r++) {
            const rayo_op_info *op = rayo_op_by_id(row_ops[r]);
            rayo_call call = {.struct_size = sizeof(rayo_call), .op = op->id, .m = M, .n = N, .a = x, .alpha = 1e-5f};
            run_both(ctx, &call, yn, ys);
            compare_outputs(op, x, NULL, yn, ys, M * N);
        }
    }
}

/* ---- 4. matmul edges -------------------------------------------------------------------- */
static void check_matmul(rayo_context *ctx, size_t m, size_t n, size_t k, unsigned flags, float beta)
{
    float *A = malloc(m * k * sizeof *A), *B = malloc(k * n * sizeof *B);
    float *C = malloc(m * n * sizeof *C), *C0 = malloc(m * n * sizeof *C0);
    if (!A || !B || !C || !C0) {
        CHECK(0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m * k; i++) A[i] = test_random();
    for (size_t i = 0; i < k * n; i++) B[i] = test_random();
    for (size_t i = 0; i < m * n; i++) C0[i] = C[i] = beta == 0.0f ? NAN : test_random();
    const float alpha = 0.75f;
    rayo_call call = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = m, .n = n, .k = k,
                      .alpha = alpha, .beta = beta, .a = A, .b = B, .y = C};
    CHECK(rayo_run_on(ctx, "neon", &call) == RAYO_OK, "matmul %zux%zux%zu: %s", m, n, k, rayo_last_error());
    size_t bad = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0, mag = 0;
            for (size_t p = 0; p < k; p++) {
                double av = (flags & RAYO_TRANS_A) ? A[p * m + i] : A[i * k + p];
                double bv = (flags & RAYO_TRANS_B) ? B[j * k + p] : B[p * n + j];
                sum += av * bv;
                mag += fabs(av * bv);
            }
            double ref = alpha * sum, scale = fabs(alpha) * mag;
            if (beta != 0.0f) {
                ref += (double)beta * C0[i * n + j];
                scale += fabs((double)beta * C0[i * n + j]);
            }
            if (!(fabs(C[i * n + j] - ref) <= 1e-5 * scale + 1e-30))
                bad++;
        }
    CHECK(bad == 0, "matmul %zux%zux%zu flags %u beta %g: %zu elements off", m, n, k, flags, beta, bad);
out:
    free(A);
    free(B);
    free(C);
    free(C0);
}

static void test_matmul_edges(rayo_context *ctx)
{
    static const size_t shapes[][3] = {
        {2, 2, 1}, {7, 13, 5}, {8, 12, 256}, {9, 25, 257}, {17, 11, 3}, {130, 390, 300},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (unsigned flags = 0; flags < 4; flags++) {
            check_matmul(ctx, shapes[s][0], shapes[s][1], shapes[s][2], flags, 0.0f);
            check_matmul(ctx, shapes[s][0], shapes[s][1], shapes[s][2], flags, 0.5f);
        }
}

int main(void)
{
    test_clear_rayo_env();
    srand(12345);
    test_preferred();
    test_refused();

    rayo_context *ctx;
    if (test_open(&ctx, NULL) != RAYO_OK) {
        CHECK(0, "rayo_open: %s", rayo_last_error());
        return test_summary();
    }
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    if (test_backend(ctx, "neon", &info) == RAYO_OK && info.status == RAYO_BACKEND_LOADED &&
        test_backend(ctx, "scalar", &info) == RAYO_OK && info.status == RAYO_BACKEND_LOADED) {
        test_elementwise_specials(ctx);
        test_reduction_specials(ctx);
        test_row_specials(ctx);
        test_matmul_edges(ctx);
    }
    rayo_close(ctx);
    return test_summary();
}
