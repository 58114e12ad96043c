#version 450
// matmul_coop.comp - C = alpha op(A) op(B) + beta C on the tensor cores
// (VK_NV_cooperative_matrix), used only when the configuration allows
// reduced precision (precision = f16): A and B are rounded to half
// precision as they enter shared memory, products accumulate in float32.
//
// A workgroup of 8 subgroups (256 invocations, subgroup size 32) computes a
// 128 x 128 tile of C; subgroup (wm, wn) of a 2 x 4 grid owns 64 x 32 of it,
// eight 16 x 16 float32 accumulators.  K advances 32 at a time, the next
// step's tiles fetched into registers while the current one is multiplied.
// Only whole tiles (m % 128 == n % 128 == k % 32 == 0, operands at
// multiples of 16 bytes): the host falls back to matmul.comp otherwise.

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

const uint BM = 128u, BN = 128u, BK = 32u, PAD = 8u;
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

void main()
{
    uint warp = gl_LocalInvocationID.x / 32u;
    uint wm = warp / 4u, wn = warp % 4u;        // 2 x 4 subgroups
    uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;

    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[4][2];
    for (uint i = 0u; i < 4u; i++)
        for (uint j = 0u; j < 2u; j++)
            acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

    uint steps = pc.k / BK;
    fetch(row0, col0, 0u);
    for (uint s = 0u; s < steps; s++) {
        barrier();                  // the last step's tiles have been read
        stash();
        barrier();
        if (s + 1u < steps)
            fetch(row0, col0, (s + 1u) * BK);
        for (uint kk = 0u; kk < BK; kk += 16u) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> af[4];
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> bf[2];
            for (uint i = 0u; i < 4u; i++) {
                uint r = wm * 64u + i * 16u;
                uint at = TRANS_A ? kk * A_STRIDE + r : r * A_STRIDE + kk;
                coopMatLoadNV(af[i], As, at, A_STRIDE, TRANS_A);
            }
            for (uint j = 0u; j < 2u; j++) {
                uint c = wn * 32u + j * 16u;
                uint at = TRANS_B ? c * B_STRIDE + kk : kk * B_STRIDE + c;
                coopMatLoadNV(bf[j], Bs, at, B_STRIDE, TRANS_B);
            }
            for (uint i = 0u; i < 4u; i++)
                for (uint j = 0u; j < 2u; j++)
                    acc[i][j] = coopMatMulAddNV(af[i], bf[j], acc[i][j]);
        }
    }

    // offsets of C and Y are in vec4 units (RAYO_VEC4): in floats, x 4
    for (uint i = 0u; i < 4u; i++)
        for (uint j = 0u; j < 2u; j++) {
            uint r = row0 + wm * 64u + i * 16u, c = col0 + wn * 32u + j * 16u;
            fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> v = acc[i][j] * pc.alpha;
            if (pc.beta != 0.0) {
                fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> cm;
                coopMatLoadNV(cm, c_words, pc.oc * 4u + r * pc.n + c, pc.n, false);
                v = v + cm * pc.beta;
            }
            coopMatStoreNV(v, y_words, pc.oy * 4u + r * pc.n + c, pc.n, false);
        }
}
