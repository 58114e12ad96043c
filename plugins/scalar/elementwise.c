/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act: the
 * one-element functions of ../cpu-base/cpu-elementwise_tmpl.c, its "vector"
 * one float wide, its loop SCALAR_MAP (plugin.h), which keeps in-place loops
 * vectorisable.  The transcendental functions are scalar-math.h's.
 *
 * NaN rules (rayo-ops.h): comparisons are written so that a NaN input falls
 * through to a branch that returns NaN: relu, clip, maximum and minimum
 * propagate NaN, unlike fmaxf/fminf.
 */
#include "plugin.h"
#include "scalar-math.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Relative cost of one element, in "cheap operations" (for threading). */
#define ELTWISE_CHEAP 1
#define ELTWISE_MATH 8

/* ---- one-element functions -------------------------------------------------- */
static inline float maximum1(float a, float b)
{
    return (a > b || a != a) ? a : b;
}

static inline float minimum1(float a, float b)
{
    return (a < b || a != a) ? a : b;
}

static inline float relu1(float x)
{
    return x < 0.0f ? 0.0f : x; /* NaN < 0 is false: NaN stays */
}

static inline float clip1(float x, float lo, float hi)
{
    float t = x < lo ? lo : x;
    return t > hi ? hi : t;
}

/* 1 / (1 + e^-x): for x << 0, e^-x overflows to inf and the quotient to 0,
 * the right limit; no cancellation anywhere. */
static inline float sigmoid1(float x)
{
    return 1.0f / (1.0f + exp_f(-x));
}

/* x * tanh(softplus(x)).  With e = e^x, tanh(log(1 + e)) = n / (n + 2) where
 * n = e (e + 2): exact algebra, no log, no cancellation for x << 0.  From
 * x = 20 the factor is 1 in float (and e^2x would overflow). */
static inline float mish1(float x)
{
    float e = exp_f(x);
    float n = e * (e + 2.0f);
    return pick(x >= 20.0f, x, x * (n / (n + 2.0f)));
}

/* x * clip(x + 3, 0, 6) / 6 as x * clamp((x + 3) / 6, 0, 1): three roundings
 * (< 1.8e-7 relative), exact for x >= 3, no overflow, right for subnormal x,
 * and -inf gives NaN (-inf * 0) like the reference. */
static inline float hardswish1(float x)
{
    return x * clamp((x + 3.0f) / 6.0f, 0.0f, 1.0f);
}

/* NaN > 0 is false: alpha * NaN = NaN.  pick (scalar-math.h) computes both
 * arms; a ?: would put the product under a condition, which gcc does not
 * vectorise (it could trap). */
static inline float leaky_relu1(float x, float alpha)
{
    return pick(x > 0.0f, x, alpha * x);
}

static inline float elu1(float x, float alpha)
{
    return pick(x > 0.0f, x, alpha * expm1_f(x));
}

/* scale * x in double: in float, x = 3.23862215e38 would overflow where
 * the result is still a float (FLT_MAX). */
static inline float selu1(float x)
{
    const double scale = 1.0507009873554805;
    const float scale_alpha = 1.7580993408473766f; /* scale * 1.6732632423543772, rounded once */
    return pick(x > 0.0f, (float)(scale * x), scale_alpha * expm1_f(x));
}

/* In double (the product is exact, one rounding of the sum before the last):
 * alpha x alone may overflow a float where alpha x + y does not. */
static inline float axpy1(float alpha, float x, float y)
{
    return (float)((double)alpha * x + y);
}

/* log(1 + e^x) = max(x, 0) + log1p(t), t = e^-|x| in (0, 1]: no overflow.
 * log1p(t) = log(u) t / (u - 1) with u = 1 + t rounded (u - 1 is exact), so
 * t's relative accuracy survives where 1 + t rounds; u = 1 leaves t.  NaN
 * stays NaN through t. */
static inline float softplus1(float x)
{
    float t = exp_f(-fabsf(x)), u = 1.0f + t;
    float l = u == 1.0f ? t : log_f(u) * (t / (u - 1.0f));
    return pick(x > 0.0f, x, 0.0f) + l;
}

/* ---- the "vector" interface of the template: one float ---------------------- */
typedef float vec_t;
#define VEC_LANES 1
#define VEC_UNROLL2 0
#define VEC_FN(name) name##1
#define VEC_MAP SCALAR_MAP
#define vec_splat(f) (f)
#define vec_load(p) (*(p))
#define vec_load_part(p, k) ((void)(k), *(p)) /* never called: VEC_MAP has no tail */

#define add1(u, v) ((u) + (v))
#define sub1(u, v) ((u) - (v))
#define mul1(u, v) ((u) * (v))
#define div1(u, v) ((u) / (v))
#define abs1 fabsf
#define sqrt1 sqrtf
#define tanh1 tanh_f
#define exp_op1 exp_rounded
#define log1 log_f

#include "cpu-elementwise_tmpl.c"
