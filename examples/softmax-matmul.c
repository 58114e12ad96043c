/* SPDX-License-Identifier: MIT */
/* softmax-matmul.c - a first rayo program: the softmax of a matrix product.
 *
 * Computes P = softmax(A B) row by row on random data, says which backend
 * ran each op, and checks P against a plain double-precision computation.
 * Build:  cc softmax-matmul.c $(pkg-config --cflags --libs rayo) -lm */
#include <rayo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { M = 64, K = 256, N = 100 };

static float *random_matrix(size_t count)
{
    float *m = malloc(count * sizeof *m);
    for (size_t i = 0; m && i < count; i++)
        m[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return m;
}

/* Largest difference between P and softmax(A B) done in double precision. */
static double check(const float *A, const float *B, const float *P)
{
    double worst = 0, row[N];
    for (int i = 0; i < M; i++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < N; j++) {
            row[j] = 0;
            for (int k = 0; k < K; k++)
                row[j] += (double)A[i * K + k] * B[k * N + j];
            if (row[j] > mx)
                mx = row[j];
        }
        for (int j = 0; j < N; j++)
            sum += row[j] = exp(row[j] - mx);
        for (int j = 0; j < N; j++) {
            double diff = fabs(row[j] / sum - P[i * N + j]);
            if (diff > worst) /* not fmax: gcc 12's aarch64 vectoriser crashes on it */
                worst = diff;
        }
    }
    return worst;
}

static int fail(const char *what, rayo_status st)
{
    fprintf(stderr, "%s failed: %s: %s\n", what, rayo_strerror(st), rayo_last_error());
    return 1;
}

int main(void)
{
    srand((unsigned)time(NULL));
    float *A = random_matrix(M * K), *B = random_matrix(K * N), *C = random_matrix(M * N), *P = random_matrix(M * N);
    if (!A || !B || !C || !P)
        return fail("allocation", RAYO_E_NOMEM);

    rayo_context *ctx;
    rayo_status st = rayo_open(&ctx, NULL);
    if (st != RAYO_OK)
        return fail("rayo_open", st);

    st = rayo_matmul(ctx, 0, M, N, K, 1.0f, A, B, 0.0f, C);
    if (st != RAYO_OK)
        return fail("matmul", st);
    st = rayo_softmax(ctx, C, P, M, N);
    if (st != RAYO_OK)
        return fail("softmax", st);

    printf("C = A B      (%dx%d times %dx%d) ran on %s\n", M, K, K, N,
           rayo_backend_for(ctx, RAYO_OP_MATMUL, 0, (size_t)M * N * K));
    printf("P = softmax(C), row by row        ran on %s\n", rayo_backend_for(ctx, RAYO_OP_SOFTMAX, 0, (size_t)M * N));
    double err = check(A, B, P);
    printf("largest difference from a double-precision computation: %.2e\n", err);
    rayo_close(ctx);
    free(A); free(B); free(C); free(P);
    if (!(err < 1e-5)) {
        fprintf(stderr, "FAILED: the result is off by more than 1e-5\n");
        return 1;
    }
    printf("result checked: ok\n");
    return 0;
}
