/* SPDX-License-Identifier: MIT */
/* gemv.c - y = alpha op(A) x + beta y, A row-major rows x cols, SIMD128.
 *
 *   no transpose: y[i] = dot(A row i, x), four rows at a time so that every
 *                 vector of x loaded serves four rows; float lanes per block
 *                 of 512 columns, double across blocks (as reduce.c).
 *   transpose:    y[j] = sum_i A[i][j] x[i]: rows are added into JB column
 *                 accumulators (A read in order), RB rows at a time in float,
 *                 then into double, to keep tall matrices near 1e-6.
 * A sum past FLT_MAX (products near 1e38 that cancel) is redone in double
 * (cpu-f64-fallback.h).
 * beta == 0 never reads y.  Rows (or column blocks) are split over the pool
 * by the shared driver, cpu-base/cpu-gemm.c.
 */
#include "plugin.h"

#define BLOCK 512
#define JB 256
#define RB 64

static double hsum(vf32 v)
{
    return ((double)wasm_f32x4_extract_lane(v, 0) + (double)wasm_f32x4_extract_lane(v, 1)) +
           ((double)wasm_f32x4_extract_lane(v, 2) + (double)wasm_f32x4_extract_lane(v, 3));
}

/* dot of four rows (r[0..3], each cols long) with x, into out[0..3] */
static void dot4(const float *const r[4], const float *x, size_t cols, double out[4])
{
    out[0] = out[1] = out[2] = out[3] = 0.0;
    for (size_t j0 = 0; j0 < cols; j0 += BLOCK) {
        size_t end = cols - j0 < BLOCK ? cols : j0 + BLOCK;
        vf32 s0 = vsplat(0.0f), s1 = s0, s2 = s0, s3 = s0;
        size_t j = j0;
        for (; j + 4 <= end; j += 4) {
            vf32 xv = wasm_v128_load(x + j);
            s0 = vadd(s0, vmul(wasm_v128_load(r[0] + j), xv));
            s1 = vadd(s1, vmul(wasm_v128_load(r[1] + j), xv));
            s2 = vadd(s2, vmul(wasm_v128_load(r[2] + j), xv));
            s3 = vadd(s3, vmul(wasm_v128_load(r[3] + j), xv));
        }
        out[0] += hsum(s0);
        out[1] += hsum(s1);
        out[2] += hsum(s2);
        out[3] += hsum(s3);
        for (; j < end; j++)
            for (int l = 0; l < 4; l++)
                out[l] += (double)(r[l][j] * x[j]);
    }
}

/* y[lo..hi) of the product without transpose */
static void gemv_rows(const cpu_gemv_job *job, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        const float *r[4] = {job->A + i * job->lda, job->A + (i + 1) * job->lda,
                             job->A + (i + 2) * job->lda, job->A + (i + 3) * job->lda};
        double d[4];
        dot4(r, job->x, job->cols, d);
        for (int l = 0; l < 4; l++)
            job->y[i + l] = cpu_gemv_finish(cpu_dot_redo(d[l], r[l], 1, job->x, job->cols), job->alpha,
                                            job->beta, &job->y[i + l]);
    }
    for (; i < hi; i++)
        job->y[i] = cpu_gemv_finish(cpu_dot_redo(wasm_dot_f64(job->A + i * job->lda, job->x, job->cols),
                                                 job->A + i * job->lda, 1, job->x, job->cols),
                                    job->alpha, job->beta, &job->y[i]);
}

/* Columns [j0, j0 + jb) of the transposed product. */
static void gemv_columns(const cpu_gemv_job *job, size_t j0, size_t jb)
{
    double total[JB];
    vf32 part[JB / 4];
    size_t nv = (jb + 3) / 4;
    for (size_t j = 0; j < jb; j++)
        total[j] = 0.0;
    for (size_t i0 = 0; i0 < job->rows; i0 += RB) {
        size_t i1 = i0 + RB < job->rows ? i0 + RB : job->rows;
        for (size_t v = 0; v < nv; v++)
            part[v] = vsplat(0.0f);
        for (size_t i = i0; i < i1; i++) {
            const vf32 xi = vsplat(job->x[i]);
            const float *row = job->A + i * job->lda + j0;
            size_t v = 0;
            for (; 4 * v + 4 <= jb; v++)
                part[v] = vadd(part[v], vmul(xi, wasm_v128_load(row + 4 * v)));
            if (4 * v < jb)
                part[v] = vadd(part[v], vmul(xi, load_partial(row + 4 * v, jb - 4 * v)));
        }
        float lanes[JB] __attribute__((aligned(16)));
        for (size_t v = 0; v < nv; v++)
            wasm_v128_store(lanes + 4 * v, part[v]);
        for (size_t j = 0; j < jb; j++)
            total[j] += lanes[j];
    }
    cpu_gemv_store_columns(job, j0, jb, total);
}

const cpu_gemv_kernel wasm_gemv_kernels = { JB, gemv_rows, gemv_columns };

WASM_KERNEL(gemv)
{
    return cpu_gemv_call_dense(state, &wasm_gemv_kernels, call); /* row strides: not yet */
}
