/* SPDX-License-Identifier: MIT */
#version 450
// attention_decode.comp - out = softmax(scale Q K^T + causal mask) V for
// relaxed calls with a few queries (decode), grouped-query, K and V in f32
// or f16 with token and head strides: the float module of attention.comp
// (RAYO_F32) spends most of such a call in barriers and in one workgroup per
// tile of 32 keys, then a second dispatch merges the tiles.
//
// A workgroup of SUBGROUPS subgroups takes one item = (query token, KV
// head, group of up to HB of its query heads) and one chunk of the keys
// (usually all of them: one dispatch).  Subgroup w takes the tiles w, w +
// SUBGROUPS, .. of the chunk, a tile being one key per invocation: the
// invocation scores its key against the HB query rows (q in shared memory,
// read by broadcast), the subgroup runs an online softmax on the tile
// (subgroupMax, subgroupAdd: no workgroup barrier inside the loop), and for
// p V each invocation owns the dimensions lane, lane + subgroup size, ..
// (DR of them) of the HB heads (the V rows read coalesced, once for the HB
// heads; p from shared memory by broadcast).  At the end the subgroups' (m, l, acc) meet in
// shared memory: with one chunk the workgroup writes out = sum_w e^(m_w -
// M) acc_w / sum_w e^(m_w - M) l_w; else it writes the chunk's (m, l, acc)
// to the scratch s in attention.comp's layout, and attention_f32's PASS 1
// merges the chunks.
//
// Float throughout, the relaxed contract of core/rayo-ops.h (2e-3): a
// score's error e is a relative error near e in its weight.  Exponentials
// are rmath.glsl's r_exp (about 1 ulp); f16 values are decoded exactly
// (half.glsl).  The host keeps HB DR <= OUTS and HB head_dim <= SLAB.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "rmath.glsl"
#include "half.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufQ { float q_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { uint k_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { uint v_data[]; };
layout(std430, set = 0, binding = 3) buffer BufO { float o_data[]; };
layout(std430, set = 0, binding = 4) buffer BufS { uint s_data[]; };

// attention.comp's push constants; head_groups counts groups of HB heads
layout(push_constant) uniform PushConstants {
    uint head_dim, n_q, n_kv;
    uint oq, ok, ov, oo;        // offsets in elements (K, V: halves when KV_F16)
    float scale, unused;
    uint flags;                 // 1: causal; 2: one chunk (write out)
    uint os;                    // scratch word offset
    uint n_heads, group;        // group = query heads per KV head
    uint q_token, q_head, k_token, k_head, v_token, v_head, o_token, o_head;
    uint chunks, tiles;         // chunks of the keys, keys per chunk
    uint head_groups, items;    // ceil(group / HB); n_q * n_kv_heads * head_groups
} pc;

layout(local_size_x_id = 0) in;             // SUBGROUPS x the subgroup size
layout(constant_id = 1) const bool KV_F16 = false;
layout(constant_id = 3) const uint HB = 8u;          // query heads per item
layout(constant_id = 4) const bool K_PAIRS = false;  // f16 K rows start at even halves: a word per 2
layout(constant_id = 5) const uint DR = 2u;          // dimensions per invocation: ceil(head_dim / subgroup size)

const uint SUBGROUPS = 8u, OUTS = 16u, SLAB = 512u;

shared float qs[SLAB];                   // the item's HB query rows (HB head_dim <= SLAB)
// per subgroup: p of its tile (head, key) in the loop, then its acc
shared float slab[SUBGROUPS * SLAB];
shared float m_sub[SUBGROUPS * 8u], l_sub[SUBGROUPS * 8u];

float kv_value(bool is_k, uint e)
{
    uint i = (is_k ? pc.ok : pc.ov) + e;
    if (!KV_F16)
        return uintBitsToFloat(is_k ? k_data[i] : v_data[i]);
    uint w = is_k ? k_data[i >> 1u] : v_data[i >> 1u];
    return f16_value((w >> (16u * (i & 1u))) & 0xffffu);
}

// s[g] = scale q_g . k for the invocation's key at `row` (its first element).
void score_key(uint row, inout float s[8])
{
    [[unroll]] for (uint g = 0u; g < HB; g++) s[g] = 0.0;
    if (K_PAIRS) {
        uint w0 = (pc.ok + row) >> 1u;
        for (uint d = 0u; d < pc.head_dim; d += 2u) {
            uint w = k_data[w0 + (d >> 1u)];
            float k0 = f16_value(w & 0xffffu), k1 = f16_value(w >> 16u);
            [[unroll]] for (uint g = 0u; g < HB; g++)
                s[g] += qs[g * pc.head_dim + d] * k0 + qs[g * pc.head_dim + d + 1u] * k1;
        }
    } else {
        for (uint d = 0u; d < pc.head_dim; d++) {
            float k = kv_value(true, row + d);
            [[unroll]] for (uint g = 0u; g < HB; g++)
                s[g] += qs[g * pc.head_dim + d] * k;
        }
    }
    [[unroll]] for (uint g = 0u; g < HB; g++) s[g] *= pc.scale;
}

// One tile of `count` keys from key0 into the subgroup's running m, l and
// the invocation's acc.
void tile(uint key0, uint count, uint kv_head, uint heads, inout float m[8], inout float l[8],
          inout float acc[OUTS])
{
    uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID, width = gl_SubgroupSize;
    bool live = lane < count;
    float s[8];
    score_key((key0 + min(lane, count - 1u)) * pc.k_token + kv_head * pc.k_head, s);
    [[unroll]] for (uint g = 0u; g < HB; g++) {
        float m_new = max(m[g], subgroupMax(live ? s[g] : -R_INF));
        float p = live ? r_exp(s[g] - m_new) : 0.0;
        float shrink = r_exp(m[g] - m_new);
        l[g] = l[g] * shrink + subgroupAdd(p);
        m[g] = m_new;
        slab[sg * SLAB + g * width + lane] = p;
        [[unroll]] for (uint r = 0u; r < DR; r++) acc[g * DR + r] *= shrink;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint r = 0u; r < DR; r++) {
        uint d = lane + r * width;
        if (d >= pc.head_dim)
            break;
        uint row = key0 * pc.v_token + kv_head * pc.v_head + d;
        for (uint j = 0u; j < count; j++) {
            float v = kv_value(false, row + j * pc.v_token);
            [[unroll]] for (uint g = 0u; g < HB; g++)
                acc[g * DR + r] += slab[sg * SLAB + g * width + j] * v;
        }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();          // p is rewritten by the next tile
}

// Scratch: per (token, head, chunk) m, l, then acc[head_dim] (attention.comp's PASS 1).
uint chunk_at(uint token, uint head, uint chunk)
{
    return pc.os + ((token * pc.n_heads + head) * pc.chunks + chunk) * (pc.head_dim + 2u);
}

// The subgroups' (m, l, acc) joined: out, or the chunk's scratch entry.
void finish(uint token, uint head0, uint heads, uint chunk)
{
    uint t = gl_LocalInvocationID.x;
    for (uint o = t; o < heads * pc.head_dim; o += gl_WorkGroupSize.x) {
        uint g = o / pc.head_dim, d = o % pc.head_dim;
        float mx = -R_INF;
        for (uint w = 0u; w < gl_NumSubgroups; w++)
            if (l_sub[w * 8u + g] > 0.0)
                mx = max(mx, m_sub[w * 8u + g]);
        float l = 0.0, a = 0.0;
        for (uint w = 0u; w < gl_NumSubgroups; w++) {
            float lw = l_sub[w * 8u + g];
            if (lw == 0.0)
                continue;       // no keys (or every key masked) in that subgroup
            float f = r_exp(m_sub[w * 8u + g] - mx);
            l += f * lw;
            a += f * slab[w * SLAB + o];
        }
        uint head = head0 + g;
        if ((pc.flags & 2u) != 0u) {
            o_data[pc.oo + token * pc.o_token + head * pc.o_head + d] = a / l;
            continue;
        }
        uint at = chunk_at(token, head, chunk);
        if (d == 0u) {
            s_data[at] = floatBitsToUint(mx);
            s_data[at + 1u] = floatBitsToUint(l);
        }
        s_data[at + 2u + d] = floatBitsToUint(a);
    }
}

void attend(uint item, uint chunk)
{
    uint t = gl_LocalInvocationID.x, lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
    uint width = gl_SubgroupSize;
    uint hg = item % pc.head_groups, rest = item / pc.head_groups;
    uint n_kv_heads = pc.n_heads / pc.group;
    uint kv_head = rest % n_kv_heads, token = rest / n_kv_heads;
    uint head0 = kv_head * pc.group + hg * HB, heads = min(HB, pc.group - hg * HB);
    uint visible = (pc.flags & 1u) != 0u ? pc.n_kv - pc.n_q + token + 1u : pc.n_kv;
    uint k0 = chunk * pc.tiles, k1 = min(k0 + pc.tiles, visible);
    barrier();                  // the previous item's readers of qs and slab are done
    for (uint e = t; e < HB * pc.head_dim; e += gl_WorkGroupSize.x) {
        uint g = e / pc.head_dim, d = e % pc.head_dim;
        qs[e] = g < heads ? q_data[pc.oq + token * pc.q_token + (head0 + g) * pc.q_head + d] : 0.0;
    }
    barrier();
    float m[8], l[8], acc[OUTS];
    [[unroll]] for (uint g = 0u; g < 8u; g++) {
        m[g] = -R_INF;
        l[g] = 0.0;
    }
    [[unroll]] for (uint i = 0u; i < OUTS; i++) acc[i] = 0.0;
    for (uint key0 = k0 + sg * width; key0 < k1; key0 += gl_NumSubgroups * width)
        tile(key0, min(width, k1 - key0), kv_head, heads, m, l, acc);
    [[unroll]] for (uint r = 0u; r < DR; r++) {
        uint d = lane + r * width;
        if (d >= pc.head_dim)
            break;
        [[unroll]] for (uint g = 0u; g < HB; g++) slab[sg * SLAB + g * pc.head_dim + d] = acc[g * DR + r];
    }
    if (subgroupElect())
        [[unroll]] for (uint g = 0u; g < HB; g++) {
            m_sub[sg * 8u + g] = m[g];
            l_sub[sg * 8u + g] = l[g];
        }
    barrier();
    finish(token, head0, heads, chunk);
}

void main()
{
    for (uint item = gl_WorkGroupID.y; item < pc.items; item += gl_NumWorkGroups.y)
        attend(item, gl_WorkGroupID.x);
}
