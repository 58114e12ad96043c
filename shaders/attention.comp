/* SPDX-License-Identifier: MIT */
#version 450
// attention.comp - out = softmax(scale Q K^T + causal mask) V, grouped-query,
// K and V in f32 or f16 with token and head strides.  One fused shader: no
// score matrix is materialised beyond one tile of 128 keys in shared memory.
//
// PASS 0: a workgroup takes one item = (query token i, KV head, group of up
// to 8 of its query heads) and one chunk of the keys, in tiles of 128 (one
// key per invocation), with an online softmax across tiles: per head a
// running maximum m, sum l and output acc, rescaled by e^(m_old - m_new)
// when the maximum grows.  Each K and V row is read once for all heads of
// the group.  With one chunk it writes out = acc / l; else (m, l, acc) of
// the chunk go to the scratch buffer s, and
// PASS 1 merges the chunks of each (token, head): out = sum_c e^(m_c - M)
// acc_c / sum_c e^(m_c - M) l_c.  Chunks spread a long cache (decode) over
// the device.
//
// Accuracy: scores are dot products in double (a score's error moves every
// probability by the same relative amount: in float it would exceed the
// 1e-5 contract for peaky softmax), l and acc are double; exponentials are
// rmath.glsl's r_exp of the float difference (about 1 ulp); f16 values
// are decoded exactly (half.glsl).

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "rmath.glsl"
#include "half.glsl"

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
    uint chunks, tiles;         // chunks of the keys, tiles of 128 keys per chunk
    uint head_groups, items;    // ceil(group / 8); n_q * n_kv_heads * head_groups
} pc;

layout(local_size_x = 128) in;
layout(constant_id = 1) const bool KV_F16 = false;
layout(constant_id = 2) const uint PASS = 0u;

const uint TILE = 128u, HEADS = 8u, DMAX = 256u, OUTS = HEADS * DMAX / TILE;

shared float qs[HEADS * DMAX];          // the group's query rows
shared double score[HEADS * TILE];
shared float prob[HEADS * TILE];
shared double part_max[HEADS * 16u], part_sum[HEADS * 16u];

float kv_value(bool is_k, uint e)
{
    uint i = (is_k ? pc.ok : pc.ov) + e;
    if (!KV_F16)
        return uintBitsToFloat(is_k ? k_data[i] : v_data[i]);
    uint w = is_k ? k_data[i >> 1u] : v_data[i >> 1u];
    return f16_value((w >> (16u * (i & 1u))) & 0xffffu);
}

// BURST values of K or V (elements row + (i0 + j) stride, 0 past `end`),
// loaded before any is used: a loop that loads one value and adds it
// before the next load waits out the memory latency on every value, and
// decode has too few workgroups to hide it.
const uint BURST = 16u;

void load_burst(bool is_k, uint row, uint stride, uint i0, uint end, out float v[BURST])
{
    [[unroll]] for (uint j = 0u; j < BURST; j++)
        v[j] = i0 + j < end ? kv_value(is_k, row + (i0 + j) * stride) : 0.0;
}

// ---- PASS 0 ----------------------------------------------------------------------

// Scores of this invocation's key (if below end) for the group's heads.
void tile_scores(uint key, uint end, uint kv_head, uint heads)
{
    uint t = gl_LocalInvocationID.x;
    double s[HEADS];
    [[unroll]] for (uint g = 0u; g < HEADS; g++)
        s[g] = 0.0LF;
    if (key < end) {
        uint row = key * pc.k_token + kv_head * pc.k_head;
        for (uint d0 = 0u; d0 < pc.head_dim; d0 += BURST) {
            float kb[BURST];
            load_burst(true, row, 1u, d0, pc.head_dim, kb);
            [[unroll]] for (uint j = 0u; j < BURST; j++) {
                if (d0 + j >= pc.head_dim)
                    break;
                double k = double(kb[j]);
                [[unroll]] for (uint g = 0u; g < HEADS; g++)
                    if (g < heads)
                        s[g] += double(qs[g * DMAX + d0 + j]) * k;
            }
        }
    }
    [[unroll]] for (uint g = 0u; g < HEADS; g++)
        score[g * TILE + t] = s[g] * double(pc.scale);
}

// Online softmax step over the tile's `count` keys: prob[] of the tile
// (against the new maxima), and for every head the new running maximum m,
// sum l, and the factor `shrink` for the output accumulated so far.
// Invocation t works on the keys t % 16, t % 16 + 16, ... of head t / 16;
// m, l and shrink come out the same in every invocation.
void tile_softmax(uint count, inout double m[HEADS], inout double l[HEADS], out float shrink[HEADS])
{
    uint t = gl_LocalInvocationID.x, g = t >> 4u, sub = t & 15u;
    double mx = -1.0e300LF;
    for (uint e = sub; e < count; e += 16u)
        mx = max(mx, score[g * TILE + e]);
    part_max[g * 16u + sub] = mx;
    barrier();
    double tile_max = -1.0e300LF;
    for (uint i = 0u; i < 16u; i++)
        tile_max = max(tile_max, part_max[g * 16u + i]);
    double m_new = max(m[g], tile_max);
    double sum = 0.0LF;
    for (uint e = sub; e < count; e += 16u) {
        float p = r_exp(float(score[g * TILE + e] - m_new));
        prob[g * TILE + e] = p;
        sum += double(p);
    }
    part_sum[g * 16u + sub] = sum;
    barrier();
    [[unroll]] for (uint h = 0u; h < HEADS; h++) {
        double hmax = -1.0e300LF, hsum = 0.0LF;
        for (uint i = 0u; i < 16u; i++) {
            hmax = max(hmax, part_max[h * 16u + i]);
            hsum += part_sum[h * 16u + i];
        }
        double mn = max(m[h], hmax);
        shrink[h] = r_exp(float(m[h] - mn));
        l[h] = l[h] * double(shrink[h]) + hsum;
        m[h] = mn;
    }
}

void write_chunk(uint token, uint head, uint chunk, uint d, double m, double l, double acc)
{
    uint stride = pc.head_dim + 2u;     // doubles per (token, head, chunk)
    uint at = pc.os + 2u * (((token * pc.n_heads + head) * pc.chunks + chunk) * stride);
    if (d == 0u) {
        uvec2 mb = unpackDouble2x32(m), lb = unpackDouble2x32(l);
        s_data[at] = mb.x; s_data[at + 1u] = mb.y;
        s_data[at + 2u] = lb.x; s_data[at + 3u] = lb.y;
    }
    uvec2 ab = unpackDouble2x32(acc);
    s_data[at + 4u + 2u * d] = ab.x;
    s_data[at + 5u + 2u * d] = ab.y;
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
    for (uint e = t; e < heads * pc.head_dim; e += TILE) {
        uint g = e / pc.head_dim, d = e % pc.head_dim;
        qs[g * DMAX + d] = q_data[pc.oq + token * pc.q_token + (head0 + g) * pc.q_head + d];
    }
    double m[HEADS], l[HEADS], acc[OUTS];
    [[unroll]] for (uint h = 0u; h < HEADS; h++) { m[h] = -1.0e300LF; l[h] = 0.0LF; }
    [[unroll]] for (uint o = 0u; o < OUTS; o++) acc[o] = 0.0LF;
    barrier();
    for (uint key0 = k0; key0 < k1; key0 += TILE) {
        uint count = min(TILE, k1 - key0);
        tile_scores(key0 + t, k1, kv_head, heads);
        barrier();
        float shrink[HEADS];
        tile_softmax(count, m, l, shrink);
        // outputs o = t, t + 128, ...: head o / head_dim, dimension o % head_dim
        [[unroll]] for (uint i = 0u; i < OUTS; i++) {
            uint o = t + i * TILE, g = o / pc.head_dim, d = o % pc.head_dim;
            if (g >= heads)
                break;
            double a = acc[i] * double(shrink[g]);
            uint row = key0 * pc.v_token + kv_head * pc.v_head + d;
            for (uint e0 = 0u; e0 < count; e0 += BURST) {
                float vb[BURST];
                load_burst(false, row, pc.v_token, e0, count, vb);
                [[unroll]] for (uint j = 0u; j < BURST; j++) {
                    if (e0 + j >= count)
                        break;
                    a += double(prob[g * TILE + e0 + j]) * double(vb[j]);
                }
            }
            acc[i] = a;
        }
        barrier();              // score and prob are rewritten by the next tile
    }
    [[unroll]] for (uint i = 0u; i < OUTS; i++) {
        uint o = t + i * TILE, g = o / pc.head_dim, d = o % pc.head_dim;
        if (g >= heads)
            break;
        uint head = head0 + g;
        if ((pc.flags & 2u) != 0u)
            o_data[pc.oo + token * pc.o_token + head * pc.o_head + d] = float(acc[i] / l[g]);
        else
            write_chunk(token, head, chunk, d, m[g], l[g], acc[i]);
    }
}

// ---- PASS 1 ----------------------------------------------------------------------

double scratch_double(uint at) { return packDouble2x32(uvec2(s_data[at], s_data[at + 1u])); }

void merge(uint item)           // item = token * n_heads + head
{
    uint token = item / pc.n_heads, head = item % pc.n_heads, stride = pc.head_dim + 2u;
    uint base = pc.os + 2u * item * pc.chunks * stride;
    double mx = -1.0e300LF;
    for (uint c = 0u; c < pc.chunks; c++)
        if (scratch_double(base + 2u * c * stride + 2u) > 0.0LF)
            mx = max(mx, scratch_double(base + 2u * c * stride));
    for (uint d = gl_LocalInvocationID.x; d < pc.head_dim; d += TILE) {
        double l = 0.0LF, a = 0.0LF;
        for (uint c = 0u; c < pc.chunks; c++) {
            uint at = base + 2u * c * stride;
            double lc = scratch_double(at + 2u);
            if (lc == 0.0LF)
                continue;       // every key of the chunk masked
            double w = double(r_exp(float(scratch_double(at) - mx)));
            l += w * lc;
            a += w * scratch_double(at + 4u + 2u * d);
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
