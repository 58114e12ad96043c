/* SPDX-License-Identifier: MIT */
#version 450
// attention_dec.comp - relaxed attention of a few queries (decode: 1 to 4
// tokens) against a K/V cache in f32 or f16, grouped-query, causal or not.
//
// Plan: a workgroup is one subgroup of SG invocations (vk-infer.c sets
// the workgroup size to the device's subgroup size).  It takes one item =
// (query token, KV head, HG query heads of that KV head: HG the largest
// divisor of the group up to 8, so no lane idles) and one chunk of the
// keys, so each K and V value it reads serves all its heads.  The chunks spread a cache over the device:
// a decode step has only a few items.  The keys go SG at a time, a key a
// lane: each lane reads its key's K row and scores it against every
// head's query row (in shared memory: the same address for all lanes),
// so a score needs no reduction; a subgroupMax and a subgroupAdd per
// head and step give the online softmax (per head a running maximum m,
// sum l, and output acc rescaled by e^(m_old - m_new) when the maximum
// grows).  The step's weights go through shared memory to the lanes that
// own the output dimensions 2 (lane + i SG) and +1, which read the V rows
// of the step (coalesced) and accumulate in registers.  With one chunk
// the workgroup writes out = acc / l; else it writes (m, l, acc) of its
// chunk to the scratch in attention.glsl's layout and PASS 1 of
// attention.comp (the attention_f32 module) merges the chunks.  Loads
// have no branches around them (a key past the chunk reads the chunk's
// last one, with weight 0), so a step's loads are in flight together.
//
// Accuracy: the relaxed contract (2e-3, core/rayo-ops.h).  Scores, sums
// and outputs are float, as in attention.comp's RAYO_F32 module: a
// score's error moves its weight by the same relative amount, so scores
// are compensated sums (attention.glsl: about one rounding of the score
// where a plain sum of 128 products used up to 0.8 of the bound at scores
// near 3e3, the conformance group "attn-large").  The scale is folded
// into the query, which rounds once more (2^-24).
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
layout(constant_id = 3) const uint HG = 8u;     // query heads of a workgroup (divides the group)
layout(constant_id = 4) const uint SG = 32u;    // the subgroup (and workgroup) size
// f16 only: pc.ok, pc.ov, the K and V strides and D even, so that a pair
// of elements is one word
layout(constant_id = 5) const bool PAIRED = false;

const uint PAIRS = (D + 1u) / 2u;
const uint NP = (PAIRS + SG - 1u) / SG;         // output pairs of a lane

shared vec2 qs[HG * PAIRS];                     // the heads' query rows, scaled
shared float ps[HG * SG];                       // the step's weights

// Elements 2 pair and 2 pair + 1 of a K or V row starting at element
// `row`, pair < PAIRS (the second is 0 past an odd head_dim).
vec2 kv_pair(bool is_k, uint row, uint pair)
{
    uint i = (is_k ? pc.ok : pc.ov) + row + 2u * pair;
    bool second = 2u * pair + 1u < D;
    if (!KV_F16)
        return vec2(uintBitsToFloat(is_k ? k_data[i] : v_data[i]),
                    second ? uintBitsToFloat(is_k ? k_data[i + 1u] : v_data[i + 1u]) : 0.0);
    uint w = is_k ? k_data[i >> 1u] : v_data[i >> 1u];
    if (PAIRED)
        return vec2(f16_value(w & 0xffffu), f16_value(w >> 16u));
    uint w2 = is_k ? k_data[(i + 1u) >> 1u] : v_data[(i + 1u) >> 1u];
    uint lo = (i & 1u) == 0u ? w & 0xffffu : w >> 16u, hi = (i & 1u) == 0u ? w >> 16u : w2 & 0xffffu;
    return vec2(f16_value(lo), second ? f16_value(hi) : 0.0);
}

// This lane's output pair i (clamped: lanes past the row repeat its last).
uint lane_pair(uint i) { return min(gl_SubgroupInvocationID + i * SG, PAIRS - 1u); }
bool lane_owns(uint i) { return gl_SubgroupInvocationID + i * SG < PAIRS; }

void load_queries(uint token, uint head0)
{
    for (uint e = gl_SubgroupInvocationID; e < HG * PAIRS; e += SG) {
        uint g = e / PAIRS, d = 2u * (e % PAIRS);
        uint at = pc.oq + token * pc.q_token + (head0 + g) * pc.q_head + d;
        qs[e] = vec2(q_data[at], d + 1u < D ? q_data[at + 1u] : 0.0) * pc.scale;
    }
    barrier();
}

void attend(uint item, uint chunk)
{
    uint lane = gl_SubgroupInvocationID;
    uint hg = item % pc.head_groups, rest = item / pc.head_groups;
    uint n_kv_heads = pc.n_heads / pc.group;
    uint kv_head = rest % n_kv_heads, token = rest / n_kv_heads;
    uint head0 = kv_head * pc.group + hg * HG;
    uint visible = (pc.flags & 1u) != 0u ? pc.n_kv - pc.n_q + token + 1u : pc.n_kv;
    uint k0 = chunk * pc.tiles, k1 = min(k0 + pc.tiles, visible);
    barrier();                  // the previous item's readers of qs are done
    load_queries(token, head0);
    float m[HG], l[HG];
    vec2 acc[HG * NP];
    [[unroll]] for (uint g = 0u; g < HG; g++) {
        m[g] = -R_INF;
        l[g] = 0.0;
        [[unroll]] for (uint i = 0u; i < NP; i++)
            acc[g * NP + i] = vec2(0.0);
    }
    for (uint key0 = k0; key0 < k1; key0 += SG) {
        bool valid = key0 + lane < k1;
        uint key = min(key0 + lane, k1 - 1u);
        uint krow = key * pc.k_token + kv_head * pc.k_head;
        float s[HG], lost[HG];
        [[unroll]] for (uint g = 0u; g < HG; g++)
            s[g] = lost[g] = 0.0;
        [[unroll]] for (uint p = 0u; p < PAIRS; p++) {
            vec2 k = kv_pair(true, krow, p);
            [[unroll]] for (uint g = 0u; g < HG; g++)
                add_compensated(s[g], lost[g], dot(qs[g * PAIRS + p], k));
        }
        [[unroll]] for (uint g = 0u; g < HG; g++) {
            float m_new = max(m[g], subgroupMax(valid ? s[g] : -R_INF));
            float p = valid ? r_exp(s[g] - m_new) : 0.0, f = r_exp(m[g] - m_new);
            l[g] = l[g] * f + subgroupAdd(p);
            m[g] = m_new;
            ps[g * SG + lane] = p;
            [[unroll]] for (uint i = 0u; i < NP; i++)
                acc[g * NP + i] *= f;
        }
        barrier();
        // the step's V rows: lane owns pairs lane_pair(i); key key0 + j
        // past k1 reads k1 - 1 and counts as 0 (not 0 times its value:
        // an inf there is not this key's)
        [[unroll]] for (uint j = 0u; j < SG; j++) {
            uint row = min(key0 + j, k1 - 1u) * pc.v_token + kv_head * pc.v_head;
            [[unroll]] for (uint i = 0u; i < NP; i++) {
                vec2 v = kv_pair(false, row, lane_pair(i));
                v = key0 + j < k1 ? v : vec2(0.0);
                [[unroll]] for (uint g = 0u; g < HG; g++)
                    acc[g * NP + i] += ps[g * SG + j] * v;
            }
        }
        barrier();              // ps is rewritten by the next step
    }
    [[unroll]] for (uint g = 0u; g < HG; g++) {
        uint head = head0 + g, at = chunk_at(token, head, chunk, 1u);
        if ((pc.flags & 2u) == 0u && lane == 0u) {
            s_data[at] = floatBitsToUint(m[g]);
            s_data[at + 1u] = floatBitsToUint(l[g]);
        }
        [[unroll]] for (uint i = 0u; i < NP; i++) {
            if (!lane_owns(i))
                continue;
            uint d = 2u * lane_pair(i);
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
