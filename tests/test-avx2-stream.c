/* SPDX-License-Identifier: MIT */
/* test-avx2-stream.c - the avx2 elementwise ops with non-temporal stores.
 *
 * Outputs larger than the last-level cache (32 MiB here) are written with
 * streaming stores, after an aligned head; rayo-conform's vectors stop at
 * 2^20 floats, so it never gets there.  This test lowers the threshold
 * ([backend.avx2] stream_min_bytes = 256) and runs the conformance engine's
 * whole plan (sizes 0 to 2^20, unaligned pointers, in-place calls, guard
 * zones, NaN/Inf edge values) for every op with a vector output, with 1 and
 * 2 threads.  Skips (77) where the avx2 backend does not load.
 */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include "conform.h"

static void check_all(rayo_context *ctx, const char *label, uint64_t seed)
{
    size_t count;
    count = rayo_op_count();
    conform_backend be = { ctx, "avx2" };
    for (size_t i = 0; i < count; i++) {
        rayo_op_sig  sig = rayo_op_at(i)->sig;
        if (sig != RAYO_SIG_BINARY && sig != RAYO_SIG_UNARY && sig != RAYO_SIG_UNARY_P &&
            sig != RAYO_SIG_UNARY_P2)
            continue; /* the ops that write a vector with the streaming loop */
        conform_options opts = { .seed = seed, .quick = 0, .run = conform_run_backend, .run_user = &be };
        conform_result r;
        int failed = conform_check_op(&opts, rayo_op_at(i), &r);
        CHECK(!failed && r.implemented, "%s, %s: %zu of %zu cases fail (seed %llu): %s", label, rayo_op_at(i)->name,
              r.failed, r.cases, (unsigned long long)seed, r.reported ? r.reports[0] : "not implemented");
    }
}

int main(void)
{
    test_clear_rayo_env();
    uint64_t seed = conform_default_seed();
    static const char *const configs[][2] = {
        { "streaming stores, 1 thread", "[rayo]\nthreads = 1\n[backend.avx2]\nstream_min_bytes = 256\n" },
        { "streaming stores, 2 threads", "[rayo]\nthreads = 2\n[backend.avx2]\nstream_min_bytes = 256\n" },
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        rayo_context *ctx;
        if (test_open(&ctx, configs[i][1]) != RAYO_OK) {
            printf("FAIL: rayo_open: %s\n", rayo_last_error());
            return 1;
        }
        rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
        if (test_backend(ctx, "avx2", &info) != RAYO_OK || info.status != RAYO_BACKEND_LOADED) {
            printf("SKIP: avx2 backend not loaded: %s\n", info.reason ? info.reason : "not built");
            rayo_close(ctx);
            return 77;
        }
        check_all(ctx, configs[i][0], seed);
        rayo_close(ctx);
    }
    return test_summary();
}
