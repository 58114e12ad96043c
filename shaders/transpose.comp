/* SPDX-License-Identifier: MIT */
#version 450
// transpose.comp - y (n x m) = a (m x n)^T through a 32 x 32 shared tile,
// padded by one column so that reading it down a column hits 32 banks.
// Both the global reads and the global writes are row-contiguous.

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 32, local_size_y = 8) in;

shared float tile[32][33];

void main()
{
    uint col0 = gl_WorkGroupID.x * 32u, row0 = gl_WorkGroupID.y * 32u;
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    for (uint r = ty; r < 32u; r += 8u) {
        uint row = row0 + r, col = col0 + tx;
        if (row < pc.m && col < pc.n)
            tile[r][tx] = a_data[pc.oa + row * pc.n + col];
    }
    barrier();
    // y row = a column (col0 + r), y column = a row (row0 + tx)
    for (uint r = ty; r < 32u; r += 8u) {
        uint yrow = col0 + r, ycol = row0 + tx;
        if (yrow < pc.n && ycol < pc.m)
            y_data[pc.oy + yrow * pc.m + ycol] = tile[tx][r];
    }
}
