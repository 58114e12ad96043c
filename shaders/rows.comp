#version 450
// rows.comp - row-wise ops: softmax, log_softmax, layernorm, rmsnorm.
// One workgroup per row (grid-stride over the m rows of n), the row's
// reductions done with subgroup operations (RAYO_SUBGROUP) or a
// shared-memory tree.  Sums run over the row in float with a tree, so the
// error grows with log(n), not n.

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "rmath.glsl"
#ifdef RAYO_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 60;

const uint OP_SOFTMAX = 60, OP_LOG_SOFTMAX = 61, OP_LAYERNORM = 62, OP_RMSNORM = 63;
const uint HAS_GAMMA = 1u, HAS_BETA = 2u;

#ifdef RAYO_SUBGROUP
shared float per_subgroup[gl_WorkGroupSize.x];

// Sum (is_max false) or NaN-propagating max over the workgroup; every
// invocation gets the result.
float wg_reduce(float v, bool is_max)
{
    if (is_max) {
        bool any_nan = subgroupAny(r_isnan(v));
        v = any_nan ? R_NAN : subgroupMax(v);
    } else {
        v = subgroupAdd(v);
    }
    barrier();                      // the last call's readers are done
    if (subgroupElect())
        per_subgroup[gl_SubgroupID] = v;
    barrier();
    float r = is_max ? -R_INF : 0.0;
    for (uint j = 0u; j < gl_NumSubgroups; j++) {
        float s = per_subgroup[j];
        if (is_max) r = (r_isnan(r) || r_isnan(s)) ? R_NAN : max(r, s);
        else r += s;
    }
    return r;
}
#else
shared float tree[gl_WorkGroupSize.x];

float wg_reduce(float v, bool is_max)
{
    uint t = gl_LocalInvocationID.x;
    barrier();                      // the last call's readers are done
    tree[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            float x = tree[t], z = tree[t + s];
            tree[t] = is_max ? ((r_isnan(x) || r_isnan(z)) ? R_NAN : max(x, z)) : x + z;
        }
        barrier();
    }
    return tree[0];
}
#endif

void softmax_row(uint base, uint n, uint out_base)
{
    uint t = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
    float mx = -R_INF;
    for (uint j = t; j < n; j += step) {
        float x = a_data[base + j];
        mx = (r_isnan(mx) || r_isnan(x)) ? R_NAN : max(mx, x);
    }
    mx = wg_reduce(mx, true);
    float s = 0.0;
    for (uint j = t; j < n; j += step)
        s += r_exp(a_data[base + j] - mx);
    s = wg_reduce(s, false);
    if (OP == OP_SOFTMAX) {
        float inv = r_div(1.0, s);
        for (uint j = t; j < n; j += step)
            y_data[out_base + j] = r_exp(a_data[base + j] - mx) * inv;
    } else {
        float ls = r_log(s);
        for (uint j = t; j < n; j += step)
            y_data[out_base + j] = (a_data[base + j] - mx) - ls;
    }
}

void norm_row(uint base, uint n, uint out_base)
{
    uint t = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
    float mean = 0.0;
    if (OP == OP_LAYERNORM) {
        float s = 0.0;
        for (uint j = t; j < n; j += step)
            s += a_data[base + j];
        mean = r_div(wg_reduce(s, false), float(n));
    }
    float ss = 0.0;
    for (uint j = t; j < n; j += step) {
        float d = a_data[base + j] - mean;
        ss = fma(d, d, ss);
    }
    float var = r_div(wg_reduce(ss, false), float(n));
    float rstd = r_div(1.0, r_sqrt(var + pc.alpha));
    bool has_gamma = (pc.flags & HAS_GAMMA) != 0u;
    bool has_beta = OP == OP_LAYERNORM && (pc.flags & HAS_BETA) != 0u;
    for (uint j = t; j < n; j += step) {
        float y = (a_data[base + j] - mean) * rstd;
        if (has_gamma) y *= b_data[pc.ob + j];
        if (has_beta) y += c_data[pc.oc + j];
        y_data[out_base + j] = y;
    }
}

void main()
{
    for (uint row = gl_WorkGroupID.x; row < pc.m; row += gl_NumWorkGroups.x) {
        uint base = pc.oa + row * pc.n, out_base = pc.oy + row * pc.n;
        if (OP == OP_SOFTMAX || OP == OP_LOG_SOFTMAX)
            softmax_row(base, pc.n, out_base);
        else
            norm_row(base, pc.n, out_base);
    }
}
