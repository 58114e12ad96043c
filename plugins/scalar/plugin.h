/* scalar.h - internals of the portable C backend (not installed).
 *
 * The plugin exports only its descriptor; everything declared here is
 * hidden (the plugin is built with -fvisibility=hidden).  Kernels are grouped
 * by op class: elementwise.c, reduce.c, rows.c, matmul.c, gemv.c,
 * transpose.c; scalar-math.h has the vectorisable exp/log/tanh/erfc.  All
 * code is portable C11: loops are written so that compilers vectorise them
 * (checked with gcc -O2 -fopt-info-vec), never with intrinsics.
 */
#ifndef RAYO_SCALAR_H
#define RAYO_SCALAR_H

#include "rayo-plugin.h"

#include <string.h>

/* The plugin state: the core's host services (thread pool, allocator). */
typedef struct scalar_state {
    const rayo_host *host;
} scalar_state;

/* Runs fn(arg, task, worker) for every task in [0, n_tasks): on the core's
 * thread pool when there is more than one task and more than one thread,
 * inline otherwise.  worker < scalar_threads(st). */
typedef void scalar_task_fn(void *arg, size_t task, unsigned worker);
void scalar_parallel(const scalar_state *st, size_t n_tasks, scalar_task_fn *fn, void *arg);
unsigned scalar_threads(const scalar_state *st);

/* y[j] = EXPR for every j in [lo, hi), where EXPR reads index j of inputs
 * that y may be exactly (in-place ops).  The values go through a local block
 * and are then copied to y: the block cannot alias the inputs, so compilers
 * vectorise the loop without the run-time overlap check that gcc -O2 does
 * not emit (nor does it vectorise loops that need a scalar remainder: the
 * block has a constant length).  Reading a block before writing it is
 * right for y == input exactly. */
#define SCALAR_MAP_BLOCK 64
#define SCALAR_MAP(y, lo, hi, j, expr)                                     \
    do {                                                                   \
        float map_out_[SCALAR_MAP_BLOCK];                                  \
        size_t map_at_ = (lo);                                             \
        for (; map_at_ + SCALAR_MAP_BLOCK <= (hi); map_at_ += SCALAR_MAP_BLOCK) { \
            for (size_t map_l_ = 0; map_l_ < SCALAR_MAP_BLOCK; map_l_++) { \
                const size_t j = map_at_ + map_l_;                         \
                map_out_[map_l_] = (expr);                                 \
            }                                                              \
            memcpy((y) + map_at_, map_out_, sizeof map_out_);              \
        }                                                                  \
        for (size_t j = map_at_; j < (hi); j++)                            \
            (y)[j] = (expr);                                               \
    } while (0)

/* Scratch memory from the core's allocator (64-byte aligned); NULL if none. */
float *scalar_alloc_floats(const scalar_state *st, size_t count);
void scalar_free(const scalar_state *st, void *ptr);

/* Work below this many "cheap operations" runs on the calling thread only:
 * waking the pool costs more than it saves. */
#define SCALAR_PARALLEL_MIN_WORK ((size_t)1 << 17)

/* Runs fn(call, lo, hi) over [0, count) items, split into chunks on the
 * pool when count * work_per_item is large enough to pay for it. */
typedef void scalar_range_fn(const rayo_call *call, size_t lo, size_t hi);
void scalar_run_ranges(const scalar_state *st, const rayo_call *call, size_t count,
                       size_t work_per_item, scalar_range_fn *fn);

/* dot(a, b) with blocked summation (float lanes within a block, double
 * across blocks: error near 3e-6 of sum|terms| for any n), and the sum of
 * squares in double (no overflow); from reduce.c, used by gemv and rows. */
double scalar_dot_f64(const float *a, const float *b, size_t n);
double scalar_sum_squares_f64(const float *x, size_t n);
/* max(x[0..n)), NaN if any element is NaN, -inf for n == 0. */
float scalar_max_f32(const float *x, size_t n);

/* ---- kernels (rayo_kernel_fn) -------------------------------------------- */
#define SCALAR_KERNEL(name) rayo_status scalar_##name(void *state, const rayo_call *call)

/* elementwise.c */
SCALAR_KERNEL(add);
SCALAR_KERNEL(sub);
SCALAR_KERNEL(mul);
SCALAR_KERNEL(div);
SCALAR_KERNEL(maximum);
SCALAR_KERNEL(minimum);
SCALAR_KERNEL(scale);
SCALAR_KERNEL(axpy);
SCALAR_KERNEL(relu);
SCALAR_KERNEL(leaky_relu);
SCALAR_KERNEL(elu);
SCALAR_KERNEL(selu);
SCALAR_KERNEL(sigmoid);
SCALAR_KERNEL(tanh);
SCALAR_KERNEL(gelu);
SCALAR_KERNEL(gelu_tanh);
SCALAR_KERNEL(silu);
SCALAR_KERNEL(mish);
SCALAR_KERNEL(hardswish);
SCALAR_KERNEL(clip);
SCALAR_KERNEL(exp);
SCALAR_KERNEL(log);
SCALAR_KERNEL(sqrt);
SCALAR_KERNEL(abs);
SCALAR_KERNEL(bias_act);

/* reduce.c */
SCALAR_KERNEL(sum);
SCALAR_KERNEL(dot);
SCALAR_KERNEL(max);
SCALAR_KERNEL(min);
SCALAR_KERNEL(argmax);
SCALAR_KERNEL(norm_l1);
SCALAR_KERNEL(norm_l2);

/* rows.c */
SCALAR_KERNEL(softmax);
SCALAR_KERNEL(log_softmax);
SCALAR_KERNEL(layernorm);
SCALAR_KERNEL(rmsnorm);

/* matmul.c, gemv.c, transpose.c */
SCALAR_KERNEL(matmul);
SCALAR_KERNEL(gemv);
SCALAR_KERNEL(transpose);

/* y = alpha op(A) x + beta y for a row-major rows x cols A; also matmul's
 * path for m == 1 or n == 1.  y has (trans ? cols : rows) elements. */
rayo_status scalar_gemv_run(const scalar_state *st, int trans, size_t rows, size_t cols,
                            float alpha, const float *A, const float *x, float beta, float *y);

#endif
