/* SPDX-License-Identifier: MIT */
#version 450
// reduce.comp - sum, dot, max, min, argmax, norm_l1, norm_l2.
//
// STAGE 0: each workgroup reduces a grid-stride share of the data to one
//          partial (4 words) at y[oy + 4 * group];
// STAGE 1: one workgroup reduces pc.n partials (read from a) to the result;
// STAGE 2: one workgroup reduces all the data straight to the result.
// With RAYO_SUBGROUP, workgroups reduce with subgroup operations (add, or a
// shuffle-xor butterfly); without, with a shared-memory tree.
// Sums (sum, dot, norm_l1) accumulate in SUM: double with RAYO_F64 (devices
// with shaderFloat64), so no partial sum overflows where the float64 result
// is finite (FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX, 1) and dot's products are
// exact; float otherwise.
//
// The buffers are read as uint and converted bit-exactly, because a partial
// also carries an index (argmax).

#extension GL_GOOGLE_include_directive : require
#define RAYO_BUFFER_TYPE uint
#include "common.glsl"
#include "rmath.glsl"
#ifdef RAYO_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

// A sum as two words of a partial record (float: the second is unused).
#ifdef RAYO_F64
#define SUM double
SUM sum_of_words(uvec2 w) { return packDouble2x32(w); }
uvec2 words_of_sum(SUM s) { return unpackDouble2x32(s); }
#else
#define SUM float
SUM sum_of_words(uvec2 w) { return uintBitsToFloat(w.x); }
uvec2 words_of_sum(SUM s) { return uvec2(floatBitsToUint(s), 0u); }
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 40;
layout(constant_id = 2) const uint STAGE = 0;

#include "rayo-op-ids.glsl"
const uint NO_INDEX = 0xffffffffu;

// A partial result.  s: the sum of sum, dot and norm_l1; v: the value of
// the others (norm_l2: the scale, max |x| so far); w: norm_l2's sum of
// (x / scale)^2; u: norm_l2's NaN or inf, if any; i: argmax's index.
struct P { SUM s; float v; float w; float u; uint i; };

bool sum_like() { return OP == OP_SUM || OP == OP_DOT || OP == OP_NORM_L1; }

P p_identity()
{
    P p = P(SUM(0.0), 0.0, 0.0, 0.0, NO_INDEX);
    if (OP == OP_MAX || OP == OP_ARGMAX) p.v = -R_INF;
    if (OP == OP_MIN) p.v = R_INF;
    return p;
}

float f(uint word) { return uintBitsToFloat(word); }

// NaN-propagating max (for norm_l2's special values).
float nan_max(float x, float y) { return (r_isnan(x) || r_isnan(y)) ? R_NAN : max(x, y); }

// v / scale for 0 <= v <= scale (norm_l2).  NVIDIA divides as v * (1 / scale),
// and 1 / scale is a denormal, flushed to 0, for scale past 2^126 (norm_l2 of
// [2e38, 2e38, 1] gave 0): such scales are quartered first (exact).
float scale_ratio(float v, float scale)
{
    if (v == scale) return 1.0;
    if (scale > 8.5e37) { v *= 0.25; scale *= 0.25; }
    return v / scale;
}

P combine(P x, P y)
{
    if (sum_like()) { x.s += y.s; return x; }
    if (OP == OP_MAX) { x.v = nan_max(x.v, y.v); return x; }
    if (OP == OP_MIN) {
        x.v = (r_isnan(x.v) || r_isnan(y.v)) ? R_NAN : min(x.v, y.v);
        return x;
    }
    if (OP == OP_ARGMAX) {
        // the first NaN wins; else the larger value; ties: the first index
        bool xn = r_isnan(x.v), yn = r_isnan(y.v);
        bool take_y;
        if (xn != yn) take_y = yn;
        else if (xn || x.v == y.v) take_y = y.i < x.i;
        else take_y = y.v > x.v;
        return take_y ? y : x;
    }
    // OP_NORM_L2: (scale, ssq) pairs, rescaled to the larger scale
    P r = p_identity();
    r.u = nan_max(x.u, y.u);
    r.v = max(x.v, y.v);
    if (r.v == 0.0) {
        r.w = 0.0;
    } else {
        float sx = scale_ratio(x.v, r.v), sy = scale_ratio(y.v, r.v);
        r.w = x.w * sx * sx + y.w * sy * sy;
    }
    return r;
}

// Element idx of the data (stages 0 and 2).
P from_data(uint idx)
{
    float x = f(a_data[pc.oa + idx]);
    P p = p_identity();
    if (OP == OP_SUM) p.s = SUM(x);
    else if (OP == OP_DOT) p.s = SUM(x) * SUM(f(b_data[pc.ob + idx]));
    else if (OP == OP_NORM_L1) p.s = abs(SUM(x));
    else if (OP == OP_NORM_L2) {
        float ax = abs(x);
        if (r_isnan(ax) || isinf(ax)) p.u = ax;
        else if (ax > 0.0) { p.v = ax; p.w = 1.0; }
    } else {
        p.v = x;
        p.i = idx;
    }
    return p;
}

// A partial record is 4 words: s for sums (words 0 and 1), else v, w, u, i.
P from_partial(uint j)
{
    uint o = pc.oa + 4u * j;
    P p = p_identity();
    if (sum_like()) {
        p.s = sum_of_words(uvec2(a_data[o], a_data[o + 1u]));
        return p;
    }
    return P(p.s, f(a_data[o]), f(a_data[o + 1u]), f(a_data[o + 2u]), a_data[o + 3u]);
}

void write_partial(uint o, P p)
{
    if (sum_like()) {
        uvec2 w = words_of_sum(p.s);
        y_data[o] = w.x;
        y_data[o + 1u] = w.y;
        return;
    }
    y_data[o] = floatBitsToUint(p.v);
    y_data[o + 1u] = floatBitsToUint(p.w);
    y_data[o + 2u] = floatBitsToUint(p.u);
    y_data[o + 3u] = p.i;
}

#ifdef RAYO_SUBGROUP
P subgroup_reduce(P p)
{
    if (sum_like()) { p.s = subgroupAdd(p.s); return p; }
    for (uint off = gl_SubgroupSize / 2u; off > 0u; off >>= 1u) {
        P o = p;
        o.v = subgroupShuffleXor(p.v, off);
        o.w = subgroupShuffleXor(p.w, off);
        o.u = subgroupShuffleXor(p.u, off);
        o.i = subgroupShuffleXor(p.i, off);
        p = combine(p, o);
    }
    return p;
}

shared P partial_of_subgroup[gl_WorkGroupSize.x];

P workgroup_reduce(P p)
{
    p = subgroup_reduce(p);
    if (subgroupElect())
        partial_of_subgroup[gl_SubgroupID] = p;
    barrier();
    if (gl_SubgroupID == 0u) {
        p = p_identity();
        for (uint j = gl_SubgroupInvocationID; j < gl_NumSubgroups; j += gl_SubgroupSize)
            p = combine(p, partial_of_subgroup[j]);
        p = subgroup_reduce(p);
    }
    return p;   // valid in invocation 0
}
#else
shared P tree[gl_WorkGroupSize.x];

P workgroup_reduce(P p)
{
    uint t = gl_LocalInvocationID.x;
    tree[t] = p;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
        if (t < s)
            tree[t] = combine(tree[t], tree[t + s]);
        barrier();
    }
    return tree[0];
}
#endif

void write_result(P p)
{
    if (OP == OP_ARGMAX) {
        y_data[pc.oy] = p.i;        // a size_t: low word, then high word
        y_data[pc.oy + 1u] = 0u;
        return;
    }
    float r = sum_like() ? float(p.s) : p.v;
    if (OP == OP_NORM_L2)
        r = p.u != 0.0 ? p.u : p.v * r_sqrt(p.w);
    y_data[pc.oy] = floatBitsToUint(r);
}

void main()
{
    uint t = gl_LocalInvocationID.x;
    P acc = p_identity();
    if (STAGE == 1u) {
        for (uint j = t; j < pc.n; j += gl_WorkGroupSize.x)
            acc = combine(acc, from_partial(j));
    } else {
        uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
        for (uint idx = gl_GlobalInvocationID.x; idx < pc.n; idx += stride)
            acc = combine(acc, from_data(idx));
    }
    acc = workgroup_reduce(acc);
    if (t != 0u)
        return;
    if (STAGE == 0u)
        write_partial(pc.oy + 4u * gl_WorkGroupID.x, acc);
    else
        write_result(acc);
}
