/* SPDX-License-Identifier: MIT */
#version 450
// gemv.comp - y = alpha op(A) x + beta y, A row-major m x n.
//
// Not transposed: a workgroup per row (and per chunk of pc.k columns of
// it), the invocations striding along the row (coalesced), a shared-memory
// tree adding their sums.  Transposed: an invocation per column of A (and
// per chunk of pc.k rows), walking down the rows (each step reads a
// contiguous row segment across the workgroup).
// Every serial sum is blocked (BLOCK terms at a time), so rounding grows
// with BLOCK + terms / BLOCK, not with the number of terms.
//
// PASS 0: whole rows/columns in one dispatch (up to pc.k terms each);
// PASS 1: each chunk's partial sum -> scratch (binding s, from word pc.aux);
// PASS 2: the partials of each output summed, then alpha and beta.
// Chunks keep every invocation's loops short (lavapipe silently stops an
// invocation after 65,535 loop iterations) and spread a long row or column
// over the device.  y is not read when beta == 0.
// An output whose sum is not finite (PASS 0 or 2) is summed again from A
// and x with scaled factors (common.glsl: the range contract).

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool TRANS = false;
layout(constant_id = 2) const uint PASS = 0;

const uint WG = gl_WorkGroupSize.x;
const uint BLOCK = 32u;

shared float tree[gl_WorkGroupSize.x];

// alpha dot + beta y; dot scaled by 2^-128 where `scaled`.
float finish(float dot, uint i, bool scaled)
{
    float r = scaled ? range_up(pc.alpha * dot) : pc.alpha * dot;
    if (pc.beta != 0.0)
        r = fma(pc.beta, y_data[pc.oy + i], r);
    return r;
}

float partial(uint i) { return uintBitsToFloat(s_data[pc.aux + i]); }

// block + A[ai] x[xi], the factors scaled where `scaled`.
float add_term(float block, uint ai, uint xi, bool scaled)
{
    float a = a_data[pc.oa + ai], x = b_data[pc.ob + xi];
    return scaled ? range_fma(a, x, block) : fma(a, x, block);
}

float wg_sum(float s)
{
    uint t = gl_LocalInvocationID.x;
    barrier();                  // the previous row's tree has been read
    tree[t] = s;
    barrier();
    for (uint h = WG / 2u; h > 0u; h >>= 1u) {
        if (t < h)
            tree[t] += tree[t + h];
        barrier();
    }
    return tree[0];
}

// This invocation's share of row `row`'s dot over columns [lo, hi), or
// (PASS 2) of the row's `chunks` partials; `scaled`: of the dot, the
// factors scaled.
float row_share(uint row, uint lo, uint hi, uint chunks, bool scaled)
{
    float total = 0.0, block = 0.0;
    uint terms = 0u;
    bool parts = PASS == 2u && !scaled;
    if (parts)
        hi = chunks;
    for (uint j = lo + gl_LocalInvocationID.x; j < hi; j += WG) {
        if (parts)
            block += partial(row * chunks + j);
        else
            block = add_term(block, row * pc.n + j, j, scaled);
        if (++terms == BLOCK) { total += block; block = 0.0; terms = 0u; }
    }
    return total + block;
}

void rows_of_a()
{
    uint chunks = (pc.n + pc.k - 1u) / pc.k;
    uint lo = PASS == 1u ? gl_WorkGroupID.x * pc.k : 0u;
    uint hi = PASS == 1u ? min(lo + pc.k, pc.n) : pc.n;
    for (uint row = gl_WorkGroupID.y; row < pc.m; row += gl_NumWorkGroups.y) {
        float s = wg_sum(row_share(row, lo, hi, chunks, false));
        bool scaled = PASS != 1u && !range_finite(s); // the same in every invocation
        if (scaled)
            s = wg_sum(row_share(row, 0u, pc.n, chunks, true));
        if (gl_LocalInvocationID.x != 0u)
            continue;
        if (PASS == 1u)
            s_data[pc.aux + row * chunks + gl_WorkGroupID.x] = floatBitsToUint(s);
        else
            y_data[pc.oy + row] = finish(s, row, scaled);
    }
}

// Column col's dot over rows [lo, hi) (PASS 2: over its `chunks`
// partials; `scaled`: the dot, the factors scaled; on lavapipe, fewer than
// 65,535 rows in one invocation).
float column_share(uint col, uint lo, uint hi, uint chunks, bool scaled)
{
    float total = 0.0;
    bool parts = PASS == 2u && !scaled;
    if (parts)
        hi = chunks;
    for (uint i0 = lo; i0 < hi; i0 += BLOCK) {
        float block = 0.0;
        uint end = min(i0 + BLOCK, hi);
        for (uint i = i0; i < end; i++) {
            if (parts)
                block += partial(i * pc.n + col);
            else
                block = add_term(block, i * pc.n + col, i, scaled);
        }
        total += block;
    }
    return total;
}

void columns_of_a()
{
    uint chunks = (pc.m + pc.k - 1u) / pc.k;
    uint lo = PASS == 1u ? gl_WorkGroupID.y * pc.k : 0u;
    uint hi = PASS == 1u ? min(lo + pc.k, pc.m) : pc.m;
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint col = gl_GlobalInvocationID.x; col < pc.n; col += stride) {
        float s = column_share(col, lo, hi, chunks, false);
        if (PASS == 1u)
            s_data[pc.aux + gl_WorkGroupID.y * pc.n + col] = floatBitsToUint(s);
        else if (range_finite(s))
            y_data[pc.oy + col] = finish(s, col, false);
        else
            y_data[pc.oy + col] = finish(column_share(col, 0u, pc.m, chunks, true), col, true);
    }
}

void main()
{
    if (TRANS)
        columns_of_a();
    else
        rows_of_a();
}
