/* wasm.h - internals of the WebAssembly SIMD128 backend (not installed).
 *
 * The plugin is an Emscripten side module (rayo-wasm.so) built with
 * -msimd128: the core, built without SIMD, loads it only after its probe
 * found that the engine validates SIMD128 code.  It exports only its
 * descriptor (-fvisibility=hidden); kernels are grouped like the scalar
 * backend's: elementwise.c, reduce.c, rows.c, matmul.c, gemv.c, transpose.c.
 * Every kernel works on 4-float vectors (vmath.h for the transcendental
 * functions); tails shorter than a vector go through the same vector code
 * on a zero-padded copy, so every element sees the same arithmetic.
 */
#ifndef RAYO_WASM_H
#define RAYO_WASM_H

#include "rayo-plugin.h"
#include "math.h"

typedef struct wasm_state {
    const rayo_host *host;
} wasm_state;

/* ---- running work (wasm-plugin.c) -------------------------------------------
 * Runs fn(call, lo, hi) over [0, count) items: split over the core's thread
 * pool when there is more than one thread and count * work_per_item is
 * large enough to pay for it (browsers and node run rayo with one thread
 * unless it is built with pthreads), inline otherwise. */
typedef void wasm_range_fn(const rayo_call *call, size_t lo, size_t hi);
void wasm_run_ranges(const wasm_state *st, const rayo_call *call, size_t count,
                     size_t work_per_item, wasm_range_fn *fn);

/* Runs fn(arg, task, worker) for task in [0, n_tasks) on the pool (or inline). */
typedef void wasm_task_fn(void *arg, size_t task, unsigned worker);
void wasm_parallel(const wasm_state *st, size_t n_tasks, wasm_task_fn *fn, void *arg);
unsigned wasm_threads(const wasm_state *st);

/* 64-byte aligned scratch from the core's allocator; NULL on failure. */
float *wasm_alloc_floats(const wasm_state *st, size_t count);
void wasm_free(const wasm_state *st, void *ptr);

/* Work below this many "cheap operations" stays on the calling thread. */
#define WASM_PARALLEL_MIN_WORK ((size_t)1 << 17)

/* ---- vector helpers shared by the kernels (reduce.c) -------------------------- */
/* Sums in float lanes within blocks and in double across blocks: about
 * 3e-6 of sum|terms| at any n (see reduce.c). */
double wasm_sum_f64(const float *x, size_t n);
double wasm_dot_f64(const float *a, const float *b, size_t n);
double wasm_sum_squares_f64(const float *x, size_t n);
/* max(x[0..n)): NaN if any element is NaN, -inf for n == 0. */
float wasm_max_f32(const float *x, size_t n);

/* n < 4 floats into a zero-padded vector, and back */
static inline vf32 load_partial(const float *x, size_t n)
{
    float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t i = 0; i < n; i++)
        buf[i] = x[i];
    return wasm_v128_load(buf);
}

static inline void store_partial(float *y, vf32 v, size_t n)
{
    float buf[4];
    wasm_v128_store(buf, v);
    for (size_t i = 0; i < n; i++)
        y[i] = buf[i];
}

/* ---- kernels (rayo_kernel_fn) ------------------------------------------------ */
#define WASM_KERNEL(name) rayo_status wasm_##name(void *state, const rayo_call *call)

/* elementwise.c */
WASM_KERNEL(add);
WASM_KERNEL(sub);
WASM_KERNEL(mul);
WASM_KERNEL(div);
WASM_KERNEL(maximum);
WASM_KERNEL(minimum);
WASM_KERNEL(scale);
WASM_KERNEL(axpy);
WASM_KERNEL(relu);
WASM_KERNEL(leaky_relu);
WASM_KERNEL(elu);
WASM_KERNEL(selu);
WASM_KERNEL(sigmoid);
WASM_KERNEL(tanh);
WASM_KERNEL(gelu);
WASM_KERNEL(gelu_tanh);
WASM_KERNEL(silu);
WASM_KERNEL(mish);
WASM_KERNEL(hardswish);
WASM_KERNEL(clip);
WASM_KERNEL(exp);
WASM_KERNEL(log);
WASM_KERNEL(sqrt);
WASM_KERNEL(abs);
WASM_KERNEL(bias_act);

/* reduce.c */
WASM_KERNEL(sum);
WASM_KERNEL(dot);
WASM_KERNEL(max);
WASM_KERNEL(min);
WASM_KERNEL(argmax);
WASM_KERNEL(norm_l1);
WASM_KERNEL(norm_l2);

/* rows.c */
WASM_KERNEL(softmax);
WASM_KERNEL(log_softmax);
WASM_KERNEL(layernorm);
WASM_KERNEL(rmsnorm);

/* matmul.c, gemv.c, transpose.c */
WASM_KERNEL(matmul);
WASM_KERNEL(gemv);
WASM_KERNEL(transpose);

/* y = alpha op(A) x + beta y for A rows x cols; y has (trans ? cols : rows)
 * elements.  Used by gemv and by matmul for m == 1 or n == 1. */
rayo_status wasm_gemv_run(const wasm_state *st, int trans, size_t rows, size_t cols,
                          float alpha, const float *A, const float *x, float beta, float *y);

#endif
