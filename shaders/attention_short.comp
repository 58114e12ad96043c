/* SPDX-License-Identifier: MIT */
#version 450
// attention_short.comp - relaxed attention of a few queries (decode: 1 to
// 4 tokens) against a short K/V cache in f32 or f16, grouped-query, causal
// or not, in one dispatch.
//
// Why a module of its own: attention_dec.comp walks the keys a subgroup at
// a time with an online softmax and cuts a cache into chunks that a second
// dispatch merges; at a decode step's few hundred keys its time is the
// latency of that walk and of the second dispatch (on an NVIDIA H200 a
// dispatch after a barrier costs ~2.7 us), not the bytes read (a
// TinyLlama-shape layer's K and V: 393 KB, in L2).  Here one workgroup
// holds every score of its row at once, so the softmax needs no rescaling
// and no merge: a handful of short phases with a barrier between them.
//
// Plan: workgroup w takes item w = (query token, query head), so a step of
// 32 heads has 32 workgroups; the heads of one KV head read the same K and
// V rows, which their workgroups find in the cache.  Its WG invocations:
//   1. the query row times the scale into shared memory;
//   2. scores: invocation t takes keys t, t + WG, ... (KPL of them, the
//      call's visible keys at most WG KPL), a key's K row read 4
//      elements at a time and dotted with the query; its maximum, then the
//      workgroup's by subgroupMax and one exchange in shared memory;
//   3. the weights p = e^(s - m) of its keys into shared memory; their sum
//      l by subgroupAdd and a second exchange;
//   4. values: invocation t owns 4 output dimensions (quad t % QUADS) and
//      keys t / QUADS, + SLICES, ... (SLICES = WG / QUADS); it reads their
//      V rows UNROLL keys at a time (loads in flight together: a key past
//      the row reads the row's first key and adds nothing, not 0 times its
//      value, which may be inf) into acc;
//   5. the SLICES partial acc of each quad summed through shared memory;
//      out = acc / l.
// vk-infer.c takes this path for relaxed calls of 1 to 4 queries against
// at most attention_short_keys keys (KPL = that / WG, rounded up), and
// attention_dec.comp or attention.comp for the others.
//
// Accuracy: the relaxed contract (2e-3, core/rayo-ops.h).  Scores, sums
// and outputs are float, as in attention_dec.comp, whose header gives the
// error budget (a score's rounding, ~1e-7 relative to |q||k|, moves its
// weight by that relative amount; the conformance group "attn-large"
// measures scores near 3e3); the scale is folded into the query.  Here the
// maximum is the row's true one, so each weight is one rounding of r_exp
// (about 1 ulp) and no factor e^(m_old - m) rescales the sums; l and acc
// add at most KPL or keys / SLICES terms one after the other, then the
// subgroups' sums or the SLICES partial ones.  f16 values are decoded exactly
// (half.glsl).  NaN: a NaN score makes its row's weights, l and every
// output NaN; a NaN in V only the outputs of its dimension (the reference
// does the same).

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
layout(constant_id = 3) const uint KPL = 4u;    // keys an invocation scores (at most)
// pc.ok, pc.ov, the K and V strides and D multiples of 4: a quad of
// elements is one load (a uvec4 of floats, a uvec2 of halves)
layout(constant_id = 4) const bool QUAD_LOADS = false;

// the K and V bindings of attention.glsl, read a quad at a time
layout(std430, set = 0, binding = 1) readonly buffer BufK4 { uvec4 k_quads[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV4 { uvec4 v_quads[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK2 { uvec2 k_half_quads[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV2 { uvec2 v_half_quads[]; };

const uint WG = gl_WorkGroupSize.x;
const uint QUADS = (D + 3u) / 4u;
const uint SLICES = WG / QUADS;                 // keys a quad's values are split over
const uint UNROLL = 4u;                         // V rows an invocation loads at once
// quads of a K row dotted in one unrolled run: the whole row up to head_dim
// 128; past it runs of 32 (a head_dim 256 row unrolled whole, times KPL
// keys, made lavapipe's LLVM spend about a minute on one pipeline)
const uint QUADS_UNROLLED = QUADS < 32u ? QUADS : 32u;

shared vec4 qs[QUADS];                          // the query row, scaled
shared float ps[WG * KPL];                      // the weights of the visible keys
shared float sg_max[WG], sg_sum[WG];            // per subgroup (at most WG of them)
shared vec4 part[WG];                           // the slices' acc

// Element `at` of K or V (in halves where KV_F16).
float kv_value(bool is_k, uint at)
{
    if (!KV_F16)
        return uintBitsToFloat(is_k ? k_data[at] : v_data[at]);
    uint w = is_k ? k_data[at >> 1u] : v_data[at >> 1u];
    return f16_value((w >> (16u * (at & 1u))) & 0xffffu);
}

vec4 halves(uvec2 w)
{
    return vec4(f16_value(w.x & 0xffffu), f16_value(w.x >> 16u), f16_value(w.y & 0xffffu),
                f16_value(w.y >> 16u));
}

// Elements 4 quad .. 4 quad + 3 of the K or V row that starts at element
// `row` (0 past head_dim).
vec4 kv_quad(bool is_k, uint row, uint quad)
{
    uint at = (is_k ? pc.ok : pc.ov) + row + 4u * quad;
    if (QUAD_LOADS && KV_F16)
        return halves(is_k ? k_half_quads[at >> 2u] : v_half_quads[at >> 2u]);
    if (QUAD_LOADS)
        return uintBitsToFloat(is_k ? k_quads[at >> 2u] : v_quads[at >> 2u]);
    vec4 r = vec4(0.0);
    [[unroll]] for (uint j = 0u; j < 4u; j++)
        if (4u * quad + j < D)
            r[j] = kv_value(is_k, at + j);
    return r;
}

void load_query(uint token, uint head)
{
    uint t = gl_LocalInvocationID.x;
    if (t < QUADS) {
        uint at = pc.oq + token * pc.q_token + head * pc.q_head + 4u * t;
        vec4 q = vec4(0.0);
        [[unroll]] for (uint j = 0u; j < 4u; j++)
            if (4u * t + j < D)
                q[j] = q_data[at + j];
        qs[t] = q * pc.scale;
    }
    barrier();
}

// The workgroup's maximum (sum) of one value an invocation: subgroup by
// subgroup, then over the subgroups' results in shared memory.
float workgroup_max(float x)
{
    x = subgroupMax(x);
    if (subgroupElect())
        sg_max[gl_SubgroupID] = x;
    barrier();
    for (uint i = 0u; i < gl_NumSubgroups; i++)
        x = max(x, sg_max[i]);
    return x;
}

float workgroup_sum(float x)
{
    x = subgroupAdd(x);
    if (subgroupElect())
        sg_sum[gl_SubgroupID] = x;
    barrier();
    x = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++)
        x += sg_sum[i];
    return x;
}

// Phases 2 and 3: ps[key] for the visible keys; returns l.
float weights(uint kv_head, uint visible)
{
    uint t = gl_LocalInvocationID.x;
    float s[KPL];
    float m = -R_INF;
    [[unroll]] for (uint i = 0u; i < KPL; i++) {
        uint key = t + i * WG;
        s[i] = -R_INF;
        if (key < visible) {
            uint row = key * pc.k_token + kv_head * pc.k_head;
            float d = 0.0;
            for (uint q0 = 0u; q0 < QUADS; q0 += QUADS_UNROLLED)
                [[unroll]] for (uint q = q0; q < q0 + QUADS_UNROLLED; q++)
                    if (q < QUADS)
                        d += dot(qs[q], kv_quad(true, row, q));
            s[i] = d;
            m = max(m, d);
        }
    }
    m = workgroup_max(m);
    float l = 0.0;
    [[unroll]] for (uint i = 0u; i < KPL; i++) {
        uint key = t + i * WG;
        if (key < visible) {
            float p = r_exp(s[i] - m);
            ps[key] = p;
            l += p;
        }
    }
    return workgroup_sum(l);    // its barrier also publishes ps
}

// Phase 4: this invocation's partial acc of its quad over its keys.
vec4 values(uint kv_head, uint visible, uint quad, uint slice)
{
    vec4 acc = vec4(0.0);
    for (uint key0 = slice; key0 < visible; key0 += UNROLL * SLICES) {
        vec4 v[UNROLL];
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) {
            uint key = key0 + u * SLICES;
            v[u] = kv_quad(false, (key < visible ? key : slice) * pc.v_token + kv_head * pc.v_head, quad);
        }
        [[unroll]] for (uint u = 0u; u < UNROLL; u++) {
            uint key = key0 + u * SLICES;
            if (key < visible)
                acc += ps[key] * v[u];
        }
    }
    return acc;
}

void attend(uint item)
{
    uint t = gl_LocalInvocationID.x;
    uint token = item / pc.n_heads, head = item % pc.n_heads, kv_head = head / pc.group;
    uint visible = (pc.flags & 1u) != 0u ? pc.n_kv - pc.n_q + token + 1u : pc.n_kv;
    barrier();                  // the previous item's readers of the shared arrays are done
    load_query(token, head);
    float l = weights(kv_head, visible);
    uint quad = t % QUADS, slice = t / QUADS;
    if (slice < SLICES)
        part[t] = values(kv_head, visible, quad, slice);
    barrier();
    if (t < QUADS) {
        vec4 acc = part[t];
        for (uint i = 1u; i < SLICES; i++)
            acc += part[t + i * QUADS];
        uint at = pc.oo + token * pc.o_token + head * pc.o_head + 4u * t;
        [[unroll]] for (uint j = 0u; j < 4u; j++)
            if (4u * t + j < D)
                o_data[at + j] = acc[j] / l;
    }
}

void main()
{
    for (uint item = gl_WorkGroupID.x; item < pc.n_q * pc.n_heads; item += gl_NumWorkGroups.x)
        attend(item);
}
