/* SPDX-License-Identifier: MIT */
/* simd128-int-gemv_tmpl.c - the relaxed Q8_0 and Q4_0 gemv of the 128-bit
 * SIMD plugins (neon with SDOT, wasm with i32x4.dot_i16x8_s), included by
 * their quant.c after cpu-typed-gemv_tmpl.c: x rounded once to int8 or
 * int16 per 32 values (largest |x| / 127 or / 32767, the rounding and the
 * budget of the x86 plugins' relaxed path), then the plugin's row kernel
 * over the rows split on the pool.  Where x cannot be rounded within the
 * budget, the call goes on to the float kernels (strict's, which keep the
 * relaxed contract too). */
#ifndef RAYO_SIMD128_INT_GEMV_TMPL_C
#define RAYO_SIMD128_INT_GEMV_TMPL_C

/* Whether the call is a relaxed Q8_0 or Q4_0 gemv the typed kernels take. */
static inline int simd128_int_gemv_takes(const rayo_call *call)
{
    rayo_dtype dt = RAYO_DTYPE_OF(call->dtypes, 0);
    return call->precision == RAYO_PRECISION_RELAXED && (dt == RAYO_DTYPE_Q8_0 || dt == RAYO_DTYPE_Q4_0) &&
           typed_gemv_takes(call) && call->m > 0;
}

/* Runs the call with `rows` against x in int8 (x8 1: q8_32, scale8_32) or
 * int16 (q16, scale16); 0 when it did not run (no memory, or x fails the
 * rounding budget). */
static inline int simd128_int_gemv(const cpu_state *st, const rayo_call *call, typed_rows_fn *rows, int x8)
{
    size_t n = call->n, q_floats = x8 ? n / 4 : n / 2;
    float *scratch = cpu_alloc_floats(st, q_floats + n / 32);
    if (!scratch)
        return 0;
    int8_t *q8 = x8 ? (int8_t *)(void *)scratch : NULL;
    int16_t *q16 = x8 ? NULL : (int16_t *)(void *)scratch;
    float *scale = scratch + q_floats;
    rounding_error err = { 0.0, 0.0, 0.0, 0.0 };
    int ok = typed_gemv_round_x32(call->b, n, q8, q16, scale, &err) && rounding_within_budget(&err);
    if (ok) {
        typed_gemv_job job = { .call = call, .count = 1, .rows = { rows }, .x = { { .f = call->b } },
                               .y = { call->y }, .stride = typed_gemv_row_bytes(call) };
        job.x[0].q8_32 = q8, job.x[0].q16 = q16;
        job.x[0].scale8_32 = x8 ? scale : NULL, job.x[0].scale16 = x8 ? NULL : scale;
        typed_gemv_split(st, &job);
    }
    cpu_free(st, scratch);
    return ok;
}

/* Defines NAME, the row kernel (typed_rows_fn) of Q8_0 or Q4_0 blocks of
 * BYTES bytes from the plugin's always-inline DOTS(blk, stride, R, x,
 * blocks, BYTES, BLOCK_DOT, out), the dots of R rows: four rows in one
 * pass, fewer one by one. */
#define SIMD128_INT_ROWS(NAME, DOTS, BLOCK_DOT, BYTES)                                                 \
    static void NAME(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n, \
                     double out[4])                                                                   \
    {                                                                                                 \
        if (count == 4) {                                                                             \
            DOTS(row, stride, 4, x, n / 32, (BYTES), BLOCK_DOT, out);                                 \
            return;                                                                                   \
        }                                                                                             \
        for (size_t r = 0; r < count; r++)                                                            \
            DOTS(row + r * stride, stride, 1, x, n / 32, (BYTES), BLOCK_DOT, out + r);                \
    }

#endif
