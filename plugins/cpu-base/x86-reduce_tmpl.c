/* SPDX-License-Identifier: MIT */
/* x86-reduce_tmpl.c - the reductions of the avx2 and avx512 backends (sum,
 * dot, norm_l1, norm_l2, max, min, argmax), written once over the vector
 * interface of avx2-vector.h / avx512-vector.h (VF, VD, VM and their
 * operations).  A plugin's reduce.c includes that header, defines its
 * CPU_KERNEL(sum_squares_f64) (the sum of squares in double), then includes
 * this file, which includes cpu-reduce_tmpl.c for the calls and the pool.
 *
 * Accuracy (contract: 1e-5 relative to sum|terms| at any n): sums run in
 * blocks of X86_REDUCE_BLOCK elements with 4 vectors of float accumulators
 * (BLOCK / (4 VF_LANES) terms per lane), and each block's lanes are added in
 * double, so the error stays near (BLOCK / (4 VF_LANES) + VF_LANES) * 2^-24
 * relative whatever n.  A block whose float lanes overflowed or met inf/NaN
 * is added again in double, term by term (cpu_reduce_f64): partial sums
 * past FLT_MAX (FLT_MAX + FLT_MAX - FLT_MAX) then cannot make a finite
 * result inf; inf and NaN inputs give the same answer in double.  norm_l2
 * sums the squares in double: |x| < FLT_MAX squared cannot overflow there.
 *
 * Large vectors are split over the thread pool in a fixed number of chunks
 * that depends on n only, and the partial sums are added in chunk order: the
 * result does not depend on the number of threads.
 *
 * NaN: max/min return NaN when any element is NaN (the scalar backend's
 * NAN); argmax returns the index of the first NaN if any.
 */

#include <math.h>

#ifndef VF_LANES
#error "include avx2-vector.h or avx512-vector.h before x86-reduce_tmpl.c"
#endif

#define X86_REDUCE_BLOCK 1024

/* The kind of cpu_reduction is a constant wherever these are inlined, so
 * each kind gets its own loop (no switch per vector). */
#define X86_ALWAYS_INLINE inline __attribute__((always_inline))

static X86_ALWAYS_INLINE VF term_acc(cpu_reduction kind, VF acc, VF a, VF b)
{
    switch (kind) {
    case CPU_RED_SUM: return vf_add(acc, a);
    case CPU_RED_ABS: return vf_add(acc, vf_abs(a));
    default: return vf_fma(a, b, acc);
    }
}

/* One block (n <= X86_REDUCE_BLOCK) in float lanes. */
static X86_ALWAYS_INLINE VF block_reduce(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    VF acc0 = vf_zero(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    const float *bb = kind == CPU_RED_DOT ? b : a;
    size_t i = 0;
    for (; i + 4 * VF_LANES <= n; i += 4 * VF_LANES) {
        acc0 = term_acc(kind, acc0, vf_load(a + i), vf_load(bb + i));
        acc1 = term_acc(kind, acc1, vf_load(a + i + VF_LANES), vf_load(bb + i + VF_LANES));
        acc2 = term_acc(kind, acc2, vf_load(a + i + 2 * VF_LANES), vf_load(bb + i + 2 * VF_LANES));
        acc3 = term_acc(kind, acc3, vf_load(a + i + 3 * VF_LANES), vf_load(bb + i + 3 * VF_LANES));
    }
    for (; i + VF_LANES <= n; i += VF_LANES)
        acc0 = term_acc(kind, acc0, vf_load(a + i), vf_load(bb + i));
    if (i < n)
        acc1 = term_acc(kind, acc1, vf_load_n(a + i, n - i), vf_load_n(bb + i, n - i));
    return vf_add(vf_add(acc0, acc1), vf_add(acc2, acc3));
}

/* total + the block's sum; the fast path costs one test per block. */
static X86_ALWAYS_INLINE VD add_block(cpu_reduction kind, VD total, const float *a, const float *b, size_t n)
{
    VF lanes = block_reduce(kind, a, b, n);
    if (__builtin_expect(vf_all_finite(lanes), 1))
        return vd_widen_add(total, lanes);
    return vd_add(total, vd_first(cpu_reduce_f64(kind, a, b, n)));
}

static X86_ALWAYS_INLINE double reduce_blocks(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    VD total0 = vd_zero(), total1 = total0;
    size_t i = 0;
    for (; i + 2 * X86_REDUCE_BLOCK <= n; i += 2 * X86_REDUCE_BLOCK) {
        total0 = add_block(kind, total0, a + i, b + i, X86_REDUCE_BLOCK);
        total1 = add_block(kind, total1, a + i + X86_REDUCE_BLOCK, b + i + X86_REDUCE_BLOCK, X86_REDUCE_BLOCK);
    }
    for (; i < n; i += X86_REDUCE_BLOCK)
        total0 = add_block(kind, total0, a + i, b + i, n - i < X86_REDUCE_BLOCK ? n - i : X86_REDUCE_BLOCK);
    return vd_hsum(vd_add(total0, total1));
}

/* One block (the common small call) skips the loop over blocks; b is a for
 * the reductions of one vector (their loads of b are a's, never used). */
static X86_ALWAYS_INLINE double reduce_one(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    if (n <= X86_REDUCE_BLOCK)
        return vd_hsum(add_block(kind, vd_zero(), a, b, n));
    return reduce_blocks(kind, a, b, n);
}

static double reduce_serial(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    switch (kind) {
    case CPU_RED_SUM: return reduce_one(CPU_RED_SUM, a, a, n);
    case CPU_RED_ABS: return reduce_one(CPU_RED_ABS, a, a, n);
    case CPU_RED_DOT: return reduce_one(CPU_RED_DOT, a, b, n);
    default: return CPU_KERNEL(sum_squares_f64)(a, n);
    }
}

/* ---- max, min ---------------------------------------------------------------
 * maxps(m, v) returns v when either is NaN: a NaN would enter m and leave it
 * again at the next step.  A separate "saw NaN" mask decides instead. */
#define X86_EXTREME_STEP(m, v)                                                  \
    do {                                                                        \
        VF v_ = (v);                                                            \
        m = want_max ? vf_max(m, v_) : vf_min(m, v_);                           \
        nan = vm_or(nan, vm_nan(v_));                                           \
    } while (0)

static X86_ALWAYS_INLINE float reduce_extreme(const float *x, size_t n, int want_max)
{
    const VF start = vf_set(want_max ? -INFINITY : INFINITY);
    VF m0 = start, m1 = start, m2 = start, m3 = start;
    VM nan = vm_none();
    size_t i = 0;
    for (; i + 4 * VF_LANES <= n; i += 4 * VF_LANES) {
        X86_EXTREME_STEP(m0, vf_load(x + i));
        X86_EXTREME_STEP(m1, vf_load(x + i + VF_LANES));
        X86_EXTREME_STEP(m2, vf_load(x + i + 2 * VF_LANES));
        X86_EXTREME_STEP(m3, vf_load(x + i + 3 * VF_LANES));
    }
    for (; i + VF_LANES <= n; i += VF_LANES)
        X86_EXTREME_STEP(m0, vf_load(x + i));
    if (i < n) /* unused lanes read as the start value, which changes nothing */
        X86_EXTREME_STEP(m1, vf_load_n_or(x + i, n - i, start));
    if (vm_any(nan))
        return NAN;
    return want_max ? vf_hmax(vf_max(vf_max(m0, m1), vf_max(m2, m3)))
                    : vf_hmin(vf_min(vf_min(m0, m1), vf_min(m2, m3)));
}
#undef X86_EXTREME_STEP

/* Index of the first element equal to value (value NaN: the first NaN);
 * the caller knows there is one. */
static size_t reduce_find_first(const float *x, size_t n, float value)
{
    int want_nan = value != value;
    const VF v = vf_set(value);
    size_t i = 0;
    for (; i + VF_LANES <= n; i += VF_LANES) {
        VF xv = vf_load(x + i);
        unsigned bits = want_nan ? vf_nan_bits(xv) : vf_eq_bits(xv, v);
        if (bits)
            return i + (size_t)__builtin_ctz(bits);
    }
    for (; i < n; i++)
        if (want_nan ? x[i] != x[i] : x[i] == value)
            return i;
    return n - 1; /* not reached */
}

#define REDUCE_SPLIT CPU_SPLIT_BY_SIZE
#define REDUCE_BLOCK X86_REDUCE_BLOCK
#include "cpu-reduce_tmpl.c"
