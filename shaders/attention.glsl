/* SPDX-License-Identifier: MIT */
// attention.glsl - what attention.comp and attention_dec.comp share: the
// operands, the push constants (vk-infer.c's attention_push) and the
// scratch layout of the chunks that PASS 1 of attention.comp merges.

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

#endif
