/* SPDX-License-Identifier: MIT */
#version 450
// attention_dec.comp - relaxed attention of a few queries (decode: 1 to 4
// tokens) against a K/V cache in f32 or f16, grouped-query, causal or not.
//
// Plan: a workgroup is one subgroup (vk-infer.c sets its size to the
// device's subgroup size, SG).  It takes one item = (query token, KV
// head, up to HG query heads of that KV head: all of them for groups of
// up to 8) and one chunk of the keys, so each K and V value a workgroup
// reads serves all its heads.  The chunks spread a cache over the device:
// a decode step has only a few items.  Each lane holds pairs of
// dimensions 2 (lane + i SG) of the query rows (scaled), of KB keys' K
// and V rows loaded together (so their loads are in flight together), and
// of the heads' outputs; a score is the subgroupAdd of the lanes' partial
// dot products.  An online softmax runs in registers: per head a running
// maximum m, sum l and output acc, rescaled by e^(m_old - m_new) when the
// maximum grows; no shared memory, no barrier.  With one chunk the
// workgroup writes out = acc / l; else it writes (m, l, acc) of its chunk
// to the scratch in attention.glsl's layout and PASS 1 of attention.comp
// (the attention_f32 module) merges the chunks.
//
// Accuracy: the relaxed contract (2e-3, core/rayo-ops.h).  Scores, sums
// and outputs are float, as in attention.comp's RAYO_F32 module: a
// score's rounding error (~1e-7 relative to |q||k|) moves its weight by
// the same relative amount, far inside the bound unless scores reach
// ~1e3 (the conformance group "attn-large" measures that case).  The
// scale is folded into the query, which rounds once more (2^-24).
// Exponentials are rmath.glsl's r_exp (about 1 ulp); f16 values are
// decoded exactly (half.glsl).  Strict calls stay on attention.comp,
// whose header explains why they need double.

#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "rmath.glsl"
#include "half.glsl"

#include "attention.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool KV_F16 = false;
layout(constant_id = 2) const uint D = 64u;     // head_dim
layout(constant_id = 3) const uint HG = 8u;     // query heads of a workgroup
layout(constant_id = 4) const uint SG = 32u;    // the subgroup (and workgroup) size

const uint KB = 4u;                             // keys loaded together
const uint NP = (D + 2u * SG - 1u) / (2u * SG); // dimension pairs of a lane

// Elements d and d + 1 of a K or V row starting at element `row` (zero
// past head_dim).  An f16 pair that starts on a word is one load.
vec2 kv_pair(bool is_k, uint row, uint d)
{
    if (d >= D)
        return vec2(0.0);
    uint i = (is_k ? pc.ok : pc.ov) + row + d;
    bool second = d + 1u < D;
    if (!KV_F16)
        return vec2(uintBitsToFloat(is_k ? k_data[i] : v_data[i]),
                    second ? uintBitsToFloat(is_k ? k_data[i + 1u] : v_data[i + 1u]) : 0.0);
    uint w = is_k ? k_data[i >> 1u] : v_data[i >> 1u];
    if ((i & 1u) == 0u)
        return vec2(f16_value(w & 0xffffu), second ? f16_value(w >> 16u) : 0.0);
    uint w2 = second ? (is_k ? k_data[(i + 1u) >> 1u] : v_data[(i + 1u) >> 1u]) : 0u;
    return vec2(f16_value(w >> 16u), f16_value(w2 & 0xffffu));
}

uint lane_dim(uint i) { return 2u * (gl_SubgroupInvocationID + i * SG); }

void attend(uint item, uint chunk)
{
    uint hg = item % pc.head_groups, rest = item / pc.head_groups;
    uint n_kv_heads = pc.n_heads / pc.group;
    uint kv_head = rest % n_kv_heads, token = rest / n_kv_heads;
    uint head0 = kv_head * pc.group + hg * HG, heads = min(HG, pc.group - hg * HG);
    uint visible = (pc.flags & 1u) != 0u ? pc.n_kv - pc.n_q + token + 1u : pc.n_kv;
    uint k0 = chunk * pc.tiles, k1 = min(k0 + pc.tiles, visible);
    vec2 q[HG * NP], acc[HG * NP];
    float m[HG], l[HG];
    [[unroll]] for (uint g = 0u; g < HG; g++) {
        m[g] = -R_INF;
        l[g] = 0.0;
        [[unroll]] for (uint i = 0u; i < NP; i++) {
            uint d = lane_dim(i), at = pc.oq + token * pc.q_token + (head0 + g) * pc.q_head + d;
            vec2 x = vec2(0.0);
            if (g < heads && d < D)
                x = vec2(q_data[at], d + 1u < D ? q_data[at + 1u] : 0.0);
            q[g * NP + i] = x * pc.scale;
            acc[g * NP + i] = vec2(0.0);
        }
    }
    for (uint key0 = k0; key0 < k1; key0 += KB) {
        uint count = min(KB, k1 - key0);
        vec2 k[KB * NP], v[KB * NP];
        [[unroll]] for (uint j = 0u; j < KB; j++) {
            uint key = min(key0 + j, k1 - 1u);  // a repeated key past count: loaded, never used
            [[unroll]] for (uint i = 0u; i < NP; i++) {
                k[j * NP + i] = kv_pair(true, key * pc.k_token + kv_head * pc.k_head, lane_dim(i));
                v[j * NP + i] = kv_pair(false, key * pc.v_token + kv_head * pc.v_head, lane_dim(i));
            }
        }
        [[unroll]] for (uint g = 0u; g < HG; g++) {
            if (g >= heads)
                break;
            // the block's scores, then its online softmax step
            float s[KB], m_new = m[g];
            [[unroll]] for (uint j = 0u; j < KB; j++) {
                float part = 0.0;
                [[unroll]] for (uint i = 0u; i < NP; i++)
                    part += dot(q[g * NP + i], k[j * NP + i]);
                s[j] = subgroupAdd(part);
                if (j < count)
                    m_new = max(m_new, s[j]);
            }
            float f = r_exp(m[g] - m_new), sum = 0.0;
            [[unroll]] for (uint j = 0u; j < KB; j++) {
                s[j] = j < count ? r_exp(s[j] - m_new) : 0.0;
                sum += s[j];
            }
            l[g] = l[g] * f + sum;
            m[g] = m_new;
            [[unroll]] for (uint i = 0u; i < NP; i++) {
                vec2 a = acc[g * NP + i] * f;
                [[unroll]] for (uint j = 0u; j < KB; j++)
                    a += s[j] * v[j * NP + i];
                acc[g * NP + i] = a;
            }
        }
    }
    [[unroll]] for (uint g = 0u; g < HG; g++) {
        if (g >= heads)
            break;
        uint head = head0 + g;
        uint at = chunk_at(token, head, chunk, 1u);
        if ((pc.flags & 2u) == 0u && gl_SubgroupInvocationID == 0u) {
            s_data[at] = floatBitsToUint(m[g]);
            s_data[at + 1u] = floatBitsToUint(l[g]);
        }
        [[unroll]] for (uint i = 0u; i < NP; i++) {
            uint d = lane_dim(i);
            if (d >= D)
                continue;
            vec2 a = acc[g * NP + i];
            bool second = d + 1u < D;
            if ((pc.flags & 2u) != 0u) {
                uint o = pc.oo + token * pc.o_token + head * pc.o_head + d;
                o_data[o] = a.x / l[g];
                if (second)
                    o_data[o + 1u] = a.y / l[g];
                continue;
            }
            s_data[at + 2u + d] = floatBitsToUint(a.x);
            if (second)
                s_data[at + 3u + d] = floatBitsToUint(a.y);
        }
    }
}

void main()
{
    for (uint item = gl_WorkGroupID.y; item < pc.items; item += gl_NumWorkGroups.y)
        attend(item, gl_WorkGroupID.x);
}
