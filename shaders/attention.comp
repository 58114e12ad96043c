/* SPDX-License-Identifier: MIT */
#version 450
// attention.comp - out = softmax(scale Q K^T + causal mask) V, grouped-query,
// K and V in f32 or f16 with token and head strides.  One fused shader: no
// score matrix is materialised beyond one tile of 32 keys in shared memory.
//
// PASS 0: a workgroup of 256 takes one item = (query token i, KV head, group
// of up to 8 of its query heads) and one chunk of the keys, in tiles of 32
// with an online softmax across tiles: per head a running maximum m, sum l
// and output acc, rescaled by e^(m_old - m_new) when the maximum grows.  A
// tile's K rows are staged in shared memory (128 columns at a time) by
// loads spread over the workgroup; its scores take 32 invocations per
// head of the group, each head's dot products split over
// 8 / heads parts of head_dim when the group has fewer than 8 heads, so all
// 256 invocations score; the tile's V values are loaded all at once per
// output.  With one chunk it writes out = acc / l; else (m, l, acc) of the
// chunk go to the scratch buffer s, and
// PASS 1 merges the chunks of each (token, head): out = sum_c e^(m_c - M)
// acc_c / sum_c e^(m_c - M) l_c.  Short chunks (a tile each in decode)
// spread a cache over the device: a decode step has only a few items.
//
// Accuracy (strict, the default module): scores are dot products in double
// (a score's error moves every probability by the same relative amount: in
// float it would exceed the 1e-5 contract for peaky softmax), l and acc are
// double, and so is the scratch.  RAYO_F32 (the attention_f32 module, for
// relaxed calls: a 2e-3 contract) keeps all of them in float and needs no
// shaderFloat64; its scores are compensated sums (attention.glsl), since a
// plain float sum of a head's products used up to the whole bound at
// scores near 3e3.
// Exponentials are rmath.glsl's r_exp of the float
// difference (about 1 ulp); f16 values are decoded exactly (half.glsl).

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "rmath.glsl"
#include "half.glsl"

#include "attention.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const bool KV_F16 = false;
layout(constant_id = 2) const uint PASS = 0u;

#ifdef RAYO_F32
#define ACC float
#define ACC_WORDS 1u
#define ACC_LOW (-R_INF)       // m before the first key: e^(m - m_new) = 0
#else
#define ACC double
#define ACC_WORDS 2u
const double ACC_LOW = -1.0e300LF;
#endif

const uint WG = 256u, TILE = 32u, HEADS = 8u, DMAX = 256u, OUTS = HEADS * DMAX / WG;
// K rows are staged KD columns at a time, so that the shared memory
// (27.3 KiB) stays within 32 KiB, lavapipe's limit, at head_dim 256
const uint KD = 128u;
const uint KSTRIDE = KD + 1u;   // odd: invocations of one key apiece hit distinct banks

shared float qs[HEADS * DMAX];          // the group's query rows
shared float ks[TILE * KSTRIDE];        // columns [b0, b0 + KD) of the tile's K rows
shared ACC score[HEADS * TILE];         // (part, head, key) partial dot products, then (head, key)
shared float prob[HEADS * TILE];
shared ACC m_run[HEADS], l_run[HEADS];
shared float shrink[HEADS];

float kv_value(bool is_k, uint e)
{
    uint i = (is_k ? pc.ok : pc.ov) + e;
    if (!KV_F16)
        return uintBitsToFloat(is_k ? k_data[i] : v_data[i]);
    uint w = is_k ? k_data[i >> 1u] : v_data[i >> 1u];
    return f16_value((w >> (16u * (i & 1u))) & 0xffffu);
}

// ---- PASS 0 ----------------------------------------------------------------------

// Columns [b0, b0 + width) of the tile's `count` K rows into ks (zeros past them).
void stage_keys(uint key0, uint count, uint kv_head, uint b0, uint width)
{
    for (uint e = gl_LocalInvocationID.x; e < TILE * width; e += WG) {
        uint j = e / width, d = e % width;
        uint at = (key0 + j) * pc.k_token + kv_head * pc.k_head + b0 + d;
        ks[j * KSTRIDE + d] = j < count ? kv_value(true, at) : 0.0;
    }
}

// score[(head, key)] = scale q . k for the tile: invocation t takes key
// t % 32 of head slot t / 32 % slots and part t / 32 / slots of head_dim,
// where slots (a power of two from heads to 8) times parts is 8.
void tile_scores(uint key0, uint count, uint kv_head, uint heads)
{
    uint t = gl_LocalInvocationID.x, j = t % TILE, slot = t / TILE;
    uint slots = heads <= 1u ? 1u : heads <= 2u ? 2u : heads <= 4u ? 4u : 8u, parts = HEADS / slots;
    uint g = slot % slots, part = slot / slots, span = (pc.head_dim + parts - 1u) / parts;
    uint d0 = part * span, d1 = min(d0 + span, pc.head_dim);
    ACC s = ACC(0.0);
#ifdef RAYO_F32
    float lost = 0.0;           // add_compensated's remainder
#endif
    for (uint b0 = 0u; b0 < pc.head_dim; b0 += KD) {
        uint width = min(KD, pc.head_dim - b0);
        barrier();              // the last block's (or tile's) readers of ks are done
        stage_keys(key0, count, kv_head, b0, width);
        barrier();
        if (g < heads)
            for (uint d = max(d0, b0); d < min(d1, b0 + width); d++) {
#ifdef RAYO_F32
                add_compensated(s, lost, qs[g * DMAX + d] * ks[j * KSTRIDE + d - b0]);
#else
                s += ACC(qs[g * DMAX + d]) * ACC(ks[j * KSTRIDE + d - b0]);
#endif
            }
    }
    score[t] = s;
    barrier();
    // part 0's entry t = g * 32 + j is read and written by invocation t alone
    if (t < slots * TILE) {
        for (uint p = 1u; p < parts; p++)
            s += score[t + p * slots * TILE];
        score[t] = s * ACC(pc.scale);
    }
}

// Online softmax step over the tile's `count` keys: prob[] of the tile
// against the heads' new maxima; then m, l of each head and the factor
// `shrink` for the output accumulated so far.
void tile_softmax(uint count, uint heads)
{
    uint t = gl_LocalInvocationID.x, g = t / TILE, j = t % TILE;
    ACC m_new = ACC_LOW;
    if (g < heads) {
        m_new = m_run[g];
        for (uint e = 0u; e < count; e++)
            m_new = max(m_new, score[g * TILE + e]);
        prob[t] = j < count ? r_exp(float(score[t] - m_new)) : 0.0;
    }
    barrier();
    if (g < heads && j == 0u) {
        ACC sum = ACC(0.0);
        for (uint e = 0u; e < count; e++)
            sum += ACC(prob[g * TILE + e]);
        float f = r_exp(float(m_run[g] - m_new));
        shrink[g] = f;
        l_run[g] = l_run[g] * ACC(f) + sum;
        m_run[g] = m_new;
    }
}

// acc of outputs o = t, t + 256, ... (head o / head_dim, dimension o %
// head_dim) over the tile's V rows; the TILE loads of one output are
// independent, so they are in flight together.
void tile_values(uint key0, uint count, uint kv_head, uint heads, inout ACC acc[OUTS])
{
    uint t = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0u; i < OUTS; i++) {
        uint o = t + i * WG, g = o / pc.head_dim, d = o % pc.head_dim;
        if (g >= heads)
            break;
        uint row = key0 * pc.v_token + kv_head * pc.v_head + d;
        float v[TILE];
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            v[j] = j < count ? kv_value(false, row + j * pc.v_token) : 0.0;
        ACC a = acc[i] * ACC(shrink[g]);
        [[unroll]] for (uint j = 0u; j < TILE; j++)
            a += ACC(prob[g * TILE + j]) * ACC(v[j]);
        acc[i] = a;
    }
}

void store_acc(uint at, ACC v)
{
#ifdef RAYO_F32
    s_data[at] = floatBitsToUint(v);
#else
    uvec2 b = unpackDouble2x32(v);
    s_data[at] = b.x;
    s_data[at + 1u] = b.y;
#endif
}

ACC load_acc(uint at)
{
#ifdef RAYO_F32
    return uintBitsToFloat(s_data[at]);
#else
    return packDouble2x32(uvec2(s_data[at], s_data[at + 1u]));
#endif
}

void attend_chunk(uint item, uint chunk)
{
    uint t = gl_LocalInvocationID.x;
    uint hg = item % pc.head_groups, rest = item / pc.head_groups;
    uint n_kv_heads = pc.n_heads / pc.group;
    uint kv_head = rest % n_kv_heads, token = rest / n_kv_heads;
    uint head0 = kv_head * pc.group + hg * HEADS, heads = min(HEADS, pc.group - hg * HEADS);
    uint visible = (pc.flags & 1u) != 0u ? pc.n_kv - pc.n_q + token + 1u : pc.n_kv;
    uint k0 = chunk * pc.tiles * TILE, k1 = min(k0 + pc.tiles * TILE, visible);
    barrier();                  // the previous item's readers of qs, m_run, l_run are done
    for (uint e = t; e < heads * pc.head_dim; e += WG) {
        uint g = e / pc.head_dim, d = e % pc.head_dim;
        qs[g * DMAX + d] = q_data[pc.oq + token * pc.q_token + (head0 + g) * pc.q_head + d];
    }
    if (t < HEADS) {
        m_run[t] = ACC_LOW;
        l_run[t] = ACC(0.0);
    }
    // qs, m_run and l_run as set above for every invocation: a chunk past
    // a causal row's last key stores m_run and l_run with no tile's
    // barriers in between (without this one, invocations 128 and up could
    // store the previous workgroup's values, which a GPU shows and lavapipe
    // does not)
    barrier();
    ACC acc[OUTS];
    [[unroll]] for (uint i = 0u; i < OUTS; i++) acc[i] = ACC(0.0);
    for (uint key0 = k0; key0 < k1; key0 += TILE) {
        uint count = min(TILE, k1 - key0);
        tile_scores(key0, count, kv_head, heads);
        barrier();
        tile_softmax(count, heads);
        barrier();
        tile_values(key0, count, kv_head, heads, acc);
        barrier();              // ks, score and prob are rewritten by the next tile
    }
    [[unroll]] for (uint i = 0u; i < OUTS; i++) {
        uint o = t + i * WG, g = o / pc.head_dim, d = o % pc.head_dim;
        if (g >= heads)
            break;
        uint head = head0 + g;
        if ((pc.flags & 2u) != 0u) {
            o_data[pc.oo + token * pc.o_token + head * pc.o_head + d] = float(acc[i] / l_run[g]);
            continue;
        }
        uint at = chunk_at(token, head, chunk, ACC_WORDS);
        if (d == 0u) {
            store_acc(at, m_run[g]);
            store_acc(at + ACC_WORDS, l_run[g]);
        }
        store_acc(at + ACC_WORDS * (2u + d), acc[i]);
    }
}

// ---- PASS 1 ----------------------------------------------------------------------

void merge(uint item)           // item = token * n_heads + head
{
    uint token = item / pc.n_heads, head = item % pc.n_heads;
    uint base = chunk_at(token, head, 0u, ACC_WORDS), stride = ACC_WORDS * (pc.head_dim + 2u);
    ACC mx = ACC_LOW;
    for (uint c = 0u; c < pc.chunks; c++)
        if (load_acc(base + c * stride + ACC_WORDS) > ACC(0.0))
            mx = max(mx, load_acc(base + c * stride));
    for (uint d = gl_LocalInvocationID.x; d < pc.head_dim; d += WG) {
        ACC l = ACC(0.0), a = ACC(0.0);
        for (uint c = 0u; c < pc.chunks; c++) {
            uint at = base + c * stride;
            ACC lc = load_acc(at + ACC_WORDS);
            if (lc == ACC(0.0))
                continue;       // every key of the chunk masked
            ACC w = ACC(r_exp(float(load_acc(at) - mx)));
            l += w * lc;
            a += w * load_acc(at + ACC_WORDS * (2u + d));
        }
        o_data[pc.oo + token * pc.o_token + head * pc.o_head + d] = float(a / l);
    }
}

void main()
{
    if (PASS == 0u) {
        for (uint item = gl_WorkGroupID.y; item < pc.items; item += gl_NumWorkGroups.y)
            attend_chunk(item, gl_WorkGroupID.x);
    } else {
        for (uint item = gl_WorkGroupID.x; item < pc.n_q * pc.n_heads; item += gl_NumWorkGroups.x)
            merge(item);
    }
}
