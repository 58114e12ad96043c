/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act: the
 * NEON vector primitives of ../cpu-base/cpu-elementwise_tmpl.c, four lanes,
 * the functions of neon-math.h.  The last 1-3 elements go through the same
 * function via a small stack buffer: one code path, hence the same NaN/Inf
 * behaviour for every element.
 */
#include "plugin.h"
#include "neon-math.h"

#include <stdint.h>

/* Relative cost of one element, in "cheap operations" (for threading). */
#define ELTWISE_CHEAP 1
#define ELTWISE_MATH 16

/* ---- the vector interface of the template --------------------------------- */
typedef float32x4_t vec_t;
#define VEC_LANES 4
#define VEC_UNROLL2 0
#define VEC_FN(name) vec_##name
#define vec_load vld1q_f32
#define vec_store vst1q_f32
#define vec_load_part load_partial
#define vec_store_part store_partial

#define vec_add vaddq_f32
#define vec_sub vsubq_f32
#define vec_mul vmulq_f32
#define vec_div vdivq_f32
#define vec_abs vabsq_f32
#define vec_sqrt vsqrtq_f32
#define vec_exp_op vec_exp
/* alpha * x + y with one rounding (FMA). */
#define vec_axpy(alpha, x, y) vfmaq_f32(y, alpha, x)

#include "cpu-elementwise_tmpl.c"
