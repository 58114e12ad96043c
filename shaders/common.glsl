/* SPDX-License-Identifier: MIT */
// common.glsl - what every rayo compute shader shares: the storage buffers
// of an op (a, b, c, y, and s: the scratch of an op done in several passes)
// and the push constants that carry sizes, parameters and element offsets.
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

layout(push_constant) uniform PushConstants {
    uint n, m, k;          // sizes as in rayo_call
    uint oa, ob, oc, oy;   // element offsets of the operands (in ELEM units)
    float alpha, beta;     // op parameters
    uint flags;            // op flags (transposes, activation, has gamma/beta)
    uint aux;              // per-pass extra (partial count of a reduction...)
} pc;

#endif
