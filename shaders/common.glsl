/* SPDX-License-Identifier: MIT */
// common.glsl - what every rayo compute shader shares: the storage buffers
// of an op (a, b, c, y, and s: the scratch of an op done in several passes)
// (d, e and f: more operands of the fused shaders that define
// RAYO_MORE_BINDINGS; the host binds them where the device allows eight
// storage buffers) and the push constants that carry sizes, parameters and element offsets.
//
// The host binds each operand at the nearest offset the device allows
// (minStorageBufferOffsetAlignment) and passes the rest, in elements, in
// pc.oa..pc.oy, so an operand may start at any multiple of 4 bytes.

#ifndef RAYO_COMMON_GLSL
#define RAYO_COMMON_GLSL

#ifdef RAYO_VEC4
#define ELEM vec4
#else
#define ELEM float
#endif

#ifndef RAYO_BUFFER_TYPE
#define RAYO_BUFFER_TYPE ELEM
#endif
layout(std430, set = 0, binding = 0) readonly buffer BufA { RAYO_BUFFER_TYPE a_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { RAYO_BUFFER_TYPE b_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufC { RAYO_BUFFER_TYPE c_data[]; };
layout(std430, set = 0, binding = 3) buffer BufY { RAYO_BUFFER_TYPE y_data[]; };
layout(std430, set = 0, binding = 4) buffer BufS { uint s_data[]; };
#ifdef RAYO_MORE_BINDINGS
layout(std430, set = 0, binding = 5) readonly buffer BufD { RAYO_BUFFER_TYPE d_data[]; };
layout(std430, set = 0, binding = 6) buffer BufE { RAYO_BUFFER_TYPE e_data[]; };
layout(std430, set = 0, binding = 7) buffer BufF { RAYO_BUFFER_TYPE f_data[]; };
#endif

layout(push_constant) uniform PushConstants {
    uint n, m, k;          // sizes as in rayo_call
    uint oa, ob, oc, oy;   // element offsets of the operands (in ELEM units)
    float alpha, beta;     // op parameters
    uint flags;            // op flags (transposes, activation, has gamma/beta)
    uint aux;              // per-pass extra (partial count of a reduction...)
#ifdef RAYO_PUSH_EXT
    uint ext[RAYO_PUSH_EXT]; // more parameters of the shaders that need them
#endif
} pc;

// ---- the range contract of the products --------------------------------------
// rayo-ops.h: no intermediate overflow where the float64 result is finite.
// Products near FLT_MAX that cancel overflow a float sum for good (inf, or
// NaN from inf - inf).  A shader that finds its sum not finite does it
// again with both factors scaled by 2^-64 (exact: a power of two), where no
// sum of fewer than 2^100 terms can overflow, and multiplies the result by
// RANGE_UP twice.  What the scaling flushes (a factor below 2^-62, a
// product below 4) is under 2^-62 of the sum of |terms| that overflowed: far
// inside the SUM contract.  Slow, and only for outputs that overflowed.
const float RANGE_DOWN = 5.42101086242752217e-20;   // 2^-64
const float RANGE_UP = 1.8446744073709552e19;       // 2^64

// From the bits: compilers may assume no inf or NaN in float comparisons.
bool range_finite(float v) { return (floatBitsToUint(v) & 0x7f800000u) != 0x7f800000u; }

// `precise`: compilers may otherwise fold the two scalings into one factor
// 2^-128 applied after the product a b, which overflows.
float range_fma(float a, float b, float sum)
{
    precise float as = a * RANGE_DOWN, bs = b * RANGE_DOWN;
    return fma(as, bs, sum);
}

float range_up(float scaled)
{
    precise float r = scaled * RANGE_UP * RANGE_UP;
    return r;
}

#endif
