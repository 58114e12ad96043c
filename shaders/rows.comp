/* SPDX-License-Identifier: MIT */
#version 450
// rows.comp - row-wise ops: softmax, log_softmax, layernorm, rmsnorm.
//
// Each op needs one or two statistics of its row before it writes it:
//   softmax:   s1 = max x,      s2 = sum exp(x - s1)
//   layernorm: s1 = sum x,      s2 = sum (x - mean)^2   (two passes: no
//              cancellation of E[x^2] - E[x]^2, no overflow for |x| ~ 3e38)
//   rmsnorm:   s1 = sum x^2
// Sums accumulate in ACC: double with RAYO_F64 (devices with shaderFloat64:
// the same results as the scalar backend, for rows with a large mean, rows
// of +-3e38 or of denormals), float otherwise.
//
// PASS 0: one workgroup per row does every step (rows of up to 65,536).
// PASS 1..3: a longer row is cut into chunks of pc.k elements, one
// workgroup per (chunk, row), so that no invocation loops more than a few
// thousand times (lavapipe silently stops an invocation after 65,535 loop
// iterations) and a long row is spread over the whole device:
//   1: each chunk's partial s1 -> scratch;
//   2: each workgroup combines its row's partials of s1, then its chunk's
//      partial s2 -> scratch (not for rmsnorm);
//   3: each workgroup combines s1 and s2 and writes its chunk of y.
// Scratch (binding s, from word pc.aux): 4 words per (row, chunk): s1, s2.
// PASS 4: a workgroup per row of up to WG * E columns held in registers
// (E, a specialization constant, values per invocation): the row is read
// from memory once, then both statistics and y come from the registers;
// for rmsnorm optionally the sum of two rows (ADD_FIRST).
//
// Defined where the formula is not: a row whose variance + eps is 0
// (a constant row with eps = 0) normalises to 0 (y = beta).

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "rmath.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 60;
layout(constant_id = 2) const uint PASS = 0;
layout(constant_id = 3) const uint E = 1;
// PASS 4 of rmsnorm only: the row is a + c, summed in float as the add op
// sums it and stored to the scratch binding from word pc.aux (an add and
// the rmsnorm of its output in one dispatch: vk_record_add_rmsnorm)
layout(constant_id = 4) const bool ADD_FIRST = false;

#include "rayo-op-ids.glsl"
const uint HAS_GAMMA = 1u, HAS_BETA = 2u;
const uint WG = gl_WorkGroupSize.x;

#ifdef RAYO_F64
#define ACC double
ACC acc_load(uint w) { return packDouble2x32(uvec2(s_data[w], s_data[w + 1u])); }
void acc_store(uint w, ACC v)
{
    uvec2 u = unpackDouble2x32(v);
    s_data[w] = u.x;
    s_data[w + 1u] = u.y;
}
#else
#define ACC float
ACC acc_load(uint w) { return uintBitsToFloat(s_data[w]); }
void acc_store(uint w, ACC v) { s_data[w] = floatBitsToUint(v); }
#endif

bool is_softmax() { return OP == OP_SOFTMAX || OP == OP_LOG_SOFTMAX; }

// s1 of softmax is a max (kept as a float, NaN-propagating); other
// statistics are sums.
float nan_max(float x, float y) { return (r_isnan(x) || r_isnan(y)) ? R_NAN : max(x, y); }

ACC combine(ACC x, ACC y, bool is_max)
{
    return is_max ? ACC(nan_max(float(x), float(y))) : x + y;
}

ACC identity(bool is_max) { return is_max ? ACC(-R_INF) : ACC(0.0); }

shared ACC tree[gl_WorkGroupSize.x];

// Over the workgroup; every invocation gets the result.
ACC wg_reduce(ACC v, bool is_max)
{
    uint t = gl_LocalInvocationID.x;
    barrier();                      // the last call's readers are done
    tree[t] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s)
            tree[t] = combine(tree[t], tree[t + s], is_max);
        barrier();
    }
    return tree[0];
}

float x_at(uint row, uint j) { return a_data[pc.oa + row * pc.n + j]; }

// This invocation's share of s1 over columns [lo, hi) of the row.
ACC partial1(uint row, uint lo, uint hi)
{
    ACC v = identity(is_softmax());
    for (uint j = lo + gl_LocalInvocationID.x; j < hi; j += WG) {
        float x = x_at(row, j);
        if (is_softmax()) v = ACC(nan_max(float(v), x));
        else if (OP == OP_LAYERNORM) v += ACC(x);
        else v += ACC(x) * ACC(x);
    }
    return v;
}

// This invocation's share of s2 over columns [lo, hi), given s1.
ACC partial2(uint row, uint lo, uint hi, ACC s1)
{
    ACC v = ACC(0.0);
    ACC mean = s1 / ACC(pc.n);
    for (uint j = lo + gl_LocalInvocationID.x; j < hi; j += WG) {
        float x = x_at(row, j);
        if (is_softmax()) {
            v += ACC(r_exp(x - float(s1)));
        } else {
            ACC d = ACC(x) - mean;
            v += d * d;
        }
    }
    return v;
}

void write_row(uint row, uint lo, uint hi, ACC s1, ACC s2)
{
    uint t = gl_LocalInvocationID.x, out_base = pc.oy + row * pc.n;
    if (is_softmax()) {
        float mx = float(s1);
        float ls = r_log(float(s2));
        for (uint j = lo + t; j < hi; j += WG) {
            // precise: NVIDIA's compiler otherwise turns (x - mx) - ls into
            // x - (mx + ls), whose loop-invariant mx + ls swallows ls for a
            // row with a large offset (1e30: y = 0, not -log(n))
            precise float d = x_at(row, j) - mx;
            precise float ly = d - ls;
            y_data[out_base + j] = OP == OP_SOFTMAX ? float(ACC(r_exp(d)) / s2) : ly;
        }
        return;
    }
    ACC mean = OP == OP_LAYERNORM ? s1 / ACC(pc.n) : ACC(0.0);
    ACC var = (OP == OP_LAYERNORM ? s2 : s1) / ACC(pc.n) + ACC(pc.alpha);
    // var + eps == 0: x - mean is 0 too; y = 0 * 0, not 0 * inf
    ACC inv = isnan(var) ? var : (var > ACC(0.0) ? ACC(1.0) / sqrt(var) : ACC(0.0));
    bool has_gamma = (pc.flags & HAS_GAMMA) != 0u;
    bool has_beta = OP == OP_LAYERNORM && (pc.flags & HAS_BETA) != 0u;
    for (uint j = lo + t; j < hi; j += WG) {
        ACC y = (ACC(x_at(row, j)) - mean) * inv;
        if (has_gamma) y *= ACC(b_data[pc.ob + j]);
        if (has_beta) y += ACC(c_data[pc.oc + j]);
        y_data[out_base + j] = float(y);
    }
}

bool has_s2() { return OP != OP_RMSNORM; }

// ---- PASS 0: a whole row per workgroup ----------------------------------------
void whole_row(uint row)
{
    ACC s1 = wg_reduce(partial1(row, 0u, pc.n), is_softmax());
    ACC s2 = ACC(0.0);
    if (has_s2())
        s2 = wg_reduce(partial2(row, 0u, pc.n, s1), false);
    write_row(row, 0u, pc.n, s1, s2);
}

// ---- PASS 1..3: chunks of pc.k columns -----------------------------------------
uint chunks() { return (pc.n + pc.k - 1u) / pc.k; }

uint slot(uint row, uint chunk, uint which) { return pc.aux + (row * chunks() + chunk) * 4u + 2u * which; }

ACC combined(uint row, uint which, bool is_max)
{
    ACC v = identity(is_max);
    for (uint c = gl_LocalInvocationID.x; c < chunks(); c += WG)
        v = combine(v, acc_load(slot(row, c, which)), is_max);
    return wg_reduce(v, is_max);
}

void chunk_of_row(uint row, uint chunk)
{
    uint lo = chunk * pc.k, hi = min(lo + pc.k, pc.n);
    bool first = gl_LocalInvocationID.x == 0u;
    if (PASS == 1u) {
        ACC s1 = wg_reduce(partial1(row, lo, hi), is_softmax());
        if (first) acc_store(slot(row, chunk, 0u), s1);
        return;
    }
    ACC s1 = combined(row, 0u, is_softmax());
    if (PASS == 2u) {
        ACC s2 = wg_reduce(partial2(row, lo, hi, s1), false);
        if (first) acc_store(slot(row, chunk, 1u), s2);
        return;
    }
    ACC s2 = has_s2() ? combined(row, 1u, false) : ACC(0.0);
    write_row(row, lo, hi, s1, s2);
}

// ---- PASS 4: the row in registers -------------------------------------------
void cached_row(uint row)
{
    float v[E], gamma[E];
    uint t = gl_LocalInvocationID.x, base = row * pc.n;
    bool has_gamma = !is_softmax() && (pc.flags & HAS_GAMMA) != 0u;
    ACC s1 = identity(is_softmax());
    for (uint i = 0u; i < E; i++) {
        uint j = t + i * WG;
        v[i] = j < pc.n ? a_data[pc.oa + base + j] : 0.0;
        if (ADD_FIRST && j < pc.n) {
            v[i] += c_data[pc.oc + base + j];
            s_data[pc.aux + base + j] = floatBitsToUint(v[i]);
        }
        // gamma now: its loads wait out their latency with the row's, not
        // after the reductions
        gamma[i] = has_gamma && j < pc.n ? b_data[pc.ob + j] : 1.0;
        if (j < pc.n) {
            if (is_softmax()) s1 = ACC(nan_max(float(s1), v[i]));
            else if (OP == OP_LAYERNORM) s1 += ACC(v[i]);
            else s1 += ACC(v[i]) * ACC(v[i]);
        }
    }
    s1 = wg_reduce(s1, is_softmax());
    ACC s2 = ACC(0.0);
    if (has_s2()) {
        ACC mean = s1 / ACC(pc.n);
        for (uint i = 0u; i < E; i++) {
            if (t + i * WG >= pc.n)
                continue;
            if (is_softmax()) {
                float e = r_exp(v[i] - float(s1));
                if (OP == OP_SOFTMAX) v[i] = e;
                s2 += ACC(e);
            } else {
                ACC d = ACC(v[i]) - mean;
                s2 += d * d;
            }
        }
        s2 = wg_reduce(s2, false);
    }
    uint out_base = pc.oy + base;
    if (is_softmax()) {
        float mx = float(s1);
        float ls = r_log(float(s2));
        ACC inv = ACC(1.0) / s2;
        for (uint i = 0u; i < E; i++) {
            uint j = t + i * WG;
            if (j >= pc.n)
                continue;
            precise float d = v[i] - mx;     // as in write_row
            precise float ly = d - ls;
            y_data[out_base + j] = OP == OP_SOFTMAX ? float(ACC(v[i]) * inv) : ly;
        }
        return;
    }
    ACC mean = OP == OP_LAYERNORM ? s1 / ACC(pc.n) : ACC(0.0);
    ACC var = (OP == OP_LAYERNORM ? s2 : s1) / ACC(pc.n) + ACC(pc.alpha);
    ACC inv = isnan(var) ? var : (var > ACC(0.0) ? ACC(1.0) / sqrt(var) : ACC(0.0));
    bool has_beta = OP == OP_LAYERNORM && (pc.flags & HAS_BETA) != 0u;
    for (uint i = 0u; i < E; i++) {
        uint j = t + i * WG;
        if (j >= pc.n)
            continue;
        ACC y = (ACC(v[i]) - mean) * inv;
        if (has_gamma) y *= ACC(gamma[i]);
        if (has_beta) y += ACC(c_data[pc.oc + j]);
        y_data[out_base + j] = float(y);
    }
}

void main()
{
    if (PASS == 4u) {
        uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
        for (uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; row < pc.m;
             row += groups)
            cached_row(row);
    } else if (PASS == 0u) {
        uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
        for (uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; row < pc.m;
             row += groups)
            whole_row(row);
    } else {
        for (uint row = gl_WorkGroupID.y; row < pc.m; row += gl_NumWorkGroups.y)
            chunk_of_row(row, gl_WorkGroupID.x);
    }
}
