/* SPDX-License-Identifier: MIT */
#version 450
// matmul_half.comp - P = A B^T of two f16 copies on the tensor cores
// (VK_NV_cooperative_matrix), float32 sums: the prompt matmul's product
// (plugins/vulkan/vk-half-prompt.c; the scales come after, half_scale.comp).
//
// A is Mp x Kp and B is Np x Kp, both k-contiguous and padded with zeros to
// whole tiles (half_rows.comp), so no tile has an edge.  A workgroup of 8
// subgroups (256 invocations, subgroup size 32) computes a 128 x 128 tile;
// subgroup (wm, wn) of a 2 x 4 grid owns 64 x 32 of it, eight 16 x 16
// accumulators.  K advances BK at a time, the next step's tiles fetched into
// registers while the current one is multiplied.  Few tiles (a 128-token
// prompt by a 2048-row weight: 16) would leave most of a large GPU idle, so
// the workgroups along z take slices of k (pc.aux steps each) and write
// partial products, slice z at pc.oy + z * Mp * Np; half_scale.comp adds
// them.
//
// Push constants: n = Np, m = Mp, k = Kp; oa, ob: the copies' offsets in
// uvec4 units (8 halves), oy: P's offset in floats; aux: steps per slice.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(std430, set = 0, binding = 0) readonly buffer BufA { uvec4 a16[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { uvec4 b16[]; };
layout(std430, set = 0, binding = 3) buffer BufY { float p_data[]; };

layout(push_constant) uniform PushConstants {
    uint n, m, k;
    uint oa, ob, oc, oy;
    float alpha, beta;
    uint flags, aux;
} pc;

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint BK = 64;

const uint BM = 128u, BN = 128u, PAD = 8u;
const uint STRIDE = BK + PAD;       // both tiles: rows of BK halves, k contiguous
shared float16_t As[BM * STRIDE];
shared float16_t Bs[BN * STRIDE];

const uint VECS = BM * BK / 8u / 256u;  // uvec4 (8 halves) of each tile per invocation
uvec4 a_reg[VECS];
uvec4 b_reg[VECS];

void fetch(uint row0, uint col0, uint k0)
{
    uint t = gl_LocalInvocationID.x, row_vecs = pc.k / 8u;
    for (uint l = 0u; l < VECS; l++) {
        uint q = t + l * 256u, r = q / (BK / 8u), c8 = q % (BK / 8u);
        a_reg[l] = a16[pc.oa + (row0 + r) * row_vecs + k0 / 8u + c8];
        b_reg[l] = b16[pc.ob + (col0 + r) * row_vecs + k0 / 8u + c8];
    }
}

void stash()
{
    uint t = gl_LocalInvocationID.x;
    for (uint l = 0u; l < VECS; l++) {
        uint q = t + l * 256u;
        uint at = (q / (BK / 8u)) * STRIDE + (q % (BK / 8u)) * 8u;
        f16vec2 h0 = unpackFloat2x16(a_reg[l].x), h1 = unpackFloat2x16(a_reg[l].y);
        f16vec2 h2 = unpackFloat2x16(a_reg[l].z), h3 = unpackFloat2x16(a_reg[l].w);
        As[at] = h0.x; As[at + 1u] = h0.y; As[at + 2u] = h1.x; As[at + 3u] = h1.y;
        As[at + 4u] = h2.x; As[at + 5u] = h2.y; As[at + 6u] = h3.x; As[at + 7u] = h3.y;
        h0 = unpackFloat2x16(b_reg[l].x), h1 = unpackFloat2x16(b_reg[l].y);
        h2 = unpackFloat2x16(b_reg[l].z), h3 = unpackFloat2x16(b_reg[l].w);
        Bs[at] = h0.x; Bs[at + 1u] = h0.y; Bs[at + 2u] = h1.x; Bs[at + 3u] = h1.y;
        Bs[at + 4u] = h2.x; Bs[at + 5u] = h2.y; Bs[at + 6u] = h3.x; Bs[at + 7u] = h3.y;
    }
}

#define COOP16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define COOP32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define LOAD_A(i) coopMatLoadNV(a##i, As, (wm * 64u + i * 16u) * STRIDE + kk, STRIDE, false)
#define LOAD_B(j) coopMatLoadNV(b##j, Bs, (wn * 32u + j * 16u) * STRIDE + kk, STRIDE, true)
#define MMA(i, j) c##i##j = coopMatMulAddNV(a##i, b##j, c##i##j)
#define STORE(i, j) coopMatStoreNV(c##i##j, p_data,                                     \
        out0 + (row0 + wm * 64u + i * 16u) * pc.n + col0 + wn * 32u + j * 16u, pc.n, false)

void main()
{
    uint warp = gl_LocalInvocationID.x / 32u;
    uint wm = warp / 4u, wn = warp % 4u;        // 2 x 4 subgroups
    uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
    uint first = gl_WorkGroupID.z * pc.aux, steps = min(pc.aux, pc.k / BK - first);
    uint out0 = pc.oy + gl_WorkGroupID.z * pc.m * pc.n;

    COOP32 c00 = COOP32(0.0), c01 = COOP32(0.0), c10 = COOP32(0.0), c11 = COOP32(0.0);
    COOP32 c20 = COOP32(0.0), c21 = COOP32(0.0), c30 = COOP32(0.0), c31 = COOP32(0.0);

    fetch(row0, col0, first * BK);
    for (uint s = 0u; s < steps; s++) {
        barrier();                  // the last step's tiles have been read
        stash();
        barrier();
        if (s + 1u < steps)
            fetch(row0, col0, (first + s + 1u) * BK);
        for (uint kk = 0u; kk < BK; kk += 16u) {
            COOP16 a0, a1, a2, a3, b0, b1;
            LOAD_A(0); LOAD_A(1); LOAD_A(2); LOAD_A(3);
            LOAD_B(0); LOAD_B(1);
            MMA(0, 0); MMA(0, 1); MMA(1, 0); MMA(1, 1);
            MMA(2, 0); MMA(2, 1); MMA(3, 0); MMA(3, 1);
        }
    }
    STORE(0, 0); STORE(0, 1); STORE(1, 0); STORE(1, 1);
    STORE(2, 0); STORE(2, 1); STORE(3, 0); STORE(3, 1);
}
