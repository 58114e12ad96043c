/* neon.h - internals of the AArch64 Advanced SIMD backend (not installed).
 *
 * The plugin exports only its descriptor (rayo_plugin); everything declared
 * here is hidden (the plugin is built with -fvisibility=hidden).  Kernels are
 * grouped by op class: neon-elementwise.c, neon-reduce.c, neon-rows.c,
 * neon-matrix.c (gemv, transpose) and neon-gemm.c (matmul).
 * Vector math shared by several files lives in neon-math.h.
 */
#ifndef RAYO_NEON_H
#define RAYO_NEON_H

#include "rayo-plugin.h"

/* The plugin state: the core's host services (thread pool, allocator). */
typedef struct neon_state {
    const rayo_host *host;
} neon_state;

/* Threads the core's pool offers (1 when it has none). */
unsigned neon_threads(const neon_state *st);

/* Runs fn(arg, task, worker) for task in [0, n_tasks): on the core's pool
 * when there is more than one task and more than one thread, inline
 * otherwise.  worker < neon_threads(st). */
typedef void neon_task_fn(void *arg, size_t task, unsigned worker);
void neon_parallel(const neon_state *st, size_t n_tasks, neon_task_fn *fn, void *arg);

/* Work below this many "cheap operations" stays on the calling thread:
 * waking the pool would cost more than it saves. */
#define NEON_PARALLEL_MIN_WORK ((size_t)1 << 17)

/* Runs fn(call, lo, hi) over [0, count) items, in chunks on the pool when
 * count * cost_per_item is large enough to pay for it.  Chunk bounds are
 * multiples of 16 items, so vector loops see aligned-in-count chunks. */
typedef void neon_range_fn(const rayo_call *call, size_t lo, size_t hi);
void neon_run_ranges(const neon_state *st, const rayo_call *call, size_t count,
                     size_t cost_per_item, neon_range_fn *fn);

/* Blocked sums (float lanes inside a block, double across blocks), so the
 * error stays near 1e-6 * sum|terms| for any n.  Used by the reductions,
 * gemv and the row ops. */
double neon_sum_f64(const float *x, size_t n);
double neon_dot_f64(const float *a, const float *b, size_t n);
double neon_sum_abs_f64(const float *x, size_t n);
/* Sum of x^2 in double lanes (no overflow for any float). */
double neon_sum_squares_f64(const float *x, size_t n);
/* Maximum of x[0..n), n >= 1; NaN if any element is NaN. */
float neon_max_f32(const float *x, size_t n);

/* ---- kernels (rayo_kernel_fn) -------------------------------------------- */
#define NEON_KERNEL(name) rayo_status neon_##name(void *state, const rayo_call *call)

/* neon-elementwise.c */
NEON_KERNEL(add);
NEON_KERNEL(sub);
NEON_KERNEL(mul);
NEON_KERNEL(div);
NEON_KERNEL(maximum);
NEON_KERNEL(minimum);
NEON_KERNEL(scale);
NEON_KERNEL(axpy);
NEON_KERNEL(relu);
NEON_KERNEL(leaky_relu);
NEON_KERNEL(elu);
NEON_KERNEL(selu);
NEON_KERNEL(sigmoid);
NEON_KERNEL(tanh);
NEON_KERNEL(gelu);
NEON_KERNEL(gelu_tanh);
NEON_KERNEL(silu);
NEON_KERNEL(mish);
NEON_KERNEL(hardswish);
NEON_KERNEL(clip);
NEON_KERNEL(exp);
NEON_KERNEL(log);
NEON_KERNEL(sqrt);
NEON_KERNEL(abs);
NEON_KERNEL(bias_act);

/* neon-reduce.c */
NEON_KERNEL(sum);
NEON_KERNEL(dot);
NEON_KERNEL(max);
NEON_KERNEL(min);
NEON_KERNEL(argmax);
NEON_KERNEL(norm_l1);
NEON_KERNEL(norm_l2);

/* neon-rows.c */
NEON_KERNEL(softmax);
NEON_KERNEL(log_softmax);
NEON_KERNEL(layernorm);
NEON_KERNEL(rmsnorm);

/* neon-matrix.c */
NEON_KERNEL(gemv);
NEON_KERNEL(transpose);

/* neon-gemm.c */
NEON_KERNEL(matmul);

/* gemv on explicit arguments (also used by matmul when m == 1 or n == 1).
 * op(A) is rows x cols when !trans, cols x rows when trans; y has
 * (trans ? cols : rows) elements. */
rayo_status neon_gemv_run(const neon_state *st, int trans, size_t rows, size_t cols,
                          float alpha, const float *A, const float *x, float beta, float *y);

#endif
