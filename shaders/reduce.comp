#version 450
// reduce.comp - sum, dot, max, min, argmax, norm_l1, norm_l2.
//
// STAGE 0: each workgroup reduces a grid-stride share of the data to one
//          partial (4 words) at y[oy + 4 * group];
// STAGE 1: one workgroup reduces pc.n partials (read from a) to the result;
// STAGE 2: one workgroup reduces all the data straight to the result.
// With RAYO_SUBGROUP, workgroups reduce with subgroup operations (add, or a
// shuffle-xor butterfly); without, with a shared-memory tree.
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

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 40;
layout(constant_id = 2) const uint STAGE = 0;

const uint OP_SUM = 40, OP_DOT = 41, OP_MAX = 42, OP_MIN = 43, OP_ARGMAX = 44,
           OP_NORM_L1 = 45, OP_NORM_L2 = 46;
const uint NO_INDEX = 0xffffffffu;

// A partial result.  v: the value (norm_l2: the scale, max |x| so far);
// w: norm_l2's sum of (x / scale)^2; u: norm_l2's NaN or inf, if any;
// i: argmax's index.
struct P { float v; float w; float u; uint i; };

bool sum_like() { return OP == OP_SUM || OP == OP_DOT || OP == OP_NORM_L1; }

P p_identity()
{
    P p = P(0.0, 0.0, 0.0, NO_INDEX);
    if (OP == OP_MAX || OP == OP_ARGMAX) p.v = -R_INF;
    if (OP == OP_MIN) p.v = R_INF;
    return p;
}

float f(uint word) { return uintBitsToFloat(word); }

// NaN-propagating max (for norm_l2's special values).
float nan_max(float x, float y) { return (r_isnan(x) || r_isnan(y)) ? R_NAN : max(x, y); }

P combine(P x, P y)
{
    if (sum_like()) { x.v += y.v; return x; }
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
    P r;
    r.u = nan_max(x.u, y.u);
    r.v = max(x.v, y.v);
    r.i = NO_INDEX;
    if (r.v == 0.0) {
        r.w = 0.0;
    } else {
        float sx = x.v / r.v, sy = y.v / r.v;
        r.w = x.w * sx * sx + y.w * sy * sy;
    }
    return r;
}

// Element idx of the data (stages 0 and 2).
P from_data(uint idx)
{
    float x = f(a_data[pc.oa + idx]);
    P p = p_identity();
    if (OP == OP_DOT) p.v = x * f(b_data[pc.ob + idx]);
    else if (OP == OP_NORM_L1) p.v = abs(x);
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

P from_partial(uint j)
{
    uint o = pc.oa + 4u * j;
    return P(f(a_data[o]), f(a_data[o + 1u]), f(a_data[o + 2u]), a_data[o + 3u]);
}

#ifdef RAYO_SUBGROUP
P subgroup_reduce(P p)
{
    if (sum_like()) { p.v = subgroupAdd(p.v); return p; }
    for (uint off = gl_SubgroupSize / 2u; off > 0u; off >>= 1u) {
        P o;
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
    float r = p.v;
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
    if (STAGE == 0u) {
        uint o = pc.oy + 4u * gl_WorkGroupID.x;
        y_data[o] = floatBitsToUint(acc.v);
        y_data[o + 1u] = floatBitsToUint(acc.w);
        y_data[o + 2u] = floatBitsToUint(acc.u);
        y_data[o + 3u] = acc.i;
    } else {
        write_result(acc);
    }
}
