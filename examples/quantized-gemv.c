/* SPDX-License-Identifier: MIT */
/* quantized-gemv.c - a matrix-vector product with the weights in Q8_0, the
 * way an inference engine runs a layer of a GGUF model.
 *
 * Quantizes a random f32 weight matrix W (rows x cols) to GGUF's Q8_0 blocks
 * with rayo_convert, computes y = W x with rayo_gemv_ex straight from the
 * blocks, says which backend ran it, and checks y against a double-precision
 * product of the dequantized weights (so the format's own rounding is not
 * counted against the kernel) within gemv's accuracy contract for this
 * dtype combination.
 * Build:  cc quantized-gemv.c $(pkg-config --cflags --libs rayo) -lm */
#include <rayo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { ROWS = 96, COLS = 512 }; /* COLS: whole Q8_0 blocks of 32 */

static float *random_floats(size_t count)
{
    float *v = malloc(count * sizeof *v);
    for (size_t i = 0; v && i < count; i++)
        v[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return v;
}

/* The largest error of y in units of the contract: tol_rel * sum |w x|. */
static double contract_units(const float *wd, const float *x, const float *y, double tol_rel)
{
    double worst = 0;
    for (size_t r = 0; r < ROWS; r++) {
        double sum = 0, scale = 0;
        for (size_t c = 0; c < COLS; c++) {
            sum += (double)wd[r * COLS + c] * x[c];
            scale += fabs((double)wd[r * COLS + c] * x[c]);
        }
        double units = fabs(y[r] - sum) / (tol_rel * scale);
        worst = units > worst ? units : worst;
    }
    return worst;
}

int main(void)
{
    rayo_context *ctx;
    if (rayo_open(&ctx, NULL) != RAYO_OK) {
        fprintf(stderr, "rayo_open: %s\n", rayo_last_error());
        return 1;
    }
    srand((unsigned)time(NULL));
    size_t wq_bytes = 0;
    rayo_dtype_row_bytes(RAYO_DTYPE_Q8_0, (size_t)ROWS * COLS, &wq_bytes);
    float *w = random_floats((size_t)ROWS * COLS), *x = random_floats(COLS);
    float *wd = malloc((size_t)ROWS * COLS * sizeof *wd), *y = malloc(ROWS * sizeof *y);
    void *wq = malloc(wq_bytes);
    if (!w || !x || !wd || !y || !wq) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    int status = 1;
    /* W -> Q8_0 (34 bytes per 32 weights), and back, for the reference. */
    if (rayo_convert(ctx, RAYO_DTYPE_F32, w, RAYO_DTYPE_Q8_0, wq, (size_t)ROWS * COLS) != RAYO_OK ||
        rayo_convert(ctx, RAYO_DTYPE_Q8_0, wq, RAYO_DTYPE_F32, wd, (size_t)ROWS * COLS) != RAYO_OK) {
        fprintf(stderr, "convert: %s\n", rayo_last_error());
        goto done;
    }
    rayo_matrix weights = {wq, RAYO_DTYPE_Q8_0, 0};
    if (rayo_gemv_ex(ctx, 0, ROWS, COLS, 1.0f, weights, x, 0.0f, y, RAYO_PRECISION_STRICT) != RAYO_OK) {
        fprintf(stderr, "gemv: %s\n", rayo_last_error());
        goto done;
    }
    uint32_t dtypes = RAYO_DTYPES(RAYO_DTYPE_Q8_0, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32);
    const rayo_combo_info *combo = rayo_op_combo_find(RAYO_OP_GEMV, dtypes);
    double units = contract_units(wd, x, y, combo->tol_rel);
    printf("y = W x, W %dx%d in Q8_0 (%zu bytes instead of %zu): ran on %s\n", ROWS, COLS, wq_bytes,
           (size_t)ROWS * COLS * sizeof(float), rayo_backend_for(ctx, RAYO_OP_GEMV, dtypes, (size_t)ROWS * COLS));
    printf("largest error: %.3f of the %s contract (%g of sum |w x|)\n", units, combo->name, combo->tol_rel);
    status = units <= 1.0 ? 0 : 1;
    printf("result checked: %s\n", status ? "WRONG" : "ok");
done:
    free(w);
    free(x);
    free(wd);
    free(y);
    free(wq);
    rayo_close(ctx);
    return status;
}
