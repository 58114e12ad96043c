/* SPDX-License-Identifier: MIT */
#version 450
// matmul_coop.comp - C = alpha op(A) op(B) + beta C on the tensor cores
// (VK_NV_cooperative_matrix), used only when the configuration allows
// reduced precision (precision = f16): A and B are rounded to half
// precision as they enter shared memory, products accumulate in float32.
//
// A workgroup of 8 subgroups (256 invocations, subgroup size 32) computes a
// 128 x 128 tile of C; subgroup (wm, wn) of a 2 x 4 grid owns 64 x 32 of it,
// eight 16 x 16 float32 accumulators (separate variables, not an array, so
// that they stay in registers).  K advances BK (32 or 64) at a time, the
// next step's tiles fetched into registers while the current one is
// multiplied: the deeper the step, the more of the global loads' latency
// the multiplications hide.  Only whole tiles (m % 128 == n % 128 ==
// k % BK == 0, operands at multiples of 16 bytes): the host falls back to
// matmul.comp otherwise.

#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define RAYO_VEC4
#include "common.glsl"

// C is loaded and stored as float32 16 x 16 blocks: a scalar view of it
layout(std430, set = 0, binding = 2) readonly buffer BufC1 { float c_words[]; };
layout(std430, set = 0, binding = 3) buffer BufY1 { float y_words[]; };

layout(local_size_x = 256) in;
layout(constant_id = 1) const bool TRANS_A = false;
layout(constant_id = 2) const bool TRANS_B = false;
layout(constant_id = 3) const uint BK = 32;

const uint BM = 128u, BN = 128u, PAD = 8u;
// A tile: [BM][BK + PAD] (k contiguous) or, transposed, [BK][BM + PAD]
const uint A_STRIDE = TRANS_A ? BM + PAD : BK + PAD;
const uint B_STRIDE = TRANS_B ? BK + PAD : BN + PAD;
const uint A_SIZE = TRANS_A ? BK * (BM + PAD) : BM * (BK + PAD);
const uint B_SIZE = TRANS_B ? BN * (BK + PAD) : BK * (BN + PAD);
shared float16_t As[A_SIZE];
shared float16_t Bs[B_SIZE];

const uint A_VEC = BM * BK / 4u / 256u;     // vec4 of A per invocation (4)
const uint B_VEC = BN * BK / 4u / 256u;
vec4 a_reg[A_VEC];
vec4 b_reg[B_VEC];

void fetch(uint row0, uint col0, uint k0)
{
    uint t = gl_LocalInvocationID.x;
    for (uint l = 0u; l < A_VEC; l++) {
        uint q = t + l * 256u;
        if (TRANS_A) {   // A is k x m: rows of the tile along m
            uint kk = q / (BM / 4u), r4 = q % (BM / 4u);
            a_reg[l] = a_data[pc.oa + ((k0 + kk) * pc.m + row0) / 4u + r4];
        } else {
            uint r = q / (BK / 4u), c4 = q % (BK / 4u);
            a_reg[l] = a_data[pc.oa + ((row0 + r) * pc.k + k0) / 4u + c4];
        }
    }
    for (uint l = 0u; l < B_VEC; l++) {
        uint q = t + l * 256u;
        if (TRANS_B) {   // B is n x k
            uint c = q / (BK / 4u), k4 = q % (BK / 4u);
            b_reg[l] = b_data[pc.ob + ((col0 + c) * pc.k + k0) / 4u + k4];
        } else {
            uint kk = q / (BN / 4u), c4 = q % (BN / 4u);
            b_reg[l] = b_data[pc.ob + ((k0 + kk) * pc.n + col0) / 4u + c4];
        }
    }
}

// Both layouts keep the vector's 4 elements contiguous in shared memory.
void stash()
{
    uint t = gl_LocalInvocationID.x;
    for (uint l = 0u; l < A_VEC; l++) {
        uint q = t + l * 256u;
        uint at = TRANS_A ? (q / (BM / 4u)) * A_STRIDE + (q % (BM / 4u)) * 4u
                          : (q / (BK / 4u)) * A_STRIDE + (q % (BK / 4u)) * 4u;
        vec4 v = a_reg[l];
        As[at] = float16_t(v.x); As[at + 1u] = float16_t(v.y);
        As[at + 2u] = float16_t(v.z); As[at + 3u] = float16_t(v.w);
    }
    for (uint l = 0u; l < B_VEC; l++) {
        uint q = t + l * 256u;
        uint at = TRANS_B ? (q / (BK / 4u)) * B_STRIDE + (q % (BK / 4u)) * 4u
                          : (q / (BN / 4u)) * B_STRIDE + (q % (BN / 4u)) * 4u;
        vec4 v = b_reg[l];
        Bs[at] = float16_t(v.x); Bs[at + 1u] = float16_t(v.y);
        Bs[at + 2u] = float16_t(v.z); Bs[at + 3u] = float16_t(v.w);
    }
}

#define COOP16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define COOP32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
// fragment offsets in the shared tiles: row r of op(A) and column c of op(B), step kk
#define A_AT(r, kk) (TRANS_A ? (kk) * A_STRIDE + (r) : (r) * A_STRIDE + (kk))
#define B_AT(c, kk) (TRANS_B ? (c) * B_STRIDE + (kk) : (kk) * B_STRIDE + (c))
#define LOAD_A(i) coopMatLoadNV(a##i, As, A_AT(wm * 64u + i * 16u, kk), A_STRIDE, TRANS_A)
#define LOAD_B(j) coopMatLoadNV(b##j, Bs, B_AT(wn * 32u + j * 16u, kk), B_STRIDE, TRANS_B)
#define MMA(i, j) c##i##j = coopMatMulAddNV(a##i, b##j, c##i##j)
// C block (i, j) of this subgroup: alpha acc + beta C, stored as float32.
// Offsets of C and Y are in vec4 units (RAYO_VEC4): in floats, times 4.
#define STORE(i, j) {                                                         \
        uint r = row0 + wm * 64u + i * 16u, c = col0 + wn * 32u + j * 16u;     \
        COOP32 v = c##i##j * pc.alpha;                                        \
        if (pc.beta != 0.0) {                                                 \
            COOP32 cm;                                                        \
            coopMatLoadNV(cm, c_words, pc.oc * 4u + r * pc.n + c, pc.n, false); \
            v = v + cm * pc.beta;                                             \
        }                                                                     \
        coopMatStoreNV(v, y_words, pc.oy * 4u + r * pc.n + c, pc.n, false);   \
    }

void main()
{
    uint warp = gl_LocalInvocationID.x / 32u;
    uint wm = warp / 4u, wn = warp % 4u;        // 2 x 4 subgroups
    uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;

    COOP32 c00 = COOP32(0.0), c01 = COOP32(0.0), c10 = COOP32(0.0), c11 = COOP32(0.0);
    COOP32 c20 = COOP32(0.0), c21 = COOP32(0.0), c30 = COOP32(0.0), c31 = COOP32(0.0);

    uint steps = pc.k / BK;
    fetch(row0, col0, 0u);
    for (uint s = 0u; s < steps; s++) {
        barrier();                  // the last step's tiles have been read
        stash();
        barrier();
        if (s + 1u < steps)
            fetch(row0, col0, (s + 1u) * BK);
        for (uint kk = 0u; kk < BK; kk += 16u) {
            COOP16 a0, a1, a2, a3, b0, b1;
            LOAD_A(0); LOAD_A(1); LOAD_A(2); LOAD_A(3);
            LOAD_B(0); LOAD_B(1);
            MMA(0, 0); MMA(0, 1); MMA(1, 0); MMA(1, 1);
            MMA(2, 0); MMA(2, 1); MMA(3, 0); MMA(3, 1);
        }
    }
    STORE(0, 0) STORE(0, 1) STORE(1, 0) STORE(1, 1)
    STORE(2, 0) STORE(2, 1) STORE(3, 0) STORE(3, 1)
}
