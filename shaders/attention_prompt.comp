/* SPDX-License-Identifier: MIT */
#version 450
// attention_prompt.comp - relaxed attention of many queries (a prompt)
// against K and V in f32 or f16, grouped-query, causal or not.
//
// Why a module of its own: attention.comp gives a workgroup one query
// token and walks every key for it, so a prompt of n queries reads K and V
// n times and its workgroups spend most of their time in barriers around
// one key tile that serves a single query row.  Here a workgroup takes a
// block of BQ query rows that share one KV head, so each K and V tile it
// stages in shared memory serves all BQ rows.
//
// Plan: the rows of KV head h are the (token, head of h's group) pairs in
// token-major order, n_q * group of them; workgroup (x, y) takes rows
// [x BQ, x BQ + BQ) of KV head y.  Their query rows, times the scale, sit
// in shared memory.  The keys go BK at a time, up to the block's last
// visible one (causal tiles past it are never read):
//   1. the tile's K rows into shared memory (zeros past n_kv), LOADS
//      values an invocation at a time: all loaded, then stored, so that
//      their latencies overlap (a load and its store, one value after the
//      other, wait out a memory latency per value: on an NVIDIA H200 that
//      form, with scalar loads in step 2, took 57 us for a Llama-2-7B-shape
//      prompt call against 48);
//   2. scores: invocation t takes RQ = BQ / 16 rows (t / 8) and RK = BK / 8
//      keys (t % 8, + 8, ...), dot products over head_dim from shared memory
//      4 dimensions (a vec4) at a time;
//      partial row maxima through shared memory give each row's new
//      maximum m (every invocation of a row keeps the same m, l in
//      registers); the weights p = e^(s - m) of visible keys (0 for the
//      others) go to shared memory with their partial sums, and the factor
//      e^(m_old - m) for the output accumulated so far;
//   3. the tile's V rows into the same shared memory as K;
//   4. outputs: invocation t owns rows (t / 32) NR.. (NR = BQ / 4) and
//      dimensions t % 32 + 32 i, acc = acc f + sum_j p_j v_j.  Where the
//      causal mask cuts through the tile, a weight of a hidden key adds
//      nothing, not 0 times its value (a NaN or inf there is not this
//      row's); elsewhere every row sees every key and the product is one
//      fma.
// Then out = acc / l.  One dispatch, no scratch: a prompt has enough rows
// to fill the device without cutting the keys into chunks.
//
// Shared memory: (BQ + BK) rows of ceil(head_dim / 4) | 1 vec4s (zeros
// past head_dim; an odd stride: the 8 invocations of a key row's vec4
// loads hit distinct banks), then BQ (BK + 1) + 10 BQ floats; vk-infer.c
// picks BQ and BK to fit the device (NVIDIA: 32 x 32 at head_dim 128,
// 39 KiB; lavapipe: 16 x 32, 28 KiB).
//
// Accuracy: the relaxed contract (2e-3, core/rayo-ops.h), all in float
// as in attention.comp's RAYO_F32 module and attention_dec.comp (whose
// header gives the error budget), scores by compensated sums
// (attention.glsl); the scale is folded into the query.
// Exponentials are rmath.glsl's r_exp (about 1 ulp); f16 values are
// decoded exactly (half.glsl).  Strict calls stay on attention.comp.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "rmath.glsl"
#include "half.glsl"

#include "attention.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 1) const bool KV_F16 = false;
layout(constant_id = 2) const uint D = 128u;    // head_dim
layout(constant_id = 3) const uint BQ = 32u;    // query rows of a workgroup: 16 or 32
layout(constant_id = 4) const uint BK = 32u;    // keys of a tile: 8, 16 or 32

const uint WG = 128u, LOADS = 32u;
const uint DV = (D + 3u) / 4u, SV = DV | 1u;    // vec4s of a row, and their stride
const uint BKP = BK + 1u;                       // the weights' row stride
const uint RQ = BQ / 16u, RK = BK / 8u;         // scores of an invocation: rows x keys
const uint NR = BQ / 4u, ND = (D + 31u) / 32u;  // outputs of an invocation: rows x dimensions

shared vec4 qs[BQ * SV];        // the block's query rows, scaled
shared vec4 kv[BK * SV];        // the tile's K rows, then its V rows
shared float ps[BQ * BKP];      // the tile's weights
shared float part[BQ * 8u];     // partial row maxima, then sums
shared float shrink[BQ];        // e^(m_old - m_new) of each row
shared float l_out[BQ];         // the rows' sums, for the last step

// per invocation: m and l of its score rows (the same in the 8
// invocations of a row), acc of its outputs
float m[RQ], l[RQ], acc[NR * ND];

float kv_value(bool is_k, uint e)
{
    uint i = (is_k ? pc.ok : pc.ov) + e;
    if (!KV_F16)
        return uintBitsToFloat(is_k ? k_data[i] : v_data[i]);
    uint w = is_k ? k_data[i >> 1u] : v_data[i >> 1u];
    return f16_value((w >> (16u * (i & 1u))) & 0xffffu);
}

// Row r of the KV head: its token and query head.
uint row_token(uint r) { return r / pc.group; }
uint row_head(uint kv_head, uint r) { return kv_head * pc.group + r % pc.group; }

// Keys row r sees: all but the causal mask's (rows past the last: all,
// with a zero query; their results are not stored).
uint visible(uint r)
{
    bool causal = (pc.flags & 1u) != 0u;
    return causal && r < pc.n_q * pc.group ? pc.n_kv - pc.n_q + row_token(r) + 1u : pc.n_kv;
}

// Element e of the block's query rows (4 DV a row), scaled; 0 past head_dim
// and past the last row.
float query_value(uint kv_head, uint r0, uint e)
{
    uint r = r0 + e / (4u * DV), d = e % (4u * DV);
    if (r >= pc.n_q * pc.group || d >= D)
        return 0.0;
    return q_data[pc.oq + row_token(r) * pc.q_token + row_head(kv_head, r) * pc.q_head + d] * pc.scale;
}

// Element e of the tile's K or V rows (4 DV a row); 0 past head_dim and n_kv.
float tile_value(bool is_k, uint kv_head, uint key0, uint e)
{
    uint key = key0 + e / (4u * DV), d = e % (4u * DV);
    if (key >= pc.n_kv || d >= D)
        return 0.0;
    uint token = is_k ? pc.k_token : pc.v_token, head = is_k ? pc.k_head : pc.v_head;
    return kv_value(is_k, key * token + kv_head * head + d);
}

// Rows of 4 DV elements into qs (which = 0), or the tile's K (1) or V (2)
// rows into kv: LOADS values an invocation at a time, then their stores.
void stage(uint which, uint kv_head, uint r0_key0)
{
    uint count = (which == 0u ? BQ : BK) * 4u * DV;
    for (uint e0 = 0u; e0 < count; e0 += LOADS * WG) {
        float v[LOADS];
        [[unroll]] for (uint i = 0u; i < LOADS; i++) {
            uint e = e0 + i * WG + gl_LocalInvocationID.x;
            v[i] = e >= count ? 0.0 : which == 0u ? query_value(kv_head, r0_key0, e)
                                                  : tile_value(which == 1u, kv_head, r0_key0, e);
        }
        [[unroll]] for (uint i = 0u; i < LOADS; i++) {
            uint e = e0 + i * WG + gl_LocalInvocationID.x, row = e / (4u * DV), d = e % (4u * DV);
            if (e >= count)
                break;
            if (which == 0u)
                qs[row * SV + d / 4u][d % 4u] = v[i];
            else
                kv[row * SV + d / 4u][d % 4u] = v[i];
        }
    }
}

// Step 2: the weights of the tile into ps, the factors into shrink; m
// and l of this invocation's score rows rescaled (l's new terms are added
// after the next barrier).
void tile_weights(uint r0, uint key0)
{
    uint t = gl_LocalInvocationID.x, kl = t % 8u, rg = t / 8u;
    float s[RQ * RK], lost[RQ * RK];
    [[unroll]] for (uint x = 0u; x < RQ * RK; x++)
        s[x] = lost[x] = 0.0;
    for (uint c = 0u; c < DV; c++) {
        vec4 q[RQ];
        [[unroll]] for (uint i = 0u; i < RQ; i++)
            q[i] = qs[(rg * RQ + i) * SV + c];
        [[unroll]] for (uint j = 0u; j < RK; j++) {
            vec4 k = kv[(kl + 8u * j) * SV + c];
            [[unroll]] for (uint i = 0u; i < RQ; i++)
                add_compensated(s[i * RK + j], lost[i * RK + j], dot(q[i], k));
        }
    }
    float m_new[RQ];
    [[unroll]] for (uint i = 0u; i < RQ; i++) {
        uint row = rg * RQ + i, vis = visible(r0 + row);
        float mx = -R_INF;
        [[unroll]] for (uint j = 0u; j < RK; j++)
            mx = key0 + kl + 8u * j < vis ? max(mx, s[i * RK + j]) : mx;
        part[row * 8u + kl] = mx;
    }
    barrier();
    [[unroll]] for (uint i = 0u; i < RQ; i++) {
        uint row = rg * RQ + i;
        m_new[i] = m[i];
        [[unroll]] for (uint c = 0u; c < 8u; c++)
            m_new[i] = max(m_new[i], part[row * 8u + c]);
    }
    barrier();                  // every row's maxima are read: part takes the sums
    [[unroll]] for (uint i = 0u; i < RQ; i++) {
        uint row = rg * RQ + i, vis = visible(r0 + row);
        float sum = 0.0;
        [[unroll]] for (uint j = 0u; j < RK; j++) {
            uint key = kl + 8u * j;
            float p = key0 + key < vis ? r_exp(s[i * RK + j] - m_new[i]) : 0.0;
            ps[row * BKP + key] = p;
            sum += p;
        }
        part[row * 8u + kl] = sum;
        // a row with no visible key yet keeps m = -inf: factor 1, not e^(-inf + inf)
        float f = m_new[i] == m[i] ? 1.0 : r_exp(m[i] - m_new[i]);
        if (kl == 0u)
            shrink[row] = f;
        l[i] *= f;
        m[i] = m_new[i];
    }
}

// Step 4: acc of this invocation's rows and dimensions over the tile's V
// rows (in kv); MASKED where the causal mask cuts through the tile.
void tile_values(uint r0, uint key0, bool masked)
{
    uint t = gl_LocalInvocationID.x, lane = t % 32u, rg = t / 32u;
    uint vis[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        float f = shrink[rg * NR + i];
        vis[i] = visible(r0 + rg * NR + i);
        [[unroll]] for (uint c = 0u; c < ND; c++)
            acc[i * ND + c] *= f;
    }
    for (uint j = 0u; j < BK; j++) {
        float v[ND];
        [[unroll]] for (uint c = 0u; c < ND; c++) {
            uint d = min(lane + 32u * c, D - 1u);
            v[c] = kv[j * SV + d / 4u][d % 4u];
        }
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            float p = ps[(rg * NR + i) * BKP + j];
            bool seen = !masked || key0 + j < vis[i];
            [[unroll]] for (uint c = 0u; c < ND; c++)
                acc[i * ND + c] += seen ? p * v[c] : 0.0;
        }
    }
}

void attend_block(uint kv_head, uint r0)
{
    uint t = gl_LocalInvocationID.x, rows = pc.n_q * pc.group;
    uint last = min(r0 + BQ, rows) - 1u, k1 = visible(last), clean = visible(r0);
    [[unroll]] for (uint i = 0u; i < RQ; i++) {
        m[i] = -R_INF;
        l[i] = 0.0;
    }
    [[unroll]] for (uint x = 0u; x < NR * ND; x++)
        acc[x] = 0.0;
    barrier();                  // the previous block's readers of qs and l_out are done
    stage(0u, kv_head, r0);
    for (uint key0 = 0u; key0 < k1; key0 += BK) {
        stage(1u, kv_head, key0);
        barrier();
        tile_weights(r0, key0);
        barrier();              // K is read (V takes its place); the weights' sums are in part
        stage(2u, kv_head, key0);
        [[unroll]] for (uint i = 0u; i < RQ; i++) {
            uint row = (t / 8u) * RQ + i;
            [[unroll]] for (uint c = 0u; c < 8u; c++)
                l[i] += part[row * 8u + c];
        }
        barrier();
        if (key0 + BK <= clean)
            tile_values(r0, key0, false);
        else
            tile_values(r0, key0, true);
        barrier();              // kv, ps and shrink are rewritten by the next tile
    }
    if (t % 8u == 0u)
        [[unroll]] for (uint i = 0u; i < RQ; i++)
            l_out[(t / 8u) * RQ + i] = l[i];
    barrier();
    uint lane = t % 32u, rg = t / 32u;
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        uint row = rg * NR + i, r = r0 + row;
        if (r >= rows)
            break;
        uint at = pc.oo + row_token(r) * pc.o_token + row_head(kv_head, r) * pc.o_head;
        [[unroll]] for (uint c = 0u; c < ND; c++)
            if (lane + 32u * c < D)
                o_data[at + lane + 32u * c] = acc[i * ND + c] / l_out[row];
    }
}

void main()
{
    uint blocks = (pc.n_q * pc.group + BQ - 1u) / BQ;
    for (uint kv_head = gl_WorkGroupID.y; kv_head < pc.n_heads / pc.group; kv_head += gl_NumWorkGroups.y)
        for (uint b = gl_WorkGroupID.x; b < blocks; b += gl_NumWorkGroups.x)
            attend_block(kv_head, b * BQ);
}
