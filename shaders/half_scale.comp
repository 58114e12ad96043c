/* SPDX-License-Identifier: MIT */
#version 450
// half_scale.comp - the prompt matmul's result from its f16 product
// (plugins/vulkan/vk-half-prompt.c): Y[i][j] = alpha * 2^(ea[i] + eb[j]) *
// sum over slices of P[s][i][j] + beta * C[i][j], the power of two applied
// exactly (in three factors, each a float; only the result may round).
// beta = 0: C is not read.
//
// One invocation an element: columns along x (256 a workgroup), rows along y.
// Push constants: m x n (C and Y), their row stride aux and word offsets
// oc, oy; in the scratch (binding s, words): P at oa (slices k, each
// ext[1] words, rows ext[0] words apart) and the exponents of A's rows at
// ob; the exponents of B's rows at ext[2] of binding b (the scratch too,
// or a weight's kept copy, vk-weight-copies.c).
layout(std430, set = 0, binding = 1) readonly buffer BufB { uint b_exps[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufC { float c_data[]; };
layout(std430, set = 0, binding = 3) buffer BufY { float y_data[]; };
layout(std430, set = 0, binding = 4) readonly buffer BufS { uint s_data[]; };

layout(push_constant) uniform PushConstants {
    uint n, m, k;
    uint oa, ob, oc, oy;
    float alpha, beta;
    uint flags, aux;
    uint ext[3];
} pc;

layout(local_size_x = 256) in;

float pow2(int e) { return uintBitsToFloat(uint(clamp(e, -126, 127) + 127) << 23); }

// v * 2^e for e in [-378, 381]: every factor a normal float
float times_pow2(float v, int e)
{
    int e1 = clamp(e, -126, 127), e2 = clamp(e - e1, -126, 127);
    precise float r = v * pow2(e1) * pow2(e2) * pow2(e - e1 - e2);
    return r;
}

void main()
{
    uint j = gl_WorkGroupID.x * 256u + gl_LocalInvocationID.x, i = gl_WorkGroupID.y;
    if (j >= pc.n || i >= pc.m)
        return;
    uint at = pc.oa + i * pc.ext[0] + j;
    float sum = 0.0;
    for (uint s = 0u; s < pc.k; s++)
        sum += uintBitsToFloat(s_data[at + s * pc.ext[1]]);
    int e = int(s_data[pc.ob + i]) + int(b_exps[pc.ext[2] + j]);
    float v = pc.alpha * times_pow2(sum, e);
    uint y = i * pc.aux + j;
    if (pc.beta != 0.0)
        v += pc.beta * c_data[pc.oc + y];
    y_data[pc.oy + y] = v;
}
