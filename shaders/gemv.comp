#version 450
// gemv.comp - y = alpha op(A) x + beta y, A row-major m x n.
//
// Not transposed: one workgroup per row (grid-stride over rows), the
// invocations stride along the row (coalesced) and a shared-memory tree
// adds their sums.  Transposed: one invocation per column of A, walking
// down the rows (each step reads a contiguous row segment across the
// workgroup); its sum is blocked (64 rows at a time) so rounding grows with
// 64 + m / 64 terms, not m.  y is not read when beta == 0.

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool TRANS = false;

shared float tree[gl_WorkGroupSize.x];

float finish(float dot, uint i)
{
    float r = pc.alpha * dot;
    if (pc.beta != 0.0)
        r = fma(pc.beta, y_data[pc.oy + i], r);
    return r;
}

void rows_of_a()
{
    uint t = gl_LocalInvocationID.x;
    for (uint row = gl_WorkGroupID.x; row < pc.m; row += gl_NumWorkGroups.x) {
        uint base = pc.oa + row * pc.n;
        float s = 0.0;
        for (uint j = t; j < pc.n; j += gl_WorkGroupSize.x)
            s = fma(a_data[base + j], b_data[pc.ob + j], s);
        barrier();              // the previous row's tree has been read
        tree[t] = s;
        barrier();
        for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1u) {
            if (t < h)
                tree[t] += tree[t + h];
            barrier();
        }
        if (t == 0u)
            y_data[pc.oy + row] = finish(tree[0], row);
    }
}

void columns_of_a()
{
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint col = gl_GlobalInvocationID.x; col < pc.n; col += stride) {
        float total = 0.0;
        for (uint i0 = 0u; i0 < pc.m; i0 += 64u) {
            float block = 0.0;
            uint end = min(i0 + 64u, pc.m);
            for (uint i = i0; i < end; i++)
                block = fma(a_data[pc.oa + i * pc.n + col], b_data[pc.ob + i], block);
            total += block;
        }
        y_data[pc.oy + col] = finish(total, col);
    }
}

void main()
{
    if (TRANS)
        columns_of_a();
    else
        rows_of_a();
}
