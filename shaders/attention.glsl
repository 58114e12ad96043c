/* SPDX-License-Identifier: MIT */
// attention.glsl - what the attention shaders share: the operands, the
// push constants (vk-infer.c's attention_push), the scratch layout of the
// chunks that PASS 1 of attention.comp merges, and the compensated sum of
// their float scores.

#ifndef RAYO_ATTENTION_GLSL
#define RAYO_ATTENTION_GLSL

layout(std430, set = 0, binding = 0) readonly buffer BufQ { float q_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { uint k_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { uint v_data[]; };
layout(std430, set = 0, binding = 3) buffer BufO { float o_data[]; };
layout(std430, set = 0, binding = 4) buffer BufS { uint s_data[]; };

// vk_push: the common fields, then ext[]
layout(push_constant) uniform PushConstants {
    uint head_dim, n_q, n_kv;
    uint oq, ok, ov, oo;        // offsets in elements (K, V: halves when KV_F16)
    float scale, unused;
    uint flags;                 // 1: causal; 2: one chunk (PASS 0 writes out)
    uint os;                    // scratch word offset
    uint n_heads, group;        // group = query heads per KV head
    uint q_token, q_head, k_token, k_head, v_token, v_head, o_token, o_head;
    uint chunks, tiles;         // chunks of the keys; per chunk: tiles of TILE keys
                                // (attention.comp), keys (attention_dec.comp)
    uint head_groups, items;    // ceil(group / 8); n_q * n_kv_heads * head_groups
} pc;

// Scratch: per (token, head, chunk) m, l, then acc[head_dim], `words`
// words each (2: doubles; 1: floats).
uint chunk_at(uint token, uint head, uint chunk, uint words)
{
    return pc.os + words * (((token * pc.n_heads + head) * pc.chunks + chunk) * (pc.head_dim + 2u));
}

// s += term as a compensated (Kahan) sum, lost holding what s has rounded
// away so far.  Float scores are sums of head_dim products; where scores
// are near 3e3 (the conformance group "attn-large") a plain sum of 128
// terms near 400 is off by ~5e-4, which moves every weight by that
// relative amount: most of the relaxed contract's 2e-3.  `precise` keeps
// the compiler from folding (t - s) - y to zero.
void add_compensated(inout float s, inout float lost, float term)
{
    precise float y = term - lost;
    precise float t = s + y;
    precise float c = (t - s) - y;
    lost = c;
    s = t;
}

#endif
